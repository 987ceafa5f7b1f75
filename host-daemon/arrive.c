/* The destination side: a VM arrives, gets a free GPU, its programs resume;
 * VMs that found no free GPU wait for one. */
#include "arrive.h"

#include "host-daemon/history/backlog.h"

#include "gpus.h"
#include "guest.h"
#include "proto/log.h"
#include "proto/frame.h"
#include "pool.h"
#include "prepared.h"
#include "run.h"
#include "shm.h"
#include "waits.h"
#include "want.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The error a migration ends with when the proxy died while it waited. */
#define PROXY_LOST_WHY "the proxy domain stopped while the VM's programs " \
                       "remoted through it: their OpenCL calls failed"

struct waiter {
    char id[HD_ID_MAX + 1];
    char domain[HV_NAME_MAX + 1];
    double start_wall;            /* the migration's start */
    struct hd_gpu_want want;      /* the GPUs it waits for */
    unsigned proxy_seen;          /* proxy losses already noted in it */
    bool proxy_lost;              /* the proxy died while it waited */
};

struct hd_waiting {
    pthread_mutex_t lock;         /* the list, `trying`, `retrying` */
    pthread_mutex_t attach_lock;  /* one attach-and-resume at a time */
    struct waiter list[HD_WAITING_MAX];
    size_t n;
    bool retrying;
    /* The waiter the retry job took out of the list, while it tries: it
     * still waits, as hd_waiting_list shows. */
    struct waiter trying;
    bool has_trying;
    /* Times the proxy domain stopped; each waiter notes the losses it
     * has not seen yet when the retry job next takes it up (a waiter may
     * be out of the list, in the job, at the moment of the loss). */
    unsigned proxy_losses;
};

int hd_waiting_new(struct hd_waiting **out)
{
    struct hd_waiting *w = calloc(1, sizeof(*w));

    if (!w)
        return -ENOMEM;
    pthread_mutex_init(&w->lock, NULL);
    pthread_mutex_init(&w->attach_lock, NULL);
    *out = w;
    return 0;
}

void hd_waiting_free(struct hd_waiting *w)
{
    if (!w)
        return;
    pthread_mutex_destroy(&w->lock);
    pthread_mutex_destroy(&w->attach_lock);
    free(w);
}

static void waiting_add(struct hd_waiting *w, const char *id,
                        const char *domain, double start_wall,
                        const struct hd_gpu_want *want, unsigned proxy_seen,
                        bool proxy_lost)
{
    pthread_mutex_lock(&w->lock);
    for (size_t i = 0; i < w->n; i++)
        if (strcmp(w->list[i].domain, domain) == 0)
            w->list[i] = w->list[--w->n];
    if (w->n < HD_WAITING_MAX) {
        struct waiter *e = &w->list[w->n++];
        snprintf(e->id, sizeof(e->id), "%s", id);
        snprintf(e->domain, sizeof(e->domain), "%s", domain);
        e->start_wall = start_wall;
        e->want = *want;
        e->proxy_seen = proxy_seen;
        e->proxy_lost = proxy_lost;
    } else {
        CRN_ERROR("%s: more than %d VMs wait for a GPU; this one is not "
                 "retried (cranectl resume in the guest once a GPU is "
                 "attached)", domain, HD_WAITING_MAX);
    }
    pthread_mutex_unlock(&w->lock);
}

/* Reserves and plugs the GPUs of WANT into DOMAIN, all or none: 0, or
 * -errno with the step and WHY in RUN. */
static int attach_set(struct hd_daemon *d, struct hd_run *run,
                      const char *domain, const struct hd_gpu_want *want,
                      char *why, size_t why_len)
{
    struct hd_gpu_set set;
    size_t n = want->n ? want->n : 1;
    char names[512], err[600];
    double t = hd_run_elapsed(run);
    unsigned fit = 0;
    int rc;

    if ((rc = hd_pool_reserve_set(d->pool, d->hv_ops, d->hv, domain, want,
                                  &set)) < 0) {
        hd_pool_free_matching(d->pool, d->hv_ops, d->hv, want, &fit);
        if (n == 1)
            snprintf(why, why_len, "no free GPU on %s%s%s",
                     d->cfg.host_name, rc == -EBUSY ? "" : ": ",
                     rc == -EBUSY ? "" : strerror(-rc));
        else
            snprintf(why, why_len, "no %zu free GPUs on %s (%u of them "
                     "free)%s%s", n, d->cfg.host_name, fit,
                     rc == -EBUSY ? "" : ": ",
                     rc == -EBUSY ? "" : strerror(-rc));
        hd_run_step(run, "wait-gpu", 0, NULL, t, 0, rc, why);
        return rc;
    }
    hd_gpus_names(&set, names, sizeof(names));
    hd_run_say(run, "attach", -1, "attaching %s", names);
    rc = hd_gpus_attach(d, domain, &set, err, sizeof(err));
    hd_pool_unreserve_set(d->pool, &set);
    if (rc < 0)
        snprintf(why, why_len, "%.500s", err);
    hd_run_step(run, "attach", 0, NULL, t, hd_run_elapsed(run) - t, rc,
                rc < 0 ? why : names);
    return rc;
}

