/* Answers to the host: status (with fresh sizes from the programs) and acks. */
#include "status.h"

#include "proto/log.h"
#include "op.h"
#include "programs.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GD_QUERY_MS 500

/* A program lost to a fault, as a report: its fault as its error. */
static void lost_report(const struct gd_lost *l,
                        Crane__Control__ProgramReport *r,
                        Crane__Control__StepTimes *t)
{
    Crane__Control__ProgramReport init = CRANE__CONTROL__PROGRAM_REPORT__INIT;
    Crane__Control__StepTimes tinit = CRANE__CONTROL__STEP_TIMES__INIT;

    *r = init;
    *t = tinit;
    r->pid = (uint32_t)l->pid;
    r->program = (char *)l->name;
    r->mode = GD_PMODE(UNKNOWN);
    r->last_op = l->during;
    r->err = l->err;
    r->error = (char *)l->reason;
    r->fault = (char *)l->reason;
    r->lost = true;
    r->times = t;
}

void gd_ack_send_op(struct gd_daemon *d, struct gd_peer *peer, uint64_t id,
                    Crane__Control__Op op, int err, const char *why,
                    const struct gd_op *o, double seconds)
{
    Crane__Control__GuestMessage m = CRANE__CONTROL__GUEST_MESSAGE__INIT;
    Crane__Control__Ack ack = CRANE__CONTROL__ACK__INIT;
    /* A migration's answers name the programs lost since its prepare. */
    bool with_lost = op == GD_OP(PREPARE) || op == GD_OP(RESUME) ||
                     op == GD_OP(ABORT);
    size_t n = gd_programs_count(d) + (o ? o->n_gone : 0) +
               (with_lost ? d->n_lost : 0);
    size_t n_steps = o ? o->n_steps : 0;
    Crane__Control__ProgramReport *reps = calloc(n + 1, sizeof(*reps));
    Crane__Control__ProgramReport **rp = calloc(n + 1, sizeof(*rp));
    Crane__Control__StepTimes *times = calloc(n + 1, sizeof(*times));
    Crane__Control__DaemonStep *steps = calloc(n_steps + 1, sizeof(*steps));
    Crane__Control__DaemonStep **sp = calloc(n_steps + 1, sizeof(*sp));
    size_t k = 0;

    if (!reps || !rp || !times || !steps || !sp) {
        CRN_ERROR("%s: out of memory for an answer", peer->name);
        goto out;
    }
    for (const struct gd_program *p = d->programs; p && k < n; p = p->next) {
        if (!p->registered || p->conn.closing)
            continue;
        gd_program_report(p, &reps[k], &times[k]);
        rp[k] = &reps[k];
        k++;
    }
    for (size_t i = 0; o && i < o->n_gone && k < n; i++) {
        Crane__Control__ProgramReport init =
            CRANE__CONTROL__PROGRAM_REPORT__INIT;
        Crane__Control__StepTimes tinit = CRANE__CONTROL__STEP_TIMES__INIT;
        reps[k] = init;
        times[k] = tinit;
        reps[k].pid = (uint32_t)o->gone[i].pid;
        reps[k].program = (char *)o->gone[i].name;
        reps[k].mode = GD_PMODE(UNKNOWN);
        reps[k].last_op = o->gone[i].during;
        reps[k].error = (char *)"exited during the operation";
        reps[k].times = &times[k];
        rp[k] = &reps[k];
        k++;
    }
    for (size_t i = 0; with_lost && i < d->n_lost && k < n; i++) {
        lost_report(&d->lost[i], &reps[k], &times[k]);
        rp[k] = &reps[k];
        k++;
    }
    for (size_t i = 0; i < n_steps; i++) {
        Crane__Control__DaemonStep init = CRANE__CONTROL__DAEMON_STEP__INIT;
        steps[i] = init;
        steps[i].name = (char *)o->steps[i].name;
        steps[i].err = o->steps[i].err;
        steps[i].error = (char *)o->steps[i].error;
        steps[i].seconds = o->steps[i].seconds;
        sp[i] = &steps[i];
    }
    ack.op = op;
    ack.err = err;
    ack.error = (char *)(why ? why : "");
    ack.phase = d->phase;
    ack.n_programs = k;
    ack.programs = rp;
    ack.n_steps = n_steps;
    ack.steps = sp;
    ack.seconds = seconds;
    ack.mode = d->mode;
    ack.proxy = d->proxy;
    ack.phase_age = gd_now() - d->phase_since;
    ack.last_op = d->last_op;
    ack.last_err = d->last_err;
    ack.last_error = d->last_error;
    ack.gpus = d->cfg.gpus;
    m.id = id;
    m.msg_case = CRANE__CONTROL__GUEST_MESSAGE__MSG_ACK;
    m.ack = &ack;
    peer->send(peer, &m.base);
out:
    free(reps);
    free(rp);
    free(times);
    free(steps);
    free(sp);
}

