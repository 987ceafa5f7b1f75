/* crane-migrate: `virsh migrate` for VMs with a GPU, through crane-hostd. */
/*
 * Sends one MigrateRequest to the local crane-hostd (the client hop of
 * proto/hostd.proto), prints every Progress as a line as it comes, then the
 * MigrateDone: the steps, the programs' stoppage and the result, which is
 * also the exit status.  crane-hostd owns the migration: crane-migrate only
 * watches, so losing it (Ctrl-C, a lost connection, --wait) never stops a
 * migration.
 *
 * Everything in the replies is untrusted: frames are bounded, a reply
 * without a known message or result is malformed, and every string is
 * cleaned before it reaches the terminal (see clean()).
 */
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

#define MIG_DEFAULT_CONNECT "unix:/run/crane/hostd.sock"
#define MIG_CONNECT_ENV "CRANE_HOSTD_CONNECT"
#define MIG_MAX_REPLY (1u << 20)    /* bytes of one reply from the daemon */
#define MIG_MAX_REQUEST (64u << 10) /* what crane-hostd reads of a frame */
#define MIG_MAX_WAIT 1000000.0      /* --wait, seconds (fits poll's int ms) */
#define MIG_FOLLOW "follow it on crane-hostd's dashboard or in its history"

/* Exit statuses; --help and docs/host.md list them. */
enum mig_exit {
    MIG_EXIT_OK = 0,          /* moved, programs back on a GPU */
    MIG_EXIT_ROLLED_BACK = 1, /* failed; runs on at the source as before */
    MIG_EXIT_FAILURE = 1,     /* nothing started: --xml file unusable */
    MIG_EXIT_USAGE = 2,
    MIG_EXIT_NO_ANSWER = 3,   /* no (usable) answer from crane-hostd */
    MIG_EXIT_REMOTING = 4,    /* moved; programs remote until a GPU comes */
    MIG_EXIT_FAILED = 5,      /* failed and not fully restored */
    MIG_EXIT_SIGNAL = 128,    /* + the signal: stopped watching */
};

static const char usage[] =
    "Usage: crane-migrate [OPTIONS] DOMAIN DESTURI [MIGRATEURI]\n"
    "\n"
    "Migrates DOMAIN, a running VM with a passthrough GPU, to DESTURI (a\n"
    "libvirt URI, as for virsh migrate) through the local crane-hostd: it\n"
    "takes the VM's OpenCL programs off the GPU, detaches the GPU, has\n"
    "libvirt migrate the VM, attaches a GPU at the destination and brings\n"
    "the programs back.  Each phase is printed as it happens; at the end\n"
    "every step, the programs' stoppage and the result.  MIGRATEURI is where\n"
    "the migration stream goes (default: libvirt's choice).\n"
    "\n"
    "options of virsh migrate (same meanings):\n"
    "  --live              live migration: programs go on through a proxy\n"
    "                      while the VM moves.  Without it the migration is\n"
    "                      stop-and-copy, as in virsh: the VM is paused while\n"
    "                      it moves and its programs are parked (their\n"
    "                      OpenCL calls wait) until it runs at the\n"
    "                      destination\n"
    "  --offline           stop-and-copy, said explicitly (the default).\n"
    "                      Unlike virsh's --offline the VM must be running:\n"
    "                      crane-migrate never moves a bare definition\n"
    "  --p2p               peer-to-peer migration (the source libvirtd talks\n"
    "                      to the destination's)\n"
    "  --persistent        persist the VM on the destination\n"
    "  --undefinesource    undefine the VM on the source\n"
    "  --timeout S         suspend the VM if live migration takes over S\n"
    "                      seconds (needs --live)\n"
    "  --verbose           print the migration's progress too\n"
    "                      (Migration: [ 45 %])\n"
    "  --xml FILE          the domain's XML for the destination, without its\n"
    "                      GPU (at most 64 KiB)\n"
    "\n"
    "crane's options:\n"
    "  --proxy ENDPOINT    the proxy programs use while remote (unix:PATH or\n"
    "                      tcp:HOST:PORT; default: the guest's own)\n"
    "  --peer ENDPOINT     the destination's crane-hostd, tcp:HOST:PORT\n"
    "                      (default: DESTURI's host, port 7410)\n"
    "  --connect ENDPOINT  the local crane-hostd (default $" MIG_CONNECT_ENV
    ",\n"
    "                      else " MIG_DEFAULT_CONNECT ")\n"
    "  --wait S            give up after S seconds without a message from\n"
    "                      crane-hostd (default 0: wait as long as the\n"
    "                      migration takes; a lost connection is always\n"
    "                      noticed)\n"
    "  --help              this text\n"
    "  --version           print \"crane-migrate VERSION\" and exit\n"
    "\n"
    "crane-hostd owns the migration: Ctrl-C (or SIGTERM) does not cancel\n"
    "it.  crane-migrate stops watching, says so, and exits 130 (143); the\n"
    "migration goes on: " MIG_FOLLOW ".\n"
    "\n"
    "Exit status:\n"
    "  0  moved; its programs are back on a GPU\n"
    "  1  failed and rolled back: the VM runs on at the source as before\n"
    "     (or nothing started: the --xml file cannot be read, or is too\n"
    "     big)\n"
    "  2  bad usage (an unknown option, a missing or malformed value)\n"
    "  3  no answer from crane-hostd (cannot connect, connection lost,\n"
    "     --wait expired, malformed reply): the migration may be running\n"
    "  4  moved, but the destination had no usable GPU: its programs run\n"
    "     remote until crane-hostd there attaches one (it does by itself)\n"
    "  5  failed and not fully restored: operator attention needed\n"
    "  130, 143  interrupted by SIGINT, SIGTERM: the migration goes on\n";

