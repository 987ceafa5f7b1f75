/* Prepare, resume and abort: the phases of a migration across every program.
 *
 * One operation runs at a time, as a chain of asynchronous steps on the
 * loop:
 *
 *   prepare  fan out Prepare -> unload the driver modules -> PREPARED
 *   resume   load the modules -> wait for the GPU -> fan out Resume -> IDLE
 *   abort    (modules out: load, wait for the GPU) -> fan out Abort -> IDLE
 *
 * A fan-out sends the command to every registered program at once and
 * waits for every answer until its deadline.  A program that exits
 * meanwhile is no failure (its state went with it); one that fails or
 * misses the deadline is.  Any failure of a prepare, or an abort from the
 * host during one, turns it around onto the abort path while the GPU is
 * still present, so every program is back in passthrough before the
 * prepare is answered.  A program that missed a deadline is still sent the
 * later abort (it runs it once its switch ends) but is not waited for.
 *
 * Before the driver goes, every user of the GPU must be accounted for
 * (account_gpu_users): each process holding a gpu_device node open must be
 * a registered program whose shim said it is off the GPU.  A program that
 * did not answer the prepare in time fails the prepare when it holds the
 * GPU (or when no gpu_device is configured, so nobody can tell); when it
 * provably holds none, it is left out and the migration goes on.
 */
#include "migrate.h"

#include "account.h"
#include "driver.h"
#include "proto/log.h"
#include "programs.h"
#include "progress.h"
#include "shm.h"
#include "start.h"
#include "status.h"

#include "proto/endpoint.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GD_MAX_DEADLINE_MS (3600u * 1000u)

static void back_to_passthrough(struct gd_daemon *d);

static bool add_waiter(struct gd_op *o, struct gd_peer *peer, uint64_t id,
                       Crane__Control__Op op)
{
    if (!peer)
        return true;
    if (o->n_waiters == GD_MAX_WAITERS)
        return false;
    o->waiters[o->n_waiters++] =
        (struct gd_waiter){.peer = peer, .id = id, .op = op};
    return true;
}

static struct gd_op *op_new(struct gd_daemon *d, Crane__Control__Op kind,
                            uint32_t deadline_ms)
{
    struct gd_op *o = calloc(1, sizeof(*o));

    if (!o)
        return NULL;
    o->kind = kind;
    o->started = gd_now();
    o->deadline_ms = deadline_ms;
    o->mode = d->mode;
    d->op = o;
    /* A recovery waiting for programs is overtaken by any operation. */
    if (d->recovering) {
        d->recovering = false;
        uv_timer_stop(&d->grace);
    }
    return o;
}

/* The deadline a command of OP asks (ASKED, else DEFAULT_MS) into
 * *DEADLINE; false, after answering PEER, when it is over the bound. */
static bool op_deadline(struct gd_daemon *d, struct gd_peer *peer,
                        uint64_t id, Crane__Control__Op op, uint32_t asked,
                        uint32_t default_ms, uint32_t *deadline)
{
    *deadline = asked ? asked : default_ms;
    if (*deadline <= GD_MAX_DEADLINE_MS)
        return true;
    gd_reply_error(d, peer, id, op, -EINVAL, "deadline over one hour");
    return false;
}

/* A new operation OP that PEER's command ID waits for; NULL, after
 * answering PEER, when there is no memory. */
static struct gd_op *op_start(struct gd_daemon *d, struct gd_peer *peer,
                              uint64_t id, Crane__Control__Op op,
                              uint32_t deadline_ms)
{
    struct gd_op *o = op_new(d, op, deadline_ms);

    if (!o) {
        gd_reply_error(d, peer, id, op, -ENOMEM, "out of memory");
        return NULL;
    }
    add_waiter(o, peer, id, op);
    return o;
}

/* PEER's command ID (of OP) waits for the operation in flight, O; false,
 * after answering PEER, when O has all the waiters it can hold. */