Crane__Hostd__Result hd_arrive_attach(struct hd_daemon *d, struct hd_run *run,
                                      const char *domain,
                                      const struct hd_gpu_want *want,
                                      enum hd_bring how, char *why,
                                      size_t why_len)
{
    const char *step = how == HD_BRING_ABORT ? "abort" : "resume";
    struct hd_guest_reply gr;
    struct hv_domain dom;
    double t;
    int rc;

    pthread_mutex_lock(&d->waiting->attach_lock);
    rc = attach_set(d, run, domain, want, why, why_len);
    pthread_mutex_unlock(&d->waiting->attach_lock);
    if (rc < 0)
        return CRANE__HOSTD__RESULT__RESULT_REMOTING;
    /* The programs leave the proxy: the shared memory goes first (a guest
     * that cannot give it up keeps it, and its programs still resume). */
    {
        char shm_why[512];
        hd_shm_release(d, run, domain, shm_why, sizeof(shm_why));
    }

    t = hd_run_elapsed(run);
    hd_run_say(run, step, -1, "bringing programs back to the GPU");
    if ((rc = d->hv_ops->domain(d->hv, domain, &dom)) < 0 || !*dom.channel) {
        snprintf(why, why_len, "%s has no guest channel here", domain);
        return CRANE__HOSTD__RESULT__RESULT_FAILED;
    }
    /* Abort undoes the prepare on the host that made it; resume follows
     * a move.  Both end with every program back on the GPU. */
    Crane__Control__Abort a = CRANE__CONTROL__ABORT__INIT;
    Crane__Control__Resume res = CRANE__CONTROL__RESUME__INIT;
    rc = how == HD_BRING_ABORT
             ? hd_guest_send(dom.channel, CRANE__CONTROL__OP__OP_ABORT,
                             &a.base, d->cfg.resume_deadline_ms, NULL, &gr)
             : hd_guest_send(dom.channel, CRANE__CONTROL__OP__OP_RESUME,
                             &res.base, d->cfg.resume_deadline_ms, NULL, &gr);
    if (rc < 0) {
        snprintf(why, why_len, "the guest daemon did not answer %s: %s",
                 step, strerror(-rc));
        hd_run_step(run, step, 0, NULL, t, hd_run_elapsed(run) - t, rc, why);
        return CRANE__HOSTD__RESULT__RESULT_FAILED;
    }
    hd_run_guest_steps(run, gr.ack, "post", t);
    rc = gr.ack->err;
    if (rc < 0)
        snprintf(why, why_len, "the guest could not %s: %.300s", step,
                 gr.ack->error);
    hd_run_step(run, step, 0, NULL, t, hd_run_elapsed(run) - t, rc,
                rc < 0 ? why : NULL);
    hd_guest_reply_free(&gr);
    return rc < 0 ? CRANE__HOSTD__RESULT__RESULT_FAILED
                  : CRANE__HOSTD__RESULT__RESULT_OK;
}

static bool valid_id(const char *s)
{
    size_t n = strlen(s);

    return n > 0 && n <= HD_ID_MAX &&
           strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                     "0123456789._-") == n;
}