/* What the command line asks for. */
struct mig_opts {
    Crane__Hostd__MigrateRequest req; /* strings point into argv or xml */
    bool offline;
    const char *connect;
    const char *connect_from;         /* "--connect" or the variable */
    double wait;                      /* seconds; 0: forever */
    char *xml;                        /* --xml's text, owned */
};

/* The terminal or log that stdout is. */
struct mig_view {
    FILE *out;
    bool tty;         /* update the progress line in place with \r */
    bool line_open;   /* a progress line without its newline is shown */
    int last_percent; /* -1: none shown yet */
};

/* Frames read from the daemon, buffered so that --wait holds inside a
 * frame as well as between frames. */
struct mig_reader {
    int fd;
    uint8_t *buf;
    size_t len, cap;
};

/* The signal that interrupted the wait: the one thing a handler may set. */
static volatile sig_atomic_t mig_signal;

static void on_signal(int sig)
{
    mig_signal = sig;
}

static int usage_error(const char *fmt, const char *arg)
{
    char what[512];

    snprintf(what, sizeof(what), fmt, arg);
    crn_log(CRN_LOG_ERROR, "%s (see --help)", what);
    return MIG_EXIT_USAGE;
}

/* --- the command line -------------------------------------------------- */

/* A whole number of seconds, 1 .. UINT32_MAX. */
static int parse_timeout(const char *s, uint32_t *out)
{
    unsigned long long v;
    char *end;

    if (*s < '0' || *s > '9')
        return -EINVAL;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno || *end || v == 0 || v > UINT32_MAX)
        return -EINVAL;
    *out = (uint32_t)v;
    return 0;
}

/* Seconds, 0 .. MIG_MAX_WAIT, fractions allowed. */
static int parse_wait(const char *s, double *out)
{
    char *end;
    double v;

    if ((*s < '0' || *s > '9') && *s != '.')
        return -EINVAL;
    errno = 0;
    v = strtod(s, &end);
    if (errno || *end || end == s || !(v >= 0 && v <= MIG_MAX_WAIT))
        return -EINVAL;
    *out = v;
    return 0;
}

/*
 * Reads --xml's FILE: text of 1 byte .. MIG_MAX_REQUEST (crane-hostd would
 * refuse a longer request anyway) without NUL bytes, into *OUT (freed by
 * the caller).  Returns 0, or -EINVAL after one line on stderr.
 */