static bool op_join(struct gd_daemon *d, struct gd_op *o, struct gd_peer *peer,
                    uint64_t id, Crane__Control__Op op)
{
    if (add_waiter(o, peer, id, op))
        return true;
    gd_reply_error(d, peer, id, op, -EBUSY, "too many waiting commands");
    return false;
}

/* Answers every waiter and ends the operation. */
static void finish(struct gd_daemon *d)
{
    struct gd_op *o = d->op;
    double secs;
    int err = o->err ? o->err : o->back_err;
    const char *why;

    gd_op_note_lost(d);
    secs = gd_now() - o->started;
    why = o->err ? o->error : err ? o->back_error : o->note;

    if (o->kind == GD_OP(PREPARE) && o->cancelled && !o->err) {
        err = -ECANCELED;
        why = "aborted";
    }
    CRN_INFO("%s%s%s: %s in %.1f ms (phase %s)%s%s", gd_op_name(o->kind),
            o->kind == GD_OP(PREPARE) ? " " : "",
            o->kind == GD_OP(PREPARE) ? gd_mig_name(o->mode) : "",
            err ? "FAILED" : "done", secs * 1e3, gd_phase_name(d->phase),
            *why ? ": " : "", why);
    for (size_t i = 0; i < o->n_waiters; i++) {
        const struct gd_waiter *w = &o->waiters[i];
        int werr = err;
        const char *wwhy = why;
        /* An abort that joined a prepare asked only for the undoing. */
        if (w->op != o->kind && o->kind == GD_OP(PREPARE)) {
            werr = o->back_err;
            wwhy = o->back_error;
        }
        if (w->peer)
            gd_ack_send_op(d, w->peer, w->id, w->op, werr, wwhy, o, secs);
    }
    d->last_op = o->kind;
    d->last_err = err;
    snprintf(d->last_error, sizeof(d->last_error), "%.*s",
             (int)sizeof(d->last_error) - 1, err ? why : "");
    d->op = NULL;
    free(o);
    gd_save_state(d);
}

/* --- fan-out ------------------------------------------------------------- */

static uint32_t ms_left(double deadline)
{
    double left = (deadline - gd_now()) * 1e3;
    return left < 1 ? 1 : left > GD_MAX_DEADLINE_MS ? GD_MAX_DEADLINE_MS
                                                    : (uint32_t)left;
}

/* Whether P takes part in the current fan-out: a shared area is handed to
 * programs that remote (while parts are left), and taken back from all. */
static bool fan_wants(const struct gd_op *o, const struct gd_program *p)
{
    if (o->fan_op != GD_OP(SHM) || o->shm_release)
        return true;
    return (p->mode == GD_PMODE(REMOTING) ||
            p->mode == GD_PMODE(REMOTE_ONLY)) &&
           (o->shm_next + 1) * o->shm_part <= o->shm_size;
}

