/* What crane-proxy's server keeps for its connections: the tenants kept
 * across connects (made, found by token, kept for --grace, torn down on
 * the pool) and the loop's spin after traffic (server.h). */
#include "server_state.h"

#include "dispatch.h"
#include "proto/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void spin_check(uv_idle_t *h)
{
    struct px_server *srv = h->data;

    if (uv_hrtime() >= srv->spin_until)
        uv_idle_stop(h);
}

void px_server_active(struct px_server *srv)
{
    if (!srv->spin_ns || srv->stopping)
        return;
    srv->spin_until = uv_hrtime() + srv->spin_ns;
    if (!uv_is_active((uv_handle_t *)&srv->spin))
        uv_idle_start(&srv->spin, spin_check);
}

struct px_tenant *px_server_new_tenant(struct px_server *srv)
{
    struct px_tenant *t = px_tenant_new(srv->devs, srv->next_tenant + 1,
                                        srv->quota);

    if (!t)
        return NULL;
    t->max_objects = srv->limits.max_objects;
    srv->next_tenant++;
    t->next = srv->tenants;
    srv->tenants = t;
    return t;
}

struct px_tenant *px_server_find_tenant(struct px_server *srv,
                                        const uint8_t *token, size_t len)
{
    if (len != PX_TOKEN_LEN)
        return NULL;
    for (struct px_tenant *t = srv->tenants; t; t = t->next) {
        uint8_t diff = 0;
        for (size_t i = 0; i < PX_TOKEN_LEN; i++)
            diff |= t->token[i] ^ token[i];
        if (diff == 0)
            return t;
    }
    return NULL;
}

/* --- teardown: on a worker, since releasing may wait for the device --- */

struct teardown_work {
    uv_work_t work;
    struct px_server *srv;
    struct px_tenant *t;
    size_t released;
};

static void teardown_run(uv_work_t *w)
{
    struct teardown_work *tw = w->data;

    tw->released = px_exec_teardown(tw->t);
}

static void timer_closed(uv_handle_t *h)
{
    px_tenant_unref(h->data);
}

static void teardown_done(uv_work_t *w, int status)
{
    struct teardown_work *tw = w->data;
    struct px_tenant *t = tw->t;

    (void)status;
    tw->srv->tearing_down--;
    PX_ROLE_CALL(tw->srv, gone, tw->srv, t);
    CRN_INFO("tenant %llu (%s pid %u): released %zu objects",
            (unsigned long long)t->num, t->program, t->pid, tw->released);
    /* The grace timer holds its own reference until it is closed. */
    if (t->grace.loop)
        uv_close((uv_handle_t *)&t->grace, timer_closed);
    struct px_server *srv = tw->srv;

    px_tenant_unref(t);
    free(tw);
    PX_ROLE_CALL(srv, idle, srv);
}

static void unlink_tenant(struct px_server *srv, struct px_tenant *t)
{
    for (struct px_tenant **p = &srv->tenants; *p; p = &(*p)->next) {
        if (*p == t) {
            *p = t->next;
            break;
        }
    }
    t->next = NULL;
}

static void teardown(struct px_server *srv, struct px_tenant *t)
{
    struct teardown_work *tw = calloc(1, sizeof(*tw));

    unlink_tenant(srv, t);
    t->closing = true;
    if (!tw) {
        /* Out of memory: release here, blocking the loop briefly. */
        CRN_ERROR("tenant %llu: releasing on the loop thread",
                 (unsigned long long)t->num);
        px_exec_teardown(t);
        if (t->grace.loop)
            uv_close((uv_handle_t *)&t->grace, timer_closed);
        px_tenant_unref(t);
        return;
    }
    tw->srv = srv;
    tw->t = t;
    tw->work.data = tw;
    srv->tearing_down++;
    if (uv_queue_work(srv->loop, &tw->work, teardown_run, teardown_done) <
        0) {
        tw->released = px_exec_teardown(t);
        teardown_done(&tw->work, 0);
    }
}

static void grace_over(uv_timer_t *timer)
{
    struct px_tenant *t = timer->data;

    t->grace_armed = false;
    struct px_server *srv = timer->loop->data;

    CRN_INFO("tenant %llu (%s pid %u): grace period over",
            (unsigned long long)t->num, t->program, t->pid);
    if (srv->role_ops && srv->role_ops->ending) {
        char why[256];
        snprintf(why, sizeof(why), "tenant %llu (%s pid %u): grace period "
                 "over", (unsigned long long)t->num, t->program, t->pid);
        srv->role_ops->ending(srv, why, srv->limits.release_ms);
    }
    teardown(srv, t);
}

void px_server_tenant_released(struct px_server *srv, struct px_tenant *t)
{
    struct px_conn *next = t->waiting;

    if (next) {
        t->waiting = NULL;
        srv->welcome(next, t, true);
        return;
    }
    if (srv->grace_ms && !srv->stopping) {
        if (!t->grace.loop) {
            uv_timer_init(srv->loop, &t->grace);
            t->grace.data = t;
            px_tenant_ref(t);    /* the timer's, dropped when closed */
        }
        uv_timer_start(&t->grace, grace_over, srv->grace_ms, 0);
        t->grace_armed = true;
        CRN_INFO("tenant %llu (%s pid %u): kept for %llu ms",
                (unsigned long long)t->num, t->program, t->pid,
                (unsigned long long)srv->grace_ms);
        return;
    }
    teardown(srv, t);
}

void px_server_release_detached(struct px_server *srv)
{
    for (struct px_tenant *t = srv->tenants, *next; t; t = next) {
        next = t->next;
        if (t->conn)
            continue;
        if (t->grace_armed) {
            uv_timer_stop(&t->grace);
            t->grace_armed = false;
        }
        teardown(srv, t);
    }
}
