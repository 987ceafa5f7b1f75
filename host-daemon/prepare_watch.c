/* While a prepare runs: the guest's programs that wait for a long kernel. */
#include "prepare_watch.h"

#include "daemon.h"
#include "guest.h"
#include "log.h"
#include "run.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* How often the guest is asked, and how long it may take to answer. */
#define WATCH_PERIOD_MS 1000
#define WATCH_ANSWER_MS 1000
/* A program's wait is said again after this many seconds. */
#define WATCH_SAY_EVERY_S 5.0
/* Status polls in a row that may get no answer before the watch ends. */
#define WATCH_MAX_FAILURES 3
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

/* Shared by the prepare's thread and the watch's (detached) thread, freed
 * by the last of the two; LOCK guards STOP, the waiters and every use of
 * RUN, which the watch touches only while STOP is false. */
struct hd_prepare_watch {
    struct hd_run *run;
    char path[300];
    pthread_mutex_t lock;
    pthread_cond_t cond;
    unsigned refs;
    bool stop;
    double t0;              /* run seconds: when the prepare began */
    struct waiter w[WATCH_MAX_PROGRAMS];
    size_t n;
};

/* The kernel's running time in a waiting text, 0 when it names none. */
static double running_s(const char *text)
{
    const char *p = strstr(text, "running for ");
    long s = 0;

    if (p && sscanf(p, "running for %ld s", &s) == 1 && s > 0)
        return (double)s;
    return 0;
}

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

/* One status: each waiting program said (when due) and followed.
 * -ECANCELED: the prepare ended while the guest answered. */
static int look(struct hd_prepare_watch *pw)
{
    struct hd_guest_reply r;
    int rc = hd_guest_status(pw->path, WATCH_ANSWER_MS, &r);

    if (rc < 0)
        return rc;
    pthread_mutex_lock(&pw->lock);
    if (pw->stop) {
        pthread_mutex_unlock(&pw->lock);
        hd_guest_reply_free(&r);
        return -ECANCELED;
    }
    double now = hd_run_elapsed(pw->run);
    for (size_t i = 0; i < r.ack->n_programs; i++) {
        const Crane__Control__ProgramReport *p = r.ack->programs[i];
        const char *name = p->program && *p->program ? p->program : "?";
        if (!p->waiting || !*p->waiting)
            continue;
        struct waiter *w = find(pw, p->pid, name, now,
                                running_s(p->waiting));
        if (w)
            w->last_seen = now;
        if (!w || w->said_at < 0 || now - w->said_at >= WATCH_SAY_EVERY_S) {
            hd_run_say(pw->run, "prepare", -1, "pid %u (%.64s): %.200s",
                       p->pid, name, p->waiting);
            if (w)
                w->said_at = now;
        }
    }
    pthread_mutex_unlock(&pw->lock);
    hd_guest_reply_free(&r);
    return 0;
}

/* Drops one of PW's two references; the last frees it. */
static void watch_drop(struct hd_prepare_watch *pw)
{
    pthread_mutex_lock(&pw->lock);
    bool last = --pw->refs == 0;
    pthread_mutex_unlock(&pw->lock);
    if (!last)
        return;
    pthread_cond_destroy(&pw->cond);
    pthread_mutex_destroy(&pw->lock);
    free(pw);
}

/* Waits one period or until stopped; true when stopped. */
static bool pause_or_stop(struct hd_prepare_watch *pw)
{
    struct timespec until;
    bool stop;

    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += WATCH_PERIOD_MS / 1000;
    until.tv_nsec += (long)(WATCH_PERIOD_MS % 1000) * 1000000;
    if (until.tv_nsec >= 1000000000) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&pw->lock);
    while (!pw->stop &&
           pthread_cond_timedwait(&pw->cond, &pw->lock, &until) != ETIMEDOUT)
        ;
    stop = pw->stop;
    pthread_mutex_unlock(&pw->lock);
    return stop;
}

static void *watch(void *arg)
{
    struct hd_prepare_watch *pw = arg;
    unsigned failures = 0;
    int rc;

    while (!pause_or_stop(pw)) {
        if ((rc = look(pw)) == 0) {
            failures = 0;
        } else if (rc == -ECANCELED) {
            break;
        } else if (++failures == WATCH_MAX_FAILURES) {
            HD_INFO("guest %s: its status gets no answer while its prepare "
                    "runs (%s): waits for long kernels are not shown",
                    pw->path, strerror(-rc));
            break;
        }
    }
    watch_drop(pw);
    return NULL;
}

struct hd_prepare_watch *hd_prepare_watch_start(struct hd_run *run,
                                                const char *path)
{
    struct hd_prepare_watch *pw = calloc(1, sizeof(*pw));
    pthread_condattr_t ca;
    pthread_attr_t a;
    pthread_t thread;
    int rc;

    if (!pw) {
        HD_WARN("migration %s: no memory to watch the prepare", run->m.id);
        return NULL;
    }
    pw->run = run;
    pw->t0 = hd_run_elapsed(run);
    pw->refs = 2;
    snprintf(pw->path, sizeof(pw->path), "%s", path);
    pthread_mutex_init(&pw->lock, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&pw->cond, &ca);
    pthread_condattr_destroy(&ca);
    /* Detached: a status still waiting for its answer when the prepare
     * ends must not hold the migration up; it finds STOP and leaves. */
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    rc = pthread_create(&thread, &a, watch, pw);
    pthread_attr_destroy(&a);
    if (rc != 0) {
        HD_WARN("migration %s: cannot watch the prepare: %s", run->m.id,
                strerror(rc));
        pthread_cond_destroy(&pw->cond);
        pthread_mutex_destroy(&pw->lock);
        free(pw);
        return NULL;
    }
    return pw;
}

void hd_prepare_watch_stop(struct hd_prepare_watch *pw)
{
    struct waiter w[WATCH_MAX_PROGRAMS];
    size_t n;

    if (!pw)
        return;
    pthread_mutex_lock(&pw->lock);
    pw->stop = true;
    pthread_cond_signal(&pw->cond);
    n = pw->n;
    memcpy(w, pw->w, n * sizeof(w[0]));
    pthread_mutex_unlock(&pw->lock);
    struct hd_run *run = pw->run;
    watch_drop(pw);
    for (size_t i = 0; i < n; i++)
        hd_run_step(run, "kernel-wait", w[i].pid, w[i].program,
                    w[i].kernel_start, w[i].last_seen - w[i].kernel_start, 0,
                    NULL);
}
