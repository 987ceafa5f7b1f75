/* crane-guestd's host side: host channel, cranectl socket, command table. */
#include "host.h"

#include "proto/log.h"
#include "migrate.h"
#include "port.h"
#include "status.h"

#include "proto/auth.h"
#include "proto/guest_auth.h"
#include "proto/tls_uv.h"

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
    /* Authentication (a keyed listener only). */
    bool need_auth, authed, challenged;
    uint8_t nonce[CRN_GUEST_NONCE_LEN];   /* ours, for the host's proof */
    /* Liveness: commands not answered yet, and the last traffic. */
    double accepted_at, last_active;
    unsigned pending;
};

struct gd_listen_slot {
    union crn_listener lis;
    bool listening;
    bool keyed;                  /* its connections must authenticate */
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
    uint8_t *key;                /* host_key's bytes, or NULL */
    struct crn_tls_config *tls;  /* a tcp: channel's TLS, or NULL */
    size_t key_len;
    uv_timer_t sweep;            /* handshake and idle timeouts */
    bool sweep_init;
};

/* --- commands ------------------------------------------------------------ */

/* The host's commands, from the rows of proto/control_ops.def: for each
 * row of the host hop a run_<name> that hands the command's field to
 * gd_<host_exec>, and its row in host_cmds. */
#define GD_HOST_RUN_NONE(OP, name, exec)
#define GD_HOST_RUN_HOST(OP, name, exec)                                    \
    static void run_##name(struct gd_daemon *d, struct gd_peer *peer,       \
                           const Crane__Control__HostMessage *m)            \
    {                                                                       \
        gd_##exec(d, peer, m->id, m->name);                                 \
    }
#define CRN_CONTROL_OP(OP, name, host, host_exec, shim, shim_exec)         \
    GD_HOST_RUN_##host(OP, name, host_exec)
#include "proto/control_ops.def"
#undef CRN_CONTROL_OP

