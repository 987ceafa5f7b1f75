/* The handshake: Hello, Challenge/Auth, Welcome or Refused, and resuming. */
#include "conn.h"
#include "exec.h"

#include "lanes.h"
#include "proto/log.h"
#include "validate.h"

#include "proto/auth.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The RPC version this proxy speaks. */
#define PX_VERSION 1

void px_handshake_welcome(struct px_conn *c, struct px_tenant *t,
                          bool resumed)
{
    const struct px_devices *d = c->srv->devs;
    Crane__ServerMessage m = CRANE__SERVER_MESSAGE__INIT;
    Crane__Welcome w = CRANE__WELCOME__INIT;
    Crane__PlatformDesc *plats = calloc(d->nplat, sizeof(*plats));
    Crane__PlatformDesc **pv = calloc(d->nplat, sizeof(*pv));
    struct px_sink sink = px_conn_sink(c);
    struct px_out *o = NULL;
    size_t ndev = 0;

    for (size_t i = 0; i < d->nplat; i++)
        ndev += d->plats[i].ndev;
    Crane__DeviceDesc *devs = calloc(ndev, sizeof(*devs));
    Crane__DeviceDesc **dv = calloc(ndev, sizeof(*dv));
    if (plats && pv && devs && dv) {
        size_t k = 0;
        for (size_t i = 0; i < d->nplat; i++) {
            crane__platform_desc__init(&plats[i]);
            plats[i].id = d->plats[i].id;
            plats[i].devices = dv + k;
            plats[i].n_devices = d->plats[i].ndev;
            pv[i] = &plats[i];
            for (size_t j = 0; j < d->plats[i].ndev; j++, k++) {
                crane__device_desc__init(&devs[k]);
                devs[k].id = d->plats[i].devs[j].id;
                devs[k].type = d->plats[i].devs[j].type;
                dv[k] = &devs[k];
            }
        }
        w.version = PX_VERSION;
        w.session_token.data = t->token;
        w.session_token.len = sizeof(t->token);
        w.quota_bytes = c->srv->quota;
        w.n_platforms = d->nplat;
        w.platforms = pv;
        w.resumed = resumed;
        w.shm_ok = !c->srv->no_shm && (c->srv->ep.kind == CRN_EP_UNIX ||
                                       c->srv->shm_dir || c->srv->shm_pci);
        px_lanes_open(c, t, &w);
        m.msg_case = CRANE__SERVER_MESSAGE__MSG_WELCOME;
        m.welcome = &w;
        o = px_out_pack(&m);
    }
    free(plats);
    free(pv);
    free(devs);
    free(dv);
    if (!o) {
        px_conn_refuse(c, "out of memory");
        return;
    }
    if (resumed) {
        /* What the old stream was owed means nothing on this one: its
         * pending reads leave no replies, its deferred error is gone. */
        for (struct px_pending *p = t->pend_head; p; p = p->next)
            p->orphan = true;
        t->deferred_seq = 0;
        t->deferred_err = 0;
    }
    c->tenant = t;
    c->resuming = NULL;
    t->conn = c;
    c->state = PX_CONN_READY;
    atomic_store(&c->stop, false);
    px_beat_add(c);
    CRN_INFO("tenant %llu (%s pid %u): %s on connection %llu",
            (unsigned long long)t->num, t->program, t->pid,
            resumed ? "resumed" : "connected", (unsigned long long)c->num);
    /* The Welcome first, then notices held while detached. */
    px_tenant_attach(t, &sink, o);
    if (!resumed)
        PX_ROLE_CALL(c->srv, tenant, c->srv, t);
    PX_ROLE_CALL(c->srv, watch, c);
    px_conn_schedule(c);
}

static void new_tenant(struct px_conn *c);

/* Reattaches the tenant named by the Hello's resume token. */
static void resume(struct px_conn *c)
{
    struct px_tenant *t;

    if (c->srv->grace_ms == 0) {
        px_conn_refuse(c, "cannot resume: the proxy keeps no tenants "
                               "(no --grace)");
        return;
    }
    t = px_server_find_tenant(c->srv, c->token, c->token_len);
    if (!t) {
        px_conn_refuse(c, "unknown resume token (grace period over?)");
        return;
    }
    if (t->waiting) {
        px_conn_refuse(c, "tenant %llu is being resumed already",
                            (unsigned long long)t->num);
        return;
    }
    t->pid = c->pid;
    if (!t->conn) {
        if (t->grace_armed) {
            uv_timer_stop(&t->grace);
            t->grace_armed = false;
        }
        px_handshake_welcome(c, t, true);
        return;
    }
    /* Its old connection is still open (the client saw it break first):
     * close that one; the tenant comes here once its work has stopped. */
    t->waiting = c;
    c->resuming = t;
    c->state = PX_CONN_RESUME_WAIT;
    px_conn_close(t->conn, "replaced by a resuming connection");
}

/* How many ready connections the peer of C has (C not counted): with
 * isolation, the workers holding a tenant of it. */
static size_t peer_conns(struct px_server *srv, const struct px_conn *c)
{
    size_t n = 0;

    if (srv->role_ops && srv->role_ops->peer_tenants)
        return srv->role_ops->peer_tenants(srv, c->peer);
    for (struct px_conn *o = srv->conns; o; o = o->next)
        if (o != c && !o->pa.listed && o->state != PX_CONN_CLOSING &&
            strcmp(o->peer, c->peer) == 0)
            n++;
    return n;
}

