/* crane-hostd's listening sockets (crane-migrate's unix one, the peers' TCP
 * one, both through proto/listen.c) and who serves each connection. */
#include "listen.h"

#include "migrate_opts.h"

#include "handoff.h"
#include "io.h"
#include "proto/log.h"
#include "migrate_opts.h"
#include "migration.h"
#include "peer.h"
#include "running.h"
#include "proto/endpoint.h"
#include "proto/listen.h"
#include "proto/frame.h"
#include "proto/hostd.pb-c.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* A request names a domain, URIs and perhaps a whole domain XML. */
#define CLIENT_MAX_FRAME (64u * 1024)
#define CLIENT_REQUEST_S 10
#define BUSY_MAX 64

struct listener {
    uv_poll_t poll;
    int fd;
    bool active;
    struct hd_daemon *d;
    void (*serve)(void *);        /* job taking a struct conn */
};

struct hd_listeners {
    struct listener control, peer;
    char control_path[108];
};

struct conn {
    struct hd_daemon *d;
    int fd;
};

/* Domains with a migration running: one at a time each. */
static pthread_mutex_t busy_lock = PTHREAD_MUTEX_INITIALIZER;
static char busy[BUSY_MAX][HV_NAME_MAX + 1];

static bool claim(const char *domain)
{
    bool ok = false;

    pthread_mutex_lock(&busy_lock);
    for (int i = 0; i < BUSY_MAX; i++)
        if (strcmp(busy[i], domain) == 0)
            goto out;
    for (int i = 0; i < BUSY_MAX; i++)
        if (!busy[i][0]) {
            snprintf(busy[i], sizeof(busy[i]), "%s", domain);
            ok = true;
            break;
        }
out:
    pthread_mutex_unlock(&busy_lock);
    return ok;
}

static void unclaim(const char *domain)
{
    pthread_mutex_lock(&busy_lock);
    for (int i = 0; i < BUSY_MAX; i++)
        if (strcmp(busy[i], domain) == 0)
            busy[i][0] = '\0';
    pthread_mutex_unlock(&busy_lock);
}

/* Refuses a request before anything starts: MigrateDone, rolled back. */
static void refuse(int fd, const char *why)
{
    Crane__Hostd__DaemonReply r = CRANE__HOSTD__DAEMON_REPLY__INIT;
    Crane__Hostd__MigrateDone done = CRANE__HOSTD__MIGRATE_DONE__INIT;

    CRN_WARN("refused a migration: %s", why);
    done.result = CRANE__HOSTD__RESULT__RESULT_ROLLED_BACK;
    done.error = (char *)why;
    r.msg_case = CRANE__HOSTD__DAEMON_REPLY__MSG_DONE;
    r.done = &done;
    crn_frame_write(fd, &r.base);
}

static const char *check_request(const Crane__Hostd__MigrateRequest *q)
{
    struct crn_endpoint ep;

    if (!*q->domain || strlen(q->domain) > HV_NAME_MAX)
        return "bad domain name";
    if (!*q->dest_uri || strlen(q->dest_uri) > 1024)
        return "bad destination URI";
    if (strlen(q->migrate_uri) > 1024)
        return "bad migration URI";
    if (*q->proxy && crn_endpoint_parse(q->proxy, &ep) < 0)
        return "bad proxy endpoint";
    if (*q->peer && (crn_endpoint_parse(q->peer, &ep) < 0 ||
                     ep.kind != CRN_EP_TCP))
        return "bad peer endpoint (tcp:HOST:PORT)";
    return hd_migrate_opts_check(q->options);
}