static int read_xml(const char *path, char **out)
{
    size_t len = 0, cap = MIG_MAX_REQUEST + 1;
    const char *why = NULL;
    char *buf = NULL;
    ssize_t n;
    int fd, err = 0;

    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        err = errno;
        goto out;
    }
    /* One byte more than allowed tells a file that is too long. */
    if (!(buf = malloc(cap + 1))) {
        err = ENOMEM;
        goto out;
    }
    while (len < cap) {
        n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            err = errno;
            goto out;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    buf[len] = '\0';
    if (len == 0)
        why = "is empty";
    else if (len > MIG_MAX_REQUEST)
        why = "is over 64 KiB";
    else if (memchr(buf, '\0', len))
        why = "holds NUL bytes: not XML text";
out:
    if (fd >= 0)
        close(fd);
    if (err)
        crn_log(CRN_LOG_ERROR, "cannot read --xml file '%s': %s", path,
                strerror(err));
    else if (why)
        crn_log(CRN_LOG_ERROR, "--xml file '%s' %s", path, why);
    if (err || why) {
        free(buf);
        return -EINVAL;
    }
    *out = buf;
    return 0;
}

/* Fills O from the command line.  Returns -1 to go on, else the exit
 * status (0 after --help, 2 for bad usage, 1 for an unusable --xml). */
