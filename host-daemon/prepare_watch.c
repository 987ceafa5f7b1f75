/* While a prepare runs: the guest's programs that wait for a long kernel. */
#include "prepare_watch.h"

#include "daemon.h"
#include "proto/log.h"
#include "run.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

/* A program's wait is said again after this many seconds. */
#define WATCH_SAY_EVERY_S 5.0
/* Programs followed; more waiting at once are said but not recorded. */
#define WATCH_MAX_PROGRAMS 32

/* One program seen waiting. */
struct waiter {
    uint32_t pid;
    char program[64];
    double kernel_start;    /* run seconds: when its kernel began */
    double last_seen;       /* run seconds */
    double said_at;         /* run seconds; < 0: never said */
};

/* Used by the prepare's thread only (the progress comes on its call). */
struct hd_prepare_watch {
    struct hd_run *run;
    double t0;              /* run seconds: when the prepare began */
    struct waiter w[WATCH_MAX_PROGRAMS];
    size_t n;
};

static struct waiter *find(struct hd_prepare_watch *pw, uint32_t pid,
                           const char *program, double now, double ran)
{
    for (size_t i = 0; i < pw->n; i++)
        if (pw->w[i].pid == pid)
            return &pw->w[i];
    if (pw->n == WATCH_MAX_PROGRAMS)
        return NULL;
    struct waiter *w = &pw->w[pw->n++];
    w->pid = pid;
    snprintf(w->program, sizeof(w->program), "%s", program);
    w->kernel_start = now - ran > pw->t0 ? now - ran : pw->t0;
    w->said_at = -1;
    return w;
}

void hd_prepare_watch_feed(void *arg, const Crane__Control__OpProgress *p)
{
    struct hd_prepare_watch *pw = arg;
    double now = hd_run_elapsed(pw->run);

    for (size_t i = 0; i < p->n_kernels; i++) {
        const Crane__Control__KernelWait *k = p->kernels[i];
        const char *name = k->program && *k->program ? k->program : "?";
        double ran = k->running_s > 0 && k->running_s < 1e9 ? k->running_s
                                                            : 0;
        if (!k->waiting || !*k->waiting)
            continue;
        struct waiter *w = find(pw, k->pid, name, now, ran);
        if (w)
            w->last_seen = now;
        if (!w || w->said_at < 0 || now - w->said_at >= WATCH_SAY_EVERY_S) {
            hd_run_say(pw->run, "prepare", -1, "pid %u (%.64s): %.200s",
                       k->pid, name, k->waiting);
            if (w)
                w->said_at = now;
        }
    }
    if (p->more_kernels)
        CRN_DEBUG("migration %s: %u more programs wait for kernels",
                 pw->run->m.id, p->more_kernels);
}

struct hd_prepare_watch *hd_prepare_watch_start(struct hd_run *run)
{
    struct hd_prepare_watch *pw = calloc(1, sizeof(*pw));

    if (!pw) {
        CRN_WARN("migration %s: no memory to watch the prepare", run->m.id);
        return NULL;
    }
    pw->run = run;
    pw->t0 = hd_run_elapsed(run);
    return pw;
}

void hd_prepare_watch_stop(struct hd_prepare_watch *pw)
{
    if (!pw)
        return;
    for (size_t i = 0; i < pw->n; i++) {
        const struct waiter *w = &pw->w[i];
        hd_run_step(pw->run, "kernel-wait", w->pid, w->program,
                    w->kernel_start, w->last_seen - w->kernel_start, 0, NULL);
    }
    free(pw);
}
