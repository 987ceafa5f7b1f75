/* A switch that meets a long-running kernel waits for the program's queues
 * to drain, up to CRANE_SWITCH_KERNEL_WAIT_MS (and the command's
 * deadline), showing the wait; past the bound it is refused with that
 * reason, nothing changed, the program runs on (docs/fault.md). */
#include <errno.h>
#include <stdio.h>
#include <time.h>

#include "rehome_int.h"

#define MAX_MARKS 64
/* Before the first word to crane-guestd: a short wait is not news. */
#define SHOW_AFTER_S 1.0
/* What a command's answer needs after the wait ended, at most (a tenth
 * of the time left where that is less). */
#define DEADLINE_MARGIN_S 1.0

struct marks {
    cl_event ev[MAX_MARKS];
    size_t n;
};

/* A marker at the end of every queue of the program's: complete once all
 * that queue held before it is (queues_drain in rehome_out.c does the
 * same under the gate). */
static void mark_all(struct marks *mk)
{
    shim_store_lock();
    for (struct shim_obj *o = shim_store_first(); o && mk->n < MAX_MARKS;
         o = o->next)
        if (o->kind == SHIM_QUEUE && o->real &&
            VENDOR(o->real)->clEnqueueMarkerWithWaitList(
                o->real, 0, NULL, &mk->ev[mk->n]) == CL_SUCCESS) {
            VENDOR(o->real)->clFlush(o->real);
            mk->n++;
        }
    shim_store_unlock();
}

/* Whether a marker's commands still run (a failed query: no longer ours
 * to wait for; the switch's finish step says what failed). */
static bool marks_running(struct marks *mk)
{
    for (size_t i = 0; i < mk->n; i++) {
        cl_int st = CL_COMPLETE;
        if (VENDOR(mk->ev[i])->clGetEventInfo(
                mk->ev[i], CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(st),
                &st, NULL) == CL_SUCCESS &&
            st > CL_COMPLETE)
            return true;
    }
    return false;
}

static void marks_release(struct marks *mk)
{
    for (size_t i = 0; i < mk->n; i++)
        VENDOR(mk->ev[i])->clReleaseEvent(mk->ev[i]);
    mk->n = 0;
}

/* Whether the program's kernels still run on FROM, and for how long at
 * least (the proxy's heartbeat knows; the vendor does not say). */
static bool still_running(const struct shim_backend_ops *from,
                          struct marks *mk, double *ran)
{
    /* The proxy executes one of our calls (a clFinish behind the kernel,
     * say): a query would only wait behind it. */
    if (shim_backend_running(from, NULL, 0, ran))
        return true;
    if (!mk->n)
        mark_all(mk);
    return marks_running(mk);
}

static void show(const char *text)
{
    void (*fn)(const char *) = shim_wait_shown;

    if (fn)
        fn(text);
}

/* How long this switch may wait: the setting, less what the command that
 * asked for it needs to answer within its deadline. */
static double bound_s(double t0)
{
    double bound = shim_config.kernel_wait_ms / 1e3;
    double deadline = atomic_load(&shim_cmd_deadline);

    double margin = (deadline - t0) / 10;

    if (margin > DEADLINE_MARGIN_S)
        margin = DEADLINE_MARGIN_S;
    if (deadline > 0 && deadline - margin - t0 < bound)
        bound = deadline - margin - t0;
    return bound > 0 ? bound : 0;
}

int shim_rehome_wait_kernels(const struct shim_backend_ops *from)
{
    struct marks mk = {.n = 0};
    double t0 = shim_now(), bound = bound_s(t0), ran = 0;
    long shown = -1;
    bool logged = false;
    int rc = 0;

    /* 0: no wait here (the finish step waits, behind the closed gate). */
    if (shim_config.kernel_wait_ms == 0)
        return 0;
    /* A pending user event may hold a queue for ever: the finish step
     * refuses such a switch at once (-EBUSY), no wait for it here. */
    for (struct shim_obj *o = shim_store_first(); o; o = o->next)
        if (shim_user_event_pending(o))
            return 0;
    while (still_running(from, &mk, &ran)) {
        double now = shim_now(), waited = now - t0;
        double running = ran > waited ? ran : waited;
        if (waited >= bound) {
            SWITCH_FAIL("waited %.0f s for a kernel running for %.0f s "
                        "(CRANE_SWITCH_KERNEL_WAIT_MS=%ld, or the "
                        "deadline): nothing changed",
                        waited, running, shim_config.kernel_wait_ms);
            rc = -ETIME;
            break;
        }
        if (waited >= SHOW_AFTER_S && (long)running != shown) {
            char text[128];
            shown = (long)running;
            snprintf(text, sizeof(text),
                     "waiting for a kernel running for %ld s (at most %.0f s "
                     "more)",
                     shown, bound - waited);
            if (!logged || shown % 10 == 0)
                CRN_INFO("re-home: %s", text);
            logged = true;
            show(text);
        }
        /* Polls: 1 ms at first, then every 50 ms. */
        long ms = waited < 0.05 ? 1 : 50;
        struct timespec ts = {0, ms * 1000000L};
        nanosleep(&ts, NULL);
    }
    marks_release(&mk);
    if (shown >= 0) {
        if (rc == 0)
            CRN_INFO("re-home: the program's kernels ended after %.1f s of "
                     "waiting; switching", shim_now() - t0);
        show("");
    }
    return rc;
}
