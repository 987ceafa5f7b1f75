/* cranectl's output: the daemon's answers as tables for operators.
 *
 * Lines are stable for scripts: "phase: NAME", one "program PID NAME MODE
 * ..." row per program (with a "bulk: shm N B, stream M B, area
 * attached|none" line under it once it remoted, and "in place: H B in host
 * memory" once bytes went so), "result: ok|FAILED ...",
 * and for prepare and resume a "stoppage:" line with the longest time any
 * program's OpenCL calls were held.
 */
#include "ctl_print.h"

#include "proto/control_ops.h"
#include "proto/report.h"

#include <string.h>

static const char *phase_name(Crane__Control__Phase p)
{
    static const char *const n[] = {"unknown",  "idle",     "preparing",
                                    "prepared", "resuming", "aborting"};
    return (unsigned)p < sizeof(n) / sizeof(*n) ? n[p] : "?";
}

static const char *mode_name(Crane__Control__ProgramMode m)
{
    static const char *const n[] = {"unknown", "passthrough", "remoting",
                                    "parked", "remote-only"};
    return (unsigned)m < sizeof(n) / sizeof(*n) ? n[m] : "?";
}

static const char *mig_name(Crane__Control__MigrationMode m)
{
    static const char *const n[] = {"default", "live", "offline"};
    return (unsigned)m < sizeof(n) / sizeof(*n) ? n[m] : "?";
}

/* The MODE column: the mode the shim reported, unless a command is in
 * flight (switching) or it stopped answering (unresponsive). */
static const char *shown_mode(const Crane__Control__ProgramReport *r)
{
    if (r->lost)
        return "lost";
    if (r->state == CRANE__CONTROL__PROGRAM_STATE__STATE_STARTING)
        return "starting";
    if (r->state == CRANE__CONTROL__PROGRAM_STATE__STATE_SWITCHING)
        return "switching";
    if (r->state == CRANE__CONTROL__PROGRAM_STATE__STATE_UNRESPONSIVE)
        return "unresponsive";
    return mode_name(r->mode);
}

static void print_program(FILE *out, const Crane__Control__ProgramReport *r)
{
    const Crane__Control__StepTimes *t = r->times;
    char state[32], moved[32], back[32];

    crn_format_bytes(state, sizeof(state), r->state_bytes);
    fprintf(out, "program %-7u %-16s %-12s %9s  %-8s %-6s", r->pid,
            r->program, shown_mode(r), state, crn_control_op_name(r->last_op),
            r->last_op == CRANE__CONTROL__OP__OP_NONE ? "-"
            : r->err                                  ? "FAILED"
                                                      : "ok");
    if (t && r->last_op != CRANE__CONTROL__OP__OP_NONE)
        fprintf(out, " %9.1f %9.1f", crn_held_seconds(t) * 1e3, r->elapsed * 1e3);
    fputc('\n', out);
    if (r->state == CRANE__CONTROL__PROGRAM_STATE__STATE_SWITCHING) {
        fprintf(out, "        switching: %s pending for %.1f s; last reported "
                     "%s\n",
                crn_control_op_name(r->pending_op), r->pending_for,
                mode_name(r->mode));
        if (r->waiting && *r->waiting)
            fprintf(out, "        %s\n", r->waiting);
    } else if (r->state == CRANE__CONTROL__PROGRAM_STATE__STATE_STARTING)
        fprintf(out, "        starting: its first call waits for the GPU "
                     "(offline migration)\n");
    else if (r->state == CRANE__CONTROL__PROGRAM_STATE__STATE_UNRESPONSIVE)
        fprintf(out, "        unresponsive: no answer for %.1f s (%s "
                     "pending); last reported %s\n",
                r->pending_for,
                r->pending_op ? crn_control_op_name(r->pending_op) : "nothing",
                mode_name(r->mode));
    if (r->lost)
        fprintf(out, "        lost: %s\n", r->error ? r->error : "");
    else if (r->error && *r->error)
        fprintf(out, "        %s\n", r->error);
    if (!r->lost && r->fault && *r->fault)
        fprintf(out, "        fault: %s\n", r->fault);
    if (r->shm_bytes || r->stream_bytes || r->shm_attached)
        fprintf(out, "        bulk: shm %llu B, stream %llu B, area %s\n",
                (unsigned long long)r->shm_bytes,
                (unsigned long long)r->stream_bytes,
                r->shm_attached ? "attached" : "none");
    if (r->host_bytes)
        fprintf(out, "        in place: %llu B in host memory\n",
                (unsigned long long)r->host_bytes);
    if (t && t->total > 0) {
        crn_format_bytes(moved, sizeof(moved), t->bytes_extracted);
        crn_format_bytes(back, sizeof(back), t->bytes_reinjected);
        fprintf(out,
                "        held %.1f ms = %s %.1f + finish %.1f + extract "
                "%.1f + release %.1f + unload %.1f + load %.1f + rebuild "
                "%.1f + reinject %.1f; %s out, %s back, %u objects\n",
                crn_held_seconds(t) * 1e3, t->block > t->total ? "parked" : "block",
                t->block * 1e3, t->finish * 1e3,
                t->extract * 1e3, t->release * 1e3, t->unload * 1e3,
                t->load * 1e3, t->rebuild * 1e3, t->reinject * 1e3, moved,
                back, t->objects);
    }
}

