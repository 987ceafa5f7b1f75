/* The steps of a migration another tool performs (an orchestrator's own
 * virDomainMigrate): crane-hostctl's prepare, abort, resume and pool, and
 * the lease that bounds how long a VM stays prepared. */
#include "handoff.h"

#include "host-daemon/history/backlog.h"

#include "arrive.h"
#include "ctl_serve.h"
#include "guest.h"
#include "host-daemon/history/history.h"
#include "proto/log.h"
#include "migration.h"
#include "pool.h"
#include "prepared.h"
#include "proto/endpoint.h"
#include "proto/frame.h"
#include "run.h"
#include "running.h"
#include "shm.h"
#include "want.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A lease that runs out while the hypervisor migrates the VM (or while
 * the VM is not to be found, its end's event perhaps on its way) is
 * checked again this much later. */
#define LEASE_RECHECK_S 5.0
/* A VM not found this many checks in a row left without an event: its
 * migration ends failed, the VM untouched. */
#define LEASE_GONE_CHECKS 12

static void end_attached(struct hd_daemon *d, struct hd_run *run,
                         const struct hd_gpu_want *want,
                         Crane__Hostd__Result r, Crane__Hostd__Result ok,
                         const char *ok_why, const char *why);

/* --- the VM left (or stopped) -------------------------------------------- */

struct left {
    struct hd_daemon *d;
    struct hd_prepared p;
    bool migrated;
};

static void finish_left(void *arg)
{
    struct left *l = arg;
    struct hd_run run;

    hd_run_continue(&run, l->d, l->p.id, l->p.domain, l->p.start_wall);
    if (l->migrated) {
        hd_run_step(&run, "moved", 0, NULL, hd_run_elapsed(&run), 0, 0,
                    "the hypervisor moved the VM away");
        hd_run_end(&run, CRANE__HOSTD__RESULT__RESULT_OK, NULL);
    } else {
        hd_run_end(&run, CRANE__HOSTD__RESULT__RESULT_FAILED,
                   "the VM stopped here after the prepare, without "
                   "migrating");
    }
    free(l);
}

void hd_handoff_event(struct hd_daemon *d, const struct hv_event *ev)
{
    struct left *l;
    struct hd_prepared p;

    /* Not HV_EV_DOMAIN_STOPPED: libvirt reports the guest's shutdown
     * before the migration's end. */
    if (ev->kind != HV_EV_DOMAIN_MIGRATED_OUT &&
        ev->kind != HV_EV_DOMAIN_SHUT_OFF)
        return;
    if (!hd_prepared_take(ev->domain, "", &p))
        return;
    if (!(l = calloc(1, sizeof(*l)))) {
        CRN_ERROR("migration %s: out of memory: it stays running", p.id);
        return;
    }
    l->d = d;
    l->p = p;
    l->migrated = ev->kind == HV_EV_DOMAIN_MIGRATED_OUT;
    /* The history is written off the loop thread. */
    if (hd_job_start(d, finish_left, l) < 0) {
        CRN_WARN("migration %s: stopping: it stays running in the history",
                p.id);
        free(l);
    }
}

/* --- the lease ----------------------------------------------------------- */

struct expiry {
    struct hd_daemon *d;
    struct hd_prepared p;
};

/* A job thread: the lease of a prepared VM ran out.  What abort does, in
 * the migration's own history row, when the VM is still here prepared;
 * nothing when a resume or abort took it meanwhile; a VM no longer here
 * is never touched (its row ends failed once a minute went by without the
 * event of its leaving). */
