/* The operation in flight's record: its steps, first failure, waiters. */
#include "op.h"

#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void gd_op_step(struct gd_daemon *d, const char *name, int err,
                const char *error, double seconds)
{
    struct gd_op *o = d->op;

    if (err)
        GD_WARN("step %s: failed after %.1f ms: %s", name, seconds * 1e3,
                error ? error : strerror(-err));
    else
        GD_INFO("step %s: done in %.1f ms", name, seconds * 1e3);
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

