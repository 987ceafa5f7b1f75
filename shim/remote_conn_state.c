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