int ctl_print_ack(FILE *out, const Crane__Control__Ack *a, size_t *lost)
{
    double max = 0, sum = 0;
    size_t timed = 0;

    *lost = 0;
    if (a->op == CRANE__CONTROL__OP__OP_STATUS) {
        fprintf(out, "phase: %s (for %.1f s)\n", phase_name(a->phase),
                a->phase_age);
        fprintf(out, "migration: %s%s%s\n", mig_name(a->mode),
                a->proxy && *a->proxy ? " via " : "",
                a->proxy ? a->proxy : "");
        if (a->last_op != CRANE__CONTROL__OP__OP_NONE)
            fprintf(out, "last: %s %s%s%s\n", crn_control_op_name(a->last_op),
                    a->last_err ? "FAILED" : "ok",
                    a->last_err ? ": " : "",
                    a->last_err ? a->last_error : "");
    } else {
        fprintf(out, "%s%s%s: %s in %.1f ms (phase %s)\n",
                crn_control_op_name(a->op),
                a->op == CRANE__CONTROL__OP__OP_PREPARE ? " " : "",
                a->op == CRANE__CONTROL__OP__OP_PREPARE ? mig_name(a->mode)
                                                        : "",
                a->err ? "FAILED" : "done", a->seconds * 1e3,
                phase_name(a->phase));
        for (size_t i = 0; i < a->n_steps; i++) {
            const Crane__Control__DaemonStep *s = a->steps[i];
            fprintf(out, "step    %-32s %-6s %9.1f ms%s%s\n", s->name,
                    s->err ? "FAILED" : "ok", s->seconds * 1e3,
                    s->err ? "  " : "", s->err ? s->error : "");
        }
    }
    fprintf(out, "programs: %zu\n", a->n_programs);
    if (a->n_programs)
        fprintf(out, "        %-7s %-16s %-12s %9s  %-8s %-6s %9s %9s\n",
                "PID", "PROGRAM", "MODE", "STATE", "LAST", "RESULT",
                "HELD(ms)", "TOOK(ms)");
    for (size_t i = 0; i < a->n_programs; i++) {
        const Crane__Control__ProgramReport *r = a->programs[i];
        print_program(out, r);
        *lost += r->lost;
        if (r->times && r->last_op == a->op && !r->err &&
            r->times->total > 0) {
            double h = crn_held_seconds(r->times);
            if (h > max)
                max = h;
            sum += h;
            timed++;
        }
    }
    if (a->op != CRANE__CONTROL__OP__OP_STATUS && timed)
        fprintf(out, "stoppage: max %.1f ms, mean %.1f ms over %zu "
                     "program(s)\n",
                max * 1e3, sum / timed * 1e3, timed);
    if (a->err)
        fprintf(out, "result: FAILED (%s): %s\n", strerror(-a->err),
                a->error ? a->error : "");
    else if (*lost)
        fprintf(out, "result: LOST %zu program(s): %s\n", *lost,
                a->error ? a->error : "");
    else
        fprintf(out, "result: ok%s%s\n", a->error && *a->error ? ": " : "",
                a->error && *a->error ? a->error : "");
    return a->err;
}
