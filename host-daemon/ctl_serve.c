/* crane-hostctl's read-only views served by crane-hostd: the history's
 * newest migrations (list, history) and a domain's running job. */
/*
 * Each view is read from the history file on a connection of its own
 * (WAL lets it read while migrations write) and from the hypervisor, and
 * answered in one frame; nothing here changes a VM, so no domain is
 * claimed (a jobinfo while the domain migrates is the point).
 */
#include "ctl_serve.h"

#include "host-daemon/history/history.h"
#include "proto/log.h"

#include "proto/frame.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CTL_HISTORY_DEFAULT 20

const char *hd_ctl_check(const Crane__Hostd__ClientRequest *q)
{
    const char *domain = NULL;

    if (q->msg_case == CRANE__HOSTD__CLIENT_REQUEST__MSG_CTL_HISTORY) {
        if (q->ctl_history->limit > HD_LIST_MAX)
            return "bad limit (1 to 1000)";
        domain = q->ctl_history->domain;
        if (!*domain)
            return NULL;
    } else if (q->msg_case == CRANE__HOSTD__CLIENT_REQUEST__MSG_CTL_JOB) {
        domain = q->ctl_job->domain;
    } else {
        return NULL;
    }
    return *domain && strlen(domain) <= HD_NAME_MAX ? NULL
                                                    : "bad domain name";
}

/* M and its STEPS (N) into C, whose strings point into M. */
static void fill(Crane__Hostd__CtlMigration *c, const struct hd_migration *m,
                 const struct hd_step *steps, size_t n)
{
    crane__hostd__ctl_migration__init(c);
    c->id = (char *)m->id;
    c->domain = (char *)m->domain;
    c->src_host = (char *)m->src_host;
    c->dst_host = (char *)m->dst_host;
    c->mode = (char *)(hd_mode_name(m->mode) ? hd_mode_name(m->mode) : "");
    c->result = (char *)(hd_result_name(m->result) ? hd_result_name(m->result)
                                                   : "");
    c->start = m->start_time;
    c->end = m->end_time;
    c->bytes = m->bytes_moved;
    c->error = (char *)m->error;
    c->phase = (char *)(n ? steps[n - 1].phase : "");
    c->pre = c->post = c->downtime = -1;
    for (size_t i = 0; i < n; i++) {
        const struct hd_step *s = &steps[i];
        double *worst = !s->pid && !strcmp(s->phase, "downtime") ? &c->downtime
                        : s->pid && !strcmp(s->phase, "pre")      ? &c->pre
                        : s->pid && !strcmp(s->phase, "post")     ? &c->post
                                                                  : NULL;

        if (worst && isfinite(s->duration) && s->duration > *worst)
            *worst = s->duration;
    }
}

/* The migrations Q takes, newest first, with their steps: into *OUT
 * (N entries, each with its steps' array in STEPS[i]). */
struct page {
    struct hd_migration *m;
    struct hd_step **steps;
    size_t *n_steps;
    size_t n;
    uint64_t total;
};

static void page_free(struct page *p)
{
    for (size_t i = 0; p->steps && i < p->n; i++)
        free(p->steps[i]);
    free(p->steps);
    free(p->n_steps);
    free(p->m);
}

static int page_read(struct hd_daemon *d, const char *domain, bool running,
                     size_t limit, struct page *p)
{
    struct hd_history *h;
    struct hd_filter f;
    struct hd_migration one;
    int rc;

    memset(p, 0, sizeof(*p));
    hd_filter_init(&f);
    snprintf(f.domain, sizeof(f.domain), "%s", domain);
    if (running)
        f.result = HD_RESULT_RUNNING;
    if ((rc = hd_history_open_read_only(d->cfg.history, &h)) < 0)
        return rc;
    rc = hd_history_query(h, &f, 0, limit, &p->m, &p->n, &p->total);
    if (rc == 0 && p->n) {
        p->steps = calloc(p->n, sizeof(*p->steps));
        p->n_steps = calloc(p->n, sizeof(*p->n_steps));
        if (!p->steps || !p->n_steps)
            rc = -ENOMEM;
    }
    for (size_t i = 0; rc == 0 && i < p->n; i++) {
        rc = hd_history_get(h, p->m[i].id, &one, &p->steps[i],
                            &p->n_steps[i]);
        if (rc == -ENOENT) /* pruned meanwhile: shown without steps */
            rc = 0;
    }
    hd_history_close(h);
    if (rc < 0)
        page_free(p);
    return rc;
}

