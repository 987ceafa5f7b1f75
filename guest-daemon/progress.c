/* A prepare's progress, pushed every second to the hosts that asked for it. */
/*
 * A host that sent Prepare with `progress` gets an OpProgress on that same
 * connection, with the prepare's id, every second until its Ack: each
 * program whose switch waits for a long kernel (what its shim last said,
 * programs.c keeps it in `waiting`), or none.  QEMU's socket behind a
 * virtio-serial port takes one client at a time, so while the prepare's
 * connection is open nothing else can ask; and a frame every second shows
 * the host the daemon is alive however long the prepare takes.  The Ack
 * comes after the last one: finish() answers and ends the operation, and
 * a tick then finds no one who asked.
 */
#include "progress.h"

#include "proto/log.h"
#include "op.h"

#include <stdio.h>
#include <string.h>

#define GD_PROGRESS_PERIOD_MS 1000
/* Programs listed in one frame; more are counted. */
#define GD_PROGRESS_MAX_KERNELS 64

/* The numbers in a shim's words ("waiting for a kernel running for 37 s
 * (at most 12 s more)"); 0 where they are missing. */
static void read_wait(const char *text, double *running, double *left)
{
    const char *r = strstr(text, "running for ");
    const char *l = strstr(text, "at most ");

    *running = *left = 0;
    if (r && sscanf(r, "running for %lf", running) != 1)
        *running = 0;
    if (l && sscanf(l, "at most %lf", left) != 1)
        *left = 0;
    if (*running < 0)
        *running = 0;
    if (*left < 0)
        *left = 0;
}

/* Fills M with the operation's progress: KW holds the entries, PS points
 * at them. */
static void build(struct gd_daemon *d, Crane__Control__OpProgress *m,
                  Crane__Control__KernelWait *kw,
                  Crane__Control__KernelWait **ps)
{
    m->op = d->op->kind;
    m->seconds = gd_now() - d->op->started;
    m->kernels = ps;
    for (struct gd_program *p = d->programs; p; p = p->next) {
        if (!p->registered || !p->cmd_id || !p->waiting[0])
            continue;
        if (m->n_kernels == GD_PROGRESS_MAX_KERNELS) {
            m->more_kernels++;
            continue;
        }
        Crane__Control__KernelWait *k = &kw[m->n_kernels];
        crane__control__kernel_wait__init(k);
        k->pid = (uint32_t)p->pid;
        k->program = p->name;
        k->waiting = p->waiting;
        read_wait(p->waiting, &k->running_s, &k->left_s);
        ps[m->n_kernels++] = k;
    }
}

/* Whether a waiter of the operation in flight asked for progress. */
static bool wanted(const struct gd_daemon *d)
{
    if (!d->op || d->stopping)
        return false;
    for (size_t i = 0; i < d->op->n_waiters; i++)
        if (d->op->waiters[i].peer && d->op->waiters[i].progress)
            return true;
    return false;
}

static void on_tick(uv_timer_t *t)
{
    struct gd_daemon *d = t->data;
    Crane__Control__KernelWait kw[GD_PROGRESS_MAX_KERNELS];
    Crane__Control__KernelWait *ps[GD_PROGRESS_MAX_KERNELS];
    Crane__Control__OpProgress pr = CRANE__CONTROL__OP_PROGRESS__INIT;
    Crane__Control__GuestMessage m = CRANE__CONTROL__GUEST_MESSAGE__INIT;

    if (!wanted(d)) {
        uv_timer_stop(t);
        return;
    }
    build(d, &pr, kw, ps);
    m.msg_case = CRANE__CONTROL__GUEST_MESSAGE__MSG_PROGRESS;
    m.progress = &pr;
    for (size_t i = 0; i < d->op->n_waiters; i++) {
        struct gd_waiter *w = &d->op->waiters[i];
        if (!w->peer || !w->progress)
            continue;
        m.id = w->id;
        int rc = w->peer->push ? w->peer->push(w->peer, &m.base)
                               : w->peer->send(w->peer, &m.base);
        if (rc < 0)
            CRN_DEBUG("%s: progress not sent: %s", w->peer->name,
                     strerror(-rc));
    }
}

void gd_progress_arm(struct gd_daemon *d)
{
    if (!wanted(d))
        return;
    /* Made on first use; the daemon's stop closes every handle left. */
    if (!d->progress_timer.loop) {
        uv_timer_init(d->loop, &d->progress_timer);
        d->progress_timer.data = d;
    }
    if (!uv_is_active((uv_handle_t *)&d->progress_timer))
        uv_timer_start(&d->progress_timer, on_tick, GD_PROGRESS_PERIOD_MS,
                       GD_PROGRESS_PERIOD_MS);
}
