/* The remote backend's connection state: one per process, shared by the
 * remote_conn*.c files (remote_conn_int.h). */
#include "remote_conn_int.h"

#include "config.h"
#include "ctl_link.h"
#include "shim.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

struct shim_conn shim_conn = {
    .io = {.fd = -1},
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

void shim_conn_lost(const char *why)
{
    static pthread_mutex_t once = PTHREAD_MUTEX_INITIALIZER;
    const struct shim_backend_ops *b;
    char line[256];

    /* The report goes before the flag: a call fails only once it sees the
     * flag, so the daemon hears of the fault before the program can exit
     * of it.  The lock makes it one report per connection. */
    pthread_mutex_lock(&once);
    if (atomic_load(&shim_conn.dead))
        goto out;
    /* Only while the program's calls go here: a connection that lingers
     * after a switch back (its twins kept) fails nobody's calls.  Read
     * without the switch's lock, which a switch holds while it waits for
     * this very connection. */
    b = __atomic_load_n(&shim.backend, __ATOMIC_ACQUIRE);
    if (b && strcmp(b->name, "remote") == 0) {
        snprintf(line, sizeof(line),
                 "the connection to the proxy %s was lost (%s): the "
                 "program's OpenCL calls fail with CL_DEVICE_NOT_AVAILABLE",
                 shim_config.remote ? shim_config.remote : "?", why);
        shim_ctl_fault(-ENOTCONN, line);
    }
    atomic_store(&shim_conn.dead, true);
out:
    pthread_mutex_unlock(&once);
}