static void lease_expire(void *arg)
{
    struct expiry *e = arg;
    struct hd_daemon *d = e->d;
    const struct hv_gpu *gpu;
    struct hv_domain dom;
    struct hv_job job;
    struct hd_prepared p;
    struct hd_run run;
    char why[512] = "";
    char ended[600];
    Crane__Hostd__Result r;

    /* The orchestrator's migration runs late: the lease waits for it
     * (its end, MIGRATED_OUT, ends the run; a failure leaves it here). */
    if (d->hv_ops->job(d->hv, e->p.domain, &job) == 0 && job.active) {
        CRN_INFO("migration %s of %s: its lease ran out while the "
                "hypervisor migrates it: waiting for that to end",
                e->p.id, e->p.domain);
        hd_prepared_rearm(&e->p, LEASE_RECHECK_S, false);
        free(e);
        return;
    }
    /* Not here (any more): never touched.  The event of its migration or
     * stop may be on its way and end its run: wait for it a while. */
    if (d->hv_ops->domain(d->hv, e->p.domain, &dom) < 0 || !dom.running) {
        if (e->p.gone_checks + 1 < LEASE_GONE_CHECKS) {
            hd_prepared_rearm(&e->p, LEASE_RECHECK_S, true);
            free(e);
            return;
        }
        if (hd_prepared_take(e->p.domain, e->p.id, &p)) {
            CRN_WARN("migration %s: the lease of %s ran out but it no "
                    "longer runs here: its migration ends failed, the VM "
                    "left as it is", p.id, p.domain);
            hd_run_continue(&run, d, p.id, p.domain, p.start_wall);
            hd_run_step(&run, "lease-expired", 0, NULL, hd_run_elapsed(&run),
                        0, -ENOENT, "the VM no longer runs here");
            hd_run_end(&run, CRANE__HOSTD__RESULT__RESULT_FAILED,
                       "lease expired: the VM no longer runs here and its "
                       "migration or stop was not seen");
        }
        free(e);
        return;
    }
    /* Still ours: take it (an abort or the VM leaving now finds none). */
    if (!hd_prepared_take(e->p.domain, e->p.id, &p)) {
        free(e);
        return;
    }
    CRN_WARN("migration %s of %s: its lease of %u s ran out without a "
            "migration, resume or abort: aborting it", p.id, p.domain,
            p.lease_s);
    hd_run_continue(&run, d, p.id, p.domain, p.start_wall);
    hd_run_step(&run, "lease-expired", 0, NULL, hd_run_elapsed(&run), 0,
                -ETIMEDOUT, "the prepare's lease ran out: aborted by "
                            "crane-hostd");
    if (hd_pool_held_by(d->pool, d->hv_ops, d->hv, p.domain, &gpu) == 0) {
        hd_run_end(&run, CRANE__HOSTD__RESULT__RESULT_ROLLED_BACK,
                   "lease expired: the VM holds its GPU again");
        free(e);
        return;
    }
    if (!*dom.channel) {
        hd_run_end(&run, CRANE__HOSTD__RESULT__RESULT_FAILED,
                   "lease expired: the VM has no guest channel here");
        free(e);
        return;
    }
    hd_run_say(&run, "abort", -1, "lease of migration %s of %s ran out: "
               "plugging a GPU back in", p.id, p.domain);
    r = hd_arrive_attach(d, &run, p.domain, &p.want, HD_BRING_ABORT, why,
                         sizeof(why));
    snprintf(ended, sizeof(ended), "lease expired%s%s", *why ? ": " : "",
             why);
    if (r == CRANE__HOSTD__RESULT__RESULT_OK)
        hd_run_end(&run, CRANE__HOSTD__RESULT__RESULT_ROLLED_BACK,
                   "lease expired: the migration did not happen; the VM "
                   "runs on here with a GPU");
    else if (r == CRANE__HOSTD__RESULT__RESULT_REMOTING)
        end_attached(d, &run, &p.want, r, r, NULL, ended);
    else
        hd_run_end(&run, r, ended);
    free(e);
}

void hd_handoff_tick(struct hd_daemon *d)
{
    struct hd_prepared due[HD_PREPARED_MAX];
    size_t n = hd_prepared_due(due, HD_PREPARED_MAX);
    struct expiry *e;

    for (size_t i = 0; i < n; i++) {
        /* The VM's steps block (the guest, the hypervisor): off the loop
         * thread. */
        if ((e = calloc(1, sizeof(*e)))) {
            e->d = d;
            e->p = due[i];
            if (hd_job_start(d, lease_expire, e) == 0)
                continue;
        }
        CRN_WARN("migration %s: its lease ran out but it cannot be aborted "
                "now: checked again in a second", due[i].id);
        free(e);
        hd_prepared_rearm(&due[i], 1.0, false);
    }
}

