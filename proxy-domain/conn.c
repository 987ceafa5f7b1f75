/* One client connection's end: closing (its tenant let go, its lanes
 * ended, its memory freed once every handle closed) and idling; its start
 * in conn_start.c, input in conn_input.c, execution in conn_exec.c. */
#include "conn.h"

#include "lanes.h"
#include "proto/log.h"
#include "ringpin.h"

#include "proto/shm.h"

#include <stdlib.h>
#include <unistd.h>

static void on_close(uv_handle_t *h)
{
    struct px_conn *c = h->data;
    struct px_server *srv = c->srv;

    if (--c->open_handles > 0)
        return;
    px_preauth_remove(srv, &c->pa);
    if (c->prev)
        c->prev->next = c->next;
    else
        c->srv->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    px_outq_destroy(&c->outq);
    if (c->shm_fd >= 0)
        close(c->shm_fd);
    if (c->shm) {
        px_shm_close(c->shm);
        free(c->shm);
    }
    if (c->shm_leaving) {
        px_shm_close(c->shm_leaving);
        free(c->shm_leaving);
    }
    px_req_free_list(c->inq_head);
    px_req_free_list(c->more_head);
    px_req_free_list(c->done);
    pthread_mutex_destroy(&c->more_lock);
    px_req_free(c->bulk_req);
    free(c->ibuf);
    free(c);
    PX_ROLE_CALL(srv, idle, srv);
}




/* Closes a ready connection that sent nothing for --idle-timeout while
 * nothing of its tenant ran or waited to be sent back. */
static void idle_check(uv_timer_t *timer)
{
    struct px_conn *c = timer->data;
    uint64_t idle = c->srv->limits.idle_ms;
    uint64_t now = uv_now(c->srv->loop), since = now - c->last_input_ms;
    bool busy = c->state != PX_CONN_READY || c->working || c->inq_head ||
                c->bulk_req || (c->tenant && c->tenant->pend_head) ||
                px_transport_queued(&c->tr);

    if (busy || since < idle) {
        uv_timer_start(timer, idle_check, busy ? idle : idle - since, 0);
        return;
    }
    px_conn_close(c, "idle timeout");
}

void px_conn_ready(struct px_conn *c)
{
    px_preauth_remove(c->srv, &c->pa);
    uv_timer_stop(&c->timer);
    /* A supervisor's connections go to workers, which watch idling. */
    if (c->srv->limits.idle_ms && c->srv->role != PX_ROLE_SUPERVISOR)
        uv_timer_start(&c->timer, idle_check, c->srv->limits.idle_ms, 0);
}


void px_conn_abandon(struct px_conn *c)
{
    c->finished = true;
    px_transport_close(&c->tr, on_close);
    uv_close((uv_handle_t *)&c->wake, on_close);
    uv_close((uv_handle_t *)&c->timer, on_close);
}





/* --- closing -------------------------------------------------------------- */

void px_conn_finish_close(struct px_conn *c)
{
    struct px_tenant *t = c->tenant;

    if (c->finished)
        return;
    c->finished = true;
    if (c->resuming) {
        c->resuming->waiting = NULL;
        c->resuming = NULL;
    }
    if (t) {
        /* Nothing executes now: the area goes with the connection, as do
         * its lanes. */
        t->shm = t->shm_offered = NULL;
        px_lanes_close(t);
        px_tenant_detach(t);
        t->conn = NULL;
        c->tenant = NULL;
        px_server_tenant_released(c->srv, t);
    }
    px_transport_close(&c->tr, on_close);
    uv_close((uv_handle_t *)&c->wake, on_close);
    uv_close((uv_handle_t *)&c->timer, on_close);
}

void px_conn_close(struct px_conn *c, const char *why)
{
    struct px_tenant *t = c->tenant;

    if (c->state == PX_CONN_CLOSING)
        return;
    c->state = PX_CONN_CLOSING;
    px_preauth_remove(c->srv, &c->pa);
    atomic_store(&c->stop, true);
    px_beat_remove(c);
    if (c->reading) {
        px_transport_read_stop(&c->tr);
        c->reading = false;
    }
    /* A call waiting for its pieces ends at once (the lanes die with the
     * stream). */
    px_lanes_stop(t);
    px_req_free_list(c->inq_head);
    c->inq_head = c->inq_tail = NULL;
    px_req_free(c->bulk_req);
    c->bulk_req = NULL;
    if (t)
        CRN_INFO("tenant %llu (%s pid %u): disconnected%s%s",
                (unsigned long long)t->num, t->program, t->pid,
                why ? ": " : "", why ? why : "");
    if (t && c->srv->role == PX_ROLE_WORKER)
        PX_ROLE_CALL(c->srv, unwatch, c, why);
    else
        CRN_DEBUG("connection %llu closed%s%s", (unsigned long long)c->num,
                 why ? ": " : "", why ? why : "");
    /* A worker blocked on a user event the client will never set must
     * finish; a tenant kept for --grace keeps its events. */
    if (t && c->working && (c->srv->grace_ms == 0 || c->srv->stopping))
        px_tenant_abort_user_events(t);
    if (!c->working)
        px_conn_finish_close(c);
}