int hd_arrive_serve(struct hd_daemon *d, int fd, uint64_t id,
                    const Crane__Hostd__Arrive *a, const char *src_host)
{
    Crane__Hostd__PeerReply r = CRANE__HOSTD__PEER_REPLY__INIT;
    Crane__Hostd__ArriveReply ar = CRANE__HOSTD__ARRIVE_REPLY__INIT;
    Crane__Hostd__Step **ptrs = NULL;
    Crane__Hostd__Result result;
    struct hd_gpu_want want = { .n = 0 };
    struct hv_domain dom;
    struct hd_run run;
    char why[512] = "";
    int rc;

    r.id = id;
    r.msg_case = CRANE__HOSTD__PEER_REPLY__MSG_ARRIVE;
    r.arrive = &ar;
    if (!valid_id(a->migration_id) || !*a->domain ||
        strlen(a->domain) > HV_NAME_MAX ||
        hd_want_parse(0, a->gpu_models, a->n_gpu_models, &want) < 0 ||
        hd_want_set_mem(&want, a->gpu_mem_gib, a->n_gpu_mem_gib) < 0) {
        ar.result = CRANE__HOSTD__RESULT__RESULT_FAILED;
        ar.error = "bad arrive: migration id, domain name or GPU models";
        return crn_frame_write(fd, &r.base);
    }
    hd_run_begin(&run, d, a->migration_id, a->domain, src_host,
                 d->cfg.host_name,
                 a->mode == CRANE__CONTROL__MIGRATION_MODE__MIGRATION_OFFLINE
                     ? HD_MODE_OFFLINE
                     : HD_MODE_LIVE,
                 -1);
    /* The move as the source saw it: this history shows it too. */
    if (a->bytes_moved && a->bytes_moved <= INT64_MAX)
        hd_run_bytes(&run, a->bytes_moved);
    if (a->downtime_s > 0 && a->downtime_s < 86400)
        hd_run_step(&run, "downtime", 0, NULL, 0, a->downtime_s, 0, NULL);
    if ((rc = d->hv_ops->domain(d->hv, a->domain, &dom)) < 0 ||
        !dom.running) {
        snprintf(why, sizeof(why), "%s does not run on %s", a->domain,
                 d->cfg.host_name);
        result = CRANE__HOSTD__RESULT__RESULT_FAILED;
    } else {
        result = hd_arrive_attach(d, &run, a->domain, &want,
                                  HD_BRING_RESUME, why, sizeof(why));
    }
    ar.result = result;
    ar.error = why;
    if ((ptrs = calloc(run.n_steps + 1, sizeof(*ptrs)))) {
        for (size_t i = 0; i < run.n_steps; i++)
            ptrs[i] = &run.steps[i];
        ar.steps = ptrs;
        ar.n_steps = run.n_steps;
    }
    rc = crn_frame_write(fd, &r.base);
    free(ptrs);
    if (result == CRANE__HOSTD__RESULT__RESULT_REMOTING) {
        CRN_WARN("%s: %s; it remotes until a GPU is free", a->domain, why);
        hd_waiting_add_run(d, &run, &want);
    } else {
        hd_run_end(&run, result, *why ? why : NULL);
    }
    return rc;
}

/* --- VMs waiting for a GPU ----------------------------------------------- */

void hd_waiting_add_run(struct hd_daemon *d, struct hd_run *run,
                        const struct hd_gpu_want *want)
{
    char why[512] = "";
    unsigned seen;

    /* Losses of the proxy domain from here on are this VM's to note, the
     * ones during the shared memory's plugging included. */
    pthread_mutex_lock(&d->waiting->lock);
    seen = d->waiting->proxy_losses;
    pthread_mutex_unlock(&d->waiting->lock);
    /* Its programs remote: through shared memory when the proxy domain
     * runs on this host (none refused: they stay on TCP). */
    hd_shm_attach(d, run, run->m.domain, why, sizeof(why));
    /* What it waits for, kept in the history for a restart. */
    for (size_t k = 0; k < hd_want_count(want); k++) {
        char phase[HD_PHASE_MAX + 1];

        hd_want_step(want, k, phase, sizeof(phase));
        hd_run_step(run, phase, 0, NULL, hd_run_elapsed(run), 0, 0, NULL);
    }
    waiting_add(d->waiting, run->m.id, run->m.domain, run->m.start_time,
                want, seen, false);
    hd_run_leave(run);
}

size_t hd_waiting_list(struct hd_daemon *d, struct hd_waiting_entry *out,
                       size_t max)
{
    size_t n = 0;

    pthread_mutex_lock(&d->waiting->lock);
    for (size_t i = 0; i <= d->waiting->n && n < max; i++, n++) {
        const struct waiter *e = i < d->waiting->n ? &d->waiting->list[i]
                                 : d->waiting->has_trying
                                     ? &d->waiting->trying
                                     : NULL;

        if (!e)
            break;
        snprintf(out[n].domain, sizeof(out[n].domain), "%s", e->domain);
        snprintf(out[n].id, sizeof(out[n].id), "%s", e->id);
        out[n].start_wall = e->start_wall;
        out[n].want = e->want;
    }
    pthread_mutex_unlock(&d->waiting->lock);
    return n;
}

static bool take_next(struct hd_waiting *w, struct waiter *out)
{
    bool got = false;

    pthread_mutex_lock(&w->lock);
    if (w->n > 0) {
        *out = w->list[0];
        w->list[0] = w->list[--w->n];
        got = true;
        w->trying = *out;
        w->has_trying = true;
    } else {
        w->retrying = false;
        w->has_trying = false;
    }
    pthread_mutex_unlock(&w->lock);
    return got;
}

