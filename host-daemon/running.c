/* The migrations running on this host: cancel requests and job queries
 * find them here by domain (crane-hostctl cancel, crane-migrate's Ctrl-C). */
#include "running.h"

#include "proto/log.h"

#include "proto/frame.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define RUNNING_MAX 64

/* How long a cancel in the hypervisor's copy waits to learn whether the
 * copy stopped or finished first (crane-hostctl waits 10 s in all). */
#define SETTLE_MS 5000
/* How long an ended migration that moved its VM still answers a cancel
 * with "already completed" rather than "none runs". */
#define ENDED_KEEP_S 600

struct hd_running {
    bool used;
    bool ended;                  /* kept only to answer a late cancel */
    double ended_at;             /* hd_now() */
    char domain[HV_NAME_MAX + 1];
    char id[80];
    char phase[32];
    atomic_bool cancel;
    bool past_return;            /* the VM left: too late to cancel */
    bool stayed;                 /* the copy ended and the VM is here */
    bool has_job;
    struct hv_job job;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t settled = PTHREAD_COND_INITIALIZER;
static struct hd_running table[RUNNING_MAX];

/* Under the lock: a free slot, else the one that ended longest ago. */
static struct hd_running *free_slot(void)
{
    struct hd_running *oldest = NULL;

    for (size_t i = 0; i < RUNNING_MAX; i++) {
        if (!table[i].used)
            return &table[i];
        if (table[i].ended &&
            (!oldest || table[i].ended_at < oldest->ended_at))
            oldest = &table[i];
    }
    return oldest;
}

struct hd_running *hd_running_add(const char *domain, const char *id)
{
    struct hd_running *r = NULL;

    pthread_mutex_lock(&lock);
    r = free_slot();
    if (r) {
        memset(r, 0, sizeof(*r));
        r->used = true;
        snprintf(r->domain, sizeof(r->domain), "%s", domain);
        snprintf(r->id, sizeof(r->id), "%s", id);
        snprintf(r->phase, sizeof(r->phase), "start");
        atomic_init(&r->cancel, false);
    }
    pthread_mutex_unlock(&lock);
    if (!r)
        CRN_WARN("migration %s of %s: over %d running, it cannot be "
                "cancelled", id, domain, RUNNING_MAX);
    return r;
}

void hd_running_remove(struct hd_running *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&lock);
    /* One that moved its VM stays to tell a late cancel so. */
    r->ended = true;
    r->ended_at = hd_now();
    r->used = r->past_return;
    r->has_job = false;
    pthread_cond_broadcast(&settled);
    pthread_mutex_unlock(&lock);
}

bool hd_running_busy(const char *domain)
{
    bool busy = false;

    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < RUNNING_MAX && !busy; i++)
        busy = table[i].used && !table[i].ended &&
               strcmp(table[i].domain, domain) == 0 &&
               strcmp(table[i].phase, "ready") != 0;
    pthread_mutex_unlock(&lock);
    return busy;
}

bool hd_running_cancelled(const struct hd_running *r)
{
    return r && atomic_load(&r->cancel);
}

void hd_running_copied(struct hd_running *r, bool moved)
{
    if (!r)
        return;
    pthread_mutex_lock(&lock);
    r->past_return = moved;
    r->stayed = !moved;
    r->has_job = false;
    pthread_cond_broadcast(&settled);
    pthread_mutex_unlock(&lock);
}

void hd_running_set_phase(struct hd_running *r, const char *phase)
{
    if (!r)
        return;
    pthread_mutex_lock(&lock);
    snprintf(r->phase, sizeof(r->phase), "%s", phase);
    r->has_job = false;
    pthread_mutex_unlock(&lock);
}

void hd_running_set_job(struct hd_running *r, const struct hv_job *job)
{
    if (!r)
        return;
    pthread_mutex_lock(&lock);
    r->job = *job;
    r->has_job = true;
    pthread_mutex_unlock(&lock);
}

void hd_job_stats(const struct hv_job *j, Crane__Hostd__JobStats *out)
{
    crane__hostd__job_stats__init(out);
    out->active = j->active;
    out->elapsed = j->elapsed;
    out->data_total = j->data_total;
    out->data_processed = j->data_processed;
    out->data_remaining = j->data_remaining;
    out->memory_total = j->memory_total;
    out->memory_processed = j->memory_processed;
    out->memory_remaining = j->memory_remaining;
    out->memory_bps = j->memory_bps;
    out->dirty_rate = j->dirty_rate;
    out->page_size = j->page_size;
    out->iterations = j->iterations;
    out->disk_total = j->disk_total;
    out->disk_processed = j->disk_processed;
    out->disk_remaining = j->disk_remaining;
    out->disk_bps = j->disk_bps;
    out->expected_downtime = j->expected_downtime;
    out->downtime = j->downtime;
    out->setup_time = j->setup_time;
}

/* The running entry of DOMAIN (and ID unless ""), under the lock; with
 * ENDED, else the newest that moved the VM in the last ENDED_KEEP_S. */
static struct hd_running *find(const char *domain, const char *id,
                               bool ended)
{
    struct hd_running *newest = NULL;

    for (size_t i = 0; i < RUNNING_MAX; i++) {
        struct hd_running *r = &table[i];

        if (!r->used || strcmp(r->domain, domain) != 0 ||
            (*id && strcmp(r->id, id) != 0))
            continue;
        if (!r->ended)
            return r;
        if (ended && hd_now() - r->ended_at < ENDED_KEEP_S &&
            (!newest || r->ended_at > newest->ended_at))
            newest = r;
    }
    return newest;
}