static const struct host_cmd {
    Crane__Control__HostMessage__MsgCase which;
    Crane__Control__Op op;
    void (*run)(struct gd_daemon *d, struct gd_peer *peer,
                const Crane__Control__HostMessage *m);
} host_cmds[] = {
#define GD_HOST_CMD_NONE(OP, name)
#define GD_HOST_CMD_HOST(OP, name)                                          \
    {CRANE__CONTROL__HOST_MESSAGE__MSG_##OP, GD_OP(OP), run_##name},
#define CRN_CONTROL_OP(OP, name, host, host_exec, shim, shim_exec)         \
    GD_HOST_CMD_##host(OP, name)
#include "proto/control_ops.def"
#undef CRN_CONTROL_OP
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
            CRN_DEBUG("%s: status (id %llu)", peer->name,
                     (unsigned long long)m->id);
        else
            CRN_INFO("%s: %s (id %llu)", peer->name, gd_op_name(cmd->op),
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

    /* Every command gets exactly one answer. */
    if (hc->pending)
        hc->pending--;
    hc->last_active = gd_now();
    return gd_conn_send(&hc->conn, msg);
}

/* What answers nothing (a prepare's progress): traffic, no answer owed. */
static int conn_push(struct gd_peer *peer, const ProtobufCMessage *msg)
{
    struct host_conn *hc =
        (struct host_conn *)((char *)peer - offsetof(struct host_conn, peer));

    hc->last_active = gd_now();
    return gd_conn_send(&hc->conn, msg);
}

/* A bare Ack for the handshake: its result, nothing else (OP: the command
 * refused, if one was). */
static void handshake_ack(struct host_conn *hc, uint64_t id,
                          Crane__Control__Op op, int err, const char *why)
{
    Crane__Control__GuestMessage m = CRANE__CONTROL__GUEST_MESSAGE__INIT;
    Crane__Control__Ack ack = CRANE__CONTROL__ACK__INIT;

    ack.op = op;
    ack.err = err;
    ack.error = (char *)why;
    ack.phase = hc->host->d->phase;
    m.id = id;
    m.msg_case = CRANE__CONTROL__GUEST_MESSAGE__MSG_ACK;
    m.ack = &ack;
    conn_send(&hc->peer, &m.base);
}

static void auth_refuse(struct host_conn *hc, uint64_t id,
                        Crane__Control__Op op, const char *why)
{
    CRN_WARN("%s: not authenticated: %s", hc->peer.name, why);
    handshake_ack(hc, id, op, -EACCES, why);
    gd_conn_close(&hc->conn, "not authenticated");
}

/* Hello: answer with our proof and a nonce of our own. */
static void auth_hello(struct host_conn *hc, uint64_t id,
                       const Crane__Control__Hello *h)
{
    Crane__Control__GuestMessage m = CRANE__CONTROL__GUEST_MESSAGE__INIT;
    Crane__Control__Challenge ch = CRANE__CONTROL__CHALLENGE__INIT;
    struct gd_host *host = hc->host;
    uint8_t mac[CRN_SHA256_LEN];

    if (h->version != 1 || crn_random_bytes(hc->nonce, sizeof(hc->nonce)) ||
        crn_guest_proof(host->key, host->key_len, CRN_GUEST_SERVER,
                        h->nonce.data, h->nonce.len, mac) < 0) {
        auth_refuse(hc, id, GD_OP(NONE),
                    "bad hello (version 1, a 32-byte nonce)");
        return;
    }
    hc->challenged = true;
    ch.nonce.data = hc->nonce;
    ch.nonce.len = sizeof(hc->nonce);
    ch.mac.data = mac;
    ch.mac.len = sizeof(mac);
    m.id = id;
    m.msg_case = CRANE__CONTROL__GUEST_MESSAGE__MSG_CHALLENGE;
    m.challenge = &ch;
    conn_send(&hc->peer, &m.base);
}

/* Auth: the host's proof over our nonce. */
static void auth_check(struct host_conn *hc, uint64_t id,
                       const Crane__Auth *a)
{
    struct gd_host *host = hc->host;
    uint8_t want[CRN_SHA256_LEN];

    if (crn_guest_proof(host->key, host->key_len, CRN_GUEST_CLIENT,
                        hc->nonce, sizeof(hc->nonce), want) < 0 ||
        a->mac.len != sizeof(want) ||
        !crn_auth_equal(want, a->mac.data, sizeof(want))) {
        auth_refuse(hc, id, GD_OP(NONE), "wrong key (host_key differs)");
        return;
    }
    hc->authed = true;
    CRN_INFO("%s: authenticated", hc->peer.name);
    handshake_ack(hc, id, GD_OP(NONE), 0, "authenticated");
}

/* Before authentication only the handshake is read; anything else, or
 * the handshake out of order, closes the connection. */
static void auth_frame(struct host_conn *hc, const uint8_t *msg, size_t len)
{
    Crane__Control__HostMessage *m =
        crane__control__host_message__unpack(NULL, len, msg);

    const struct host_cmd *cmd = NULL;

    for (size_t i = 0; m && i < sizeof(host_cmds) / sizeof(*host_cmds); i++)
        if (host_cmds[i].which == m->msg_case)
            cmd = &host_cmds[i];
    if (!m)
        auth_refuse(hc, 0, GD_OP(NONE),
                    "authenticate first (undecodable message)");
    else if (m->msg_case == CRANE__CONTROL__HOST_MESSAGE__MSG_HELLO &&
             !hc->challenged)
        auth_hello(hc, m->id, m->hello);
    else if (m->msg_case == CRANE__CONTROL__HOST_MESSAGE__MSG_AUTH &&
             hc->challenged)
        auth_check(hc, m->id, m->auth);
    else
        auth_refuse(hc, m->id, cmd ? cmd->op : GD_OP(NONE),
                    "authenticate first: this channel needs the shared key "
                    "(Hello, Auth; host_key)");
    if (m)
        crane__control__host_message__free_unpacked(m, NULL);
}

static bool conn_frame(struct gd_conn *c, const uint8_t *msg, size_t len)
{
    struct host_conn *hc = (struct host_conn *)c;

    hc->pending++;
    hc->last_active = gd_now();
    if (hc->need_auth && !hc->authed)
        auth_frame(hc, msg, len);
    else
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

/* The connection to drop for a newcomer at GD_MAX_HOST_CONNS: the oldest
 * not authenticated yet, else the one idle longest with nothing asked;
 * NULL when every one waits for an answer. */
static struct host_conn *host_victim(struct gd_host *h)
{
    struct host_conn *unauth = NULL, *idle = NULL;

    for (struct host_conn *c = h->conns; c; c = c->next) {
        if (c->conn.closing)
            continue;
        if (c->need_auth && !c->authed) {
            if (!unauth || c->accepted_at < unauth->accepted_at)
                unauth = c;
        } else if (!c->pending &&
                   (!idle || c->last_active < idle->last_active)) {
            idle = c;
        }
    }
    return unauth ? unauth : idle;
}

static void arm_sweep(struct gd_host *h);

/* Closes connections past their handshake timeout, and those idle (no
 * command waiting, no traffic) for host_idle_ms. */
static void on_sweep(uv_timer_t *t)
{
    struct gd_host *h = t->data;
    const struct gd_config *cfg = &h->d->cfg;
    double now = gd_now();

    for (struct host_conn *c = h->conns; c; c = c->next) {
        if (c->conn.closing)
            continue;
        if (c->need_auth && !c->authed &&
            now - c->accepted_at >= cfg->host_handshake_ms / 1e3)
            gd_conn_close(&c->conn, "no authentication within "
                                    "host_handshake_ms");
        else if (cfg->host_idle_ms && !c->pending &&
                 now - c->last_active >= cfg->host_idle_ms / 1e3)
            gd_conn_close(&c->conn, "idle for host_idle_ms");
    }
    arm_sweep(h);
}

/* Runs the sweep at the next moment a connection may be due. */
static void arm_sweep(struct gd_host *h)
{
    const struct gd_config *cfg = &h->d->cfg;
    double next = 0, now = gd_now();
    bool any = false;

    for (struct host_conn *c = h->conns; c; c = c->next) {
        double due;
        if (c->conn.closing)
            continue;
        if (c->need_auth && !c->authed)
            due = c->accepted_at + cfg->host_handshake_ms / 1e3;
        else if (cfg->host_idle_ms && !c->pending)
            due = c->last_active + cfg->host_idle_ms / 1e3;
        else if (cfg->host_idle_ms)
            due = now + cfg->host_idle_ms / 1e3;   /* look again later */
        else
            continue;
        if (!any || due < next)
            next = due;
        any = true;
    }
    if (!any || h->d->stopping) {
        uv_timer_stop(&h->sweep);
        return;
    }
    uv_timer_start(&h->sweep, on_sweep,
                   next <= now ? 1 : (uint64_t)((next - now) * 1e3) + 1, 0);
}

/* A new connection on SLOT: accepted from S, or FD >= 0, the plaintext
 * socket of a TLS relay (tls_accepted). */
static void add_conn(struct gd_listen_slot *slot, uv_stream_t *s, int fd)
{
    struct gd_host *h = slot->host;
    struct host_conn *hc, *victim = NULL;
    size_t n = 0;

    if (h->d->stopping || !(hc = calloc(1, sizeof(*hc)))) {
        if (fd >= 0)
            close(fd);
        return;
    }
    for (struct host_conn *c = h->conns; c; c = c->next)
        n += !c->conn.closing;
    if (n >= GD_MAX_HOST_CONNS && !(victim = host_victim(h))) {
        CRN_WARN("%s socket: %d connections already, each waiting for an "
                "answer; refusing one",
                slot->what, GD_MAX_HOST_CONNS);
        hc->refused = true;
    }
    if (victim) {
        CRN_WARN("%s socket: %d connections already; dropping %s (%s)",
                slot->what, GD_MAX_HOST_CONNS, victim->peer.name,
                victim->need_auth && !victim->authed ? "not authenticated"
                                                     : "idle");
        gd_conn_close(&victim->conn, NULL);
    }
    hc->host = h;
    hc->need_auth = slot->keyed;
    hc->accepted_at = hc->last_active = gd_now();
    hc->peer.send = conn_send;
    hc->peer.push = conn_push;
    snprintf(hc->peer.name, sizeof(hc->peer.name), "%s#%u", slot->what,
             ++h->next_conn);
    hc->next = h->conns;
    h->conns = hc;
    if ((fd >= 0 ? gd_conn_open(h->d->loop, fd, &hc->conn, conn_frame,
                                conn_closed, h)
                 : gd_conn_accept(s, &hc->conn, conn_frame, conn_closed,
                                  h)) == 0) {
        hc->conn.too_big = conn_too_big;
        snprintf(hc->conn.name, sizeof(hc->conn.name), "%s", hc->peer.name);
        if (hc->refused) {
            gd_conn_close(&hc->conn, NULL);
            return;
        }
        /* A peer across a network that vanishes without a word (a host
         * that crashed) is noticed by the keepalive probes. */
        if (hc->conn.h.handle.type == UV_TCP && h->d->cfg.host_keepalive_s)
            uv_tcp_keepalive(&hc->conn.h.tcp, 1, h->d->cfg.host_keepalive_s);
        if (!uv_is_active((uv_handle_t *)&h->sweep))
            arm_sweep(h);
    }
}

static void tls_accepted(void *arg, int fd, const char *peer,
                         const char *why)
{
    struct gd_listen_slot *slot = arg;

    if (fd < 0)
        CRN_WARN("%s channel: tcp connection from %s refused: %s",
                slot->what, peer, why);
    else
        add_conn(slot, NULL, fd);
}

static void on_connection(uv_stream_t *s, int status)
{
    struct gd_listen_slot *slot = s->data;
    struct gd_host *h = slot->host;
    int rc;

    if (status < 0) {
        CRN_WARN("%s socket: %s", slot->what, uv_strerror(status));
        return;
    }
    if (!slot->keyed || !h->tls) {
        add_conn(slot, s, -1);
        return;
    }
    /* TLS first, on a thread of its own (proto/tls_uv.c); the channel's
     * own handshake (Hello, Challenge, Auth) then runs inside it. */
    rc = crn_tls_uv_accept(s, h->tls, h->d->cfg.host_handshake_ms,
                           tls_accepted, slot);
    if (rc < 0)
        CRN_WARN("%s socket: %s", slot->what, uv_strerror(rc));
}

static int listen_slot(struct gd_host *h, struct gd_listen_slot *slot,
                       const char *endpoint, unsigned mode, const char *what,
                       char *why, size_t why_len)
{
    int rc;

    slot->what = what;
    slot->host = h;
    /* A channel that can cross a machine boundary takes the key. */
    slot->keyed = strncmp(endpoint, "tcp:", 4) == 0 ||
                  strncmp(endpoint, "vsock:", 6) == 0;
    if (slot->keyed && !h->key) {
        snprintf(why, why_len, "the %s channel %s can be reached from "
                 "other machines: it needs host_key (a shared key file; "
                 "docs/guest.md)", what, endpoint);
        return -EINVAL;
    }
    rc = gd_listen(h->d->loop, &slot->lis, endpoint, mode, on_connection,
                   slot->path, sizeof(slot->path), why, why_len);
    if (rc < 0)
        return rc;
    slot->lis.handle.data = slot;
    slot->listening = true;
    if (slot->keyed)
        CRN_INFO("%s channel: listening on %s (authenticated with host_key, "
                "TLS %s)", what, endpoint,
                crn_tls_mode_name(crn_tls_config_mode(h->tls)));
    else
        CRN_INFO("%s channel: listening on %s", what, endpoint);
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

/* A tcp: host channel speaks TLS (tls, pki_dir; psk with host_key). */
static int start_tls(struct gd_host *h, char *why, size_t why_len)
{
    const struct gd_config *cfg = &h->d->cfg;
    enum crn_tls_mode mode = CRN_TLS_AUTO;
    char text[400];
    int rc;

    crn_tls_mode_parse(cfg->tls, &mode);
    rc = crn_tls_config_new(mode, CRN_TLS_SERVER, cfg->pki_dir,
                            cfg->host_key[0] ? cfg->host_key : NULL,
                            &h->tls, text, sizeof(text));
    if (rc < 0) {
        snprintf(why, why_len, "host channel TLS: %s", text);
        return rc;
    }
    if (!h->tls)
        CRN_WARN("host channel %s without TLS (tls = %s): the host's "
                "requests cross the network in clear", cfg->host, cfg->tls);
    return 0;
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
    uv_timer_init(d->loop, &h->sweep);
    h->sweep.data = h;
    h->sweep_init = true;
    if (d->cfg.host_key[0] &&
        (rc = crn_auth_key_load(d->cfg.host_key, &h->key, &h->key_len)) < 0) {
        snprintf(why, why_len, "host_key %s: %s", d->cfg.host_key,
                 rc == -EINVAL ? "empty" : strerror(-rc));
        return rc;
    }
    if (strncmp(hc, "tcp:", 4) == 0 && (rc = start_tls(h, why, why_len)) < 0)
        return rc;
    if (strncmp(hc, "unix:", 5) == 0 || strncmp(hc, "tcp:", 4) == 0 ||
        strncmp(hc, "vsock:", 6) == 0)
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
    if (h->sweep_init && !uv_is_closing((uv_handle_t *)&h->sweep))
        uv_close((uv_handle_t *)&h->sweep, NULL);
    if (h->key) {
        explicit_bzero(h->key, h->key_len);
        free(h->key);
        h->key = NULL;
    }
    close_slot(&h->host_lis);
    close_slot(&h->ctl_lis);
    crn_tls_config_free(h->tls);
    h->tls = NULL;
    for (struct host_conn *c = h->conns; c; c = c->next)
        gd_conn_close(&c->conn, NULL);
    if (h->port) {
        gd_migrate_forget_peer(d, (struct gd_peer *)h->port);
        gd_port_close(h->port);
        h->port = NULL;
    }
}
