/* crane-migrate: `virsh migrate` for VMs with a GPU, through crane-hostd. */
/*
 * Sends one MigrateRequest to the local crane-hostd (the client hop of
 * proto/hostd.proto), prints every Progress as a line as it comes, then the
 * MigrateDone: the steps, the programs' stoppage and the result, which is
 * also the exit status.  crane-hostd owns the migration: the first Ctrl-C
 * or SIGTERM asks it to cancel (HostCancel on a connection of its own) and
 * the rollback's report follows; a second one, a lost connection or --wait
 * only stop watching.
 *
 * Everything in the replies is untrusted: frames are bounded, a reply
 * without a known message or result is malformed, and every string is
 * cleaned before it reaches the terminal (see clean()).
 */
#include "migrate_cli.h"

#include "proto/endpoint.h"
#include "proto/frame.h"
#include "proto/hostd.pb-c.h"
#include "proto/log.h"
#include "proto/report.h"
#include "proto/version.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>


/* The signal that interrupted the wait: the one thing a handler may set. */
static volatile sig_atomic_t mig_signal;

static void on_signal(int sig)
{
    mig_signal = sig;
}


/* --- talking to crane-hostd -------------------------------------------- */

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Why a reply is not one: NULL when it is a Progress or a MigrateDone with
 * a known result. */
static const char *malformed(const Crane__Hostd__DaemonReply *m)
{
    switch (m->msg_case) {
    case CRANE__HOSTD__DAEMON_REPLY__MSG_PROGRESS:
        return m->progress ? NULL : "an empty Progress";
    case CRANE__HOSTD__DAEMON_REPLY__MSG_DONE:
        if (!m->done)
            return "an empty MigrateDone";
        if (!mig_result_name(m->done->result))
            return "a MigrateDone with an unknown result";
        for (size_t i = 0; i < m->done->n_steps; i++)
            if (!m->done->steps[i])
                return "an empty Step";
        return NULL;
    default: return "neither Progress nor MigrateDone";
    }
}

/*
 * Reads the next reply into *OUT.  WAIT > 0 bounds the time until a whole
 * frame is there.  Returns 0, -ENODATA (closed between frames), -EPIPE
 * (closed inside one), -ETIMEDOUT, -EINTR (a signal: see mig_signal),
 * -EMSGSIZE (a frame over MIG_MAX_REPLY), -EPROTO (undecodable; *WHY says
 * how), or a read error.  SIGMASK is the mask to wait with: SIGINT and
 * SIGTERM are blocked everywhere else, so that none slips in between a
 * check and the wait.
 */
static int read_reply(struct mig_reader *r, double wait,
                      const sigset_t *sigmask,
                      Crane__Hostd__DaemonReply **out, const char **why)
{
    double deadline = now() + wait;
    const uint8_t *msg;
    size_t msg_len, used;
    ssize_t n;
    int rc;

    for (;;) {
        struct pollfd p = {.fd = r->fd, .events = POLLIN};
        struct timespec ts, *tsp = NULL;

        rc = crn_frame_decode(r->buf, r->len, MIG_MAX_REPLY, &msg, &msg_len,
                              &used);
        if (rc == 0) {
            *out = crane__hostd__daemon_reply__unpack(NULL, msg_len, msg);
            memmove(r->buf, r->buf + used, r->len - used);
            r->len -= used;
            if (!*out) {
                *why = "undecodable";
            } else if ((*why = malformed(*out))) {
                crane__hostd__daemon_reply__free_unpacked(*out, NULL);
                *out = NULL;
            }
            return *out ? 0 : -EPROTO;
        }
        if (rc != -EAGAIN)
            return rc;
        if (r->len == r->cap) {
            /* decode() refuses a frame over the bound from its length, so
             * the buffer never grows past one whole frame. */
            size_t cap = r->cap ? r->cap * 2 : 4096;
            uint8_t *nb;
            if (cap > MIG_MAX_REPLY + CRN_FRAME_HEADER_LEN)
                cap = MIG_MAX_REPLY + CRN_FRAME_HEADER_LEN;
            if (!(nb = realloc(r->buf, cap)))
                return -ENOMEM;
            r->buf = nb;
            r->cap = cap;
        }
        if (wait > 0) {
            double left = deadline - now();
            if (left <= 0)
                return -ETIMEDOUT;
            ts.tv_sec = (time_t)left;
            ts.tv_nsec = (long)((left - (double)ts.tv_sec) * 1e9);
            tsp = &ts;
        }
        rc = ppoll(&p, 1, tsp, sigmask);
        if (rc < 0 && errno != EINTR)
            return -errno;
        if (mig_signal)
            return -EINTR;
        if (rc <= 0)
            continue;
        n = read(r->fd, r->buf + r->len, r->cap - r->len);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            return r->len ? -EPIPE : -ENODATA;
        r->len += (size_t)n;
    }
}

/* A TCP connection to crane-hostd: have the kernel probe it, so that a
 * vanished host is noticed even while the migration is quiet. */
static void keep_alive(int fd)
{
    int on = 1, idle = 30, intvl = 10, cnt = 3;

    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
}

/* Says, after the request went out, that crane-migrate stops watching for
 * the reason RC; returns the exit status. */
