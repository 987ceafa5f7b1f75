/* crane-guestd's host side: host channel, cranectl socket, command table. */
#include "host.h"

#include "log.h"
#include "migrate.h"
#include "port.h"
#include "status.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct host_conn {
    struct gd_conn conn;         /* first */
    struct gd_peer peer;
    struct gd_host *host;
    struct host_conn *next;
    bool refused;                /* over GD_MAX_HOST_CONNS */
};

struct gd_listen_slot {
    union gd_listener lis;
    bool listening;
    char path[108];              /* unix socket to unlink at the end */
    const char *what;
    struct gd_host *host;
};

struct gd_host {
    struct gd_daemon *d;
    struct gd_listen_slot host_lis, ctl_lis;
    struct host_conn *conns;
    struct gd_port *port;
    unsigned next_conn;
};

/* --- commands ------------------------------------------------------------ */

static void run_status(struct gd_daemon *d, struct gd_peer *peer,
                       const Crane__Control__HostMessage *m)
{
    gd_status_request(d, peer, m->id, m->status);
}

static void run_prepare(struct gd_daemon *d, struct gd_peer *peer,
                        const Crane__Control__HostMessage *m)
{
    gd_migrate_prepare(d, peer, m->id, m->prepare);
}

static void run_resume(struct gd_daemon *d, struct gd_peer *peer,
                       const Crane__Control__HostMessage *m)
{
    gd_migrate_resume(d, peer, m->id, m->resume);
}

static void run_abort(struct gd_daemon *d, struct gd_peer *peer,
                      const Crane__Control__HostMessage *m)
{
    gd_migrate_abort(d, peer, m->id, m->abort);
}

static const struct host_cmd {
    Crane__Control__HostMessage__MsgCase which;
    Crane__Control__Op op;
    void (*run)(struct gd_daemon *d, struct gd_peer *peer,
                const Crane__Control__HostMessage *m);
} host_cmds[] = {
    {CRANE__CONTROL__HOST_MESSAGE__MSG_STATUS, GD_OP(STATUS), run_status},
    {CRANE__CONTROL__HOST_MESSAGE__MSG_PREPARE, GD_OP(PREPARE), run_prepare},
    {CRANE__CONTROL__HOST_MESSAGE__MSG_RESUME, GD_OP(RESUME), run_resume},
    {CRANE__CONTROL__HOST_MESSAGE__MSG_ABORT, GD_OP(ABORT), run_abort},
};

void gd_host_frame(struct gd_daemon *d, struct gd_peer *peer,
                   const uint8_t *msg, size_t len)
{
    Crane__Control__HostMessage *m =
        crane__control__host_message__unpack(NULL, len, msg);
    const struct host_cmd *cmd = NULL;

    if (!m) {
        gd_reply_error(d, peer, 0, GD_OP(NONE), -EBADMSG,
                       "undecodable message (%zu bytes)", len);
        return;
    }
    for (size_t i = 0; i < sizeof(host_cmds) / sizeof(*host_cmds); i++)
        if (host_cmds[i].which == m->msg_case)
            cmd = &host_cmds[i];
    if (!cmd) {
        gd_reply_error(d, peer, m->id, GD_OP(NONE), -EOPNOTSUPP,
                       "unknown or missing command");
    } else {
        if (cmd->op == GD_OP(STATUS))
            GD_DEBUG("%s: status (id %llu)", peer->name,
                     (unsigned long long)m->id);
        else
            GD_INFO("%s: %s (id %llu)", peer->name, gd_op_name(cmd->op),
                    (unsigned long long)m->id);
        cmd->run(d, peer, m);
    }
    crane__control__host_message__free_unpacked(m, NULL);
}

/* --- socket peers (cranectl; the host channel in tests) ------------------ */

static int conn_send(struct gd_peer *peer, const ProtobufCMessage *msg)
{
    struct host_conn *hc =
        (struct host_conn *)((char *)peer - offsetof(struct host_conn, peer));

    return gd_conn_send(&hc->conn, msg);
}

static bool conn_frame(struct gd_conn *c, const uint8_t *msg, size_t len)
{
    struct host_conn *hc = (struct host_conn *)c;

    gd_host_frame(hc->host->d, &hc->peer, msg, len);
    return !c->closing;
}

static void conn_too_big(struct gd_conn *c)
{
    struct host_conn *hc = (struct host_conn *)c;

    gd_reply_error(hc->host->d, &hc->peer, 0, GD_OP(NONE), -EMSGSIZE,
                   "frame over the 64 KiB limit; closing the connection");
}