static int parse_args(int argc, char **argv, struct mig_opts *o)
{
    enum { O_LIVE = 256, O_OFFLINE, O_P2P, O_PERSISTENT, O_UNDEFINE,
           O_TIMEOUT, O_VERBOSE, O_XML, O_PROXY, O_PEER, O_CONNECT, O_WAIT,
           O_HELP, O_VERSION };
    static const struct option opts[] = {
        {"live", no_argument, NULL, O_LIVE},
        {"offline", no_argument, NULL, O_OFFLINE},
        {"p2p", no_argument, NULL, O_P2P},
        {"persistent", no_argument, NULL, O_PERSISTENT},
        {"undefinesource", no_argument, NULL, O_UNDEFINE},
        {"timeout", required_argument, NULL, O_TIMEOUT},
        {"verbose", no_argument, NULL, O_VERBOSE},
        {"xml", required_argument, NULL, O_XML},
        {"proxy", required_argument, NULL, O_PROXY},
        {"peer", required_argument, NULL, O_PEER},
        {"connect", required_argument, NULL, O_CONNECT},
        {"wait", required_argument, NULL, O_WAIT},
        {"help", no_argument, NULL, O_HELP},
        {"version", no_argument, NULL, O_VERSION},
        {NULL, 0, NULL, 0},
    };
    Crane__Hostd__MigrateRequest *r = &o->req;
    const char *xml_path = NULL;
    struct crn_endpoint ep;
    int opt, npos;

    o->connect = getenv(MIG_CONNECT_ENV);
    o->connect_from = "$" MIG_CONNECT_ENV;
    if (!o->connect || !*o->connect) {
        o->connect = MIG_DEFAULT_CONNECT;
        o->connect_from = "the default";
    }
    opterr = 0;
    /* ":" reports a missing value apart; options may follow DOMAIN, as in
     * virsh, and "--" ends them. */
    while ((opt = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
        switch (opt) {
        case O_LIVE: r->live = true; break;
        case O_OFFLINE: o->offline = true; break;
        case O_P2P: r->p2p = true; break;
        case O_PERSISTENT: r->persistent = true; break;
        case O_UNDEFINE: r->undefine_source = true; break;
        case O_VERBOSE: r->verbose = true; break;
        case O_TIMEOUT:
            if (parse_timeout(optarg, &r->timeout_s) < 0)
                return usage_error("bad --timeout '%s' (whole seconds, 1 or "
                                   "more)",
                                   optarg);
            break;
        case O_XML: xml_path = optarg; break;
        case O_PROXY:
            /* Port 0 is for listeners only: programs connect here. */
            if (crn_endpoint_parse(optarg, &ep) < 0 ||
                (ep.kind == CRN_EP_TCP && atoi(ep.port) == 0))
                return usage_error("bad --proxy '%s' (unix:PATH or "
                                   "tcp:HOST:PORT)",
                                   optarg);
            r->proxy = optarg;
            break;
        case O_PEER:
            if (crn_endpoint_parse(optarg, &ep) < 0 ||
                ep.kind != CRN_EP_TCP || atoi(ep.port) == 0)
                return usage_error("bad --peer '%s' (tcp:HOST:PORT)", optarg);
            r->peer = optarg;
            break;
        case O_CONNECT:
            o->connect = optarg;
            o->connect_from = "--connect";
            break;
        case O_WAIT:
            if (parse_wait(optarg, &o->wait) < 0)
                return usage_error("bad --wait '%s' (seconds, 0 for no "
                                   "limit)",
                                   optarg);
            break;
        case O_HELP: fputs(usage, stdout); return MIG_EXIT_OK;
        case O_VERSION:
            crn_print_version("crane-migrate");
            return MIG_EXIT_OK;
        case ':':
            return usage_error("option '%s' needs a value", argv[optind - 1]);
        default:
            if (optopt > 0 && optopt < O_LIVE) {
                char s[3] = {'-', (char)optopt, '\0'};
                return usage_error("unknown option '%s'", s);
            }
            if (optopt >= O_LIVE)
                return usage_error("option '%s' takes no value",
                                   argv[optind - 1]);
            return usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    npos = argc - optind;
    if (npos < 2)
        return usage_error("%s", npos == 0 ? "DOMAIN and DESTURI are needed"
                                           : "DESTURI is needed");
    if (npos > 3)
        return usage_error("unexpected argument '%s'", argv[optind + 3]);
    if (!*argv[optind] || !*argv[optind + 1])
        return usage_error("%s", "DOMAIN and DESTURI must not be empty");
    r->domain = argv[optind];
    r->dest_uri = argv[optind + 1];
    if (npos == 3)
        r->migrate_uri = argv[optind + 2];
    if (r->live && o->offline)
        return usage_error("%s", "--live and --offline exclude each other");
    if (r->timeout_s && !r->live)
        return usage_error("%s", "--timeout needs --live");
    if (crn_endpoint_parse(o->connect, &ep) < 0) {
        crn_log(CRN_LOG_ERROR, "bad endpoint '%s' for crane-hostd "
                        "(from %s): unix:PATH or tcp:HOST:PORT (see "
                        "--help)",
                o->connect, o->connect_from);
        return MIG_EXIT_USAGE;
    }
    if (xml_path) {
        if (read_xml(xml_path, &o->xml) < 0)
            return MIG_EXIT_FAILURE;
        r->dest_xml = o->xml;
    }
    return -1;
}

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
static const char *clean(char *buf, size_t size, const char *s, bool token)
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

/* Ends a progress line shown in place, before anything else is printed. */
static void view_break(struct mig_view *v)
{
    if (v->line_open) {
        fputc('\n', v->out);
        fflush(v->out);
        v->line_open = false;
    }
}

static void show_progress(struct mig_view *v, const Crane__Hostd__Progress *p,
                          bool verbose)
{
    char phase[40], text[1024];

    if (p->text && *p->text) {
        view_break(v);
        fprintf(v->out, "[%7.3fs] %-9s %s\n", p->elapsed,
                clean(phase, sizeof(phase), p->phase, true),
                clean(text, sizeof(text), p->text, false));
    }
    /* Job progress as virsh shows it: in place on a terminal; in a log one
     * line per change, so that a long migration stays readable. */
    if (verbose && p->percent >= 0) {
        int pc = p->percent > 100 ? 100 : p->percent;
        if (pc != v->last_percent) {
            v->last_percent = pc;
            if (v->tty) {
                fprintf(v->out, "\rMigration: [%3d %%]", pc);
                v->line_open = true;
            } else {
                fprintf(v->out, "Migration: [%3d %%]\n", pc);
            }
        }
    }
    fflush(v->out);
}

/* One program's stoppage, summed over its steps of each phase. */
struct mig_program {
    uint32_t pid;
    const char *name;
    double pre, post; /* seconds; < 0: no such step */
    bool failed;
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
                    p.pid, clean(name, sizeof(name), p.name, true), a, b,
                    p.failed ? "  FAILED" : "");
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

static const char *result_name(Crane__Hostd__Result r)
{
    switch (r) {
    case CRANE__HOSTD__RESULT__RESULT_OK: return "ok";
    case CRANE__HOSTD__RESULT__RESULT_ROLLED_BACK: return "rolled-back";
    case CRANE__HOSTD__RESULT__RESULT_FAILED: return "failed";
    case CRANE__HOSTD__RESULT__RESULT_REMOTING: return "remoting";
    default: return NULL;
    }
}

/* Prints the report of D and its one stderr line; returns the exit status
 * its result means. */
static int print_done(struct mig_view *v, const Crane__Hostd__MigrateDone *d,
                      const char *domain)
{
    char phase[40], name[72], err[1024], id[80], host[280], dom[280];
    char moved[32];
    FILE *out = v->out;
    int status;

    view_break(v);
    if (d->n_steps)
        fprintf(out, "        %-9s %-7s %-16s %9s %9s  %s\n", "PHASE", "PID",
                "PROGRAM", "START(s)", "TOOK(ms)", "RESULT");
    for (size_t i = 0; i < d->n_steps; i++) {
        const Crane__Hostd__Step *s = d->steps[i];
        char pid[16] = "-";

        if (s->pid)
            snprintf(pid, sizeof(pid), "%u", s->pid);
        fprintf(out, "step    %-9s %-7s %-16s %9.3f %9.1f  %s%s%s\n",
                clean(phase, sizeof(phase), s->phase, true), pid,
                s->pid ? clean(name, sizeof(name), s->program, true) : "-",
                s->start, s->seconds * 1e3, s->err ? "FAILED" : "ok",
                s->err ? ": " : "",
                s->err ? clean(err, sizeof(err),
                               *s->error ? s->error : strerror(-s->err),
                               false)
                       : "");
    }
    if (print_programs(out, d) < 0)
        fprintf(out, "stoppage: (out of memory)\n");
    crn_format_bytes(moved, sizeof(moved), d->bytes);
    fprintf(out, "migration: %s\n", clean(id, sizeof(id), d->id, true));
    if (d->dest_host && *d->dest_host)
        fprintf(out, "destination: %s\n",
                clean(host, sizeof(host), d->dest_host, true));
    fprintf(out, "total: %.3f s\n", d->seconds);
    fprintf(out, "bytes: %llu (%s)\n", (unsigned long long)d->bytes, moved);
    clean(err, sizeof(err), d->error, false);
    fprintf(out, "result: %s%s%s\n", result_name(d->result),
            *err ? ": " : "", err);
    fflush(out);

    clean(dom, sizeof(dom), domain, false);
    switch (d->result) {
    case CRANE__HOSTD__RESULT__RESULT_OK: status = MIG_EXIT_OK; break;
    case CRANE__HOSTD__RESULT__RESULT_ROLLED_BACK:
        crn_log(CRN_LOG_ERROR, "migrating %s failed and was rolled "
                        "back: it runs on at the source%s%s",
                dom, *err ? ": " : "", err);
        status = MIG_EXIT_ROLLED_BACK;
        break;
    case CRANE__HOSTD__RESULT__RESULT_REMOTING:
        crn_log(CRN_LOG_WARN, "%s moved, but the destination has no "
                        "usable GPU: its programs run remote until "
                        "crane-hostd there attaches one",
                dom);
        status = MIG_EXIT_REMOTING;
        break;
    default:
        crn_log(CRN_LOG_ERROR, "migrating %s failed and it is not "
                        "fully restored (migration %s): operator attention "
                        "needed%s%s",
                dom, id, *err ? ": " : "", err);
        status = MIG_EXIT_FAILED;
        break;
    }
    return status;
}

/* --- talking to crane-hostd -------------------------------------------- */

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Why a reply is not one: NULL when it is a Progress or a MigrateDone with
 * a known result. */
static const char *malformed(const Crane__Hostd__DaemonReply *m)
{
    switch (m->msg_case) {
    case CRANE__HOSTD__DAEMON_REPLY__MSG_PROGRESS:
        return m->progress ? NULL : "an empty Progress";
    case CRANE__HOSTD__DAEMON_REPLY__MSG_DONE:
        if (!m->done)
            return "an empty MigrateDone";
        if (!result_name(m->done->result))
            return "a MigrateDone with an unknown result";
        for (size_t i = 0; i < m->done->n_steps; i++)
            if (!m->done->steps[i])
                return "an empty Step";
        return NULL;
    default: return "neither Progress nor MigrateDone";
    }
}

/*
 * Reads the next reply into *OUT.  WAIT > 0 bounds the time until a whole
 * frame is there.  Returns 0, -ENODATA (closed between frames), -EPIPE
 * (closed inside one), -ETIMEDOUT, -EINTR (a signal: see mig_signal),
 * -EMSGSIZE (a frame over MIG_MAX_REPLY), -EPROTO (undecodable; *WHY says
 * how), or a read error.  SIGMASK is the mask to wait with: SIGINT and
 * SIGTERM are blocked everywhere else, so that none slips in between a
 * check and the wait.
 */
static int read_reply(struct mig_reader *r, double wait,
                      const sigset_t *sigmask,
                      Crane__Hostd__DaemonReply **out, const char **why)
{
    double deadline = now() + wait;
    const uint8_t *msg;
    size_t msg_len, used;
    ssize_t n;
    int rc;

    for (;;) {
        struct pollfd p = {.fd = r->fd, .events = POLLIN};
        struct timespec ts, *tsp = NULL;

        rc = crn_frame_decode(r->buf, r->len, MIG_MAX_REPLY, &msg, &msg_len,
                              &used);
        if (rc == 0) {
            *out = crane__hostd__daemon_reply__unpack(NULL, msg_len, msg);
            memmove(r->buf, r->buf + used, r->len - used);
            r->len -= used;
            if (!*out) {
                *why = "undecodable";
            } else if ((*why = malformed(*out))) {
                crane__hostd__daemon_reply__free_unpacked(*out, NULL);
                *out = NULL;
            }
            return *out ? 0 : -EPROTO;
        }
        if (rc != -EAGAIN)
            return rc;
        if (r->len == r->cap) {
            /* decode() refuses a frame over the bound from its length, so
             * the buffer never grows past one whole frame. */
            size_t cap = r->cap ? r->cap * 2 : 4096;
            uint8_t *nb;
            if (cap > MIG_MAX_REPLY + CRN_FRAME_HEADER_LEN)
                cap = MIG_MAX_REPLY + CRN_FRAME_HEADER_LEN;
            if (!(nb = realloc(r->buf, cap)))
                return -ENOMEM;
            r->buf = nb;
            r->cap = cap;
        }
        if (wait > 0) {
            double left = deadline - now();
            if (left <= 0)
                return -ETIMEDOUT;
            ts.tv_sec = (time_t)left;
            ts.tv_nsec = (long)((left - (double)ts.tv_sec) * 1e9);
            tsp = &ts;
        }
        rc = ppoll(&p, 1, tsp, sigmask);
        if (rc < 0 && errno != EINTR)
            return -errno;
        if (mig_signal)
            return -EINTR;
        if (rc <= 0)
            continue;
        n = read(r->fd, r->buf + r->len, r->cap - r->len);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            return r->len ? -EPIPE : -ENODATA;
        r->len += (size_t)n;
    }
}

/* A TCP connection to crane-hostd: have the kernel probe it, so that a
 * vanished host is noticed even while the migration is quiet. */
static void keep_alive(int fd)
{
    int on = 1, idle = 30, intvl = 10, cnt = 3;

    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
}

/* Says, after the request went out, that crane-migrate stops watching for
 * the reason RC; returns the exit status. */
static int lost(struct mig_view *v, const struct mig_opts *o, int rc,
                const char *why)
{
    view_break(v);
    switch (rc) {
    case -EINTR:
        crn_log(CRN_LOG_ERROR, "interrupted: the migration goes on in "
                        "crane-hostd (not cancelled); " MIG_FOLLOW);
        return MIG_EXIT_SIGNAL + mig_signal;
    case -ETIMEDOUT:
        crn_log(CRN_LOG_ERROR, "no message from crane-hostd for %g s "
                        "(--wait); the migration may go on: " MIG_FOLLOW,
                o->wait);
        break;
    case -ENODATA:
    case -EPIPE:
    case -ECONNRESET:
        crn_log(CRN_LOG_ERROR, "crane-hostd closed the connection "
                        "before the migration's end%s; it may go on: "
                        MIG_FOLLOW,
                rc == -EPIPE ? " (inside a reply)" : "");
        break;
    case -EMSGSIZE:
        crn_log(CRN_LOG_ERROR, "malformed reply from crane-hostd: a "
                        "frame over %u KiB; " MIG_FOLLOW,
                MIG_MAX_REPLY >> 10);
        break;
    case -EPROTO:
        crn_log(CRN_LOG_ERROR, "malformed reply from crane-hostd: %s; "
                        MIG_FOLLOW,
                why);
        break;
    default:
        crn_log(CRN_LOG_ERROR, "reading from %s: %s; " MIG_FOLLOW,
                o->connect, strerror(-rc));
        break;
    }
    return MIG_EXIT_NO_ANSWER;
}

/* Sends the request, then shows the replies until the MigrateDone. */
static int run(struct mig_opts *o, struct mig_view *v)
{
    Crane__Hostd__ClientRequest creq = CRANE__HOSTD__CLIENT_REQUEST__INIT;
    Crane__Hostd__DaemonReply *m = NULL;
    struct mig_reader r = {.fd = -1};
    struct sigaction sa = {.sa_handler = on_signal};
    sigset_t block, waitmask;
    struct crn_endpoint ep;
    const char *why = NULL;
    int rc, status;

    creq.msg_case = CRANE__HOSTD__CLIENT_REQUEST__MSG_MIGRATE;
    creq.migrate = &o->req;
    if (crane__hostd__client_request__get_packed_size(&creq) >
        MIG_MAX_REQUEST) {
        crn_log(CRN_LOG_ERROR, "the request is over 64 KiB, "
                               "crane-hostd's limit (a smaller --xml file)");
        return MIG_EXIT_FAILURE;
    }
    crn_endpoint_parse(o->connect, &ep); /* checked by parse_args() */

    /* No SA_RESTART: a signal while connecting ends the connect(). */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    r.fd = crn_endpoint_connect(&ep);
    if (r.fd < 0 && mig_signal) {
        crn_log(CRN_LOG_ERROR, "interrupted before the request was "
                        "sent: no migration started");
        return MIG_EXIT_SIGNAL + mig_signal;
    }
    if (r.fd < 0) {
        crn_log(CRN_LOG_ERROR, "cannot connect to crane-hostd at %s "
                        "(%s): %s (is crane-hostd running?)",
                o->connect, o->connect_from, strerror(-r.fd));
        return MIG_EXIT_NO_ANSWER;
    }
    if (mig_signal) {
        crn_log(CRN_LOG_ERROR, "interrupted before the request was "
                        "sent: no migration started");
        status = MIG_EXIT_SIGNAL + mig_signal;
        goto out;
    }
    if (ep.kind == CRN_EP_TCP)
        keep_alive(r.fd);
    if ((rc = crn_frame_write(r.fd, &creq.base)) < 0) {
        crn_log(CRN_LOG_ERROR, "sending the request to %s: %s",
                o->connect, strerror(-rc));
        status = MIG_EXIT_NO_ANSWER;
        goto out;
    }

    /* From here on signals arrive only inside ppoll(). */
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigprocmask(SIG_BLOCK, &block, &waitmask);
    sigdelset(&waitmask, SIGINT);
    sigdelset(&waitmask, SIGTERM);
    for (;;) {
        rc = mig_signal ? -EINTR
                        : read_reply(&r, o->wait, &waitmask, &m, &why);
        if (rc < 0) {
            status = lost(v, o, rc, why);
            break;
        }
        if (m->msg_case == CRANE__HOSTD__DAEMON_REPLY__MSG_PROGRESS) {
            show_progress(v, m->progress, o->req.verbose);
            crane__hostd__daemon_reply__free_unpacked(m, NULL);
            continue;
        }
        status = print_done(v, m->done, o->req.domain);
        crane__hostd__daemon_reply__free_unpacked(m, NULL);
        break;
    }
out:
    close(r.fd);
    free(r.buf);
    return status;
}

int main(int argc, char **argv)
{
    struct mig_opts o = {.req = CRANE__HOSTD__MIGRATE_REQUEST__INIT};
    struct mig_view v = {.out = stdout, .last_percent = -1};
    int status;

    crn_log_init_cli("crane-migrate");
    status = parse_args(argc, argv, &o);
    if (status < 0) {
        v.tty = isatty(STDOUT_FILENO);
        /* Line by line into a log too, so that it follows the migration. */
        setvbuf(stdout, NULL, _IOLBF, 0);
        status = run(&o, &v);
    }
    free(o.xml);
    return status;
}