/* --- requests ------------------------------------------------------------ */

static bool valid_id(const char *s)
{
    size_t n = strlen(s);

    return n <= HD_ID_MAX &&
           strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                     "0123456789._-") == n;
}

static bool valid_name(const char *s, bool may_be_empty)
{
    size_t n = strlen(s);

    return (n > 0 || may_be_empty) && n <= HV_NAME_MAX;
}

const char *hd_handoff_check(const Crane__Hostd__ClientRequest *q,
                             const char **domain)
{
    struct hd_gpu_want want;
    struct crn_endpoint ep;

    *domain = NULL;
    switch (q->msg_case) {
    case CRANE__HOSTD__CLIENT_REQUEST__MSG_PREPARE:
        *domain = q->prepare->domain;
        if (*q->prepare->proxy && crn_endpoint_parse(q->prepare->proxy,
                                                     &ep) < 0)
            return "bad proxy endpoint";
        if (!valid_name(q->prepare->dest_host, true))
            return "bad destination host name";
        if (!valid_id(q->prepare->migration_id))
            return "bad migration id ([A-Za-z0-9._-], at most 64)";
        break;
    case CRANE__HOSTD__CLIENT_REQUEST__MSG_ABORT:
        *domain = q->abort->domain;
        if (!valid_id(q->abort->migration_id))
            return "bad migration id ([A-Za-z0-9._-], at most 64)";
        break;
    case CRANE__HOSTD__CLIENT_REQUEST__MSG_RESUME:
        *domain = q->resume->domain;
        if (!valid_name(q->resume->src_host, true))
            return "bad source host name";
        if (!valid_id(q->resume->migration_id))
            return "bad migration id ([A-Za-z0-9._-], at most 64)";
        if (hd_want_parse(q->resume->gpus, q->resume->gpu_models,
                          q->resume->n_gpu_models, &want) < 0)
            return "bad GPUs: at most 16, no more models than GPUs, each "
                   "model [A-Za-z0-9_.-], at most 63";
        break;
    case CRANE__HOSTD__CLIENT_REQUEST__MSG_POOL:
        return NULL;
    case CRANE__HOSTD__CLIENT_REQUEST__MSG_SHM:
        *domain = q->shm->domain;
        break;
    case CRANE__HOSTD__CLIENT_REQUEST__MSG_CTL_HISTORY:
    case CRANE__HOSTD__CLIENT_REQUEST__MSG_CTL_JOB:
        return hd_ctl_check(q); /* read-only: no domain claimed */
    default:
        return "malformed request";
    }
    return valid_name(*domain, false) ? NULL : "bad domain name";
}

/* The newest migration of DOMAIN (migration ID when not "") this host
 * began and still has running, from the history (a prepare made before a
 * restart).  -ENOENT: none. */
static int find_running(struct hd_daemon *d, const char *domain,
                        const char *id, struct hd_prepared *out)
{
    struct hd_history *h;
    struct hd_migration *list = NULL;
    size_t n = 0;
    int rc;

    if ((rc = hd_history_open(d->cfg.history, &h)) < 0)
        return rc;
    rc = hd_history_list(h, HD_LIST_MAX, &list, &n);
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (list[i].result == HD_RESULT_RUNNING &&
            strcmp(list[i].domain, domain) == 0 &&
            (!*id || strcmp(list[i].id, id) == 0) &&
            strcmp(list[i].src_host, d->cfg.host_name) == 0) {
            snprintf(out->id, sizeof(out->id), "%s", list[i].id);
            snprintf(out->domain, sizeof(out->domain), "%s", domain);
            out->start_wall = list[i].start_time;
            free(list);
            hd_history_close(h);
            return 0;
        }
    free(list);
    hd_history_close(h);
    return rc < 0 ? rc : -ENOENT;
}

