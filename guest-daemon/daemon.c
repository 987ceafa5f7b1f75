/* crane-guestd's bookkeeping: names, clock, phase, state file, recovery. */
#include "guestd.h"

#include "proto/log.h"
#include "state.h"

#include "proto/control_ops.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double gd_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double wall_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

const char *gd_phase_name(Crane__Control__Phase p)
{
    static const char *const names[] = {"unknown",  "idle",     "preparing",
                                        "prepared", "resuming", "aborting"};
    return (unsigned)p < sizeof(names) / sizeof(*names) ? names[p] : "?";
}

const char *gd_pmode_name(Crane__Control__ProgramMode m)
{
    static const char *const names[] = {"unknown", "passthrough", "remoting",
                                        "parked", "remote-only"};
    return (unsigned)m < sizeof(names) / sizeof(*names) ? names[m] : "?";
}

const char *gd_op_name(Crane__Control__Op op)
{
    return crn_control_op_name(op);
}

const char *gd_mig_name(Crane__Control__MigrationMode m)
{
    static const char *const names[] = {"default", "live", "offline"};
    return (unsigned)m < sizeof(names) / sizeof(*names) ? names[m] : "?";
}

void gd_set_phase(struct gd_daemon *d, Crane__Control__Phase phase)
{
    if (d->phase != phase) {
        CRN_INFO("phase %s -> %s", gd_phase_name(d->phase),
                gd_phase_name(phase));
        d->phase = phase;
        d->phase_since = gd_now();
    }
    gd_save_state(d);
}

static void on_state_retry(uv_timer_t *t)
{
    gd_save_state(t->data);
}

/* Seconds between tries of a state file that could not be written. */
#define GD_STATE_RETRY_MS 1000

void gd_save_state(struct gd_daemon *d)
{
    static int last_err;
    struct gd_saved *s;
    int rc;

    /* Stopping closes every connection: the programs did not go, and the
     * next daemon must find them in the file. */
    if (d->stopping || !(s = calloc(1, sizeof(*s))))
        return;
    s->phase = d->phase;
    s->mode = d->mode;
    snprintf(s->proxy, sizeof(s->proxy), "%s", d->proxy);
    s->modules_unloaded = d->modules_unloaded;
    s->since = wall_now() - (gd_now() - d->phase_since);
    for (struct gd_program *p = d->programs;
         p && s->n_programs < GD_STATE_MAX_PROGRAMS; p = p->next) {
        if (!p->registered || p->conn.closing)
            continue;
        struct gd_saved_program *sp = &s->programs[s->n_programs++];
        sp->pid = p->pid;
        sp->mode = p->mode;
        snprintf(sp->name, sizeof(sp->name), "%s", p->name);
        for (char *c = sp->name; *c; c++)
            if (*c == ' ')
                *c = '_';
    }
    rc = gd_state_write(d->cfg.state_file, s);
    if (rc < 0 && rc != last_err)
        CRN_ERROR("cannot write the state file %s: %s (retrying every %d ms; "
                 "a restart meanwhile finds the phase before)",
                 d->cfg.state_file, strerror(-rc), GD_STATE_RETRY_MS);
    else if (rc == 0 && d->state_unsaved)
        CRN_INFO("state file %s written again", d->cfg.state_file);
    last_err = rc;
    d->state_unsaved = rc < 0;
    if (rc < 0)
        uv_timer_start(&d->state_retry, on_state_retry, GD_STATE_RETRY_MS, 0);
    else
        uv_timer_stop(&d->state_retry);
    free(s);
}

void gd_adopt_program_phase(struct gd_daemon *d, const struct gd_program *p)
{
    if (d->phase != GD_PHASE(IDLE) || d->op || p->mode != GD_PMODE(PARKED))
        return;
    CRN_WARN("%s is parked while the state file said phase idle (it was not "
            "written after the prepare: a full disk?): phase prepared "
            "(offline); resume or abort takes it back to the GPU",
            p->conn.name);
    d->mode = GD_MIG(OFFLINE);
    gd_set_phase(d, GD_PHASE(PREPARED));
}

static void on_grace(uv_timer_t *t)
{
    struct gd_daemon *d = t->data;

    d->recover(d);
}

/* Reads the state file a previous daemon left.  Programs it names that
 * still run will register again; a migration left half done is finished
 * once they are back (or after reconnect_grace_ms). */
void gd_daemon_recover(struct gd_daemon *d,
                       void (*recover)(struct gd_daemon *d))
{
    struct gd_saved *s = calloc(1, sizeof(*s));
    int rc;

    d->recover = recover;
    uv_timer_init(d->loop, &d->grace);
    d->grace.data = d;
    uv_timer_init(d->loop, &d->state_retry);
    d->state_retry.data = d;
    d->phase = GD_PHASE(IDLE);
    d->phase_since = gd_now();
    if (!s)
        return;
    rc = gd_state_read(d->cfg.state_file, s);
    if (rc == -ENOENT) {
        free(s);
        return;
    }
    if (rc < 0) {
        CRN_WARN("ignoring the state file %s: %s", d->cfg.state_file,
                rc == -EINVAL ? "not a crane-guestd state file"
                              : strerror(-rc));
        free(s);
        return;
    }
    d->phase = s->phase;
    d->mode = s->mode;
    snprintf(d->proxy, sizeof(d->proxy), "%s", s->proxy);
    d->modules_unloaded = s->modules_unloaded;
    for (size_t i = 0; i < s->n_programs; i++) {
        pid_t pid = s->programs[i].pid;
        bool alive = kill(pid, 0) == 0 || errno == EPERM;
        CRN_INFO("state file: %s[%d] was %s%s", s->programs[i].name, (int)pid,
                gd_pmode_name(s->programs[i].mode),
                alive ? "" : " (no longer runs)");
        if (alive && d->n_expected < sizeof(d->expected) / sizeof(pid_t))
            d->expected[d->n_expected++] = pid;
    }
    switch (d->phase) {
    case GD_PHASE(PREPARING):
    case GD_PHASE(ABORTING):
        d->recover_op = GD_OP(ABORT);
        break;
    case GD_PHASE(RESUMING):
        d->recover_op = GD_OP(RESUME);
        break;
    default:
        d->recover_op = GD_OP(NONE);
        break;
    }
    CRN_INFO("state file: phase %s, %zu module(s) out, %zu program(s) "
            "expected back%s%s",
            gd_phase_name(d->phase), d->modules_unloaded, d->n_expected,
            d->recover_op != GD_OP(NONE) ? "; then " : "",
            d->recover_op != GD_OP(NONE) ? gd_op_name(d->recover_op) : "");
    if (d->recover_op != GD_OP(NONE)) {
        d->recovering = true;
        uv_timer_start(&d->grace, on_grace,
                       d->n_expected ? d->cfg.reconnect_grace_ms : 0, 0);
    }
    free(s);
}
