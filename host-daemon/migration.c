/* The source side of a migration: prepare, detach, migrate, hand over. */
#include "migration.h"

#include "health.h"
#include "migrate_opts.h"

#include "gpus.h"
#include "guest.h"
#include "prepare_watch.h"
#include "prepared.h"
#include "proto/log.h"
#include "peer.h"
#include "pool.h"
#include "proxy.h"
#include "run.h"
#include "running.h"
#include "shm.h"
#include "waits.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* How often the job's progress is read while the hypervisor copies. */
#define PROGRESS_PERIOD_MS 500

struct mig {
    struct hd_daemon *d;
    const Crane__Hostd__MigrateRequest *q;
    struct hd_run run;
    struct hv_domain dom;
    struct hd_gpu_set gpus;      /* every pool GPU the VM holds */
    char gpu_names[512];         /* their names, for the logs */
    struct hd_peer *peer;
    const char *proxy;           /* live: the endpoint programs go to */
    bool handoff;                /* prepare only: another tool migrates */
    double downtime;             /* the VM's pause, as the hypervisor says */
    struct hd_running *running;  /* cancel and job queries find it there */
    struct hd_gpu_want want;     /* the GPUs' models, as peers are told */
    char *want_models[HD_MAX_GPUS]; /* pointers into want, for the wire */
    char why[768];
};

int hd_peer_endpoint_for(const char *uri, unsigned port, char *out,
                         size_t len)
{
    const char *h = strstr(uri, "://");
    size_t n;

    if (!h)
        return -EINVAL;
    h += 3;
    if (strchr(h, '@') && strchr(h, '@') < strchr(h, '/'))
        h = strchr(h, '@') + 1;       /* user@host */
    n = strcspn(h, ":/?");
    if (*h == '[')                     /* [v6]:port */
        n = strcspn(h, "]") + 1;
    if (n == 0 || n > 255)
        return -EINVAL;
    snprintf(out, len, "tcp:%.*s:%u", (int)n, h, port);
    return 0;
}

static bool live(const struct mig *m)
{
    return m->q->live;
}

/* The models of the VM's GPUs into m->want, and the wire's view of them. */
static void want_set(struct mig *m)
{
    hd_pool_want_of(&m->gpus, &m->want);
    for (size_t i = 0; i < m->want.n; i++)
        m->want_models[i] = m->want.model[i];
}

/* Brings the programs back to passthrough on the GPU the VM still has. */
static Crane__Hostd__Result rollback_guest(struct mig *m, bool prepared)
{
    struct hd_guest_reply gr;
    double t = hd_run_elapsed(&m->run);
    int rc;

    hd_run_say(&m->run, "rollback", -1, "%s",
               prepared ? "bringing programs back to the GPU"
                        : "undoing the prepare");
    /* Abort undoes a prepare whatever it reached: modules loaded again,
     * the GPU waited for, every program back to passthrough. */
    Crane__Control__Abort a = CRANE__CONTROL__ABORT__INIT;
    rc = hd_guest_send(m->dom.channel, CRANE__CONTROL__OP__OP_ABORT, &a.base,
                       m->d->cfg.resume_deadline_ms, NULL, &gr);
    if (rc == 0) {
        hd_run_guest_steps(&m->run, gr.ack, "post", t);
        rc = gr.ack->err;
        hd_guest_reply_free(&gr);
    }
    hd_run_step(&m->run, "rollback", 0, NULL, t, hd_run_elapsed(&m->run) - t,
                rc, NULL);
    if (rc < 0) {
        size_t l = strlen(m->why);
        snprintf(m->why + l, sizeof(m->why) - l,
                 "; rollback: the guest did not come back (%s): run "
                 "`cranectl resume` in the VM", strerror(-rc));
        return CRANE__HOSTD__RESULT__RESULT_FAILED;
    }
    return CRANE__HOSTD__RESULT__RESULT_ROLLED_BACK;
}

/* Plugs the GPUs back in on the source (all or none), then the
 * programs. */