static void serve_history(struct hd_daemon *d, int fd,
                          const Crane__Hostd__CtlHistoryQuery *q)
{
    Crane__Hostd__DaemonReply r = CRANE__HOSTD__DAEMON_REPLY__INIT;
    Crane__Hostd__CtlHistory out = CRANE__HOSTD__CTL_HISTORY__INIT;
    Crane__Hostd__CtlMigration *rows = NULL, **ptrs = NULL;
    struct page p;
    bool have;
    int rc;

    rc = page_read(d, q->domain, q->running,
                   q->limit ? q->limit : CTL_HISTORY_DEFAULT, &p);
    have = rc == 0;
    if (rc == 0 && p.n && (!(rows = calloc(p.n, sizeof(*rows))) ||
                           !(ptrs = calloc(p.n, sizeof(*ptrs)))))
        rc = -ENOMEM;
    if (rc < 0) {
        CRN_WARN("crane-hostctl history: cannot read %s: %s", d->cfg.history,
                strerror(-rc));
        out.err = rc;
        out.error = (char *)strerror(-rc);
    } else {
        for (size_t i = 0; i < p.n; i++) {
            fill(&rows[i], &p.m[i], p.steps ? p.steps[i] : NULL,
                 p.n_steps ? p.n_steps[i] : 0);
            ptrs[i] = &rows[i];
        }
        out.n_migrations = p.n;
        out.migrations = ptrs;
        out.total = p.total;
    }
    r.msg_case = CRANE__HOSTD__DAEMON_REPLY__MSG_CTL_HISTORY;
    r.ctl_history = &out;
    crn_frame_write(fd, &r.base);
    if (have)
        page_free(&p);
    free(rows);
    free(ptrs);
}

/* The hypervisor's figures of the job, as virsh domjobinfo names them. */
static size_t job_fields(const struct hv_job *j, Crane__Hostd__CtlField *f,
                         char (*v)[64], size_t max)
{
    size_t n = 0;

#define FIELD(k, ...)                                                        \
    do {                                                                     \
        if (n < max) {                                                       \
            crane__hostd__ctl_field__init(&f[n]);                            \
            snprintf(v[n], sizeof(v[n]), __VA_ARGS__);                       \
            f[n].key = (char *)(k);                                          \
            f[n].value = v[n];                                               \
            n++;                                                             \
        }                                                                    \
    } while (0)
    FIELD("Job type", "%s", j->active ? "Unbounded" : "None");
    if (!j->active)
        return n;
    FIELD("Operation", "%s", "Outgoing migration");
    FIELD("Time elapsed", "%.0f ms", j->elapsed * 1e3);
    FIELD("Data processed", "%llu", (unsigned long long)j->data_processed);
    FIELD("Data remaining", "%llu", (unsigned long long)j->data_remaining);
    FIELD("Data total", "%llu", (unsigned long long)j->data_total);
    if (j->downtime > 0)
        FIELD("Total downtime", "%.0f ms", j->downtime * 1e3);
#undef FIELD
    return n;
}

static void serve_job(struct hd_daemon *d, int fd,
                      const Crane__Hostd__CtlJobQuery *q)
{
    Crane__Hostd__DaemonReply r = CRANE__HOSTD__DAEMON_REPLY__INIT;
    Crane__Hostd__CtlJob out = CRANE__HOSTD__CTL_JOB__INIT;
    Crane__Hostd__CtlMigration mig;
    Crane__Hostd__CtlField fields[16], *fp[16];
    char values[16][64];
    struct hv_domain dom;
    struct hv_job job = {0};
    struct page p;
    int rc;

    rc = d->hv_ops->domain(d->hv, q->domain, &dom);
    out.found = rc == 0;
    if (rc < 0 && rc != -ENOENT) {
        out.err = rc;
        out.error = (char *)"the hypervisor did not answer";
    }
    if (out.found && page_read(d, q->domain, true, 1, &p) == 0) {
        if (p.n) {
            fill(&mig, &p.m[0], p.steps[0], p.n_steps[0]);
            out.migration = &mig;
        }
    } else {
        memset(&p, 0, sizeof(p));
    }
    if (out.found) {
        /* Without the hypervisor's figures (libvirt's test driver has
         * none), the job's type from the history alone. */
        if (!d->hv_ops->job || d->hv_ops->job(d->hv, q->domain, &job) < 0)
            job = (struct hv_job){.active = false};
        out.n_fields = job_fields(&job, fields, values, 16);
        if (!job.active && out.migration)
            snprintf(values[0], sizeof(values[0]), "Unbounded");
        for (size_t i = 0; i < out.n_fields; i++)
            fp[i] = &fields[i];
        out.fields = fp;
    }
    r.msg_case = CRANE__HOSTD__DAEMON_REPLY__MSG_CTL_JOB;
    r.ctl_job = &out;
    crn_frame_write(fd, &r.base);
    page_free(&p);
}

int hd_ctl_serve(struct hd_daemon *d, int fd,
                 const Crane__Hostd__ClientRequest *q)
{
    if (q->msg_case == CRANE__HOSTD__CLIENT_REQUEST__MSG_CTL_HISTORY) {
        serve_history(d, fd, q->ctl_history);
        return 1;
    }
    if (q->msg_case == CRANE__HOSTD__CLIENT_REQUEST__MSG_CTL_JOB) {
        serve_job(d, fd, q->ctl_job);
        return 1;
    }
    return 0;
}