static void fan_send(struct gd_daemon *d, struct gd_program *p)
{
    struct gd_op *o = d->op;
    Crane__Control__DaemonMessage m = CRANE__CONTROL__DAEMON_MESSAGE__INIT;
    Crane__Control__Shm shm = CRANE__CONTROL__SHM__INIT;
    Crane__Control__Prepare prep = CRANE__CONTROL__PREPARE__INIT;
    Crane__Control__Resume res = CRANE__CONTROL__RESUME__INIT;
    Crane__Control__Abort ab = CRANE__CONTROL__ABORT__INIT;
    /* The program's deadline ends a little before ours, so that its
     * answer (even "still busy") arrives before we stop waiting. */
    uint32_t left = ms_left(o->fan_deadline);
    left = left > 1000 ? left - 250 : left * 3 / 4 + 1;

    /* Waiting to start (start.c): nothing to move, nothing to ask. */
    if (p->held)
        return;

    switch (o->fan_op) {
    case GD_OP(PREPARE):
        prep.mode = o->mode;
        prep.proxy = d->proxy;
        prep.auth_key.data = d->proxy_key;
        prep.auth_key.len = d->proxy_key_len;
        prep.deadline_ms = left;
        m.msg_case = CRANE__CONTROL__DAEMON_MESSAGE__MSG_PREPARE;
        m.prepare = &prep;
        /* Everyone is waited for before the driver goes, except a
         * program still silent on an earlier command: its shim runs
         * commands in order, so it cannot answer this one first. */
        if (!p->cmd_id)
            p->unresponsive = false;
        break;
    case GD_OP(RESUME):
        res.deadline_ms = left;
        m.msg_case = CRANE__CONTROL__DAEMON_MESSAGE__MSG_RESUME;
        m.resume = &res;
        break;
    case GD_OP(SHM):
        if (!fan_wants(o, p))
            return;
        shm.release = o->shm_release;
        shm.deadline_ms = left;
        if (!o->shm_release) {
            shm.path = o->shm_path;
            shm.offset = o->shm_next++ * o->shm_part;
            shm.limit = o->shm_part;
        }
        m.msg_case = CRANE__CONTROL__DAEMON_MESSAGE__MSG_SHM;
        m.shm = &shm;
        break;
    default:
        ab.deadline_ms = left;
        m.msg_case = CRANE__CONTROL__DAEMON_MESSAGE__MSG_ABORT;
        m.abort = &ab;
        break;
    }
    p->fanned = true;
    p->in_fanout = !p->unresponsive;
    if (p->in_fanout)
        o->fan_waiting++;
    o->fan_sent++;
    gd_program_command(p, o->fan_op, &m);
}

static void fan_complete(struct gd_daemon *d)
{
    struct gd_op *o = d->op;
    char name[64];
    int err = o->rolling_back ? o->back_err : o->err;

    uv_timer_stop(&d->fan_timer);
    o->fanning = false;
    for (struct gd_program *p = d->programs; p; p = p->next)
        p->fanned = p->in_fanout = false;
    snprintf(name, sizeof(name), "programs %s (%zu)", gd_op_name(o->fan_op),
             o->fan_sent);
    gd_op_step(d, name, err, err ? (o->rolling_back ? o->back_error
                                                    : o->error)
                                 : NULL,
               gd_now() - o->fan_started);
    o->fan_done(d);
}

static void fan_deadline(uv_timer_t *t)
{
    struct gd_daemon *d = t->data;
    struct gd_op *o = d->op;

    if (!o || !o->fanning)
        return;
    for (struct gd_program *p = d->programs; p; p = p->next) {
        if (!p->in_fanout)
            continue;
        p->in_fanout = false;
        p->unresponsive = true;
        p->last_op = o->fan_op;
        p->last_err = -ETIMEDOUT;
        snprintf(p->last_error, sizeof(p->last_error),
                 "no answer within %.0f ms",
                 (o->fan_deadline - o->fan_started) * 1e3);
        p->last_elapsed = gd_now() - p->cmd_sent;
        CRN_WARN("%s: no answer to %s within the deadline", p->conn.name,
                gd_op_name(o->fan_op));
        /* A prepare decides in account_gpu_users whether it can go on
         * without this program. */
        if (o->fan_op != GD_OP(PREPARE))
            gd_op_fail(d, -ETIMEDOUT, "%s did not answer %s within %.0f ms",
                       p->conn.name, gd_op_name(o->fan_op),
                       (o->fan_deadline - o->fan_started) * 1e3);
    }
    o->fan_waiting = 0;
    fan_complete(d);
}

static void fan_out(struct gd_daemon *d, Crane__Control__Op op,
                    uint32_t deadline_ms, void (*done)(struct gd_daemon *d))
{
    struct gd_op *o = d->op;

    o->fanning = true;
    o->fan_op = op;
    o->fan_started = gd_now();
    o->fan_deadline = o->fan_started + deadline_ms / 1e3;
    o->fan_waiting = 0;
    o->fan_sent = 0;
    o->fan_done = done;
    for (struct gd_program *p = d->programs; p; p = p->next)
        if (p->registered && !p->conn.closing)
            fan_send(d, p);
    CRN_INFO("%s sent to %zu program(s), deadline %u ms", gd_op_name(op),
            o->fan_sent, deadline_ms);
    if (o->fan_waiting == 0) {
        fan_complete(d);
        return;
    }
    uv_timer_start(&d->fan_timer, fan_deadline, deadline_ms, 0);
}

