/* One migration as it happens on this host: its steps, history, progress. */
#include "run.h"

#include "running.h"

#include "host-daemon/history/backlog.h"
#include "proto/log.h"
#include "proto/auth.h"
#include "proto/frame.h"
#include "proto/report.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void new_id(char *id, size_t len)
{
    uint8_t r[3] = { 0 };

    crn_random_bytes(r, sizeof(r));
    snprintf(id, len, "m%.0f-%02x%02x%02x", hd_wall() * 1000, r[0], r[1],
             r[2]);
}

/* The history failed WHAT with RC: the run goes on, kept in memory. */
static void unsaved(struct hd_run *run, const char *what, int rc)
{
    if (run->unsaved)
        return;
    run->unsaved = true;
    snprintf(run->unsaved_why, sizeof(run->unsaved_why), "%s: %s", what,
             strerror(-rc));
    CRN_ERROR("migration %s: history: %s; kept in memory until the disk "
             "takes it", run->m.id, run->unsaved_why);
}

int hd_run_begin(struct hd_run *run, struct hd_daemon *d, const char *id,
                 const char *domain, const char *src, const char *dst,
                 enum hd_mode mode, int client_fd)
{
    int rc;

    memset(run, 0, sizeof(*run));
    run->d = d;
    run->client_fd = client_fd;
    run->t0 = hd_now();
    if (id)
        snprintf(run->m.id, sizeof(run->m.id), "%s", id);
    else
        new_id(run->m.id, sizeof(run->m.id));
    snprintf(run->m.domain, sizeof(run->m.domain), "%s", domain);
    snprintf(run->m.src_host, sizeof(run->m.src_host), "%s", src);
    snprintf(run->m.dst_host, sizeof(run->m.dst_host), "%s", dst);
    run->m.mode = mode;
    run->m.start_time = hd_wall();
    run->m.result = HD_RESULT_RUNNING;
    /* The history is where operators look, but a migration must not fail
     * because the disk is full: it goes on, logged. */
    if ((rc = hd_history_open(d->cfg.history, &run->h)) < 0) {
        run->h = NULL;
        unsaved(run, "cannot open", rc);
    } else if ((rc = hd_history_begin(run->h, &run->m)) < 0) {
        unsaved(run, "cannot record its start", rc);
    }
    return 0;
}

int hd_run_continue(struct hd_run *run, struct hd_daemon *d, const char *id,
                    const char *domain, double start_wall)
{
    int rc;

    memset(run, 0, sizeof(*run));
    run->d = d;
    run->client_fd = -1;
    run->t0 = hd_now() - (hd_wall() - start_wall);
    snprintf(run->m.id, sizeof(run->m.id), "%s", id);
    snprintf(run->m.domain, sizeof(run->m.domain), "%s", domain);
    run->m.start_time = start_wall;
    if ((rc = hd_history_open(d->cfg.history, &run->h)) < 0) {
        run->h = NULL;
        unsaved(run, "cannot open", rc);
    }
    return 0;
}

static void free_steps(struct hd_run *run)
{
    for (size_t i = 0; i < run->n_steps; i++) {
        free(run->steps[i].phase);
        free(run->steps[i].program);
        free(run->steps[i].error);
    }
    free(run->steps);
    run->steps = NULL;
    run->n_steps = run->cap_steps = 0;
}

/* A run the history did not take whole goes to the backlog: its
 * migration as it stands and the steps the history lacks. */
static void keep_unsaved(struct hd_run *run)
{
    struct hd_step *hs;
    size_t n = 0;

    if (!run->unsaved || !run->d->backlog)
        return;
    hs = calloc(run->n_steps + 1, sizeof(*hs));
    for (size_t i = run->n_stored; hs && i < run->n_steps; i++, n++) {
        const Crane__Hostd__Step *s = &run->steps[i];

        snprintf(hs[n].phase, sizeof(hs[n].phase), "%s", s->phase);
        snprintf(hs[n].program, sizeof(hs[n].program), "%s", s->program);
        hs[n].pid = s->pid;
        hs[n].start_offset = s->start > 0 ? s->start : 0;
        hs[n].duration = s->seconds;
    }
    if (!run->m.src_host[0])
        snprintf(run->m.src_host, sizeof(run->m.src_host), "-");
    if (!run->m.dst_host[0])
        snprintf(run->m.dst_host, sizeof(run->m.dst_host), "-");
    if (!run->m.mode)
        run->m.mode = HD_MODE_LIVE;
    if (!hs || hd_backlog_keep(run->d->backlog, &run->m, hs, n,
                               run->unsaved_why) < 0)
        CRN_ERROR("migration %s: out of memory: not recorded at all",
                 run->m.id);
    free(hs);
}

