/* crane-migrate's output: progress lines, the steps, the programs'
 * stoppage and the result, every string from the daemon cleaned first. */
#include "migrate_cli.h"

#include "proto/endpoint.h"
#include "proto/frame.h"
#include "proto/hostd.pb-c.h"
#include "proto/log.h"
#include "proto/report.h"
#include "proto/version.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* --- untrusted text ---------------------------------------------------- */

/* Bytes of the valid UTF-8 character at S (N bytes left), 0 when invalid
 * or a C1 control character (U+0080..U+009F, which terminals obey). */
static size_t utf8_char(const unsigned char *s, size_t n)
{
    size_t need, i;

    if (s[0] < 0x80)
        return 1;
    if (s[0] < 0xc2 || s[0] > 0xf4)
        return 0;
    need = s[0] < 0xe0 ? 2 : s[0] < 0xf0 ? 3 : 4;
    if (n < need)
        return 0;
    for (i = 1; i < need; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    if ((s[0] == 0xc2 && s[1] < 0xa0) ||  /* C1 controls */
        (s[0] == 0xe0 && s[1] < 0xa0) ||  /* overlong */
        (s[0] == 0xed && s[1] >= 0xa0) || /* surrogates */
        (s[0] == 0xf0 && s[1] < 0x90) ||  /* overlong */
        (s[0] == 0xf4 && s[1] >= 0x90))   /* past U+10FFFF */
        return 0;
    return need;
}

/*
 * Copies S into BUF (SIZE bytes, at least 8) fit for a terminal and a log:
 * control characters and invalid UTF-8 become '?', so a guest's program
 * name can neither move the cursor nor forge a line.  A TOKEN (a name in a
 * column) also has its spaces turned into '_' and is "-" when empty.  Too
 * long a string ends in "...".  Returns BUF.
 */
const char *mig_clean(char *buf, size_t size, const char *s, bool token)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t left = strlen((const char *)p), o = 0, k;

    if (token && !left)
        return strcpy(buf, "-");
    while (left) {
        k = utf8_char(p, left);
        if (o + (k ? k : 1) > size - 4) {
            memcpy(buf + o, "...", 3);
            o += 3;
            break;
        }
        if (k == 1 && (*p < 0x20 || *p == 0x7f))
            k = 0;
        if (k == 0)
            buf[o++] = '?';
        else if (token && *p == ' ')
            buf[o++] = '_';
        else
            memcpy(buf + o, p, k), o += k;
        p += k ? k : 1;
        left -= k ? k : 1;
    }
    buf[o] = '\0';
    return buf;
}

/* --- output ------------------------------------------------------------ */

static FILE *err_of(const struct mig_view *v)
{
    return v->err ? v->err : stderr;
}

/* Ends a progress line shown in place, before anything else is printed. */
void mig_view_break(struct mig_view *v)
{
    if (v->line_open) {
        fputc('\n', err_of(v));
        fflush(err_of(v));
        v->line_open = false;
    }
}

void mig_show_progress(struct mig_view *v, const Crane__Hostd__Progress *p,
                          bool verbose)
{
    char phase[40], text[1024];

    if (p->text && *p->text) {
        mig_view_break(v);
        fprintf(v->out, "[%7.3fs] %-9s %s\n", p->elapsed,
                mig_clean(phase, sizeof(phase), p->phase, true),
                mig_clean(text, sizeof(text), p->text, false));
    }
    /* Job progress exactly as virsh 11 shows it: "\rMigration: [ 5.00 %]"
     * on stderr, rewritten in place; a new line only when the text
     * changes. */
    if (verbose && (p->job || p->percent >= 0)) {
        char now[16];
        double pc = p->job ? mig_job_percent(p->job->data_remaining,
                                             p->job->data_total)
                           : (p->percent > 100 ? 100 : p->percent);
        snprintf(now, sizeof(now), "%5.2f", pc);
        if (strcmp(now, v->last_progress) != 0) {
            snprintf(v->last_progress, sizeof(v->last_progress), "%s", now);
            fflush(v->out);
            fprintf(err_of(v), "\rMigration: [%s %%]", now);
            fflush(err_of(v));
            v->line_open = true;
        }
    }
    fflush(v->out);
}

/* One program's stoppage, summed over its steps of each phase. */
struct mig_program {
    uint32_t pid;
    const char *name;
    double pre, post; /* seconds; < 0: no such step */
    bool failed, lost;
};

/* A program step and its place in the reply, to sort by pid stably. */
struct mig_ref {
    const Crane__Hostd__Step *s;
    size_t i;
};