/* A "proxy-lost" step in the migration of waiter E for each loss of the
 * proxy domain since it last looked: its programs remote through it. */
static void note_proxy_lost(struct hd_daemon *d, struct hd_run *run,
                            struct waiter *e)
{
    unsigned losses;
    char why[HV_NAME_MAX + HD_TEXT + 64];

    pthread_mutex_lock(&d->waiting->lock);
    losses = d->waiting->proxy_losses;
    pthread_mutex_unlock(&d->waiting->lock);
    if (losses == e->proxy_seen)
        return;
    e->proxy_seen = losses;
    e->proxy_lost = true;
    snprintf(why, sizeof(why), "proxy domain %s stopped while the programs "
             "of %s remoted through it", d->cfg.proxy_domain, e->domain);
    hd_run_say(run, "proxy-lost", -1, "%s", why);
    hd_run_step(run, "proxy-lost", 0, NULL, hd_run_elapsed(run), 0,
                -ECONNRESET, why);
    /* Shared memory with the proxy domain that is gone: given up (the
     * programs' connections ended with it) and unplugged from the VM. */
    hd_shm_release(d, run, e->domain, why, sizeof(why));
}

static void retry_job(void *arg)
{
    struct hd_daemon *d = arg;
    struct waiter again[HD_WAITING_MAX];
    size_t n_again = 0;
    struct waiter e;

    while (take_next(d->waiting, &e)) {
        struct hv_domain dom;
        struct hd_run run;
        char why[512] = "";
        Crane__Hostd__Result r;

        hd_run_continue(&run, d, e.id, e.domain, e.start_wall);
        note_proxy_lost(d, &run, &e);
        if (d->hv_ops->domain(d->hv, e.domain, &dom) < 0 || !dom.running) {
            hd_run_end(&run, CRANE__HOSTD__RESULT__RESULT_FAILED,
                       "the VM stopped running here while it waited for "
                       "a GPU");
            continue;
        }
        r = hd_arrive_attach(d, &run, e.domain, &e.want, HD_BRING_RESUME,
                             why, sizeof(why));
        if (r == CRANE__HOSTD__RESULT__RESULT_REMOTING) {
            hd_run_leave(&run);
            again[n_again++] = e;
            /* Too few GPUs for this one: a VM that needs fewer may
             * still find them. */
            continue;
        }
        if (e.proxy_lost && !*why)
            snprintf(why, sizeof(why), "%s", PROXY_LOST_WHY);
        hd_run_end(&run, r, *why ? why : NULL);
    }
    pthread_mutex_lock(&d->waiting->lock);
    d->waiting->has_trying = false;     /* back in the list, or done */
    pthread_mutex_unlock(&d->waiting->lock);
    for (size_t i = 0; i < n_again; i++)
        waiting_add(d->waiting, again[i].id, again[i].domain,
                    again[i].start_wall, &again[i].want, again[i].proxy_seen,
                    again[i].proxy_lost);
    pthread_mutex_lock(&d->waiting->lock);
    d->waiting->retrying = false;
    pthread_mutex_unlock(&d->waiting->lock);
}

void hd_waiting_kick(struct hd_daemon *d)
{
    bool start;

    pthread_mutex_lock(&d->waiting->lock);
    start = d->waiting->n > 0 && !d->waiting->retrying;
    if (start)
        d->waiting->retrying = true;
    pthread_mutex_unlock(&d->waiting->lock);
    if (start && hd_job_start(d, retry_job, d) < 0) {
        pthread_mutex_lock(&d->waiting->lock);
        d->waiting->retrying = false;
        pthread_mutex_unlock(&d->waiting->lock);
    }
}

void hd_waiting_proxy_lost(struct hd_daemon *d)
{
    pthread_mutex_lock(&d->waiting->lock);
    d->waiting->proxy_losses++;
    pthread_mutex_unlock(&d->waiting->lock);
}

/* The GPUs migration ID's VM waits for, as its gpu-want steps keep them
 * (one of any model in a history written before they were). */
static void want_recorded(struct hd_history *h, const char *id,
                          struct hd_gpu_want *out)
{
    struct hd_migration m;
    struct hd_step *steps = NULL;
    size_t n = 0;

    if (hd_history_get(h, id, &m, &steps, &n) < 0)
        CRN_WARN("migration %s: its steps could not be read: waiting for "
                "one GPU", id);
    hd_want_from_steps(steps, n, out);
    free(steps);
}