static void conn_closed(struct gd_conn *c)
{
    struct host_conn *hc = (struct host_conn *)c;
    struct gd_host *h = hc->host;

    for (struct host_conn **pp = &h->conns; *pp; pp = &(*pp)->next) {
        if (*pp == hc) {
            *pp = hc->next;
            break;
        }
    }
    gd_migrate_forget_peer(h->d, &hc->peer);
    free(hc);
}

static void on_connection(uv_stream_t *s, int status)
{
    struct gd_listen_slot *slot = s->data;
    struct gd_host *h = slot->host;
    struct host_conn *hc;

    if (status < 0) {
        GD_WARN("%s socket: %s", slot->what, uv_strerror(status));
        return;
    }
    if (h->d->stopping || !(hc = calloc(1, sizeof(*hc))))
        return;
    size_t n = 0;
    for (struct host_conn *c = h->conns; c; c = c->next)
        n++;
    if (n >= GD_MAX_HOST_CONNS) {
        GD_WARN("%s socket: %d connections already; refusing one",
                slot->what, GD_MAX_HOST_CONNS);
        hc->refused = true;
    }
    hc->host = h;
    hc->peer.send = conn_send;
    snprintf(hc->peer.name, sizeof(hc->peer.name), "%s#%u", slot->what,
             ++h->next_conn);
    hc->next = h->conns;
    h->conns = hc;
    if (gd_conn_accept(s, &hc->conn, conn_frame, conn_closed, h) == 0) {
        hc->conn.too_big = conn_too_big;
        snprintf(hc->conn.name, sizeof(hc->conn.name), "%s", hc->peer.name);
        if (hc->refused)
            gd_conn_close(&hc->conn, NULL);
    }
}

static int listen_slot(struct gd_host *h, struct gd_listen_slot *slot,
                       const char *endpoint, unsigned mode, const char *what,
                       char *why, size_t why_len)
{
    int rc;

    slot->what = what;
    slot->host = h;
    rc = gd_listen(h->d->loop, &slot->lis, endpoint, mode, on_connection,
                   slot->path, sizeof(slot->path), why, why_len);
    if (rc < 0)
        return rc;
    slot->lis.handle.data = slot;
    slot->listening = true;
    GD_INFO("%s channel: listening on %s", what, endpoint);
    return 0;
}

static void close_slot(struct gd_listen_slot *slot)
{
    if (!slot->listening)
        return;
    uv_close(&slot->lis.handle, NULL);
    slot->listening = false;
    if (slot->path[0])
        unlink(slot->path);
}

/* --- the virtio-serial port ---------------------------------------------- */

static void port_frame(void *arg, struct gd_peer *peer, const uint8_t *msg,
                       size_t len)
{
    if (!msg)
        gd_reply_error(arg, peer, 0, GD_OP(NONE), -EMSGSIZE,
                       "frame over the 64 KiB limit; input dropped");
    else
        gd_host_frame(arg, peer, msg, len);
}

int gd_host_start(struct gd_daemon *d, char *why, size_t why_len)
{
    struct gd_host *h = calloc(1, sizeof(*h));
    const char *hc = d->cfg.host;
    int rc;

    if (!h)
        return -ENOMEM;
    h->d = d;
    d->host = h;
    if (strncmp(hc, "unix:", 5) == 0 || strncmp(hc, "tcp:", 4) == 0)
        rc = listen_slot(h, &h->host_lis, hc, 0600, "host", why, why_len);
    else if ((rc = gd_port_open(d->loop, hc, port_frame, d, &h->port)) < 0)
        snprintf(why, why_len, "cannot use the host port %s: %s", hc,
                 strerror(-rc));
    if (rc == 0 && d->cfg.control[0])
        rc = listen_slot(h, &h->ctl_lis, d->cfg.control,
                         d->cfg.control_mode, "control", why, why_len);
    return rc;
}

void gd_host_stop(struct gd_daemon *d)
{
    struct gd_host *h = d->host;

    if (!h)
        return;
    close_slot(&h->host_lis);
    close_slot(&h->ctl_lis);
    for (struct host_conn *c = h->conns; c; c = c->next)
        gd_conn_close(&c->conn, NULL);
    if (h->port) {
        gd_migrate_forget_peer(d, (struct gd_peer *)h->port);
        gd_port_close(h->port);
        h->port = NULL;
    }
}
