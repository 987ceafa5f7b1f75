/* What the steps of a switch share (rehome.c runs them; rehome_out.c,
 * rehome_in.c and rehome_linger.c are they): the first reason of a
 * failure, which objects hold bytes or are user events still unset, and
 * helper queues for the shim's own copies.  Below the files of the steps,
 * so that none of them calls back into rehome.c. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "rehome_int.h"

/* The first cause of the switch under way's failure, in words, for the
 * operator (cranectl status, through control.c). */
static char fail_reason[240];

void shim_rehome_note(const char *fmt, ...)
{
    va_list ap;

    if (fail_reason[0])
        return;
    va_start(ap, fmt);
    vsnprintf(fail_reason, sizeof(fail_reason), fmt, ap);
    va_end(ap);
}

const char *shim_rehome_reason(void)
{
    return fail_reason;
}

void shim_rehome_note_clear(void)
{
    fail_reason[0] = '\0';
}

void shim_rehome_note_add(const char *text)
{
    size_t len = strlen(fail_reason);

    if (len)
        snprintf(fail_reason + len, sizeof(fail_reason) - len, "%s", text);
}

static const char *refusal_name(int rc)
{
    switch (rc) {
    case -EBUSY: return "busy";
    case -ENOTSUP: return "cannot move";
    case -EDEADLK: return "from a callback";
    case -ETIMEDOUT: return "timeout";
    case -ENODEV: return "no backend";
    default: return "refused";
    }
}

int shim_switch_refuse(int rc, const char *fmt, ...)
{
    char why[sizeof(fail_reason)];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    CRN_WARN("SWITCH_REFUSE (%s, %d): %s; nothing changed",
             refusal_name(rc), rc, why);
    shim_rehome_note("%s", why);
    return rc;
}

/* A user event the program has not set yet: it moves (a new one on the
 * new side), unless a command still waits on it. */
bool shim_user_event_pending(const struct shim_obj *o)
{
    const struct shim_event *e = (const void *)o;

    return o->kind == SHIM_EVENT && e->user && !e->retired &&
           e->user_status == CL_SUBMITTED;
}

/* A pending user event moved to the new side leaves its old vendor event
 * unset for ever.  Some vendors (NVIDIA's) wait for every event of a
 * context before they let the context or the library go, so the release
 * of the old side would never end and the next switch, which waits for
 * it, would hang the program.  No command and no callback waits on the
 * old event (the switch was refused otherwise), so completing it there
 * changes nothing the program can see. */
bool shim_user_event_abandon(void *real)
{
    cl_int err = VENDOR(real)->clSetUserEventStatus(real, CL_COMPLETE);

    if (err != CL_SUCCESS)
        CRN_WARN("re-home: completing a moved user event on its old side "
                 "failed (%d)", err);
    return err == CL_SUCCESS;
}

/* Objects whose bytes the shim moves itself: root buffers and images not
 * backed by a buffer.  Sub-buffers and buffer images share a root's bytes. */
bool shim_mem_holds_bytes(const struct shim_obj *o)
{
    const struct shim_mem *m = (const void *)o;
    return o->kind == SHIM_MEM && !m->parent &&
           (m->type == SHIM_BUFFER || m->type == SHIM_IMAGE);
}
/* The helper queue for CTX, made on first use: 0 or -errno, logged. */
int shim_helper_queue(struct helper_queue *hq, size_t *n, size_t cap,
                      struct shim_context *ctx, cl_command_queue *out)
{
    cl_int err = CL_SUCCESS;

    for (size_t i = 0; i < *n; i++)
        if (hq[i].ctx == ctx) {
            *out = hq[i].q;
            return 0;
        }
    if (*n == cap) {
        SWITCH_FAIL("more than %zu contexts hold bytes", cap);
        return -E2BIG;
    }
    void *rc = ctx->obj.real, *rd = ctx->devices[0]->obj.real;
    cl_command_queue q = VENDOR(rc)->clCreateCommandQueue(rc, rd, 0, &err);
    if (!q) {
        SWITCH_FAIL("cannot make a queue for the copies on %s: %d",
                  shim.backend ? shim.backend->name : "?", err);
        return -EIO;
    }
    hq[*n].ctx = ctx;
    hq[*n].q = q;
    (*n)++;
    *out = q;
    return 0;
}

/* Waits for every copy queued on the helper queues and releases them.
 * 0 only when every queue finished without error: a copy that did not
 * complete must fail the switch, never pass as data. */
int shim_helper_queues_finish(struct helper_queue *hq, size_t *n,
                              const char *what)
{
    int rc = 0;

    for (size_t i = 0; i < *n; i++) {
        cl_int err = VENDOR(hq[i].q)->clFinish(hq[i].q);
        if (err != CL_SUCCESS) {
            SWITCH_FAIL("%s did not complete: %d", what, err);
            rc = -EIO;
        }
        VENDOR(hq[i].q)->clReleaseCommandQueue(hq[i].q);
    }
    *n = 0;
    return rc;
}

void shim_helper_queues_release(struct helper_queue *hq, size_t *n)
{
    shim_helper_queues_finish(hq, n, "a copy");
}