static Crane__Hostd__Result rollback_attach(struct mig *m)
{
    double t = hd_run_elapsed(&m->run);
    char why[600];
    int rc;

    hd_run_say(&m->run, "rollback", -1, "re-attaching %s", m->gpu_names);
    rc = hd_gpus_attach(m->d, m->dom.name, &m->gpus, why, sizeof(why));
    hd_run_step(&m->run, "rollback: attach", 0, NULL, t,
                hd_run_elapsed(&m->run) - t, rc, rc < 0 ? why : NULL);
    if (rc < 0) {
        size_t l = strlen(m->why);
        snprintf(m->why + l, sizeof(m->why) - l,
                 "; rollback: %.400s: programs stay remoting", why);
        return CRANE__HOSTD__RESULT__RESULT_FAILED;
    }
    return rollback_guest(m, true);
}

static int fail(struct mig *m, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int fail(struct mig *m, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(m->why, sizeof(m->why), fmt, ap);
    va_end(ap);
    return -1;
}

/* Live: the programs will compute through the proxy, so it must answer
 * (and its domain run) before anything changes.  Without a proxy named
 * here (neither --proxy nor `proxy`), the guest daemon's own is used. */
static int check_proxy(struct mig *m)
{
    struct hd_daemon *d = m->d;
    double t = hd_run_elapsed(&m->run);
    char why[600];
    int rc;

    m->proxy = *m->q->proxy ? m->q->proxy : d->cfg.proxy;
    if (!*m->proxy)
        return 0;
    hd_run_say(&m->run, "proxy", -1, "checking the proxy %s%s%s",
               *d->cfg.proxy_domain ? d->cfg.proxy_domain : "",
               *d->cfg.proxy_domain ? " at " : "", m->proxy);
    rc = hd_proxy_ready(d, m->proxy, why, sizeof(why));
    if (rc < 0)
        fail(m, "%s: nothing was changed", why);
    hd_run_step(&m->run, "proxy", 0, NULL, t, hd_run_elapsed(&m->run) - t, rc,
                rc < 0 ? m->why : NULL);
    return rc < 0 ? -1 : 0;
}

/* Whether the destination that answered C can take the VM's GPUs:
 * fewer free ones of their models than it holds refuses an offline
 * migration before anything changes; live, the programs remote there
 * until enough are free. */
static int check_room(struct mig *m, const Crane__Hostd__CheckReply *c)
{
    size_t n = m->gpus.n;
    unsigned fit = c->gpus_matching;

    hd_run_say(&m->run, "check", -1,
               "%s holds %s; destination %s has %u of %u GPUs free, %u of "
               "the %zu it needs%s", m->dom.name, m->gpu_names,
               hd_peer_host(m->peer), c->gpus_free, c->gpus_total, fit, n,
               fit >= n ? ""
               : live(m) ? ": programs will remote there until enough are "
                           "free"
                         : "");
    if (fit < n && !live(m))
        return fail(m, "destination %s has %u free GPUs of the models of "
                    "the %zu %s holds (%s): an offline migration needs them "
                    "all; nothing was changed", hd_peer_host(m->peer), fit,
                    n, m->dom.name, m->gpu_names);
    return 0;
}

/* The domain, its GPUs, its channel, the destination: nothing changes. */
static int check(struct mig *m)
{
    struct hd_daemon *d = m->d;
    Crane__Hostd__PeerRequest req = CRANE__HOSTD__PEER_REQUEST__INIT;
    Crane__Hostd__Check c = CRANE__HOSTD__CHECK__INIT;
    Crane__Hostd__PeerReply *r = NULL;
    char ep[300], why[512];
    double t = hd_run_elapsed(&m->run);
    int rc;

    if ((rc = d->hv_ops->domain(d->hv, m->q->domain, &m->dom)) < 0)
        return fail(m, "no domain %s here (%s)", m->q->domain, strerror(-rc));
    if (!m->dom.running)
        return fail(m, "%s is not running", m->dom.name);
    if (!*m->dom.channel)
        return fail(m, "%s has no guest channel %s (a <channel type='unix'> "
                    "with target name %s)", m->dom.name, d->cfg.channel,
                    d->cfg.channel);
    if ((rc = hd_pool_held_set(d->pool, d->hv_ops, d->hv, m->dom.name,
                               &m->gpus)) < 0)
        return fail(m, rc == -ENOENT ? "%s holds none of this host's GPUs "
                                       "(use virsh migrate)"
                                     : "%s: cannot read its devices",
                    m->dom.name);
    hd_gpus_names(&m->gpus, m->gpu_names, sizeof(m->gpu_names));
    if (m->handoff) {
        /* The tool that migrates chose the destination and checked it;
         * crane-hostctl resume there finds a GPU (or waits for one). */
        hd_run_say(&m->run, "check", -1, "%s holds %s", m->dom.name,
                   m->gpu_names);
        hd_run_step(&m->run, "check", 0, NULL, t,
                    hd_run_elapsed(&m->run) - t, 0, NULL);
        return live(m) ? check_proxy(m) : 0;
    }
    if (*m->q->peer)
        snprintf(ep, sizeof(ep), "%s", m->q->peer);
    else if (hd_peer_endpoint_for(m->q->dest_uri, d->cfg.peer_port, ep,
                                  sizeof(ep)) < 0)
        return fail(m, "%s names no host: give the destination's "
                    "crane-hostd with --peer tcp:HOST:PORT", m->q->dest_uri);
    rc = hd_peer_open(ep, d->tls, d->key, d->key_len, d->cfg.host_name,
                      &m->peer, why, sizeof(why));
    hd_health_peer(d->health, ep, rc == 0);
    if (rc < 0)
        return fail(m, "destination crane-hostd: %s", why);
    req.msg_case = CRANE__HOSTD__PEER_REQUEST__MSG_CHECK;
    req.check = &c;
    want_set(m);
    c.gpu_models = m->want_models;
    c.n_gpu_models = m->want.n;
    c.gpu_mem_gib = m->want.mem_gib;
    c.n_gpu_mem_gib = m->want.n;
    if ((rc = hd_peer_call(m->peer, &req, 10000, &r)) < 0 ||
        r->msg_case != CRANE__HOSTD__PEER_REPLY__MSG_CHECK) {
        if (r)
            crane__hostd__peer_reply__free_unpacked(r, NULL);
        return fail(m, "destination crane-hostd did not answer check");
    }
    /* From here on the destination is known by the name it gave. */
    hd_run_set_destination(&m->run, hd_peer_host(m->peer));
    rc = check_room(m, r->check);
    crane__hostd__peer_reply__free_unpacked(r, NULL);
    if (rc < 0)
        return -1;
    hd_run_step(&m->run, "check", 0, NULL, t, hd_run_elapsed(&m->run) - t, 0,
                NULL);
    return live(m) ? check_proxy(m) : 0;
}

static int prepare(struct mig *m)
{
    struct hd_guest_reply gr;
    double t;
    int rc;

    /* Shared memory with the proxy domain here must not go with the VM:
     * given up and unplugged first (nothing when it has none). */
    char why[600];
    if (hd_shm_release(m->d, &m->run, m->dom.name, why, sizeof(why)) < 0)
        return fail(m, "%s", why);
    t = hd_run_elapsed(&m->run);
    hd_run_say(&m->run, "prepare", -1, "taking programs off the GPU (%s)",
               live(m) ? "live: onto the proxy" : "offline: parked in RAM");
    struct hd_prepare_watch *pw = hd_prepare_watch_start(&m->run);
    struct hd_guest_watch gw = {pw ? hd_prepare_watch_feed : NULL, pw};
    Crane__Control__Prepare p = CRANE__CONTROL__PREPARE__INIT;
    p.mode = live(m) ? CRANE__CONTROL__MIGRATION_MODE__MIGRATION_LIVE
                     : CRANE__CONTROL__MIGRATION_MODE__MIGRATION_OFFLINE;
    p.proxy = (char *)(m->proxy ? m->proxy : m->q->proxy ? m->q->proxy : "");
    /* The proxy's key, passed on so that the programs can authenticate
     * to it. */
    if (m->proxy && m->d->proxy_key) {
        p.auth_key.data = m->d->proxy_key;
        p.auth_key.len = m->d->proxy_key_len;
    }
    p.progress = gw.fn != NULL;
    rc = hd_guest_send(m->dom.channel, CRANE__CONTROL__OP__OP_PREPARE, &p.base,
                       m->d->cfg.prepare_deadline_ms, &gw, &gr);
    hd_prepare_watch_stop(pw);
    if (rc < 0) {
        hd_run_step(&m->run, "prepare", 0, NULL, t,
                    hd_run_elapsed(&m->run) - t, rc, "no answer");
        return fail(m, "the guest daemon did not answer prepare: %s",
                    strerror(-rc));
    }
    hd_run_guest_steps(&m->run, gr.ack, "pre", t);
    rc = gr.ack->err;
    if (rc < 0)
        fail(m, "prepare failed in the guest: %.500s", gr.ack->error);
    hd_run_step(&m->run, "prepare", 0, NULL, t, hd_run_elapsed(&m->run) - t,
                rc, rc < 0 ? m->why : NULL);
    hd_guest_reply_free(&gr);
    return rc < 0 ? -1 : 0;
}

static int detach(struct mig *m)
{
    double t = hd_run_elapsed(&m->run);
    char why[600];
    int rc;

    hd_run_say(&m->run, "detach", -1, "unplugging %s", m->gpu_names);
    if ((rc = hd_gpus_detach(m->d, m->dom.name, &m->gpus, why,
                             sizeof(why))) < 0)
        fail(m, "%s", why);
    hd_run_step(&m->run, "detach", 0, NULL, t, hd_run_elapsed(&m->run) - t,
                rc, rc < 0 ? m->why : m->gpu_names);
    return rc < 0 ? -1 : 0;
}

/* Reads the job's progress while the hypervisor copies; suspends the VM
 * after --timeout seconds as virsh does. */
struct watch {
    struct mig *m;
    pthread_t thread;
    atomic_bool done;
    atomic_bool suspended;       /* by --timeout */
    atomic_bool cancelled;       /* the job aborted by a cancel */
};

static void *watch_job(void *arg)
{
    struct watch *w = arg;
    struct mig *m = w->m;
    double start = hd_now();
    bool suspended = false, aborted = false;
    int last = -1;

    while (!atomic_load(&w->done)) {
        struct timespec ts = { 0, PROGRESS_PERIOD_MS * 1000000L };
        struct hv_job job;

        nanosleep(&ts, NULL);
        if (atomic_load(&w->done))
            break;
        if (m->q->timeout_s && !suspended &&
            hd_now() - start >= m->q->timeout_s) {
            suspended = true;
            atomic_store(&w->suspended, true);
            hd_run_say(&m->run, "migrate", -1,
                       "still copying after %u s: suspending the VM",
                       m->q->timeout_s);
            m->d->hv_ops->suspend(m->d->hv, m->dom.name);
        }
        if (hd_running_cancelled(m->running) && !aborted) {
            aborted = true;
            atomic_store(&w->cancelled, true);
            hd_run_say(&m->run, "cancel", -1, "cancelled: aborting "
                       "the hypervisor's migration job");
            if (!m->d->hv_ops->abort_job ||
                m->d->hv_ops->abort_job(m->d->hv, m->dom.name) < 0)
                hd_run_say(&m->run, "cancel", -1, "the hypervisor did not "
                           "abort the job: the copy goes on");
        }
        if (m->d->hv_ops->job(m->d->hv, m->dom.name, &job) < 0 || !job.active)
            continue;
        hd_running_set_job(m->running, &job);
        if (job.data_processed)
            hd_run_bytes(&m->run, job.data_processed);
        if (m->q->verbose && job.data_total) {
            /* Every change, in virsh's hundredths. */
            int pct = (int)(10000.0 * (double)(job.data_total -
                                               job.data_remaining) /
                            (double)job.data_total);
            if (pct != last)
                hd_run_job_progress(&m->run, &job);
            last = pct;
        }
    }
    return NULL;
}

/* hv_migrate_args.open_stream (the libxl backend): a connection of its
 * own to the destination's crane-hostd that check reached, authenticated
 * the same way, turned into the migration stream by XenStream. */
static int open_stream(void *arg, int *fd)
{
    struct mig *m = arg;
    struct hd_daemon *d = m->d;
    char ep[300], why[512];
    int rc;

    if (*m->q->peer)
        snprintf(ep, sizeof(ep), "%s", m->q->peer);
    else if (hd_peer_endpoint_for(m->q->dest_uri, d->cfg.peer_port, ep,
                                  sizeof(ep)) < 0)
        return -EINVAL;               /* not reached: check passed */
    rc = hd_peer_open_xen_stream(ep, d->tls, d->key, d->key_len, d->cfg.host_name,
                                 m->run.m.id, m->dom.name, fd, why,
                                 sizeof(why));
    if (rc < 0) {
        CRN_ERROR("migration %s: destination crane-hostd: %s", m->run.m.id,
                 why);
        hv_set_last_error(why);       /* the operator's reason */
    }
    return rc;
}

static int migrate(struct mig *m)
{
    struct hd_daemon *d = m->d;
    struct hv_migrate_args a = {
        .dest_uri = m->q->dest_uri,
        .migrate_uri = *m->q->migrate_uri ? m->q->migrate_uri : NULL,
        .dest_xml = *m->q->dest_xml ? m->q->dest_xml : NULL,
        .live = m->q->live,
        .p2p = m->q->p2p,
        .persistent = m->q->persistent,
        .undefine_source = m->q->undefine_source,
        .open_stream = open_stream,
        .stream_arg = m,
    };
    struct watch w = { .m = m };
    struct hv_job job;
    double t = hd_run_elapsed(&m->run);
    bool watching;
    int rc;

    hd_migrate_opts_apply(&d->cfg, m->q->options, &a);
    hv_set_last_error(NULL);
    hd_run_say(&m->run, "migrate", -1, "migrating to %s (%s%s%s%s)",
               m->q->dest_uri, m->q->live ? "live" : "offline",
               m->q->p2p ? ", peer-to-peer" : "", a.tls ? ", TLS" : "",
               a.copy_storage_all   ? ", copying all storage"
               : a.copy_storage_inc ? ", copying storage incrementally"
                                    : "");
    atomic_init(&w.done, false);
    atomic_init(&w.suspended, false);
    atomic_init(&w.cancelled, false);
    watching = pthread_create(&w.thread, NULL, watch_job, &w) == 0;
    rc = d->hv_ops->migrate(d->hv, m->dom.name, &a);
    atomic_store(&w.done, true);
    if (watching)
        pthread_join(w.thread, NULL);
    hd_running_copied(m->running, rc == 0);  /* rc 0: the VM left */
    if (rc < 0 && atomic_load(&w.cancelled)) {
        if (atomic_load(&w.suspended))
            d->hv_ops->unpause(d->hv, m->dom.name);
        fail(m, "cancelled by the operator while the hypervisor copied");
    } else if (rc < 0) {
        fail(m, "migration failed: %s", *hv_last_error() ? hv_last_error()
                                                          : strerror(-rc));
        /* --timeout paused it: it runs on here. */
        if (atomic_load(&w.suspended))
            d->hv_ops->unpause(d->hv, m->dom.name);
    } else if (d->hv_ops->job(d->hv, m->dom.name, &job) == 0) {
        hd_run_set_job(&m->run, &job);
        /* virsh ends a good migration's progress at 100.00 %: nothing
         * remains of the completed job. */
        job.data_remaining = 0;
        if (m->q->verbose)
            hd_run_job_progress(&m->run, &job);
        if (job.data_processed)
            hd_run_bytes(&m->run, job.data_processed);
        m->downtime = job.downtime;
        if (job.downtime > 0)
            hd_run_step(&m->run, "downtime", 0, NULL,
                        hd_run_elapsed(&m->run) - job.downtime, job.downtime,
                        0, NULL);
    }
    hd_run_step(&m->run, "migrate", 0, NULL, t, hd_run_elapsed(&m->run) - t,
                rc, rc < 0 ? m->why : NULL);
    return rc < 0 ? -1 : 0;
}

/* The destination attaches a GPU and resumes the programs. */
static Crane__Hostd__Result hand_over(struct mig *m)
{
    Crane__Hostd__PeerRequest req = CRANE__HOSTD__PEER_REQUEST__INIT;
    Crane__Hostd__Arrive a = CRANE__HOSTD__ARRIVE__INIT;
    Crane__Hostd__PeerReply *r = NULL;
    Crane__Hostd__Result result;
    double t = hd_run_elapsed(&m->run);
    int rc;

    hd_run_say(&m->run, "arrive", -1, "%s attaches a GPU and resumes",
               hd_peer_host(m->peer));
    a.migration_id = m->run.m.id;
    /* --dname: the VM has its new name there. */
    a.domain = m->q->options && *m->q->options->dname ? m->q->options->dname
                                                      : m->dom.name;
    a.mode = live(m) ? CRANE__CONTROL__MIGRATION_MODE__MIGRATION_LIVE
                     : CRANE__CONTROL__MIGRATION_MODE__MIGRATION_OFFLINE;
    a.src_host = m->d->cfg.host_name;
    a.deadline_ms = m->d->cfg.resume_deadline_ms;
    a.bytes_moved = m->run.m.bytes_moved;
    a.downtime_s = m->downtime;
    want_set(m);
    a.gpu_models = m->want_models;
    a.n_gpu_models = m->want.n;
    a.gpu_mem_gib = m->want.mem_gib;
    a.n_gpu_mem_gib = m->want.n;
    req.msg_case = CRANE__HOSTD__PEER_REQUEST__MSG_ARRIVE;
    req.arrive = &a;
    rc = hd_peer_call(m->peer, &req,
                      m->d->cfg.resume_deadline_ms + 120000, &r);
    if (rc < 0 || r->msg_case != CRANE__HOSTD__PEER_REPLY__MSG_ARRIVE) {
        fail(m, "the VM runs on %s but its crane-hostd did not answer (%s): "
             "its programs remote until it resumes them (cranectl resume "
             "in the VM)", hd_peer_host(m->peer),
             rc < 0 ? strerror(-rc) : "refused");
        if (r)
            crane__hostd__peer_reply__free_unpacked(r, NULL);
        hd_run_step(&m->run, "arrive", 0, NULL, t,
                    hd_run_elapsed(&m->run) - t, rc < 0 ? rc : -EPROTO,
                    m->why);
        return CRANE__HOSTD__RESULT__RESULT_FAILED;
    }
    hd_run_peer_steps(&m->run, r->arrive->steps, r->arrive->n_steps, t);
    result = r->arrive->result;
    if (result != CRANE__HOSTD__RESULT__RESULT_OK &&
        result != CRANE__HOSTD__RESULT__RESULT_REMOTING)
        result = CRANE__HOSTD__RESULT__RESULT_FAILED;
    if (result != CRANE__HOSTD__RESULT__RESULT_OK)
        fail(m, "on %s: %.500s%s", hd_peer_host(m->peer), r->arrive->error,
             result == CRANE__HOSTD__RESULT__RESULT_REMOTING
                 ? "; programs remote until a GPU is free there, then "
                   "resume by themselves"
                 : "");
    hd_run_step(&m->run, "arrive", 0, NULL, t, hd_run_elapsed(&m->run) - t,
                0, NULL);
    crane__hostd__peer_reply__free_unpacked(r, NULL);
    return result;
}

/* Between two steps: true (and the reason in m->why) when a cancel came
 * after step DONE, so the caller rolls back what was done; else the
 * registry shows the step NEXT. */
static bool stop(struct mig *m, const char *done, const char *next)
{
    double t = hd_run_elapsed(&m->run);

    if (!hd_running_cancelled(m->running)) {
        hd_running_set_phase(m->running, next);
        return false;
    }
    fail(m, "cancelled by the operator after %s", done);
    hd_run_say(&m->run, "cancel", -1, "%s: rolling back", m->why);
    hd_run_step(&m->run, "cancel", 0, NULL, t, 0, -ECANCELED, m->why);
    hd_running_set_phase(m->running, "rollback");
    return true;
}

/* The steps a migration and a prepare share: check, prepare the guest,
 * detach its GPUs, each undone by its rollback on a failure, and a cancel
 * looked for after each (the last before NEXT).  true when all went;
 * else false with the rollback's result in *RESULT. */
static bool check_prepare_detach(struct mig *m, const char *next,
                                 Crane__Hostd__Result *result)
{
    if (check(m) < 0) {
        /* Nothing was touched. */
        *result = CRANE__HOSTD__RESULT__RESULT_ROLLED_BACK;
        hd_run_step(&m->run, "check", 0, NULL, 0, hd_run_elapsed(&m->run),
                    -EINVAL, m->why);
    } else if (stop(m, "check", "prepare")) {
        *result = CRANE__HOSTD__RESULT__RESULT_ROLLED_BACK;
    } else if (prepare(m) < 0) {
        *result = rollback_guest(m, false);
    } else if (stop(m, "prepare", "detach")) {
        *result = rollback_guest(m, true);
    } else if (detach(m) < 0) {
        /* The GPU is still there (or its unplug still pending). */
        *result = rollback_guest(m, true);
    } else if (stop(m, "detach", next)) {
        *result = rollback_attach(m);
    } else {
        return true;
    }
    return false;
}

void hd_migration_run(struct hd_daemon *d, int client_fd,
                      const Crane__Hostd__MigrateRequest *q)
{
    struct mig *m = calloc(1, sizeof(*m));
    Crane__Hostd__Result result;
    char dst[300];

    if (!m)
        return;
    m->d = d;
    m->q = q;
    if (*q->peer)
        snprintf(dst, sizeof(dst), "%s", q->peer + (strncmp(q->peer, "tcp:",
                                                            4) ? 0 : 4));
    else if (hd_peer_endpoint_for(q->dest_uri, d->cfg.peer_port, dst,
                                  sizeof(dst)) == 0)
        memmove(dst, dst + 4, strlen(dst + 4) + 1);
    else
        snprintf(dst, sizeof(dst), "%s", q->dest_uri);
    hd_run_begin(&m->run, d, NULL, q->domain, d->cfg.host_name, dst,
                 q->live ? HD_MODE_LIVE : HD_MODE_OFFLINE, client_fd);
    hd_run_say(&m->run, "start", -1, "migration %s of %s to %s",
               m->run.m.id, q->domain, q->dest_uri);

    m->running = hd_running_add(q->domain, m->run.m.id);
    if (check_prepare_detach(m, "migrate", &result)) {
        if (migrate(m) < 0) {
            result = rollback_attach(m);
        } else {
            hd_running_set_phase(m->running, "arrive");
            result = hand_over(m);
        }
    }
    hd_running_remove(m->running);
    hd_run_end(&m->run, result, result == CRANE__HOSTD__RESULT__RESULT_OK
                                    ? NULL
                                    : m->why);
    hd_peer_close(m->peer);
    free(m);
}

/* The prepare of M (request P) is done: the VM is listed as prepared,
 * with its lease, and the client told; true, M freed.  false when a cancel
 * came before the list had it (the caller rolls back). */
static bool prepared(struct mig *m, const Crane__Hostd__HostPrepare *p)
{
    struct hd_daemon *d = m->d;
    uint32_t lease_s = p->lease_s > 0    ? (uint32_t)p->lease_s
                       : p->lease_s == 0 ? d->cfg.prepare_lease_s
                                         : 0;
    struct hd_prepared taken;

    /* Ready to move.  The history keeps the migration running until the
     * VM leaves this host (ok) or crane-hostctl abort (or cancel: from
     * "ready" on, a cancel is the abort, listen.c). */
    want_set(m);
    hd_prepared_add(m->run.m.id, m->dom.name, m->run.m.start_time, lease_s,
                    &m->want);
    hd_running_set_phase(m->running, "ready");
    if (hd_running_cancelled(m->running)) {
        hd_prepared_take(m->dom.name, m->run.m.id, &taken);
        fail(m, "cancelled by the operator after detach");
        hd_run_say(&m->run, "cancel", -1, "%s: rolling back", m->why);
        return false;
    }
    hd_run_say(&m->run, "ready", -1, "%s may move now: its programs are "
               "off the GPU and %s unplugged", m->dom.name, m->gpu_names);
    if (lease_s)
        hd_run_say(&m->run, "lease", -1, "%s stays prepared for at most %u "
                   "s: then crane-hostd aborts it unless a migration, resume "
                   "or abort came first", m->dom.name, lease_s);
    hd_running_remove(m->running);
    hd_run_reply(&m->run, CRANE__HOSTD__RESULT__RESULT_OK, NULL);
    hd_run_leave(&m->run);
    free(m);
    return true;
}

void hd_migration_prepare(struct hd_daemon *d, int client_fd,
                          const Crane__Hostd__HostPrepare *p)
{
    Crane__Hostd__MigrateRequest q = CRANE__HOSTD__MIGRATE_REQUEST__INIT;
    struct mig *m = calloc(1, sizeof(*m));
    Crane__Hostd__Result result;

    if (!m)
        return;
    q.domain = p->domain;
    q.live = p->live;
    q.proxy = p->proxy;
    m->d = d;
    m->q = &q;
    m->handoff = true;
    hd_run_begin(&m->run, d, *p->migration_id ? p->migration_id : NULL,
                 p->domain, d->cfg.host_name,
                 *p->dest_host ? p->dest_host : "-",
                 p->live ? HD_MODE_LIVE : HD_MODE_OFFLINE, client_fd);
    hd_run_say(&m->run, "start", -1, "migration %s of %s: prepare for a "
               "migration another tool performs", m->run.m.id, p->domain);
    /* crane-hostctl cancel finds it while it prepares (once prepared, a
     * cancel is its abort: listen.c). */
    m->running = hd_running_add(p->domain, m->run.m.id);
    if (check_prepare_detach(m, "lease", &result)) {
        if (prepared(m, p))
            return;
        result = rollback_attach(m);
    }
    hd_running_remove(m->running);
    hd_run_end(&m->run, result, m->why);
    free(m);
}


