/* Threads waiting for hypervisor events (device removed/added, domain up). */
#include "waits.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/deadline.h"

struct hd_waits {
    pthread_mutex_t lock;
    pthread_cond_t cond;         /* on CLOCK_MONOTONIC */
    struct hd_wait *armed;
};

int hd_waits_new(struct hd_waits **out)
{
    struct hd_waits *ws = calloc(1, sizeof(*ws));
    pthread_condattr_t attr;

    if (!ws)
        return -ENOMEM;
    pthread_mutex_init(&ws->lock, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&ws->cond, &attr);
    pthread_condattr_destroy(&attr);
    *out = ws;
    return 0;
}

void hd_waits_free(struct hd_waits *ws)
{
    if (!ws)
        return;
    pthread_cond_destroy(&ws->cond);
    pthread_mutex_destroy(&ws->lock);
    free(ws);
}

void hd_wait_arm(struct hd_waits *ws, struct hd_wait *w,
                 enum hv_event_kind kind, const char *domain,
                 const char *alias)
{
    memset(w, 0, sizeof(*w));
    w->kind = kind;
    snprintf(w->domain, sizeof(w->domain), "%s", domain);
    snprintf(w->alias, sizeof(w->alias), "%s", alias ? alias : "");
    pthread_mutex_lock(&ws->lock);
    w->next = ws->armed;
    ws->armed = w;
    pthread_mutex_unlock(&ws->lock);
}

static void unlink_locked(struct hd_waits *ws, struct hd_wait *w)
{
    for (struct hd_wait **p = &ws->armed; *p; p = &(*p)->next)
        if (*p == w) {
            *p = w->next;
            break;
        }
    w->next = NULL;
}

void hd_wait_disarm(struct hd_waits *ws, struct hd_wait *w)
{
    pthread_mutex_lock(&ws->lock);
    unlink_locked(ws, w);
    pthread_mutex_unlock(&ws->lock);
}

int hd_wait_for(struct hd_waits *ws, struct hd_wait *w, uint32_t timeout_ms)
{
    struct timespec until;
    int rc = 0;

    crn_deadline_in(CLOCK_MONOTONIC, timeout_ms, &until);
    pthread_mutex_lock(&ws->lock);
    while (!w->fired && rc == 0)
        rc = pthread_cond_timedwait(&ws->cond, &ws->lock, &until);
    rc = w->fired ? 0 : -ETIMEDOUT;
    unlink_locked(ws, w);
    pthread_mutex_unlock(&ws->lock);
    return rc;
}

void hd_waits_signal(struct hd_waits *ws, const struct hv_event *ev)
{
    bool any = false;

    pthread_mutex_lock(&ws->lock);
    for (struct hd_wait *w = ws->armed; w; w = w->next)
        if (w->kind == ev->kind && strcmp(w->domain, ev->domain) == 0 &&
            (!*w->alias || strcmp(w->alias, ev->alias) == 0)) {
            w->fired = true;
            any = true;
        }
    if (any)
        pthread_cond_broadcast(&ws->cond);
    pthread_mutex_unlock(&ws->lock);
}
