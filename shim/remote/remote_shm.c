/* A shared area attached to the remote connection and given up while the
 * program remotes: the ivshmem path between a guest and the proxy domain
 * on its host, which crane-guestd starts once the host plugged the device
 * and ends before the guest leaves the host (docs/remoting.md). */
#include "remote_shm.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "proto/shm.h"
#include "remote_conn_int.h"
#include "shim.h"

/* One attach or release at a time (the control thread's commands). */
static pthread_mutex_t shm_cmd_lock = PTHREAD_MUTEX_INITIALIZER;

/* A call of ours on the program's connection: neither takes nor causes the
 * program's deferred error. */
static cl_int own_call(Crane__ClientMessage *m, struct rc_reply *r)
{
    bool was = shim_own_calls;
    cl_int err;

    shim_own_calls = true;
    err = shim_remote_call(m, NULL, 0, NULL, 0, r);
    shim_own_calls = was;
    return err;
}

int shim_remote_shm_use(const char *path, const char *name, uint64_t offset,
                        uint64_t limit, long patience_ms, char *why,
                        size_t why_len)
{
    double until = shim_now() + patience_ms / 1e3;
    size_t ring = (size_t)shim_config.shm_mb << 19;  /* half each way */
    uint8_t token[CRN_SHM_TOKEN_LEN];
    Crane__ShmAttach a = CRANE__SHM_ATTACH__INIT;
    struct rc_reply r;
    cl_int err;
    int rc;

    pthread_mutex_lock(&shm_cmd_lock);
    if (!shim_remote_alive()) {
        snprintf(why, why_len, "not remoting");
        rc = -ENOTCONN;
        goto out;
    }
    if (shim_conn.shm.base) {
        snprintf(why, why_len, "a shared area is attached already");
        rc = -EBUSY;
        goto out;
    }
    if (!shim_conn.shm_ok || ring == 0) {
        snprintf(why, why_len, "%s", ring ? "the proxy takes no shared area "
                 "(--no-shm, or no --shm-pci / --shm-dir)"
                 : "CRANE_SHM_MB=0");
        rc = -EOPNOTSUPP;
        goto out;
    }
    shim_conn.shm_memfd = false;  /* a BAR: no native device's to reach */
    if ((rc = crn_shm_map_file_at(path, offset, limit, ring,
                                  &shim_conn.shm)) < 0) {
        snprintf(why, why_len, "cannot lay an area out in %s at %llu: %s",
                 path, (unsigned long long)offset, strerror(-rc));
        shim_conn.shm.base = NULL;
        shim_conn.shm.fd = -1;
        goto out;
    }
    if ((rc = crn_shm_token_new(&shim_conn.shm, token)) < 0) {
        snprintf(why, why_len, "no randomness for the area's token");
        crn_shm_close(&shim_conn.shm);
        goto out;
    }
    /* Ring 1 is read from the attach's answer on (the proxy uses it only
     * after it executed the attach). */
    atomic_store(&shim_conn.shm_in, true);
    a.size = shim_conn.shm.size;
    a.ring_len = shim_conn.shm.ring_len;
    a.name = (char *)(name ? name : "");
    a.token.data = token;
    a.token.len = sizeof(token);
    a.offset = offset;
    for (;;) {
        RC_MSG(m, shm_attach, SHM_ATTACH, &a);
        err = own_call(&m, &r);
        /* A refusal (not a lost connection) may be the proxy domain not
         * seeing the device yet: asked again until the patience ends. */
        if (err == CL_SUCCESS || !r.reply || shim_now() >= until)
            break;
        shim_remote_reply_free(&r);
        struct timespec nap = {0, 100 * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
    if (err != CL_SUCCESS) {
        snprintf(why, why_len, "the proxy refused the area: %s (%d)",
                 r.reply && r.reply->error && *r.reply->error
                     ? r.reply->error
                     : "no answer",
                 err);
        shim_remote_reply_free(&r);
        atomic_store(&shim_conn.shm_in, false);
        crn_shm_close(&shim_conn.shm);
        rc = -EIO;
        goto out;
    }
    shim_remote_reply_free(&r);
    if (shim_conn.shm.fd >= 0)
        close(shim_conn.shm.fd);
    shim_conn.shm.fd = -1;
    pthread_mutex_lock(&shim_conn.send_lock);
    shim_conn.shm_on = true;
    pthread_mutex_unlock(&shim_conn.send_lock);
    CRN_INFO("remote: bulk bytes go through %zu MiB of shared memory in %s "
             "at %llu", shim_conn.shm.size >> 20, path,
             (unsigned long long)offset);
    rc = 0;
out:
    pthread_mutex_unlock(&shm_cmd_lock);
    return rc;
}

int shim_remote_shm_release(char *why, size_t why_len)
{
    Crane__ShmDetach d = CRANE__SHM_DETACH__INIT;
    struct rc_reply r;
    cl_int err = CL_SUCCESS;
    int rc = 0;

    pthread_mutex_lock(&shm_cmd_lock);
    if (!shim_conn.shm.base)
        goto out;
    /* No sender puts bytes into ring 0 after this (it fills it under the
     * same lock); the ShmDetach follows every frame that named it. */
    pthread_mutex_lock(&shim_conn.send_lock);
    shim_conn.shm_on = false;
    pthread_mutex_unlock(&shim_conn.send_lock);
    if (shim_remote_alive()) {
        RC_MSG(m, shm_detach, SHM_DETACH, &d);
        err = own_call(&m, &r);
        /* Its answer came after every reply that named ring 1, and the
         * reader copied those out before it: nothing reads the area now. */
        if (err != CL_SUCCESS && shim_remote_alive()) {
            snprintf(why, why_len, "the proxy did not give the area up: %s "
                     "(%d); connection ended",
                     r.reply && r.reply->error ? r.reply->error : "?", err);
            CRN_ERROR("remote: %s", why);
            /* It may still write replies into the area: no call may
             * read them from a device that is about to go. */
            atomic_store(&shim_conn.dead, true);
            shutdown(shim_conn.io.fd, SHUT_RDWR);
            rc = -EPROTO;
        }
        shim_remote_reply_free(&r);
    }
    atomic_store(&shim_conn.shm_in, false);
    crn_shm_close(&shim_conn.shm);
    if (rc == 0)
        CRN_INFO("remote: the shared area is given up; bulk bytes take the "
                 "stream");
out:
    pthread_mutex_unlock(&shm_cmd_lock);
    return rc;
}

void shim_remote_shm_hold(void)
{
    pthread_mutex_lock(&shm_cmd_lock);
}

void shim_remote_shm_unhold(void)
{
    pthread_mutex_unlock(&shm_cmd_lock);
}

int shim_remote_shm_attached(void)
{
    return atomic_load(&shim_conn.shm_in);
}

void shim_remote_shm_counts(struct shim_shm_counts *out)
{
    out->shm_bytes = atomic_load(&shim_conn.shm_bytes);
    out->stream_bytes = atomic_load(&shim_conn.stream_bytes);
    out->host_bytes = atomic_load(&shim_conn.host_bytes);
}