/* Refuses before anything changed: MigrateDone, rolled back. */
static void refuse(int fd, Crane__Hostd__Result result, const char *why)
{
    Crane__Hostd__DaemonReply r = CRANE__HOSTD__DAEMON_REPLY__INIT;
    Crane__Hostd__MigrateDone done = CRANE__HOSTD__MIGRATE_DONE__INIT;

    CRN_WARN("refused: %s", why);
    done.result = result;
    done.error = (char *)why;
    done.refused = true;
    r.msg_case = CRANE__HOSTD__DAEMON_REPLY__MSG_DONE;
    r.done = &done;
    crn_frame_write(fd, &r.base);
}

/* Refuses a step for a domain the hypervisor does not run here (RC from
 * its domain lookup): an unknown one says so (-ENOENT, crane-hostctl's
 * "failed to get domain"). */
static void refuse_domain(int fd, int rc)
{
    Crane__Hostd__DaemonReply r = CRANE__HOSTD__DAEMON_REPLY__INIT;
    Crane__Hostd__MigrateDone done = CRANE__HOSTD__MIGRATE_DONE__INIT;

    done.result = CRANE__HOSTD__RESULT__RESULT_FAILED;
    done.error = rc == -ENOENT ? (char *)"no such domain on this host"
                               : (char *)"the VM does not run on this host";
    done.err = rc == -ENOENT ? -ENOENT : 0;
    done.refused = true;
    CRN_WARN("refused: %s", done.error);
    r.msg_case = CRANE__HOSTD__DAEMON_REPLY__MSG_DONE;
    r.done = &done;
    crn_frame_write(fd, &r.base);
}

/* The domain NAME into *DOM: false, the step refused on FD, unless the
 * hypervisor runs it here. */
static bool domain_running(struct hd_daemon *d, int fd, const char *name,
                           struct hv_domain *dom)
{
    int rc = d->hv_ops->domain(d->hv, name, dom);

    if (rc < 0 || !dom->running) {
        refuse_domain(fd, rc);
        return false;
    }
    return true;
}

/* Ends RUN as hd_arrive_attach left it: a VM still without a GPU waits
 * for one here (REMOTING, the history row running). */
static void end_attached(struct hd_daemon *d, struct hd_run *run,
                         const struct hd_gpu_want *want,
                         Crane__Hostd__Result r, Crane__Hostd__Result ok,
                         const char *ok_why, const char *why)
{
    if (r == CRANE__HOSTD__RESULT__RESULT_REMOTING) {
        CRN_WARN("%s: %s; it remotes until a GPU is free", run->m.domain, why);
        hd_run_reply(run, r, why);
        hd_waiting_add_run(d, run, want);
        return;
    }
    if (r == CRANE__HOSTD__RESULT__RESULT_OK)
        hd_run_end(run, ok, ok_why);
    else
        hd_run_end(run, r, *why ? why : NULL);
}

/* Undoes a prepare: crane-hostctl abort, or cancel (BY) of a VM that
 * waits prepared. */