void hd_run_leave(struct hd_run *run)
{
    keep_unsaved(run);
    free_steps(run);
    hd_history_close(run->h);
    run->h = NULL;
}

double hd_run_elapsed(const struct hd_run *run)
{
    return hd_now() - run->t0;
}

static void send_reply(struct hd_run *run, Crane__Hostd__DaemonReply *r)
{
    if (run->client_fd < 0)
        return;
    if (crn_frame_write(run->client_fd, &r->base) < 0) {
        /* crane-migrate went away: the migration goes on regardless. */
        CRN_INFO("migration %s: client gone, going on without it",
                run->m.id);
        run->client_fd = -1;
    }
}

void hd_run_say(struct hd_run *run, const char *phase, int percent,
                const char *fmt, ...)
{
    Crane__Hostd__DaemonReply r = CRANE__HOSTD__DAEMON_REPLY__INIT;
    Crane__Hostd__Progress p = CRANE__HOSTD__PROGRESS__INIT;
    char text[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    if (percent < 0)
        CRN_INFO("migration %s %s: %s: %s", run->m.id, run->m.domain, phase,
                text);
    p.phase = (char *)phase;
    p.text = text;
    p.elapsed = hd_run_elapsed(run);
    p.percent = percent;
    p.bytes = run->m.bytes_moved;
    r.msg_case = CRANE__HOSTD__DAEMON_REPLY__MSG_PROGRESS;
    r.progress = &p;
    send_reply(run, &r);
}

void hd_run_job_progress(struct hd_run *run, const struct hv_job *j)
{
    Crane__Hostd__DaemonReply r = CRANE__HOSTD__DAEMON_REPLY__INIT;
    Crane__Hostd__Progress p = CRANE__HOSTD__PROGRESS__INIT;
    Crane__Hostd__JobStats js;

    hd_job_stats(j, &js);
    p.phase = "migrate";
    p.text = "";
    p.elapsed = hd_run_elapsed(run);
    p.percent = j->data_total ? (int)(100.0 *
                                      (double)(j->data_total -
                                               j->data_remaining) /
                                      (double)j->data_total)
                              : -1;
    p.bytes = run->m.bytes_moved;
    p.job = &js;
    r.msg_case = CRANE__HOSTD__DAEMON_REPLY__MSG_PROGRESS;
    r.progress = &p;
    send_reply(run, &r);
}

void hd_run_set_job(struct hd_run *run, const struct hv_job *j)
{
    struct hd_job_stats s = {
        .elapsed = j->elapsed, .data_total = j->data_total,
        .data_processed = j->data_processed,
        .data_remaining = j->data_remaining,
        .memory_total = j->memory_total,
        .memory_processed = j->memory_processed,
        .memory_remaining = j->memory_remaining,
        .memory_bps = j->memory_bps, .dirty_rate = j->dirty_rate,
        .page_size = j->page_size, .iterations = j->iterations,
        .disk_total = j->disk_total, .disk_processed = j->disk_processed,
        .disk_remaining = j->disk_remaining, .disk_bps = j->disk_bps,
        .expected_downtime = j->expected_downtime, .downtime = j->downtime,
        .setup_time = j->setup_time,
    };

    run->job = *j;
    run->has_job = true;
    /* A history that cannot take it loses only these figures. */
    if (run->h && !run->unsaved)
        hd_history_set_job(run->h, run->m.id, &s);
}

static char *dup_or_empty(const char *s)
{
    return strdup(s ? s : "");
}

/* A program lost to a fault: counted and named once per pid (the guest
 * names it in each answer of the migration, at both ends).  False when
 * it was already. */
static bool note_lost(struct hd_run *run, uint32_t pid, const char *program,
                      const char *error)
{
    size_t len = strlen(run->lost);

    for (size_t i = 0; i < run->n_steps; i++)
        if (run->steps[i].pid == pid &&
            strcmp(run->steps[i].phase, "lost") == 0)
            return false;
    run->n_lost++;
    if (len + 1 < sizeof(run->lost))
        snprintf(run->lost + len, sizeof(run->lost) - len, "%s%s[%u]: %s",
                 len ? "; " : "", program && *program ? program : "?", pid,
                 error && *error ? error : "lost");
    CRN_WARN("migration %s: program %s[%u] lost to a fault: %s", run->m.id,
            program && *program ? program : "?", pid,
            error && *error ? error : "?");
    return true;
}

void hd_run_step(struct hd_run *run, const char *phase, uint32_t pid,
                 const char *program, double start, double seconds, int err,
                 const char *error)
{
    struct hd_step hs = { .pid = pid };
    Crane__Hostd__Step *s;
    bool stored = false;
    int rc;

    if (strcmp(phase, "lost") == 0 && !note_lost(run, pid, program, error))
        return;

    /* A program's stoppage may have begun before this host's part of the
     * migration (parked at the source): the history holds offsets from
     * this host's start, the report the true one, which the source shifts
     * into its own time. */
    if (seconds < 0)
        seconds = 0;
    snprintf(hs.phase, sizeof(hs.phase), "%s", phase);
    snprintf(hs.program, sizeof(hs.program), "%s",
             pid ? (program && *program ? program : "?") : "");
    hs.start_offset = start > 0 ? start : 0;
    hs.duration = seconds;
    if (run->h && !run->unsaved) {
        if ((rc = hd_history_add_step(run->h, run->m.id, &hs)) < 0)
            unsaved(run, "cannot record a step", rc);
        else
            stored = true;
    }
    if (run->n_steps == run->cap_steps) {
        size_t cap = run->cap_steps ? run->cap_steps * 2 : 16;
        Crane__Hostd__Step *n = realloc(run->steps, cap * sizeof(*n));

        if (!n)
            return;
        run->steps = n;
        run->cap_steps = cap;
    }
    s = &run->steps[run->n_steps];
    crane__hostd__step__init(s);
    s->phase = dup_or_empty(hs.phase);
    s->program = dup_or_empty(hs.program);
    s->error = dup_or_empty(error);
    if (!s->phase || !s->program || !s->error) {
        free(s->phase);
        free(s->program);
        free(s->error);
        return;
    }
    s->pid = pid;
    s->start = start;
    s->seconds = seconds;
    s->err = err;
    run->n_steps++;
    if (stored)
        run->n_stored = run->n_steps;
}

void hd_run_guest_steps(struct hd_run *run, const Crane__Control__Ack *ack,
                        const char *program_phase, double sent)
{
    double at = sent, fan_out = sent, fan_out_len = -1;
    char name[64];

    /* The guest daemon's steps run one after the other, in the order
     * listed; the programs' fan-out ("programs prepare (N)") is one of
     * them, and each program answers within it. */
    for (size_t i = 0; i < ack->n_steps; i++) {
        const Crane__Control__DaemonStep *st = ack->steps[i];
        double len = st->seconds > 0 ? st->seconds : 0;

        if (strncmp(st->name, "programs", 8) == 0) {
            fan_out = at;
            fan_out_len = len;
        }
        snprintf(name, sizeof(name), "guest: %s", st->name);
        hd_run_step(run, name, 0, NULL, at, st->seconds, st->err, st->error);
        at += len;
    }
    for (size_t i = 0; i < ack->n_programs; i++) {
        const Crane__Control__ProgramReport *p = ack->programs[i];
        /* Back from stop-and-copy this includes the time parked. */
        double held = crn_held_seconds(p->times);
        double answered = p->elapsed;

        /* Its calls were held for the HELD seconds before its answer,
         * which came within the fan-out (the guest's own clock may say
         * otherwise: clamp). */
        if (!p->pid)
            continue;
        if (p->lost) {
            hd_run_step(run, "lost", p->pid, p->program, fan_out, 0,
                        p->err ? p->err : -ENOTCONN, p->error);
            continue;
        }
        if (fan_out_len >= 0 && answered > fan_out_len)
            answered = fan_out_len;
        hd_run_step(run, program_phase, p->pid, p->program,
                    fan_out + answered - held, held, p->err, p->error);
    }
}

void hd_run_peer_steps(struct hd_run *run, Crane__Hostd__Step **steps,
                       size_t n, double offset)
{
    for (size_t i = 0; i < n && i < HD_STEPS_MAX; i++) {
        /* The VM's downtime: this side has its own, from its hypervisor
         * (the destination only echoes what it was told in Arrive). */
        if (strcmp(steps[i]->phase, "downtime") == 0)
            continue;
        hd_run_step(run, steps[i]->phase, steps[i]->pid, steps[i]->program,
                    offset + steps[i]->start, steps[i]->seconds,
                    steps[i]->err, steps[i]->error);
    }
}

void hd_run_set_destination(struct hd_run *run, const char *host)
{
    int rc;

    if (!host || !*host || strcmp(host, run->m.dst_host) == 0)
        return;
    snprintf(run->m.dst_host, sizeof(run->m.dst_host), "%s", host);
    if (run->h && !run->unsaved &&
        (rc = hd_history_set_destination(run->h, run->m.id, host)) < 0)
        unsaved(run, "cannot record the destination", rc);
}

void hd_run_bytes(struct hd_run *run, uint64_t bytes)
{
    int rc;

    run->m.bytes_moved = bytes;
    if (run->h && !run->unsaved &&
        (rc = hd_history_progress(run->h, run->m.id, bytes)) < 0)
        unsaved(run, "cannot record progress", rc);
}

enum hd_result hd_run_history_result(Crane__Hostd__Result r)
{
    switch (r) {
    case CRANE__HOSTD__RESULT__RESULT_OK:
        return HD_RESULT_OK;
    case CRANE__HOSTD__RESULT__RESULT_REMOTING:
        return HD_RESULT_REMOTING;
    case CRANE__HOSTD__RESULT__RESULT_ROLLED_BACK:
        return HD_RESULT_ROLLED_BACK;
    default:
        return HD_RESULT_FAILED;
    }
}

/* MigrateDone to the client: RESULT, ERROR (or none), the steps. */
static double send_done(struct hd_run *run, Crane__Hostd__Result result,
                        const char *error)
{
    Crane__Hostd__DaemonReply r = CRANE__HOSTD__DAEMON_REPLY__INIT;
    Crane__Hostd__MigrateDone done = CRANE__HOSTD__MIGRATE_DONE__INIT;
    Crane__Hostd__Step **ptrs = calloc(run->n_steps + 1, sizeof(*ptrs));
    Crane__Hostd__JobStats js;

    if (run->has_job) {
        hd_job_stats(&run->job, &js);
        done.job = &js;
    }
    done.result = result;
    done.error = (char *)(error ? error : "");
    done.id = run->m.id;
    done.seconds = hd_run_elapsed(run);
    done.bytes = run->m.bytes_moved;
    done.dest_host = run->m.dst_host;
    if (ptrs) {
        for (size_t i = 0; i < run->n_steps; i++)
            ptrs[i] = &run->steps[i];
        done.steps = ptrs;
        done.n_steps = run->n_steps;
    }
    r.msg_case = CRANE__HOSTD__DAEMON_REPLY__MSG_DONE;
    r.done = &done;
    send_reply(run, &r);
    free(ptrs);
    return done.seconds;
}

void hd_run_end(struct hd_run *run, Crane__Hostd__Result result,
                const char *error)
{
    char lost[600];
    double seconds;
    int rc;

    if ((!error || !*error) && run->n_lost) {
        snprintf(lost, sizeof(lost), "%u program(s) lost to a fault: %s",
                 run->n_lost, run->lost);
        error = lost;
    }
    run->m.result = hd_run_history_result(result);
    run->m.end_time = hd_wall();
    snprintf(run->m.error, sizeof(run->m.error), "%s", error ? error : "");
    if (run->h && !run->unsaved &&
        (rc = hd_history_finish(run->h, run->m.id, run->m.result,
                                run->m.end_time, run->m.error)) < 0)
        unsaved(run, "cannot record its end", rc);
    seconds = send_done(run, result, error);
    CRN_INFO("migration %s %s: %s in %.3f s%s%s", run->m.id, run->m.domain,
            hd_result_name(hd_run_history_result(result)), seconds,
            error ? ": " : "", error ? error : "");
    hd_run_leave(run);
}

void hd_run_reply(struct hd_run *run, Crane__Hostd__Result result,
                  const char *error)
{
    send_done(run, result, error);
}