static int by_pid(const void *a, const void *b)
{
    const struct mig_ref *x = a, *y = b;

    if (x->s->pid != y->s->pid)
        return x->s->pid < y->s->pid ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

static void ms(char *buf, size_t len, double seconds)
{
    if (seconds < 0)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.1f", seconds * 1e3);
}

/* Prints one line per program (by pid) and the stoppage line.  Returns
 * -ENOMEM when there is no memory to sort them. */
static int print_programs(FILE *out, const Crane__Hostd__MigrateDone *d)
{
    struct mig_ref *s;
    struct mig_program p = {0};
    double pre_max = -1, post_max = -1;
    size_t n = 0, programs = 0, i;
    char name[72], a[32], b[32];

    s = calloc(d->n_steps ? d->n_steps : 1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    for (i = 0; i < d->n_steps; i++)
        if (d->steps[i]->pid)
            s[n++] = (struct mig_ref){d->steps[i], i};
    /* Sorting keeps this O(n log n) however many steps come. */
    qsort(s, n, sizeof(*s), by_pid);
    for (i = 0; i <= n; i++) {
        const Crane__Hostd__Step *st = i < n ? s[i].s : NULL;

        if (i > 0 && (!st || st->pid != p.pid)) {
            ms(a, sizeof(a), p.pre);
            ms(b, sizeof(b), p.post);
            fprintf(out, "program %-7u %-16s pre %9s ms post %9s ms%s\n",
                    p.pid, mig_clean(name, sizeof(name), p.name, true), a, b,
                    p.lost ? "  LOST" : p.failed ? "  FAILED" : "");
            pre_max = p.pre > pre_max ? p.pre : pre_max;
            post_max = p.post > post_max ? p.post : post_max;
            programs++;
        }
        if (!st)
            break;
        if (i == 0 || st->pid != p.pid)
            p = (struct mig_program){.pid = st->pid, .name = st->program,
                                     .pre = -1, .post = -1};
        if (st->err)
            p.failed = true;
        if (!strcmp(st->phase, "lost"))
            p.lost = true;
        if (!strcmp(st->phase, "pre"))
            p.pre = (p.pre < 0 ? 0 : p.pre) + st->seconds;
        else if (!strcmp(st->phase, "post"))
            p.post = (p.post < 0 ? 0 : p.post) + st->seconds;
    }
    ms(a, sizeof(a), pre_max);
    ms(b, sizeof(b), post_max);
    fprintf(out, "stoppage: pre max %s ms, post max %s ms over %zu "
                 "program(s)\n",
            a, b, programs);
    free(s);
    return 0;
}

const char *mig_result_name(Crane__Hostd__Result r)
{
    switch (r) {
    case CRANE__HOSTD__RESULT__RESULT_OK: return "ok";
    case CRANE__HOSTD__RESULT__RESULT_ROLLED_BACK: return "rolled-back";
    case CRANE__HOSTD__RESULT__RESULT_FAILED: return "failed";
    case CRANE__HOSTD__RESULT__RESULT_REMOTING: return "remoting";
    default: return NULL;
    }
}

/* Prints the report of D and its one stderr line (none with V->quiet);
 * returns the exit status its result means. */
int mig_print_done(struct mig_view *v, const Crane__Hostd__MigrateDone *d,
                      const char *domain)
{
    char phase[40], name[72], err[1024], id[80], host[280], dom[280];
    char moved[32];
    FILE *out = v->out;
    size_t lost = 0;
    int status;

    mig_view_break(v);
    for (size_t i = 0; i < d->n_steps; i++)
        lost += strcmp(d->steps[i]->phase, "lost") == 0;
    if (d->n_steps)
        fprintf(out, "        %-9s %-7s %-16s %9s %9s  %s\n", "PHASE", "PID",
                "PROGRAM", "START(s)", "TOOK(ms)", "RESULT");
    for (size_t i = 0; i < d->n_steps; i++) {
        const Crane__Hostd__Step *s = d->steps[i];
        char pid[16] = "-";

        if (s->pid)
            snprintf(pid, sizeof(pid), "%u", s->pid);
        fprintf(out, "step    %-9s %-7s %-16s %9.3f %9.1f  %s%s%s\n",
                mig_clean(phase, sizeof(phase), s->phase, true), pid,
                s->pid ? mig_clean(name, sizeof(name), s->program, true) : "-",
                s->start, s->seconds * 1e3, s->err ? "FAILED" : "ok",
                s->err ? ": " : "",
                s->err ? mig_clean(err, sizeof(err),
                               *s->error ? s->error : strerror(-s->err),
                               false)
                       : "");
    }
    if (print_programs(out, d) < 0)
        fprintf(out, "stoppage: (out of memory)\n");
    crn_format_bytes(moved, sizeof(moved), d->bytes);
    fprintf(out, "migration: %s\n", mig_clean(id, sizeof(id), d->id, true));
    if (d->dest_host && *d->dest_host)
        fprintf(out, "destination: %s\n",
                mig_clean(host, sizeof(host), d->dest_host, true));
    fprintf(out, "total: %.3f s\n", d->seconds);
    fprintf(out, "bytes: %llu (%s)\n", (unsigned long long)d->bytes, moved);
    if (d->job)
        mig_print_jobinfo(out, d->job);
    mig_clean(err, sizeof(err), d->error, false);
    fprintf(out, "result: %s%s%s\n", mig_result_name(d->result),
            *err ? ": " : "", err);
    fflush(out);

    mig_clean(dom, sizeof(dom), domain, false);
    if (lost)
        fprintf(out, "lost: %zu program(s) died of a fault during the "
                     "migration\n", lost);
    fflush(out);
    switch (d->result) {
    case CRANE__HOSTD__RESULT__RESULT_OK:
        status = lost ? MIG_EXIT_LOST : MIG_EXIT_OK;
        if (lost && !v->quiet)
            CRN_WARN("%s moved, but %zu program(s) died of a "
                            "fault during the migration%s%s",
                    dom, lost, *err ? ": " : "", err);
        break;
    case CRANE__HOSTD__RESULT__RESULT_ROLLED_BACK:
        if (!v->quiet)
            CRN_ERROR("migrating %s failed and was rolled "
                            "back: it runs on at the source%s%s",
                    dom, *err ? ": " : "", err);
        status = MIG_EXIT_ROLLED_BACK;
        break;
    case CRANE__HOSTD__RESULT__RESULT_REMOTING:
        if (!v->quiet)
            CRN_WARN("%s moved, but the destination has "
                            "no usable GPU: its programs run remote until "
                            "crane-hostd there attaches one",
                    dom);
        status = MIG_EXIT_REMOTING;
        break;
    default:
        if (!v->quiet)
            CRN_ERROR("migrating %s failed and it is not "
                            "fully restored (migration %s): operator "
                            "attention needed%s%s",
                    dom, id, *err ? ": " : "", err);
        status = MIG_EXIT_FAILED;
        break;
    }
    return status;
}

