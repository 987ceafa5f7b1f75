/* Migrations the history could not store, kept in memory and retried, so a
 * full or read-only disk loses no migration that crane-hostd ran. */
#include "backlog.h"

#include "history_counters.h"
#include "proto/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double wall_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

struct kept {
    struct hd_migration m;
    struct hd_step *steps;
    size_t n_steps;
    struct kept *next;
};

struct hd_backlog {
    pthread_mutex_t lock;
    struct kept *head, **tail;    /* oldest first */
    size_t count, max;
    unsigned long long dropped;   /* since start */
    unsigned long long saved;     /* of them, counted in the history */
    unsigned long long base;      /* the history's count at start */
    bool read_only;
    bool flushing;
    unsigned generation;
    double since;
    char reason[256];
};

int hd_backlog_new(struct hd_backlog **out)
{
    struct hd_backlog *b = calloc(1, sizeof(*b));

    if (!b)
        return -ENOMEM;
    pthread_mutex_init(&b->lock, NULL);
    b->tail = &b->head;
    b->max = HD_BACKLOG_MAX;
    *out = b;
    return 0;
}

static void kept_free(struct kept *k)
{
    free(k->steps);
    free(k);
}

void hd_backlog_free(struct hd_backlog *b)
{
    if (!b)
        return;
    if (b->count)
        CRN_ERROR("history: %zu migration(s) never written (the disk did "
                 "not take them before crane-hostd stopped)", b->count);
    for (struct kept *k = b->head, *next; k; k = next) {
        next = k->next;
        kept_free(k);
    }
    pthread_mutex_destroy(&b->lock);
    free(b);
}

/* Appends N steps to K, up to HD_STEPS_MAX.  0 or -ENOMEM. */
static int add_steps(struct kept *k, const struct hd_step *steps, size_t n)
{
    struct hd_step *grown;

    if (k->n_steps + n > HD_STEPS_MAX)
        n = HD_STEPS_MAX - k->n_steps;
    if (!n)
        return 0;
    grown = realloc(k->steps, (k->n_steps + n) * sizeof(*grown));
    if (!grown)
        return -ENOMEM;
    memcpy(grown + k->n_steps, steps, n * sizeof(*grown));
    k->steps = grown;
    k->n_steps += n;
    return 0;
}

/* Takes M's outcome into K's migration (the first entry knows its start,
 * hosts and mode; a later one, of a run taken up again, its end). */
static void take_outcome(struct hd_migration *into,
                         const struct hd_migration *m)
{
    if (m->result != HD_RESULT_RUNNING) {
        into->result = m->result;
        into->end_time = m->end_time;
        snprintf(into->error, sizeof(into->error), "%s", m->error);
    }
    if (m->bytes_moved)
        into->bytes_moved = m->bytes_moved;
    if (m->dst_host[0])
        snprintf(into->dst_host, sizeof(into->dst_host), "%s", m->dst_host);
}

/* Under the lock: drops the oldest finished entry to make room. */
static void drop_oldest(struct hd_backlog *b)
{
    for (struct kept **p = &b->head; *p; p = &(*p)->next) {
        struct kept *k = *p;

        if (k->m.result == HD_RESULT_RUNNING)
            continue;
        CRN_ERROR("history: migration %s dropped: %zu kept in memory "
                 "already", k->m.id, b->max);
        *p = k->next;
        if (b->tail == &k->next)
            b->tail = p;
        kept_free(k);
        b->count--;
        b->dropped++;
        return;
    }
}

int hd_backlog_keep(struct hd_backlog *b, const struct hd_migration *m,
                    const struct hd_step *steps, size_t n, const char *why)
{
    struct kept *k;
    int rc;

    pthread_mutex_lock(&b->lock);
    for (k = b->head; k && strcmp(k->m.id, m->id) != 0; k = k->next)
        ;
    if (!k) {
        if (b->count >= b->max)
            drop_oldest(b);
        if (!(k = calloc(1, sizeof(*k)))) {
            pthread_mutex_unlock(&b->lock);
            return -ENOMEM;
        }
        k->m = *m;
        *b->tail = k;
        b->tail = &k->next;
        b->count++;
    } else {
        take_outcome(&k->m, m);
    }
    rc = add_steps(k, steps, n);
    if (!b->since) {
        b->since = wall_now();
        CRN_ERROR("history degraded: migration %s kept in memory only (%s); "
                 "retrying", m->id, why);
    }
    snprintf(b->reason, sizeof(b->reason), "%s", why);
    pthread_mutex_unlock(&b->lock);
    return rc;
}

/* A copy of the oldest entry into *OUT (steps malloc'ed): runs add to
 * entries while the flusher writes, so it writes a copy.  -ENOENT: none. */
static int copy_first(struct hd_backlog *b, struct kept *out)
{
    int rc = 0;

    pthread_mutex_lock(&b->lock);
    if (!b->head) {
        rc = -ENOENT;
    } else {
        *out = *b->head;
        out->steps = NULL;
        if (b->head->n_steps &&
            !(out->steps = malloc(b->head->n_steps * sizeof(*out->steps))))
            rc = -ENOMEM;
        else if (b->head->n_steps)
            memcpy(out->steps, b->head->steps,
                   b->head->n_steps * sizeof(*out->steps));
    }
    pthread_mutex_unlock(&b->lock);
    return rc;
}