/* An abort during a prepare's fan-out: stop waiting now; programs still
 * switching run the abort after their switch. */
static void fan_cancel(struct gd_daemon *d)
{
    for (struct gd_program *p = d->programs; p; p = p->next)
        p->in_fanout = false;
    d->op->fan_waiting = 0;
    fan_complete(d);
}

/* Whether P ended up where OP should have put it. */
static bool reached(const struct gd_program *p, Crane__Control__Op op,
                    Crane__Control__MigrationMode mode)
{
    if (p->mode == GD_PMODE(REMOTE_ONLY) || op == GD_OP(SHM))
        return true;
    if (op == GD_OP(PREPARE))
        return mode == GD_MIG(OFFLINE) ? p->mode == GD_PMODE(PARKED)
                                       : p->mode == GD_PMODE(REMOTING);
    return p->mode == GD_PMODE(PASSTHROUGH);
}

void gd_migrate_on_ack(struct gd_daemon *d, struct gd_program *p)
{
    struct gd_op *o = d->op;

    if (!o || !o->fanning || !p->fanned)
        return;
    if (p->last_err)
        gd_op_fail(d, p->last_err, "%s: %s failed: %s", p->conn.name,
                gd_op_name(o->fan_op), p->last_error);
    else if (!reached(p, o->fan_op, o->mode))
        gd_op_fail(d, -EPROTO, "%s: %s answered but the program is %s",
                p->conn.name, gd_op_name(o->fan_op), gd_pmode_name(p->mode));
    if (!p->in_fanout)
        return;
    p->in_fanout = false;
    if (--o->fan_waiting == 0)
        fan_complete(d);
}

void gd_migrate_on_gone(struct gd_daemon *d, struct gd_program *p)
{
    struct gd_op *o = d->op;

    gd_op_note_gone(d, p);
    if (!o || d->stopping)
        return;
    if (o->fanning && p->in_fanout) {
        p->in_fanout = false;
        if (--o->fan_waiting == 0)
            fan_complete(d);
    }
}

static void on_all_back(uv_timer_t *t)
{
    gd_migrate_recover(t->data);
}

void gd_migrate_on_registered(struct gd_daemon *d, struct gd_program *p)
{
    struct gd_op *o = d->op;

    if (d->recovering) {
        bool all = true;
        for (size_t i = 0; i < d->n_expected; i++) {
            if (d->expected[i] == p->pid)
                d->expected[i] = 0;
            all &= d->expected[i] == 0;
        }
        if (all) {
            CRN_INFO("every program of the state file is back");
            uv_timer_stop(&d->grace);
            uv_timer_start(&d->grace, on_all_back, 0, 0);
        }
    }
    /* Before its first call: where that call goes (held: it waits). */
    gd_start_answer(d, p);
    if (o && o->fanning) {
        /* Registered in the middle: it takes part too. */
        fan_send(d, p);
        return;
    }
    if ((d->phase == GD_PHASE(PREPARED) || d->phase == GD_PHASE(PREPARING)) &&
        p->mode == GD_PMODE(PASSTHROUGH) && !p->starting)
        CRN_WARN("%s: in passthrough while the GPU is prepared for "
                "migration",
                p->conn.name);
}

void gd_migrate_forget_peer(struct gd_daemon *d, struct gd_peer *peer)
{
    if (d->op)
        for (size_t i = 0; i < d->op->n_waiters; i++)
            if (d->op->waiters[i].peer == peer)
                d->op->waiters[i].peer = NULL;
    gd_status_forget_peer(d, peer);
}

/* --- prepare ------------------------------------------------------------- */

/* The driver's steps go into the operation's; it stops unloading between
 * modules once an abort arrived. */
static bool op_cancelled(struct gd_daemon *d)
{
    return d->op && d->op->cancelled;
}

