/* The remote backend's connection state: one per process, shared by the
 * remote_conn*.c files (remote_conn_int.h). */
#include "remote_conn_int.h"

struct shim_conn shim_conn = {
    .fd = -1,
    .shm = {.fd = -1},
    .send_lock = PTHREAD_MUTEX_INITIALIZER,
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .cond = PTHREAD_COND_INITIALIZER,
    .cb_cond = PTHREAD_COND_INITIALIZER,
    .watchdog_cond = PTHREAD_COND_INITIALIZER,
    .read_cond = PTHREAD_COND_INITIALIZER,
};

bool shim_conn_lane_failed(uint64_t seq)
{
    for (unsigned i = 0; seq && i < 64; i++)
        if (shim_conn.lane_failed_seq[i] == seq)
            return true;
    return false;
}
