/* The last check before the GPU driver goes: every GPU user accounted for.
 *
 * A program that did not answer the prepare in time fails the prepare
 * when it holds the GPU (or when no gpu_device is configured, so nobody
 * can tell); when it provably holds none, it is left out and the
 * migration goes on.  The reason names what really happened: a program
 * silent since an earlier command (not waited for again: its shim runs
 * commands in order) is said to be silent since then, not to have let
 * this prepare's deadline pass.
 */
#include "account.h"

#include "gpu_users.h"
#include "proto/log.h"
#include "op.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static struct gd_program *registered_pid(struct gd_daemon *d, pid_t pid)
{
    for (struct gd_program *p = d->programs; p; p = p->next)
        if (p->registered && !p->conn.closing && p->pid == pid)
            return p;
    return NULL;
}

/* Whether P's shim answered this prepare and said it is off the GPU (a
 * program waiting for the GPU to start has never touched it). */
static bool off_gpu(const struct gd_program *p,
                    Crane__Control__MigrationMode m)
{
    Crane__Control__ProgramMode want = m == GD_MIG(OFFLINE)
                                           ? GD_PMODE(PARKED)
                                           : GD_PMODE(REMOTING);

    return p->mode == GD_PMODE(REMOTE_ONLY) || p->held ||
           (!p->cmd_id && p->last_op == GD_OP(PREPARE) && !p->last_err &&
            p->mode == want);
}

/* "HH:MM:SS UTC" of the monotonic time T. */
static void wall_clock(double t, char *buf, size_t len)
{
    time_t w = time(NULL) - (time_t)(gd_now() - t + 0.5);
    struct tm tm;

    if (!gmtime_r(&w, &tm) || !strftime(buf, len, "%H:%M:%S UTC", &tm))
        snprintf(buf, len, "?");
}

/* Why P is not off the GPU, in one line: silent since an earlier command
 * or query, or no answer to this prepare within its deadline. */
static void why_silent(const struct gd_daemon *d, const struct gd_program *p,
                       char *buf, size_t len)
{
    const struct gd_op *o = d->op;
    char at[32];

    if (p->cmd_id && p->silent_since < o->fan_started) {
        wall_clock(p->silent_since, at, sizeof(at));
        snprintf(buf, len, "has not answered since %s, %.1f s before this "
                 "prepare (a command then, and its last one, %s, are "
                 "still unanswered: it was not waited for again)",
                 at, o->fan_started - p->silent_since, gd_op_name(p->cmd_op));
    } else if (p->cmd_id && p->query_id && p->query_sent < o->fan_started) {
        wall_clock(p->query_sent, at, sizeof(at));
        snprintf(buf, len, "did not answer the prepare within %u ms, nor "
                 "the status query sent at %s (%.1f s before it)",
                 o->deadline_ms, at, o->fan_started - p->query_sent);
    } else if (p->cmd_id) {
        snprintf(buf, len, "did not answer the prepare within %u ms",
                 o->deadline_ms);
    } else {
        snprintf(buf, len, "is still on the GPU");
    }
}

/* A program that holds no node and did not answer: left out, or the
 * prepare fails when no gpu_device is configured. */
static int leave_out(struct gd_daemon *d, struct gd_program *p, char *names,
                     size_t names_len, size_t *excluded)
{
    char why[200];

    why_silent(d, p, why, sizeof(why));
    if (d->cfg.n_gpu_devices == 0) {
        gd_op_fail(d, -ETIMEDOUT, "%s %s (and with no gpu_device "
                   "configured, its use of the GPU cannot be ruled out)",
                   p->conn.name, why);
        return -ETIMEDOUT;
    }
    CRN_WARN("%s: %s; holds no GPU device node: left out of the migration",
            p->conn.name, why);
    if (strlen(names) + strlen(p->conn.name) + 3 < names_len)
        snprintf(names + strlen(names), names_len - strlen(names), "%s%s",
                 *excluded ? ", " : "", p->conn.name);
    (*excluded)++;
    return 0;
}

int gd_account_gpu_users(struct gd_daemon *d)
{
    struct gd_op *o = d->op;
    struct gd_gpu_user users[32];
    double t0 = gd_now();
    size_t excluded = 0;
    char names[160] = "", why[200];
    char step[64];
    int n, err = 0;

    n = gd_gpu_users(&d->cfg, users, sizeof(users) / sizeof(*users));
    if (n < 0) {
        gd_op_fail(d, n, "cannot list the GPU's users in /proc: %s",
                   strerror(-n));
        err = n;
    }
    for (int i = 0; i < n && (size_t)i < sizeof(users) / sizeof(*users) &&
                    !err; i++) {
        struct gd_program *p = registered_pid(d, users[i].pid);
        if (p && off_gpu(p, o->mode))
            continue;
        if (p) {
            why_silent(d, p, why, sizeof(why));
            gd_op_fail(d, -EBUSY, "%s holds %s but %s", p->conn.name,
                       users[i].node, why);
        } else {
            gd_op_fail(d, -EBUSY, "pid %d (%s) holds %s but is not a "
                       "registered program (not under the shim, or not "
                       "registered yet)",
                       (int)users[i].pid, users[i].comm, users[i].node);
        }
        err = -EBUSY;
    }
    for (struct gd_program *p = d->programs; p && !err; p = p->next)
        if (p->registered && !p->conn.closing && !off_gpu(p, o->mode))
            err = leave_out(d, p, names, sizeof(names), &excluded);
    if (excluded && !err)
        snprintf(o->note, sizeof(o->note),
                 "%zu program(s) did not answer and hold no GPU device, "
                 "left out: %s", excluded, names);
    snprintf(step, sizeof(step), "account for GPU users (%d)", n < 0 ? 0 : n);
    gd_op_step(d, step, err, err ? o->error : NULL, gd_now() - t0);
    return err;
}