static const struct gd_driver_report driver_report = {
    .step = gd_op_step,
    .cancelled = op_cancelled,
};

static void prepare_unloaded(struct gd_daemon *d, int err, const char *why)
{
    struct gd_op *o = d->op;

    if (err)
        gd_op_fail(d, err, "%s", why);
    if (err || o->cancelled) {
        back_to_passthrough(d);
        return;
    }
    gd_set_phase(d, GD_PHASE(PREPARED));
    finish(d);
}

static void prepare_fanned(struct gd_daemon *d)
{
    struct gd_op *o = d->op;

    if (o->err || o->cancelled || gd_account_gpu_users(d) < 0) {
        back_to_passthrough(d);
        return;
    }
    gd_driver_unload(d, &driver_report, prepare_unloaded);
}

static int prepare_args(struct gd_daemon *d, const Crane__Control__Prepare *p,
                        Crane__Control__MigrationMode *mode,
                        const char **proxy, uint32_t *deadline, char *why,
                        size_t why_len)
{
    struct crn_endpoint ep;

    *mode = p->mode ? p->mode
                    : d->cfg.mode == GD_MODE_OFFLINE ? GD_MIG(OFFLINE)
                                                     : GD_MIG(LIVE);
    if (*mode != GD_MIG(LIVE) && *mode != GD_MIG(OFFLINE)) {
        snprintf(why, why_len, "unknown migration mode %d", (int)p->mode);
        return -EINVAL;
    }
    *proxy = p->proxy && *p->proxy ? p->proxy : d->cfg.proxy;
    if (*mode == GD_MIG(LIVE) && !**proxy) {
        snprintf(why, why_len, "a live prepare needs a proxy endpoint "
                               "(none given, none configured)");
        return -EINVAL;
    }
    if (**proxy && (strlen(*proxy) >= sizeof(d->proxy) ||
                    crn_endpoint_parse(*proxy, &ep) < 0)) {
        snprintf(why, why_len,
                 "bad proxy endpoint (unix:PATH or tcp:HOST:PORT)");
        return -EINVAL;
    }
    if (p->auth_key.len > sizeof(d->proxy_key)) {
        snprintf(why, why_len, "proxy key over %zu bytes",
                 sizeof(d->proxy_key));
        return -EINVAL;
    }
    *deadline = p->deadline_ms ? p->deadline_ms : d->cfg.prepare_deadline_ms;
    if (*deadline > GD_MAX_DEADLINE_MS) {
        snprintf(why, why_len, "deadline over one hour");
        return -EINVAL;
    }
    return 0;
}

void gd_migrate_prepare(struct gd_daemon *d, struct gd_peer *peer,
                        uint64_t id, const Crane__Control__Prepare *p)
{
    Crane__Control__MigrationMode mode;
    const char *proxy;
    uint32_t deadline;
    char why[256];
    struct gd_op *o;

    if (prepare_args(d, p, &mode, &proxy, &deadline, why, sizeof(why)) < 0) {
        gd_reply_error(d, peer, id, GD_OP(PREPARE), -EINVAL, "%s", why);
        return;
    }
    if (d->op) {
        gd_reply_error(d, peer, id, GD_OP(PREPARE), -EBUSY,
                       "a %s is in progress", gd_op_name(d->op->kind));
        return;
    }
    if (d->phase == GD_PHASE(PREPARED)) {
        /* The host asking again (a lost answer): where things stand. */
        gd_ack_send_op(d, peer, id, GD_OP(PREPARE), 0, "already prepared",
                       NULL, 0);
        return;
    }
    if (!(o = op_start(d, peer, id, GD_OP(PREPARE), deadline)))
        return;
    /* The host watches the prepare on this connection (progress.c). */
    o->waiters[0].progress = peer && p->progress;
    /* A new migration: the last one's losses were told. */
    d->n_lost = 0;
    o->mode = d->mode = mode;
    snprintf(d->proxy, sizeof(d->proxy), "%s", proxy);
    d->proxy_key_len = p->auth_key.len;
    if (p->auth_key.len)
        memcpy(d->proxy_key, p->auth_key.data, p->auth_key.len);
    CRN_INFO("prepare %s%s%s%s, deadline %u ms", gd_mig_name(mode),
            *proxy ? " via " : "", proxy,
            p->auth_key.len ? " (with the proxy's key)" : "", deadline);
    gd_set_phase(d, GD_PHASE(PREPARING));
    gd_progress_arm(d);
    fan_out(d, GD_OP(PREPARE), deadline, prepare_fanned);
}