static void serve_client(void *arg)
{
    struct conn *c = arg;
    Crane__Hostd__ClientRequest *q = NULL;
    const char *bad;
    uint8_t *buf;
    size_t len;
    int rc;

    hd_send_timeout(c->fd, 30);
    rc = hd_frame_read_by(c->fd, CLIENT_MAX_FRAME, hd_now() + CLIENT_REQUEST_S,
                          &buf, &len);
    if (rc == 0) {
        q = crane__hostd__client_request__unpack(NULL, len, buf);
        free(buf);
    }
    if (q && q->msg_case == CRANE__HOSTD__CLIENT_REQUEST__MSG_CANCEL &&
        !hd_running_check(q) && hd_handoff_cancels(q->cancel)) {
        /* A VM waiting prepared (crane-hostctl prepare): the cancel is
         * its abort, a step of its domain. */
        if (!claim(q->cancel->domain)) {
            refuse(c->fd, "a migration step of this domain is already "
                          "running");
        } else {
            hd_handoff_cancel(c->d, c->fd, q->cancel);
            unclaim(q->cancel->domain);
        }
    } else if (q && (q->msg_case == CRANE__HOSTD__CLIENT_REQUEST__MSG_CANCEL ||
                     q->msg_case == CRANE__HOSTD__CLIENT_REQUEST__MSG_JOB)) {
        /* About a running migration: never claims its domain. */
        if ((bad = hd_running_check(q)))
            refuse(c->fd, bad);
        else
            hd_running_serve(c->d, c->fd, q);
    } else if (q && q->msg_case != CRANE__HOSTD__CLIENT_REQUEST__MSG_MIGRATE) {
        /* One step of a migration another tool performs (handoff.c). */
        const char *domain;

        if ((bad = hd_handoff_check(q, &domain)))
            refuse(c->fd, bad);
        else if (domain && !claim(domain))
            refuse(c->fd, "a migration step of this domain is already "
                          "running");
        else {
            hd_handoff_serve(c->d, c->fd, q);
            if (domain)
                unclaim(domain);
        }
    } else if (!q) {
        if (rc != -ENODATA)
            refuse(c->fd, "malformed request");
    } else if ((bad = check_request(q->migrate))) {
        refuse(c->fd, bad);
    } else if (!claim(q->migrate->domain)) {
        refuse(c->fd, "a migration of this domain is already running");
    } else {
        hd_migration_run(c->d, c->fd, q->migrate);
        unclaim(q->migrate->domain);
    }
    if (q)
        crane__hostd__client_request__free_unpacked(q, NULL);
    close(c->fd);
    free(c);
}

static void serve_peer(void *arg)
{
    struct conn *c = arg;

    hd_peer_serve(c->d, c->fd);
    free(c);
}

static void on_accept(uv_poll_t *h, int status, int events)
{
    struct listener *l = h->data;
    struct conn *c;
    int fd;

    (void)events;
    if (status < 0)
        return;
    fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0)
        return;
    if (!(c = malloc(sizeof(*c)))) {
        close(fd);
        return;
    }
    c->d = l->d;
    c->fd = fd;
    if (hd_job_start(l->d, l->serve, c) < 0) {
        close(fd);
        free(c);
    }
}

/* Watches FD, which L owns from here on, even when this fails. */
static int start(struct hd_daemon *d, struct listener *l, int fd,
                 void (*serve)(void *))
{
    l->d = d;
    l->fd = fd;
    l->serve = serve;
    if (uv_poll_init(d->loop, &l->poll, fd) < 0)
        return -EIO;
    l->poll.data = l;
    l->active = true;
    return uv_poll_start(&l->poll, UV_READABLE, on_accept) < 0 ? -EIO : 0;
}

int hd_listen_start(struct hd_daemon *d, struct hd_listeners **out,
                    char *why, size_t why_len)
{
    struct hd_listeners *l = calloc(1, sizeof(*l));
    struct crn_endpoint ep;
    int fd, rc;

    if (!l)
        return -ENOMEM;
    l->control.fd = l->peer.fd = -1;
    crn_endpoint_parse(d->cfg.control, &ep);
    if ((fd = crn_listen(&ep, d->cfg.control_mode, 16, why, why_len)) < 0) {
        if (fd == -EADDRINUSE)
            snprintf(why, why_len, "cannot listen on %s: another crane-hostd "
                     "uses it", d->cfg.control);
        free(l);
        return fd;
    }
    snprintf(l->control_path, sizeof(l->control_path), "%s", ep.path);
    if ((rc = start(d, &l->control, fd, serve_client)) < 0)
        goto fail;
    if (*d->cfg.peer_listen) {
        crn_endpoint_parse(d->cfg.peer_listen, &ep);
        if ((fd = crn_listen(&ep, 0, 16, why, why_len)) < 0) {
            rc = fd;
            goto fail;
        }
        if ((rc = start(d, &l->peer, fd, serve_peer)) < 0)
            goto fail;
    }
    *out = l;
    return 0;
fail:
    if (!*why)
        snprintf(why, why_len, "cannot watch a socket");
    hd_listen_stop(l);
    uv_run(d->loop, UV_RUN_NOWAIT);     /* the close callbacks */
    hd_listen_free(l);
    return rc;
}

static void closed(uv_handle_t *h)
{
    struct listener *l = h->data;

    close(l->fd);
    l->fd = -1;
}

void hd_listen_stop(struct hd_listeners *l)
{
    if (!l)
        return;
    if (l->control_path[0])
        unlink(l->control_path);
    if (l->control.active)
        uv_close((uv_handle_t *)&l->control.poll, closed);
    if (l->peer.active)
        uv_close((uv_handle_t *)&l->peer.poll, closed);
    l->control.active = l->peer.active = false;
}

void hd_listen_free(struct hd_listeners *l)
{
    if (!l)
        return;
    if (l->control.fd >= 0 && !l->control.active)
        close(l->control.fd);
    if (l->peer.fd >= 0 && !l->peer.active)
        close(l->peer.fd);
    free(l);
}