/* Removes the entry of ID if it has not changed since the copy C was
 * taken (a run may have added to it meanwhile: then what is new stays). */
static void forget_written(struct hd_backlog *b, const struct kept *c)
{
    pthread_mutex_lock(&b->lock);
    for (struct kept **p = &b->head; *p; p = &(*p)->next) {
        struct kept *k = *p;

        if (strcmp(k->m.id, c->m.id) != 0)
            continue;
        if (k->n_steps > c->n_steps || k->m.result != c->m.result) {
            /* Written up to C: keep only what came after. */
            memmove(k->steps, k->steps + c->n_steps,
                    (k->n_steps - c->n_steps) * sizeof(*k->steps));
            k->n_steps -= c->n_steps;
        } else {
            *p = k->next;
            if (b->tail == &k->next)
                b->tail = p;
            kept_free(k);
            b->count--;
        }
        break;
    }
    pthread_mutex_unlock(&b->lock);
}

/* Everything kept is written: the drops not yet in H's counter go there
 * (the flusher is the only writer of SAVED). */
static void save_dropped(struct hd_backlog *b, struct hd_history *h)
{
    unsigned long long n;

    pthread_mutex_lock(&b->lock);
    n = b->dropped - b->saved;
    pthread_mutex_unlock(&b->lock);
    if (n && hd_history_count_dropped(h, n) == 0) {
        pthread_mutex_lock(&b->lock);
        b->saved += n;
        pthread_mutex_unlock(&b->lock);
        CRN_INFO("history: %llu dropped migration(s) counted in the file", n);
    }
}

int hd_backlog_flush(struct hd_backlog *b, const char *path)
{
    struct hd_history *h = NULL;
    size_t written = 0, left;
    struct kept c;
    int rc;

    pthread_mutex_lock(&b->lock);
    if (b->flushing ||
        (!b->count && !b->read_only && b->saved == b->dropped)) {
        rc = b->flushing ? -EBUSY : 0;
        pthread_mutex_unlock(&b->lock);
        return rc;
    }
    /* A read-only file stays so quietly (SQLite would log each try). */
    if (b->read_only && access(path, W_OK) != 0 && errno != ENOENT) {
        rc = -errno;
        pthread_mutex_unlock(&b->lock);
        return rc;
    }
    b->flushing = true;
    pthread_mutex_unlock(&b->lock);
    rc = hd_history_open(path, &h);
    while (rc == 0 && (rc = copy_first(b, &c)) == 0) {
        rc = hd_history_store(h, &c.m, c.steps, c.n_steps);
        if (rc == 0) {
            forget_written(b, &c);
            written++;
        }
        free(c.steps);
    }
    if (rc == -ENOENT)
        save_dropped(b, h);
    hd_history_close(h);
    pthread_mutex_lock(&b->lock);
    b->flushing = false;
    if (rc == 0 || rc == -ENOENT) {
        if (b->read_only) {
            CRN_INFO("history %s is writable again", path);
            b->generation++;
        }
        b->read_only = false;
    }
    left = b->count;
    if (written)
        CRN_INFO("history: %zu migration(s) kept in memory written, %zu "
                "left", written, left);
    if (!left && !b->read_only && !b->dropped && b->since) {
        CRN_INFO("history no longer degraded");
        b->since = 0;
        b->reason[0] = '\0';
    } else if (rc != 0 && rc != -ENOENT) {
        snprintf(b->reason, sizeof(b->reason), "%s", strerror(-rc));
    }
    pthread_mutex_unlock(&b->lock);
    return rc == 0 || rc == -ENOENT ? (int)left : rc;
}

void hd_backlog_set_max(struct hd_backlog *b, size_t max)
{
    pthread_mutex_lock(&b->lock);
    b->max = max ? max : 1;
    pthread_mutex_unlock(&b->lock);
}

void hd_backlog_set_dropped_base(struct hd_backlog *b, uint64_t n)
{
    pthread_mutex_lock(&b->lock);
    b->base = n;
    pthread_mutex_unlock(&b->lock);
}

void hd_backlog_set_read_only(struct hd_backlog *b, bool read_only,
                              const char *why)
{
    pthread_mutex_lock(&b->lock);
    b->read_only = read_only;
    if (read_only) {
        if (!b->since)
            b->since = wall_now();
        snprintf(b->reason, sizeof(b->reason), "%s", why ? why : "");
    }
    pthread_mutex_unlock(&b->lock);
}

void hd_backlog_health(struct hd_backlog *b, struct hd_history_health *out)
{
    memset(out, 0, sizeof(*out));
    if (!b)
        return;
    pthread_mutex_lock(&b->lock);
    out->read_only = b->read_only;
    out->unsaved = b->count;
    out->dropped = b->dropped;
    out->dropped_total = b->base + b->dropped;
    out->since = b->since;
    out->generation = b->generation;
    out->degraded = b->read_only || b->count || b->dropped;
    snprintf(out->reason, sizeof(out->reason), "%s", b->reason);
    pthread_mutex_unlock(&b->lock);
}