void px_handshake_finish(struct px_conn *c)
{
    uint64_t max = c->srv->limits.max_peer_conns;

    if (c->srv->role == PX_ROLE_WORKER) {
        /* The supervisor checked the peer; the tenant lives here. */
        px_conn_ready(c);
        if (c->lane)
            px_lanes_attach(c);
        else if (c->token_len)
            resume(c);
        else
            new_tenant(c);
        return;
    }
    if (max && peer_conns(c->srv, c) >= max) {
        px_conn_refuse(c, "%s has %llu connections already (at most "
                               "--max-peer-connections)",
                            c->peer, (unsigned long long)max);
        return;
    }
    px_conn_ready(c);
    if (c->srv->role == PX_ROLE_SUPERVISOR) {
        if (c->token_len && !c->lane && c->srv->grace_ms == 0) {
            px_conn_refuse(c, "cannot resume: the proxy keeps no "
                                   "tenants (no --grace)");
            return;
        }
        /* A worker makes or resumes the tenant (supervisor.c). */
        c->state = PX_CONN_HANDOFF;
        return;
    }
    if (c->lane) {
        px_lanes_attach(c);
        return;
    }
    if (c->token_len) {
        resume(c);
        return;
    }
    new_tenant(c);
}

static void new_tenant(struct px_conn *c)
{
    struct px_tenant *t = px_server_new_tenant(c->srv);

    if (!t) {
        px_conn_refuse(c, "out of memory");
        return;
    }
    memcpy(t->program, c->program, sizeof(t->program));
    t->pid = c->pid;
    px_handshake_welcome(c, t, false);
}

static void hello(struct px_conn *c, const Crane__Hello *h)
{
    Crane__ServerMessage m = CRANE__SERVER_MESSAGE__INIT;
    Crane__Challenge ch = CRANE__CHALLENGE__INIT;
    struct px_out *o;
    size_t i;

    /* The program name is for logs: printable characters only. */
    for (i = 0; h->program[i] && i < sizeof(c->program) - 1; i++)
        c->program[i] = isprint((unsigned char)h->program[i])
                            ? h->program[i]
                            : '?';
    c->program[i] = '\0';
    c->pid = h->pid;
    if (h->version != PX_VERSION) {
        px_conn_refuse(c, "RPC version %u not supported (this proxy "
                               "speaks %d)",
                            h->version, PX_VERSION);
        return;
    }
    c->token_len = h->resume_token.len;
    if (c->token_len)
        memcpy(c->token, h->resume_token.data, c->token_len);
    if (h->lane_of.len) {
        /* A lane: its tenant's token routes it as a resume's does. */
        if (h->lane_of.len != PX_TOKEN_LEN || c->token_len ||
            h->lane_mac.len != sizeof(c->lane_mac) ||
            h->lane_index >= CRN_LANES_MAX) {
            px_conn_refuse(c, "a malformed lane Hello");
            return;
        }
        c->lane = true;
        c->lane_index = h->lane_index;
        c->lane_generation = h->lane_generation;
        memcpy(c->lane_mac, h->lane_mac.data, sizeof(c->lane_mac));
        c->token_len = h->lane_of.len;
        memcpy(c->token, h->lane_of.data, c->token_len);
    }
    if (!c->srv->key) {
        px_handshake_finish(c);
        return;
    }
    if (crn_random_bytes(c->nonce, sizeof(c->nonce)) < 0) {
        px_conn_refuse(c, "no random nonce");
        return;
    }
    ch.nonce.data = c->nonce;
    ch.nonce.len = sizeof(c->nonce);
    m.msg_case = CRANE__SERVER_MESSAGE__MSG_CHALLENGE;
    m.challenge = &ch;
    o = px_out_pack(&m);
    if (!o) {
        px_conn_refuse(c, "out of memory");
        return;
    }
    c->state = PX_CONN_AUTH;
    px_conn_send(c, o);
}

static void auth(struct px_conn *c, const Crane__Auth *a)
{
    uint8_t want[CRN_SHA256_LEN];

    if (crn_hmac_sha256(c->srv->key, c->srv->key_len, c->nonce,
                        sizeof(c->nonce), want) < 0 ||
        a->mac.len != sizeof(want) ||
        !crn_auth_equal(a->mac.data, want, sizeof(want))) {
        px_conn_refuse(c, "authentication failed");
        return;
    }
    px_handshake_finish(c);
}

void px_handshake(struct px_conn *c, Crane__ClientMessage *m)
{
    char why[160];

    if (px_validate(m, why, sizeof(why)) < 0) {
        px_conn_refuse(c, "%s", why);
    } else if (c->state == PX_CONN_HELLO) {
        if (m->msg_case != CRANE__CLIENT_MESSAGE__MSG_HELLO)
            px_conn_refuse(c, "expected Hello");
        else
            hello(c, m->hello);
    } else if (c->state == PX_CONN_AUTH) {
        if (m->msg_case != CRANE__CLIENT_MESSAGE__MSG_AUTH)
            px_conn_refuse(c, "expected Auth");
        else
            auth(c, m->auth);
    }
    crane__client_message__free_unpacked(m, NULL);
}