/* Under the lock, a cancel having been asked of R in the hypervisor's
 * copy: waits at most SETTLE_MS for the copy to stop (the VM stays) or
 * finish (it left), so that a cancel the copy outran is not taken. */
static void settle(struct hd_running *r)
{
    struct timespec until;

    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += SETTLE_MS / 1000;
    until.tv_nsec += (SETTLE_MS % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    while (!r->past_return && !r->stayed && !r->ended &&
           pthread_cond_timedwait(&settled, &lock, &until) == 0)
        ;
}

static void cancel(int fd, const Crane__Hostd__HostCancel *c)
{
    Crane__Hostd__DaemonReply rep = CRANE__HOSTD__DAEMON_REPLY__INIT;
    Crane__Hostd__MigrateDone done = CRANE__HOSTD__MIGRATE_DONE__INIT;
    char why[512] = "", id[80] = "";
    struct hd_running *r;

    pthread_mutex_lock(&lock);
    r = find(c->domain, c->migration_id, true);
    if (r && !r->past_return && !r->ended) {
        atomic_store(&r->cancel, true);
        if (strcmp(r->phase, "migrate") == 0)
            settle(r);
    }
    if (!r)
        snprintf(why, sizeof(why), "no migration of %s runs here%s%s",
                 c->domain, *c->migration_id ? " with id " : "",
                 c->migration_id);
    else if (r->past_return)
        /* virsh domjobabort's case too: no job is active any more. */
        snprintf(why, sizeof(why), "migration %.64s of %.255s already "
                 "completed: it left this host (the destination resumes "
                 "its programs); nothing to cancel", r->id, r->domain);
    if (r)
        snprintf(id, sizeof(id), "%s", r->id);
    pthread_mutex_unlock(&lock);
    if (*why)
        CRN_WARN("cancel refused: %s", why);
    else
        CRN_INFO("migration %s of %s: cancel asked for", id, c->domain);
    done.result = *why ? CRANE__HOSTD__RESULT__RESULT_ROLLED_BACK
                       : CRANE__HOSTD__RESULT__RESULT_OK;
    done.refused = *why != '\0';
    done.error = why;
    done.id = id;
    rep.msg_case = CRANE__HOSTD__DAEMON_REPLY__MSG_DONE;
    rep.done = &done;
    crn_frame_write(fd, &rep.base);
}

static void job_query(int fd, const Crane__Hostd__JobQuery *q)
{
    Crane__Hostd__DaemonReply rep = CRANE__HOSTD__DAEMON_REPLY__INIT;
    Crane__Hostd__JobReport jr = CRANE__HOSTD__JOB_REPORT__INIT;
    Crane__Hostd__JobStats js;
    char why[400] = "", id[80] = "", phase[32] = "";
    struct hd_running *r;
    struct hv_job job;
    bool has_job = false;

    pthread_mutex_lock(&lock);
    if ((r = find(q->domain, "", false))) {
        snprintf(id, sizeof(id), "%s", r->id);
        snprintf(phase, sizeof(phase), "%s", r->phase);
        has_job = r->has_job;
        job = r->job;
    }
    pthread_mutex_unlock(&lock);
    if (!r) {
        snprintf(why, sizeof(why), "no migration of %s runs here",
                 q->domain);
        jr.err = -ENOENT;
    }
    jr.error = why;
    jr.domain = q->domain;
    jr.migration_id = id;
    jr.phase = phase;
    if (has_job) {
        hd_job_stats(&job, &js);
        jr.stats = &js;
    }
    rep.msg_case = CRANE__HOSTD__DAEMON_REPLY__MSG_JOB;
    rep.job = &jr;
    crn_frame_write(fd, &rep.base);
}

/* A domain name as libvirt takes it: 1..HV_NAME_MAX bytes, no control
 * characters; an id [A-Za-z0-9._-], at most 64. */
static bool good_text(const char *s, size_t max, bool id)
{
    size_t n = strlen(s);

    if (n > max)
        return false;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c < 0x20 || c == 0x7f)
            return false;
        if (id && !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9') || c == '.' || c == '_' ||
                    c == '-'))
            return false;
    }
    return true;
}

const char *hd_running_check(const Crane__Hostd__ClientRequest *q)
{
    const char *domain = q->msg_case == CRANE__HOSTD__CLIENT_REQUEST__MSG_CANCEL
                             ? (q->cancel ? q->cancel->domain : NULL)
                             : (q->job ? q->job->domain : NULL);

    if (!domain || !*domain || !good_text(domain, HV_NAME_MAX, false))
        return "bad domain name";
    if (q->msg_case == CRANE__HOSTD__CLIENT_REQUEST__MSG_CANCEL &&
        !good_text(q->cancel->migration_id, 64, true))
        return "bad migration id ([A-Za-z0-9._-], at most 64)";
    return NULL;
}

void hd_running_serve(struct hd_daemon *d, int fd,
                      const Crane__Hostd__ClientRequest *q)
{
    (void)d;
    if (q->msg_case == CRANE__HOSTD__CLIENT_REQUEST__MSG_CANCEL && q->cancel)
        cancel(fd, q->cancel);
    else if (q->msg_case == CRANE__HOSTD__CLIENT_REQUEST__MSG_JOB && q->job)
        job_query(fd, q->job);
}