void gd_reply_error(struct gd_daemon *d, struct gd_peer *peer, uint64_t id,
                    Crane__Control__Op op, int err, const char *fmt, ...)
{
    char why[300];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    CRN_WARN("%s: %s refused: %s", peer->name, gd_op_name(op), why);
    gd_ack_send_op(d, peer, id, op, err, why, NULL, 0);
}

/* --- status rounds ------------------------------------------------------- */

static void round_end(struct gd_daemon *d)
{
    struct gd_status_round *r = &d->round;
    size_t n = r->n_waiters;
    struct gd_waiter w[GD_MAX_WAITERS];

    if (r->timer_armed) {
        uv_timer_stop(&r->timer);
        r->timer_armed = false;
    }
    memcpy(w, r->waiters, sizeof(w));
    r->n_waiters = 0;
    r->outstanding = 0;
    for (size_t i = 0; i < n; i++)
        if (w[i].peer)
            gd_ack_send_op(d, w[i].peer, w[i].id, GD_OP(STATUS), 0, NULL,
                           NULL, 0);
}

static void round_timeout(uv_timer_t *t)
{
    struct gd_daemon *d = t->data;

    d->round.timer_armed = false;
    round_end(d);
}

void gd_status_request(struct gd_daemon *d, struct gd_peer *peer,
                       uint64_t id, const Crane__Control__StatusRequest *req)
{
    struct gd_status_round *r = &d->round;

    (void)req;
    if (r->n_waiters == GD_MAX_WAITERS) {
        gd_ack_send_op(d, peer, id, GD_OP(STATUS), 0, NULL, NULL, 0);
        return;
    }
    r->waiters[r->n_waiters++] =
        (struct gd_waiter){.peer = peer, .id = id, .op = GD_OP(STATUS)};
    if (r->n_waiters > 1)
        return;          /* joins the round under way */
    r->gen++;
    /* Programs busy with a command answer after it: not asked. */
    for (struct gd_program *p = d->programs; p; p = p->next) {
        if (!p->registered || p->conn.closing || p->cmd_id ||
            p->unresponsive || p->query_id || p->held)
            continue;
        p->query_round = r->gen;
        if (gd_program_query(p) == 0)
            r->outstanding++;
    }
    if (r->outstanding == 0) {
        round_end(d);
        return;
    }
    uv_timer_start(&r->timer, round_timeout, GD_QUERY_MS, 0);
    r->timer_armed = true;
}

void gd_status_on_answer(struct gd_daemon *d, struct gd_program *p)
{
    struct gd_status_round *r = &d->round;

    p->query_id = 0;
    if (r->n_waiters && p->query_round == r->gen && r->outstanding &&
        --r->outstanding == 0)
        round_end(d);
}

void gd_status_forget_peer(struct gd_daemon *d, struct gd_peer *peer)
{
    for (size_t i = 0; i < d->round.n_waiters; i++)
        if (d->round.waiters[i].peer == peer)
            d->round.waiters[i].peer = NULL;
}

void gd_status_init(struct gd_daemon *d)
{
    uv_timer_init(d->loop, &d->round.timer);
    d->round.timer.data = d;
}

void gd_status_close(struct gd_daemon *d)
{
    uv_close((uv_handle_t *)&d->round.timer, NULL);
}
