/* The operation in flight's record: its steps, first failure, waiters, and
 * the programs that went meanwhile (exited, or lost to a fault). */
#include "op.h"

#include "proto/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void gd_op_step(struct gd_daemon *d, const char *name, int err,
                const char *error, double seconds)
{
    struct gd_op *o = d->op;

    if (err)
        CRN_WARN("step %s: failed after %.1f ms: %s", name, seconds * 1e3,
                error ? error : strerror(-err));
    else
        CRN_INFO("step %s: done in %.1f ms", name, seconds * 1e3);
    if (!o || o->n_steps == GD_MAX_STEPS)
        return;
    struct gd_step *s = &o->steps[o->n_steps++];
    snprintf(s->name, sizeof(s->name), "%s", name);
    s->err = err;
    snprintf(s->error, sizeof(s->error), "%s", error ? error : "");
    s->seconds = seconds;
}

/* Records the first failure: of the operation, or of its undoing. */
void gd_op_fail(struct gd_daemon *d, int err, const char *fmt, ...)
{
    struct gd_op *o = d->op;
    int *slot = o->rolling_back ? &o->back_err : &o->err;
    char *text = o->rolling_back ? o->back_error : o->error;
    va_list ap;

    if (*slot)
        return;
    *slot = err;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(o->error), fmt, ap);
    va_end(ap);
}


/* Lost: the shim reported a fault (a proxy lost) and its program ended
 * while a migration was under way or done (not yet resumed). */
static bool lost_to_fault(const struct gd_daemon *d,
                          const struct gd_program *p)
{
    return p->fault_err && (d->op || d->phase != GD_PHASE(IDLE));
}

void gd_op_note_gone(struct gd_daemon *d, struct gd_program *p)
{
    struct gd_op *o = d->op;

    /* Stopping: the operation stays where it is, for the next daemon. */
    if (d->stopping)
        return;
    if (lost_to_fault(d, p)) {
        CRN_WARN("%s: lost to a fault %.1f s after its shim reported it: %s",
                p->conn.name, gd_now() - p->fault_at, p->fault);
        if (d->n_lost == GD_MAX_LOST)
            return;
        struct gd_lost *l = &d->lost[d->n_lost++];
        l->pid = p->pid;
        snprintf(l->name, sizeof(l->name), "%s", p->name);
        l->during = p->cmd_id ? p->cmd_op : o ? o->kind : GD_OP(NONE);
        l->err = p->fault_err;
        snprintf(l->reason, sizeof(l->reason), "%s", p->fault);
        return;
    }
    if (!o || !(p->fanned || p->cmd_id) || o->n_gone == GD_MAX_GONE)
        return;
    struct gd_gone *g = &o->gone[o->n_gone++];
    g->pid = p->pid;
    snprintf(g->name, sizeof(g->name), "%s", p->name);
    g->during = p->cmd_id ? p->cmd_op : o->kind;
}

void gd_op_note_lost(struct gd_daemon *d)
{
    struct gd_op *o = d->op;
    size_t len;

    if (!o || !d->n_lost || o->kind == GD_OP(SHM))
        return;
    len = strlen(o->note);
    len += (size_t)snprintf(o->note + len, sizeof(o->note) - len,
                            "%s%zu program(s) lost to a fault:",
                            len ? "; " : "", d->n_lost);
    for (size_t i = 0; i < d->n_lost && len < sizeof(o->note); i++)
        len += (size_t)snprintf(o->note + len, sizeof(o->note) - len,
                                "%s %s[%d]: %s", i ? ";" : "",
                                d->lost[i].name, (int)d->lost[i].pid,
                                d->lost[i].reason);
}