/* --- the way back: resume, abort, a failed prepare ----------------------- */

static void back_done(struct gd_daemon *d)
{
    gd_set_phase(d, GD_PHASE(IDLE));
    gd_start_release_held(d);
    finish(d);
}

static void back_gpu_ready(struct gd_daemon *d, int err)
{
    struct gd_op *o = d->op;

    if (err) {
        /* Programs stay where they are: remoting ones keep computing,
         * and none is sent back to a GPU that is not there. */
        gd_set_phase(d, GD_PHASE(PREPARED));
        finish(d);
        return;
    }
    /* The GPU is usable: programs that waited for it start now. */
    gd_start_release_held(d);
    if (o->kind == GD_OP(RESUME))
        fan_out(d, GD_OP(RESUME), o->deadline_ms, back_done);
    else
        fan_out(d, GD_OP(ABORT),
                o->abort_deadline_ms ? o->abort_deadline_ms
                                     : d->cfg.abort_deadline_ms,
                back_done);
}

static void back_gpu_waited(struct gd_daemon *d, int err, const char *why)
{
    if (err)
        gd_op_fail(d, err, "%s", why);
    back_gpu_ready(d, err);
}

static void back_loaded(struct gd_daemon *d, int err, const char *why)
{
    if (err) {
        gd_op_fail(d, err, "%s", why);
        back_gpu_ready(d, err);
        return;
    }
    gd_driver_wait_gpu(d, &driver_report, back_gpu_waited);
}

/* Loads the modules if any is out (always for a resume: the GPU may be
 * new), waits for the GPU, then fans out. */
static void back_to_passthrough(struct gd_daemon *d)
{
    struct gd_op *o = d->op;

    if (o->kind == GD_OP(PREPARE)) {
        o->rolling_back = true;
        CRN_WARN("prepare %s: returning every program to passthrough",
                o->cancelled && !o->err ? "aborted" : "failed");
    }
    gd_set_phase(d, o->kind == GD_OP(RESUME) ? GD_PHASE(RESUMING)
                                             : GD_PHASE(ABORTING));
    if (o->kind == GD_OP(RESUME) || d->modules_unloaded || o->force_load)
        gd_driver_load(d, &driver_report, back_loaded);
    else
        back_gpu_ready(d, 0);
}

void gd_migrate_resume(struct gd_daemon *d, struct gd_peer *peer,
                       uint64_t id, const Crane__Control__Resume *r)
{
    struct gd_op *o = d->op;
    uint32_t deadline;

    if (!op_deadline(d, peer, id, GD_OP(RESUME), r->deadline_ms,
                     d->cfg.resume_deadline_ms, &deadline))
        return;
    if (o && o->kind == GD_OP(PREPARE) && !o->rolling_back) {
        gd_reply_error(d, peer, id, GD_OP(RESUME), -EBUSY,
                       "a prepare is in progress (abort it first)");
        return;
    }
    if (o) {
        /* Already on the way back: answer when it is there. */
        op_join(d, o, peer, id, GD_OP(RESUME));
        return;
    }
    if (!(o = op_start(d, peer, id, GD_OP(RESUME), deadline)))
        return;
    back_to_passthrough(d);
}