static void serve_abort(struct hd_daemon *d, int fd,
                        const Crane__Hostd__HostAbort *q, const char *by)
{
    const struct hv_gpu *gpu;
    struct hv_domain dom;
    struct hd_prepared p;
    struct hd_run run;
    char why[512] = "", ok[160];
    Crane__Hostd__Result r;

    if (!domain_running(d, fd, q->domain, &dom))
        return;
    if (hd_pool_held_by(d->pool, d->hv_ops, d->hv, q->domain, &gpu) == 0) {
        refuse(fd, CRANE__HOSTD__RESULT__RESULT_ROLLED_BACK,
               "the VM still holds its GPU: nothing to undo");
        return;
    }
    if (!*dom.channel) {
        refuse(fd, CRANE__HOSTD__RESULT__RESULT_FAILED,
               "the VM has no guest channel here");
        return;
    }
    memset(&p.want, 0, sizeof(p.want));  /* unknown: one GPU */
    if (!hd_prepared_take(q->domain, q->migration_id, &p) &&
        find_running(d, q->domain, q->migration_id, &p) < 0) {
        /* A prepare this host does not know of (cranectl by hand, a lost
         * history): still bring the programs back, in a run of its own. */
        hd_run_begin(&run, d, *q->migration_id ? q->migration_id : NULL,
                     q->domain, d->cfg.host_name, "-", HD_MODE_LIVE, fd);
    } else {
        hd_run_continue(&run, d, p.id, p.domain, p.start_wall);
        run.client_fd = fd;
    }
    hd_run_say(&run, "abort", -1, "migration %s of %s did not happen: "
               "plugging a GPU back in", run.m.id, q->domain);
    r = hd_arrive_attach(d, &run, q->domain, &p.want, HD_BRING_ABORT, why,
                         sizeof(why));
    snprintf(ok, sizeof(ok), "the migration did not happen (crane-hostctl "
             "%s): the VM runs on here with a GPU", by);
    end_attached(d, &run, &p.want, r,
                 CRANE__HOSTD__RESULT__RESULT_ROLLED_BACK, ok, why);
}

bool hd_handoff_cancels(const Crane__Hostd__HostCancel *c)
{
    return !hd_running_busy(c->domain) &&
           hd_prepared_has(c->domain, c->migration_id);
}

void hd_handoff_cancel(struct hd_daemon *d, int fd,
                       const Crane__Hostd__HostCancel *c)
{
    Crane__Hostd__HostAbort a = CRANE__HOSTD__HOST_ABORT__INIT;

    CRN_INFO("cancel of %s: it waits prepared for a migration another tool "
            "performs; undoing the prepare", c->domain);
    a.domain = c->domain;
    a.migration_id = c->migration_id;
    serve_abort(d, fd, &a, "cancel");
}

/* How long the guest's status may take when a resume asks it how many
 * GPUs the VM holds. */
#define RESUME_STATUS_MS 2000

/* The GPUs a resume plugs (into *WANT, naming where the count came from
 * in *FROM): as the request says; else as many as a prepare here took (in
 * P, when TOOK); else as many as the guest says it holds (its status'
 * gpus); else one. */
static void resume_want(const Crane__Hostd__HostResume *q, const char *channel,
                        const struct hd_prepared *p, bool took,
                        struct hd_gpu_want *want, const char **from)
{
    struct hd_guest_reply gr;

    if (q->gpus || q->n_gpu_models) {
        /* hd_handoff_check refused anything it would not parse. */
        hd_want_parse(q->gpus, q->gpu_models, q->n_gpu_models, want);
        *from = "as asked";
        return;
    }
    if (took) {
        *want = p->want;
        *from = "as many as it held here";
        return;
    }
    hd_want_any(want, 0);
    *from = "one: the guest did not say how many";
    Crane__Control__StatusRequest sq = CRANE__CONTROL__STATUS_REQUEST__INIT;
    if (hd_guest_send(channel, CRANE__CONTROL__OP__OP_STATUS, &sq.base,
                      RESUME_STATUS_MS, NULL, &gr) < 0)
        return;
    if (gr.ack->gpus > 0 && gr.ack->gpus <= HD_MAX_GPUS) {
        hd_want_any(want, gr.ack->gpus);
        *from = "as many as the guest holds when whole";
    }
    hd_guest_reply_free(&gr);
}

