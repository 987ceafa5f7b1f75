/* Asks crane-hostd to cancel DOMAIN's running migration (HostCancel):
 * crane-hostctl cancel, and crane-migrate on Ctrl-C or SIGTERM. */
#include "migrate_cli.h"

#include "proto/endpoint.h"
#include "proto/frame.h"
#include "proto/log.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* How long crane-hostd has to answer a cancel: it answers at once (at
 * most 5 s when the hypervisor's copy must show whether it stopped). */
#define CANCEL_WAIT_MS 10000
/* Between two frames once crane-hostd undoes a prepare (its Progress
 * said so): re-attaching a GPU and the guest's resume take their time. */
#define UNDO_WAIT_MS 300000

/* Reads frames of at most MIG_MAX_REPLY from FD until a MigrateDone, into
 * *MSG (freed by the caller): the first within CANCEL_WAIT_MS, the next
 * ones (Progress skipped) within UNDO_WAIT_MS each. */
static int read_done(int fd, Crane__Hostd__DaemonReply **msg)
{
    size_t cap = MIG_MAX_REPLY + CRN_FRAME_HEADER_LEN, len = 0, used, mlen;
    uint8_t *buf = malloc(cap);
    int rc, wait_ms = CANCEL_WAIT_MS;
    const uint8_t *m;

    if (!buf)
        return -ENOMEM;
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        ssize_t n;

        rc = crn_frame_decode(buf, len, MIG_MAX_REPLY, &m, &mlen, &used);
        if (rc == 0) {
            *msg = crane__hostd__daemon_reply__unpack(NULL, mlen, m);
            if (!*msg) {
                rc = -EPROTO;
                break;
            }
            if ((*msg)->msg_case != CRANE__HOSTD__DAEMON_REPLY__MSG_PROGRESS)
                break;
            crane__hostd__daemon_reply__free_unpacked(*msg, NULL);
            *msg = NULL;
            memmove(buf, buf + used, len - used);
            len -= used;
            wait_ms = UNDO_WAIT_MS;
            continue;
        }
        if (rc != -EAGAIN)
            break;
        if ((rc = poll(&p, 1, wait_ms)) <= 0) {
            rc = rc == 0 ? -ETIMEDOUT : -errno;
            if (rc == -EINTR)
                continue;
            break;
        }
        n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            rc = n < 0 ? -errno : -ENODATA;
            break;
        }
        len += (size_t)n;
    }
    free(buf);
    return rc;
}

/* A MigrateDone D as mig_cancel returns it (see migrate_cli.h). */
static int done_status(const Crane__Hostd__MigrateDone *d)
{
    bool refused = d->refused || (!*d->id && !d->n_steps);

    if (d->result == CRANE__HOSTD__RESULT__RESULT_OK)
        return 0;
    if (refused)
        return -ESRCH;
    /* A prepared VM's undo, as crane-hostctl abort would end. */
    return d->result == CRANE__HOSTD__RESULT__RESULT_ROLLED_BACK
               ? MIG_CANCEL_UNDONE
           : d->result == CRANE__HOSTD__RESULT__RESULT_REMOTING
               ? MIG_EXIT_REMOTING
               : MIG_EXIT_FAILED;
}

int mig_cancel(const char *connect, const char *domain, const char *id,
               char *why, size_t why_len, char *mig_id, size_t id_len)
{
    Crane__Hostd__ClientRequest q = CRANE__HOSTD__CLIENT_REQUEST__INIT;
    Crane__Hostd__HostCancel c = CRANE__HOSTD__HOST_CANCEL__INIT;
    Crane__Hostd__DaemonReply *r = NULL;
    struct crn_endpoint ep;
    int fd, rc;

    snprintf(why, why_len, "%s", "");
    if (crn_endpoint_parse(connect, &ep) < 0)
        return -EINVAL;
    if ((fd = crn_endpoint_connect(&ep)) < 0) {
        snprintf(why, why_len, "cannot connect to crane-hostd at %s: %s",
                 connect, strerror(-fd));
        return fd;
    }
    c.domain = (char *)domain;
    c.migration_id = (char *)(id ? id : "");
    q.msg_case = CRANE__HOSTD__CLIENT_REQUEST__MSG_CANCEL;
    q.cancel = &c;
    rc = crn_frame_write(fd, &q.base);
    if (rc == 0)
        rc = read_done(fd, &r);
    close(fd);
    if (rc < 0) {
        snprintf(why, why_len, "no answer from crane-hostd at %s: %s",
                 connect, strerror(-rc));
        return rc;
    }
    if (r->msg_case != CRANE__HOSTD__DAEMON_REPLY__MSG_DONE || !r->done) {
        snprintf(why, why_len, "%s", "malformed reply from crane-hostd");
        rc = -EPROTO;
    } else {
        rc = done_status(r->done);
        mig_clean(why, why_len, r->done->error, false);
        mig_clean(mig_id, id_len, r->done->id, true);
    }
    crane__hostd__daemon_reply__free_unpacked(r, NULL);
    return rc;
}

int mig_cancel_command(const char *connect, const char *domain,
                       const char *id)
{
    char why[600], mig_id[80] = "", dom[280];
    int rc = mig_cancel(connect, domain, id, why, sizeof(why), mig_id,
                        sizeof(mig_id));

    mig_clean(dom, sizeof(dom), domain, false);
    if (rc == 0) {
        printf("migration: %s\ncancel: asked; %s rolls back and runs on "
               "here\n", mig_id, dom);
        return MIG_EXIT_OK;
    }
    if (rc == MIG_CANCEL_UNDONE) {
        printf("migration: %s\ncancel: done; %s was prepared for it and "
               "runs on here with a GPU again\n", mig_id, dom);
        return MIG_EXIT_OK;
    }
    if (rc > 0) {
        printf("migration: %s\n", mig_id);
        crn_log(rc == MIG_EXIT_REMOTING ? CRN_LOG_WARN : CRN_LOG_ERROR,
                "cancel of %s: the prepare was undone but %s", dom,
                rc == MIG_EXIT_REMOTING
                    ? "no GPU is free here: its programs run remotely until "
                      "crane-hostd attaches one by itself"
                    : why);
        return rc;
    }
    CRN_ERROR("cannot cancel a migration of %s: %s", dom, why);
    return rc == -ESRCH ? MIG_EXIT_ROLLED_BACK : MIG_EXIT_NO_ANSWER;
}