void gd_migrate_abort(struct gd_daemon *d, struct gd_peer *peer, uint64_t id,
                      const Crane__Control__Abort *a)
{
    struct gd_op *o = d->op;
    uint32_t deadline;

    if (!op_deadline(d, peer, id, GD_OP(ABORT), a->deadline_ms,
                     d->cfg.abort_deadline_ms, &deadline))
        return;
    if (o) {
        if (!op_join(d, o, peer, id, GD_OP(ABORT)))
            return;
        if (o->kind == GD_OP(PREPARE) && !o->rolling_back && !o->cancelled) {
            CRN_WARN("abort during the prepare");
            o->cancelled = true;
            o->abort_deadline_ms = a->deadline_ms;
            /* Mid fan-out: turn around now.  Mid modprobe: when it ends. */
            if (o->fanning)
                fan_cancel(d);
        }
        return;
    }
    if (!(o = op_start(d, peer, id, GD_OP(ABORT), deadline)))
        return;
    o->abort_deadline_ms = deadline;
    back_to_passthrough(d);
}

/* --- a shared area for remoting ------------------------------------------ */

static void shm_fanned(struct gd_daemon *d)
{
    finish(d);
}

/* The host plugged an ivshmem device shared with the proxy domain (or is
 * about to unplug it): each remoting program takes a part of it, or every
 * program gives its part up.  The phase does not change: programs remote
 * while the GPU is prepared away too. */
void gd_migrate_shm(struct gd_daemon *d, struct gd_peer *peer, uint64_t id,
                    const Crane__Control__Shm *s)
{
    uint32_t deadline;
    size_t n = 0;
    char why[300];
    struct gd_op *o;

    if (!op_deadline(d, peer, id, GD_OP(SHM), s->deadline_ms,
                     d->cfg.abort_deadline_ms, &deadline))
        return;
    if (d->op) {
        gd_reply_error(d, peer, id, GD_OP(SHM), -EBUSY,
                       "a %s is in progress", gd_op_name(d->op->kind));
        return;
    }
    if (!(o = op_start(d, peer, id, GD_OP(SHM), deadline)))
        return;
    o->shm_release = s->release;
    if (!s->release) {
        int rc = gd_shm_find(d->cfg.pci_root, s->pci, s->size, o->shm_path,
                             sizeof(o->shm_path), &o->shm_size, why,
                             sizeof(why));
        if (rc < 0) {
            gd_op_fail(d, rc, "%s", why);
            finish(d);
            return;
        }
        for (struct gd_program *p = d->programs; p; p = p->next)
            n += p->registered && !p->conn.closing &&
                 (p->mode == GD_PMODE(REMOTING) ||
                  p->mode == GD_PMODE(REMOTE_ONLY));
        o->shm_part = gd_shm_part(o->shm_size, n);
        CRN_INFO("shared area %s (%llu bytes): %llu bytes for each of %zu "
                "remoting program(s)", o->shm_path,
                (unsigned long long)o->shm_size,
                (unsigned long long)o->shm_part, n);
        if (!o->shm_part) {
            gd_op_fail(d, -ENOSPC, "%s: %llu bytes are too few for %zu "
                       "programs", o->shm_path,
                       (unsigned long long)o->shm_size, n);
            finish(d);
            return;
        }
    }
    fan_out(d, GD_OP(SHM), deadline, shm_fanned);
}

/* --- after a restart ------------------------------------------------------ */

/* The grace period ended (or every expected program is back): finish what
 * the previous daemon left half done. */
void gd_migrate_recover(struct gd_daemon *d)
{
    struct gd_op *o;
    Crane__Control__Op kind = d->recover_op;

    if (!d->recovering)
        return;
    d->recovering = false;
    uv_timer_stop(&d->grace);
    if (d->op || kind == GD_OP(NONE))
        return;
    CRN_WARN("recovering: the previous daemon stopped while %s; %s now",
            gd_phase_name(d->phase), gd_op_name(kind));
    o = op_new(d, kind, kind == GD_OP(RESUME) ? d->cfg.resume_deadline_ms
                                              : d->cfg.abort_deadline_ms);
    if (!o)
        return;
    /* How far the modules got is not known for sure: load them all. */
    o->force_load = true;
    back_to_passthrough(d);
}