static void serve_resume(struct hd_daemon *d, int fd,
                         const Crane__Hostd__HostResume *q)
{
    struct hd_gpu_want want;
    const char *from;
    bool took;
    const struct hv_gpu *gpu;
    struct hd_prepared p;
    struct hv_domain dom;
    struct hd_run run;
    char why[512] = "";
    Crane__Hostd__Result r;

    if (!domain_running(d, fd, q->domain, &dom))
        return;
    if (!*dom.channel) {
        refuse(fd, CRANE__HOSTD__RESULT__RESULT_FAILED,
               "the VM has no guest channel here");
        return;
    }
    if (hd_pool_held_by(d->pool, d->hv_ops, d->hv, q->domain, &gpu) == 0) {
        refuse(fd, CRANE__HOSTD__RESULT__RESULT_FAILED,
               "the VM already holds a GPU of this host's pool");
        return;
    }
    /* A VM prepared here and resumed here instead of aborted: its prepare
     * ends (and its lease with it), the resume is a run of its own. */
    took = hd_prepared_take(q->domain, "", &p);
    resume_want(q, dom.channel, &p, took, &want, &from);
    if (took) {
        hd_run_continue(&run, d, p.id, p.domain, p.start_wall);
        hd_run_end(&run, CRANE__HOSTD__RESULT__RESULT_ROLLED_BACK,
                   "the VM did not move: resumed on this host instead "
                   "(crane-hostctl resume)");
    }
    hd_run_begin(&run, d, *q->migration_id ? q->migration_id : NULL,
                 q->domain, *q->src_host ? q->src_host : "-",
                 d->cfg.host_name,
                 q->live ? HD_MODE_LIVE : HD_MODE_OFFLINE, fd);
    hd_run_say(&run, "arrive", -1, "%s arrived from %s: attaching %zu "
               "GPU%s (%s)", q->domain,
               *q->src_host ? q->src_host : "another host",
               hd_want_count(&want), hd_want_count(&want) == 1 ? "" : "s",
               from);
    r = hd_arrive_attach(d, &run, q->domain, &want, HD_BRING_RESUME, why,
                         sizeof(why));
    end_attached(d, &run, &want, r, CRANE__HOSTD__RESULT__RESULT_OK, NULL,
                 why);
}

static void serve_pool(struct hd_daemon *d, int fd)
{
    Crane__Hostd__DaemonReply r = CRANE__HOSTD__DAEMON_REPLY__INIT;
    Crane__Hostd__PoolReport rep = CRANE__HOSTD__POOL_REPORT__INIT;
    Crane__Hostd__HistoryHealth hh = CRANE__HOSTD__HISTORY_HEALTH__INIT;
    struct hd_history_health health;
    struct hd_pool_entry e[HD_MAX_GPUS];
    Crane__Hostd__PoolGpu g[HD_MAX_GPUS], *gp[HD_MAX_GPUS];
    struct hd_waiting_entry *w = calloc(HD_WAITING_MAX, sizeof(*w));
    Crane__Hostd__PoolWaiter *wv = calloc(HD_WAITING_MAX, sizeof(*wv));
    Crane__Hostd__PoolWaiter **wp = calloc(HD_WAITING_MAX, sizeof(*wp));
    struct hd_prepared_entry *pe = calloc(HD_PREPARED_MAX, sizeof(*pe));
    Crane__Hostd__PoolPrepared *pv = calloc(HD_PREPARED_MAX, sizeof(*pv));
    Crane__Hostd__PoolPrepared **pp = calloc(HD_PREPARED_MAX, sizeof(*pp));
    size_t n = 0, nw = 0, np = 0;
    int rc;

    rc = hd_pool_view(d->pool, d->hv_ops, d->hv, e, HD_MAX_GPUS, &n);
    rep.host = d->cfg.host_name;
    rep.err = rc;
    rep.error = rc < 0 ? (char *)strerror(-rc) : "";
    for (size_t i = 0; i < n; i++) {
        crane__hostd__pool_gpu__init(&g[i]);
        g[i].name = (char *)e[i].gpu->name;
        g[i].alias = (char *)e[i].gpu->alias;
        g[i].pci = (char *)e[i].gpu->pci;
        g[i].holder = e[i].holder;
        g[i].reserved = e[i].reserved;
        gp[i] = &g[i];
    }
    rep.gpus = gp;
    rep.n_gpus = n;
    if (w && wv && wp) {
        nw = hd_waiting_list(d, w, HD_WAITING_MAX);
        for (size_t i = 0; i < nw; i++) {
            crane__hostd__pool_waiter__init(&wv[i]);
            wv[i].domain = w[i].domain;
            wv[i].migration_id = w[i].id;
            wv[i].since = w[i].start_wall;
            wv[i].gpus = (uint32_t)hd_want_count(&w[i].want);
            wp[i] = &wv[i];
        }
        rep.waiting = wp;
        rep.n_waiting = nw;
    }
    if (pe && pv && pp) {
        np = hd_prepared_list(pe, HD_PREPARED_MAX);
        for (size_t i = 0; i < np; i++) {
            crane__hostd__pool_prepared__init(&pv[i]);
            pv[i].domain = pe[i].domain;
            pv[i].migration_id = pe[i].id;
            pv[i].since = pe[i].start_wall;
            pv[i].lease_s = pe[i].lease_s;
            pv[i].lease_left = pe[i].lease_left;
            pp[i] = &pv[i];
        }
        rep.prepared = pp;
        rep.n_prepared = np;
    }
    if (d->backlog) {
        hd_backlog_health(d->backlog, &health);
        hh.degraded = health.degraded;
        hh.read_only = health.read_only;
        hh.unsaved = health.unsaved;
        hh.dropped = health.dropped;
        hh.since = health.since;
        hh.reason = health.reason;
        rep.history = &hh;
    }
    r.msg_case = CRANE__HOSTD__DAEMON_REPLY__MSG_POOL;
    r.pool = &rep;
    crn_frame_write(fd, &r.base);
    free(w);
    free(wv);
    free(wp);
    free(pe);
    free(pv);
    free(pp);
}