int hd_waiting_recover(struct hd_daemon *d)
{
    struct hd_history *h;
    struct hd_migration *list = NULL;
    struct hd_filter running;
    size_t n = 0;
    int rc;

    if ((rc = hd_history_open(d->cfg.history, &h)) < 0)
        return rc;
    /* The running ones wherever they are in the history, not only among
     * the newest: a VM may wait longer than a thousand migrations take. */
    hd_filter_init(&running);
    running.result = HD_RESULT_RUNNING;
    rc = hd_history_query(h, &running, 0, HD_LIST_MAX, &list, &n, NULL);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const struct hd_migration *m = &list[i];
        struct hd_gpu_want want;
        const struct hv_gpu *gpu;
        struct hv_domain dom;

        if (m->result != HD_RESULT_RUNNING)
            continue;
        if (strcmp(m->dst_host, d->cfg.host_name) == 0 &&
            strcmp(m->src_host, d->cfg.host_name) != 0 &&
            d->hv_ops->domain(d->hv, m->domain, &dom) == 0 && dom.running &&
            hd_pool_held_by(d->pool, d->hv_ops, d->hv, m->domain, &gpu) ==
                -ENOENT) {
            want_recorded(h, m->id, &want);
            CRN_INFO("%s (migration %s) still waits for %zu GPU%s",
                    m->domain, m->id, hd_want_count(&want),
                    hd_want_count(&want) == 1 ? "" : "s");
            waiting_add(d->waiting, m->id, m->domain, m->start_time, &want,
                        d->waiting->proxy_losses, false);
            continue;
        }
        CRN_WARN("migration %s of %s was cut short by a daemon restart",
                m->id, m->domain);
        hd_history_finish(h, m->id, HD_RESULT_FAILED, hd_wall(),
                          "crane-hostd stopped during this migration; "
                          "check the VM");
    }
    free(list);
    hd_history_close(h);
    return rc;
}

int hd_daemon_pool_read(void *arg,
                        int (*use)(void *use_arg,
                                   const struct hd_pool_state *s),
                        void *use_arg)
{
    struct hd_daemon *d = arg;
    struct hd_pool_entry e[HD_MAX_GPUS];
    struct hd_pool_gpu_state g[HD_MAX_GPUS];
    struct hd_waiting_entry *w = calloc(HD_WAITING_MAX, sizeof(*w));
    struct hd_pool_waiter_state *ws = calloc(HD_WAITING_MAX, sizeof(*ws));
    struct hd_prepared_entry *pe = calloc(HD_PREPARED_MAX, sizeof(*pe));
    struct hd_pool_prepared_state *ps = calloc(HD_PREPARED_MAX, sizeof(*ps));
    struct hd_pool_state s = {.host = d->cfg.host_name, .gpus = g,
                              .waiting = ws, .error = "", .prepared = ps};
    struct hd_history_health health;
    size_t n = 0, nw = 0;
    int rc;

    if (!w || !ws || !pe || !ps) {
        free(w);
        free(ws);
        free(pe);
        free(ps);
        return -ENOMEM;
    }
    rc = hd_pool_view(d->pool, d->hv_ops, d->hv, e, HD_MAX_GPUS, &n);
    if (rc < 0)
        s.error = strerror(-rc);
    for (size_t i = 0; i < n; i++)
        g[i] = (struct hd_pool_gpu_state){
            .name = e[i].gpu->name, .alias = e[i].gpu->alias,
            .pci = e[i].gpu->pci, .holder = e[i].holder,
            .reserved = e[i].reserved};
    s.n_gpus = n;
    nw = hd_waiting_list(d, w, HD_WAITING_MAX);
    for (size_t i = 0; i < nw; i++)
        ws[i] = (struct hd_pool_waiter_state){
            .domain = w[i].domain, .migration_id = w[i].id,
            .since = w[i].start_wall,
            .gpus = (unsigned)hd_want_count(&w[i].want)};
    s.n_waiting = nw;
    s.n_prepared = hd_prepared_list(pe, HD_PREPARED_MAX);
    for (size_t i = 0; i < s.n_prepared; i++)
        ps[i] = (struct hd_pool_prepared_state){
            .domain = pe[i].domain, .migration_id = pe[i].id,
            .since = pe[i].start_wall, .lease_s = pe[i].lease_s,
            .lease_left = pe[i].lease_left};
    hd_backlog_health(d->backlog, &health);
    s.history = d->backlog ? &health : NULL;
    rc = use(use_arg, &s);
    free(w);
    free(ws);
    free(pe);
    free(ps);
    return rc;
}