static int lost(struct mig_view *v, const struct mig_opts *o, int rc,
                const char *why)
{
    mig_view_break(v);
    switch (rc) {
    case -EINTR:
        CRN_ERROR("interrupted again: stopped watching; the "
                        "cancel and its rollback go on in crane-hostd; "
                        MIG_FOLLOW);
        return MIG_EXIT_SIGNAL + mig_signal;
    case -ETIMEDOUT:
        CRN_ERROR("no message from crane-hostd for %g s "
                        "(--wait); the migration may go on: " MIG_FOLLOW,
                o->wait);
        break;
    case -ENODATA:
    case -EPIPE:
    case -ECONNRESET:
        CRN_ERROR("crane-hostd closed the connection "
                        "before the migration's end%s; it may go on: "
                        MIG_FOLLOW,
                rc == -EPIPE ? " (inside a reply)" : "");
        break;
    case -EMSGSIZE:
        CRN_ERROR("malformed reply from crane-hostd: a "
                        "frame over %u KiB; " MIG_FOLLOW,
                MIG_MAX_REPLY >> 10);
        break;
    case -EPROTO:
        CRN_ERROR("malformed reply from crane-hostd: %s; "
                        MIG_FOLLOW,
                why);
        break;
    default:
        CRN_ERROR("reading from %s: %s; " MIG_FOLLOW,
                o->connect, strerror(-rc));
        break;
    }
    return MIG_EXIT_NO_ANSWER;
}

/* Ctrl-C or SIGTERM: crane-hostd cancels the migration with the full
 * rollback (or says why it cannot). */
static void ask_cancel(struct mig_view *v, const struct mig_opts *o)
{
    char why[600], id[80] = "";

    mig_view_break(v);
    if (mig_cancel(o->connect, o->req.domain, NULL, why, sizeof(why), id,
                   sizeof(id)) == 0)
        CRN_WARN("cancelling migration %s of %s: it rolls "
                        "back (the VM runs on here); interrupt again to "
                        "stop watching", id, o->req.domain);
    else
        CRN_ERROR("cannot cancel: %s; interrupt again to stop "
                        "watching", why);
}

/* Sends the request, then shows the replies until the MigrateDone. */
static int run(struct mig_opts *o, struct mig_view *v)
{
    Crane__Hostd__ClientRequest creq = CRANE__HOSTD__CLIENT_REQUEST__INIT;
    Crane__Hostd__DaemonReply *m = NULL;
    struct mig_reader r = {.fd = -1};
    struct sigaction sa = {.sa_handler = on_signal};
    sigset_t block, waitmask;
    struct crn_endpoint ep;
    const char *why = NULL;
    bool cancelling = false;
    int rc, status;

    creq.msg_case = CRANE__HOSTD__CLIENT_REQUEST__MSG_MIGRATE;
    creq.migrate = &o->req;
    if (crane__hostd__client_request__get_packed_size(&creq) >
        MIG_MAX_REQUEST) {
        CRN_ERROR("the request is over 64 KiB, "
                               "crane-hostd's limit (a smaller --xml file)");
        return MIG_EXIT_FAILURE;
    }
    crn_endpoint_parse(o->connect, &ep); /* checked by mig_parse_args() */

    /* No SA_RESTART: a signal while connecting ends the connect(). */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    r.fd = crn_endpoint_connect(&ep);
    if (r.fd < 0 && mig_signal) {
        CRN_ERROR("interrupted before the request was "
                        "sent: no migration started");
        return MIG_EXIT_SIGNAL + mig_signal;
    }
    if (r.fd < 0) {
        CRN_ERROR("cannot connect to crane-hostd at %s "
                        "(%s): %s (is crane-hostd running?)",
                o->connect, o->connect_from, strerror(-r.fd));
        return MIG_EXIT_NO_ANSWER;
    }
    if (mig_signal) {
        CRN_ERROR("interrupted before the request was "
                        "sent: no migration started");
        status = MIG_EXIT_SIGNAL + mig_signal;
        goto out;
    }
    if (ep.kind == CRN_EP_TCP)
        keep_alive(r.fd);
    if ((rc = crn_frame_write(r.fd, &creq.base)) < 0) {
        CRN_ERROR("sending the request to %s: %s",
                o->connect, strerror(-rc));
        status = MIG_EXIT_NO_ANSWER;
        goto out;
    }

    /* From here on signals arrive only inside ppoll(). */
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigprocmask(SIG_BLOCK, &block, &waitmask);
    sigdelset(&waitmask, SIGINT);
    sigdelset(&waitmask, SIGTERM);
    for (;;) {
        rc = mig_signal ? -EINTR
                        : read_reply(&r, o->wait, &waitmask, &m, &why);
        if (rc == -EINTR && !cancelling) {
            /* The first Ctrl-C or SIGTERM cancels; the rollback's report
             * follows on this connection.  A second one stops watching. */
            cancelling = true;
            mig_signal = 0;
            ask_cancel(v, o);
            continue;
        }
        if (rc < 0) {
            status = lost(v, o, rc, why);
            break;
        }
        if (m->msg_case == CRANE__HOSTD__DAEMON_REPLY__MSG_PROGRESS) {
            mig_show_progress(v, m->progress, o->req.verbose);
            crane__hostd__daemon_reply__free_unpacked(m, NULL);
            continue;
        }
        status = mig_print_done(v, m->done, o->req.domain);
        crane__hostd__daemon_reply__free_unpacked(m, NULL);
        break;
    }
out:
    close(r.fd);
    free(r.buf);
    return status;
}

int main(int argc, char **argv)
{
    struct mig_opts o = {.req = CRANE__HOSTD__MIGRATE_REQUEST__INIT};
    struct mig_view v = {.out = stdout, .last_percent = -1};
    int status;

    crn_log_init_cli("crane-migrate");
    status = mig_parse_args(argc, argv, &o);
    if (status < 0) {
        v.tty = isatty(STDOUT_FILENO);
        /* Line by line into a log too, so that it follows the migration. */
        setvbuf(stdout, NULL, _IOLBF, 0);
        status = run(&o, &v);
    }
    mig_opts_free(&o);
    return status;
}