/* Shared memory with the proxy domain, plugged or given up on request. */
static void serve_shm(struct hd_daemon *d, int fd,
                      const Crane__Hostd__HostShm *q)
{
    Crane__Hostd__DaemonReply r = CRANE__HOSTD__DAEMON_REPLY__INIT;
    Crane__Hostd__MigrateDone done = CRANE__HOSTD__MIGRATE_DONE__INIT;
    char why[512] = "";
    int rc;

    rc = q->release ? hd_shm_release(d, NULL, q->domain, why, sizeof(why))
                    : hd_shm_attach(d, NULL, q->domain, why, sizeof(why));
    if (!q->release && rc == 0) {
        snprintf(why, sizeof(why), "no shared memory to give: %s",
                 !d->cfg.proxy_shm_mb ? "proxy_shm_mb is 0"
                                      : "the proxy domain does not run here");
        rc = -EOPNOTSUPP;
    }
    done.result = rc >= 0      ? CRANE__HOSTD__RESULT__RESULT_OK
                  : q->release ? CRANE__HOSTD__RESULT__RESULT_FAILED
                               : CRANE__HOSTD__RESULT__RESULT_ROLLED_BACK;
    done.error = why;
    r.msg_case = CRANE__HOSTD__DAEMON_REPLY__MSG_DONE;
    r.done = &done;
    crn_frame_write(fd, &r.base);
}

void hd_handoff_serve(struct hd_daemon *d, int fd,
                      const Crane__Hostd__ClientRequest *q)
{
    switch (q->msg_case) {
    case CRANE__HOSTD__CLIENT_REQUEST__MSG_PREPARE:
        hd_migration_prepare(d, fd, q->prepare);
        break;
    case CRANE__HOSTD__CLIENT_REQUEST__MSG_ABORT:
        serve_abort(d, fd, q->abort, "abort");
        break;
    case CRANE__HOSTD__CLIENT_REQUEST__MSG_RESUME:
        serve_resume(d, fd, q->resume);
        break;
    case CRANE__HOSTD__CLIENT_REQUEST__MSG_POOL:
        serve_pool(d, fd);
        break;
    case CRANE__HOSTD__CLIENT_REQUEST__MSG_SHM:
        serve_shm(d, fd, q->shm);
        break;
    default:
        hd_ctl_serve(d, fd, q);
        break;
    }
}
