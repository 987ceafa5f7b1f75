/* A program's start while crane-guestd migrates: where its first call goes.
 *
 * Before the first backend loads, the shim registers with `starting` set
 * and waits for the daemon's Start (docs/guest.md, "Programs that start
 * during a migration"):
 *
 *   idle                 the native backend, as without a daemon;
 *   live, GPU away       the remote backend on the daemon's proxy (and
 *                        key): the program is remoting from its first
 *                        call, and the next resume brings it to the GPU
 *                        with the others;
 *   offline, GPU away    the first call waits for a second Start, sent
 *                        once the daemon is idle again (the GPU back), at
 *                        most CRANE_START_WAIT_MS; then native.
 *
 * The daemon answers a Register at once, so an answer that does not come
 * within START_ANSWER_MS (an older daemon, a stuck one) starts the program
 * native; the connection is kept and served by the control thread.
 */
#include "config.h"
#include "control.h"
#include "proto/log.h"
#include "shim.h"

#include "proto/control.pb-c.h"
#include "proto/frame.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define START_ANSWER_MS 5000
#define START_MAX_FRAME (64u << 10)

/* Waits at most MS for one DaemonMessage on FD.  Returns it, or NULL with
 * *RC -ETIMEDOUT, or the read's error. */
static Crane__Control__DaemonMessage *read_one(int fd, long ms, int *rc)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    Crane__Control__DaemonMessage *m;
    uint8_t *buf;
    size_t len;
    int n;

    while ((n = poll(&p, 1, ms < 0 ? 0 : (int)ms)) < 0 && errno == EINTR)
        ;
    if (n <= 0) {
        *rc = n < 0 ? -errno : -ETIMEDOUT;
        return NULL;
    }
    if ((*rc = crn_frame_read(fd, &buf, &len, START_MAX_FRAME)) < 0)
        return NULL;
    m = crane__control__daemon_message__unpack(NULL, len, buf);
    free(buf);
    *rc = m ? 0 : -EPROTO;
    return m;
}

/* The next Start on FD within MS; anything else the daemon should not
 * send before it is logged and dropped.  NULL with *RC when none came. */
static Crane__Control__DaemonMessage *next_start(int fd, double until,
                                                 int *rc)
{
    for (;;) {
        Crane__Control__DaemonMessage *m =
            read_one(fd, (long)((until - shim_now()) * 1e3), rc);
        if (!m || m->msg_case == CRANE__CONTROL__DAEMON_MESSAGE__MSG_START)
            return m;
        CRN_WARN("control: message %d from crane-guestd before the start's "
                 "answer: dropped",
                 (int)m->msg_case);
        crane__control__daemon_message__free_unpacked(m, NULL);
    }
}

/* A live migration's proxy for the first call: the remote backend, or
 * native when the daemon's proxy cannot be taken. */
static const struct shim_backend_ops *start_remote(
    const Crane__Control__Start *s)
{
    char why[256] = "";

    if (shim_control_set_proxy(s->proxy, &s->auth_key, why, sizeof(why)) <
        0) {
        CRN_WARN("control: the VM is prepared for a live migration but "
                 "its proxy cannot be used (%s): starting on the GPU",
                 why);
        return shim_vendor_backend();
    }
    CRN_INFO("control: the VM is prepared for a live migration: the "
             "first call goes to the proxy %s",
             shim_config.remote);
    return shim_proxy_backend();
}

/* Waits for the GPU (a Start without `wait`) until the bound. */
static void wait_for_gpu(int fd)
{
    double t0 = shim_now(), until = t0 + shim_config.start_wait_ms / 1e3;
    Crane__Control__DaemonMessage *m;
    int rc;

    CRN_INFO("control: the GPU is away for an offline migration: the "
             "first call waits for it (at most %ld ms, CRANE_START_WAIT_MS)",
             shim_config.start_wait_ms);
    while ((m = next_start(fd, until, &rc))) {
        bool wait = m->start->wait;
        crane__control__daemon_message__free_unpacked(m, NULL);
        if (!wait) {
            CRN_INFO("control: the GPU is back after %.1f ms",
                     (shim_now() - t0) * 1e3);
            return;
        }
    }
    CRN_WARN("control: %s after %.1f ms: starting on the GPU anyway (its "
             "vendor may find none)",
             rc == -ETIMEDOUT ? "the GPU did not come back (CRANE_START_WAIT_MS)"
                              : "crane-guestd went away while waiting",
             (shim_now() - t0) * 1e3);
}

const struct shim_backend_ops *shim_control_begin(int *fd)
{
    const struct shim_backend_ops *b = shim_vendor_backend();
    Crane__Control__DaemonMessage *m;
    int rc;

    *fd = -1;
    if (!shim_config.control_socket || (*fd = shim_control_connect()) < 0) {
        *fd = -1;
        return b;
    }
    if ((rc = shim_control_register(*fd, true)) < 0 ||
        !(m = next_start(*fd, shim_now() + START_ANSWER_MS / 1e3, &rc))) {
        CRN_WARN("control: no start answer from crane-guestd at %s (%s): "
                 "starting on the GPU",
                 shim_config.control_socket, strerror(-rc));
        if (rc != -ETIMEDOUT) {
            close(*fd);
            *fd = -1;
        }
        return b;
    }
    const Crane__Control__Start *s = m->start;
    if (s->wait)
        wait_for_gpu(*fd);
    else if (s->phase != CRANE__CONTROL__PHASE__PHASE_IDLE &&
             s->mode == CRANE__CONTROL__MIGRATION_MODE__MIGRATION_LIVE)
        b = start_remote(s);
    crane__control__daemon_message__free_unpacked(m, NULL);
    return b;
}
