/* crane-hostctl: one step of a migration another tool performs (an
 * orchestrator's own virDomainMigrate), the GPU pool for schedulers, and
 * virsh-like views of this host (list, history, jobinfo). */
/*
 * OpenStack Nova, KubeVirt or a script migrate the VM with libvirt
 * themselves; crane-hostctl asks the local crane-hostd for crane's part
 * around it (docs/fleet.md): `prepare` on the source before the
 * migration, `resume` on the destination after it, `abort` on the source
 * when it failed, and `pool` for a scheduler.  It sends one request on
 * crane-hostd's control socket (the client hop of proto/hostd.proto) and
 * prints the replies as crane-migrate does; the result is the exit status.
 */
#include "host-daemon/config.h"
#include "hostctl.h"
#include "migrate_cli.h"
#include "host-daemon/web/pool_report.h"

#include "proto/conffile.h"
#include "proto/endpoint.h"
#include "proto/frame.h"
#include "proto/hostd.pb-c.h"
#include "proto/log.h"
#include "proto/version.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define PROGRAM "crane-hostctl"

static void usage(FILE *f)
{
    fprintf(f,
    "Usage: " PROGRAM " [OPTION]... COMMAND DOMAIN\n"
    "       " PROGRAM " [OPTION]... pool|list [--json]\n"
    "       " PROGRAM " [OPTION]... history [--limit N] [--domain D] [--json]\n"
    "       " PROGRAM " [OPTION]... jobinfo DOMAIN [--json]\n"
    "       " PROGRAM " [OPTION]... shm [--release] DOMAIN\n"
    "crane's part of a VM migration that another tool performs (OpenStack\n"
    "Nova, KubeVirt, virsh migrate), asked of the local crane-hostd, the\n"
    "GPU pool in the form schedulers read, and this host's domains and\n"
    "migrations as virsh shows them (tables; --json for scripts).\n"
    "\n"
    "Commands:\n"
    "  prepare DOMAIN   on the source, before the migration: the VM's\n"
    "                   programs leave the GPU (--live: onto the proxy;\n"
    "                   else parked), the GPU is unplugged; exit 0 when the\n"
    "                   VM may move (its `migration:` line names the id);\n"
    "                   if no migration, resume or abort follows within\n"
    "                   the lease, crane-hostd aborts it by itself\n"
    "  resume DOMAIN    on the destination, once the VM runs there: free\n"
    "                   GPUs of the pool are plugged in, as many as the VM\n"
    "                   held (--gpus; else as a prepare here took, else as\n"
    "                   the guest's crane-guestd says, else one), all or\n"
    "                   none, the programs go back to them (exit 4: too few\n"
    "                   free, they remote until enough are)\n"
    "  abort DOMAIN     on the source, when the migration failed: a GPU is\n"
    "                   plugged back in, the programs go back to it\n"
    "  cancel DOMAIN    cancel DOMAIN's running migration (crane-migrate's\n"
    "                   or a prepare) in any phase, with the full rollback:\n"
    "                   the VM runs on here, GPU back, programs back in\n"
    "                   passthrough; a VM that waits prepared has its\n"
    "                   prepare undone as abort does (exit 0: taken or\n"
    "                   undone; 1: none runs, or it already completed: the\n"
    "                   VM left, as virsh domjobabort exits; 4, 5: as abort)\n"
    "  pool             the GPU pool: free, held (by which VM), waiting VMs,\n"
    "                   VMs prepared here and their lease's seconds left\n"
    "                   (a table; --json or --format for schedulers)\n"
    "  list             the domains this host knows: holding a GPU, waiting\n"
    "                   for one, prepared, migrating (and the phase)\n"
    "  history          the newest migrations of crane-hostd's history: id,\n"
    "                   domain, result, mode, the worst program's pre and\n"
    "                   post stoppage, the VM's downtime, when\n"
    "  jobinfo DOMAIN   the running migration of DOMAIN (phase, bytes,\n"
    "                   elapsed) and the hypervisor's job figures\n"
    "  shm DOMAIN       on the host that runs the proxy domain: shared\n"
    "                   memory (proxy_shm_mb of ivshmem) plugged into DOMAIN\n"
    "                   and the proxy domain, the VM's remoting programs'\n"
    "                   bulk bytes through it (crane-hostd does this by\n"
    "                   itself for a VM that waits here for a GPU); with\n"
    "                   --release given up (bulk back on TCP) and unplugged\n"
    "\n"
    "Options:\n"
    "  --live              prepare: the programs compute through the proxy\n"
    "                      while the VM moves (default: they are parked)\n"
    "  --offline           prepare: park them (the default)\n"
    "  --proxy ENDPOINT    prepare --live: the proxy (default: crane-hostd's\n"
    "                      `proxy` setting)\n"
    "  --id ID             the migration's id in crane-hostd's history, the\n"
    "                      same on both hosts ([A-Za-z0-9._-], at most 64;\n"
    "                      default: prepare makes one, abort takes the\n"
    "                      newest prepared migration of DOMAIN)\n"
    "  --to HOST           prepare: the destination, for the history\n"
    "  --lease S           prepare: how long the VM may stay prepared, in\n"
    "                      seconds (default: crane-hostd's prepare_lease_s,\n"
    "                      600 unless set; 0: no lease, it waits for ever);\n"
    "                      cover the whole migration with it\n"
    "  --from HOST         resume: the source, for the history\n"
    "  --gpus N            resume: plug N GPUs (1 to 16)\n"
    "  --gpu-model MODEL   resume: one of them of MODEL (a gpu line's\n"
    "                      model:); once per GPU, the rest any model;\n"
    "                      without --gpus, as many GPUs as models\n"
    "  --format FORMAT     pool: json (crane's own), placement (an OpenStack\n"
    "                      Placement provider per GPU) or kubernetes (a\n"
    "                      merge patch of the Node); default: a table\n"
    "  --json              pool, list, history, jobinfo: JSON, not a table\n"
    "  --limit N           history: the newest N (1 to 1000, default 20)\n"
    "  --domain DOMAIN     history: of DOMAIN only\n"
    "  --connect ENDPOINT  the local crane-hostd (default $" MIG_CONNECT_ENV
    ",\n"
    "                      else " MIG_DEFAULT_CONNECT ")\n"
    "  --wait S            give up if crane-hostd says nothing for S seconds\n"
    "                      (default 0: wait as long as the step takes)\n"
    "  --help              this text\n"
    "  --version           print \"" PROGRAM " VERSION\" and exit\n"
    "\n"
    "Exit status: 0 done (abort: the VM runs on here with a GPU); 1\n"
    "rolled back (prepare refused or undone: the VM runs on as before),\n"
    "or no such domain (\"error: failed to get domain 'X'\", as virsh);\n"
    "2 bad usage; 3 no usable answer from crane-hostd (the step may go on\n"
    "there); 4 remoting (no free GPU: the programs run remotely until\n"
    "crane-hostd attaches one by itself); 5 failed and not fully restored\n"
    "(operator attention).\n"
    "Losing " PROGRAM " (Ctrl-C, --wait) never cancels a step: crane-hostd\n"
    "owns it.  docs/fleet.md: how Nova and KubeVirt call these.\n");
}

static int bad_usage(const char *what, const char *arg)
{
    CRN_ERROR("%s%s%s (see --help)", what, arg ? ": " : "",
            arg ? arg : "");
    return MIG_EXIT_USAGE;
}

struct ctl_opts {
    const char *command, *domain, *proxy, *id, *to, *from, *format;
    const char *connect, *lease, *limit, *of_domain, *gpus;
    char *models[HD_MAX_GPUS];
    size_t n_models;
    unsigned long gpus_n;
    bool live, offline, release, json;
    unsigned long limit_n;
    double wait;
    unsigned long lease_s;
};

/* -1 when the options fit O's command (and parse), else the exit status. */
static int check_options(struct ctl_opts *o)
{
    struct crn_endpoint ep;

    if (o->json && strcmp(o->command, "pool") && strcmp(o->command, "list") &&
        strcmp(o->command, "history") && strcmp(o->command, "jobinfo"))
        return bad_usage("--json is for pool, list, history and jobinfo",
                         NULL);
    if ((o->limit || o->of_domain) && strcmp(o->command, "history"))
        return bad_usage("--limit and --domain are for history", NULL);
    if (o->limit && crn_conf_uint(o->limit, 10, 1, 1000, &o->limit_n) < 0)
        return bad_usage("bad --limit (1 to 1000)", o->limit);
    if (o->of_domain && (!*o->of_domain || strlen(o->of_domain) > 255))
        return bad_usage("bad --domain", o->of_domain);
    if (o->release && strcmp(o->command, "shm"))
        return bad_usage("--release is for shm", NULL);
    if (o->live && o->offline)
        return bad_usage("--live and --offline together", NULL);
    if ((o->live || o->offline) && strcmp(o->command, "prepare") &&
        strcmp(o->command, "resume"))
        return bad_usage("--live and --offline are for prepare and resume",
                         NULL);
    if (o->proxy && strcmp(o->command, "prepare"))
        return bad_usage("--proxy is for prepare", NULL);
    if (o->proxy && crn_endpoint_parse(o->proxy, &ep) < 0)
        return bad_usage("bad --proxy", o->proxy);
    if (o->lease && strcmp(o->command, "prepare"))
        return bad_usage("--lease is for prepare", NULL);
    if (o->lease && crn_conf_uint(o->lease, 10, 0, HD_LEASE_MAX_S,
                                  &o->lease_s) < 0)
        return bad_usage("bad --lease (seconds, 0 to 604800)", o->lease);
    if (o->to && strcmp(o->command, "prepare"))
        return bad_usage("--to is for prepare", NULL);
    if (o->from && strcmp(o->command, "resume"))
        return bad_usage("--from is for resume", NULL);
    if ((o->gpus || o->n_models) && strcmp(o->command, "resume"))
        return bad_usage("--gpus and --gpu-model are for resume", NULL);
    if (o->gpus && crn_conf_uint(o->gpus, 10, 1, HD_MAX_GPUS, &o->gpus_n) < 0)
        return bad_usage("bad --gpus (1 to 16)", o->gpus);
    if (o->gpus && o->n_models > o->gpus_n)
        return bad_usage("more --gpu-model than --gpus", o->gpus);
    if (o->id && (!strcmp(o->command, "pool") || !strcmp(o->command, "list") ||
                  !strcmp(o->command, "history") ||
                  !strcmp(o->command, "jobinfo")))
        return bad_usage("--id is for prepare, resume and abort", NULL);
    if (o->id && (!*o->id || strlen(o->id) > 64 ||
                  strspn(o->id, "abcdefghijklmnopqrstuvwxyz"
                                "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
                      strlen(o->id)))
        return bad_usage("bad --id ([A-Za-z0-9._-], at most 64)", o->id);
    if (!o->connect)
        o->connect = getenv(MIG_CONNECT_ENV);
    if (!o->connect || !*o->connect)
        o->connect = MIG_DEFAULT_CONNECT;
    if (crn_endpoint_parse(o->connect, &ep) < 0)
        return bad_usage("bad --connect", o->connect);
    return -1;
}

/* -1 to go on, else the exit status. */
/* The command's operands and the options only some commands take. */
static int parse_operands(int argc, char **argv, struct ctl_opts *o)
{
    enum hd_pool_format fmt;

    if (strcmp(o->command, "pool") == 0 || strcmp(o->command, "list") == 0 ||
        strcmp(o->command, "history") == 0) {
        if (optind < argc)
            return bad_usage("takes no operand", argv[optind]);
        if (o->format && strcmp(o->command, "pool"))
            return bad_usage("--format is for pool", NULL);
        if (o->format && hd_pool_format_parse(o->format, &fmt) < 0)
            return bad_usage("bad --format (json, placement, kubernetes)",
                             o->format);
        if (o->format && o->json && strcmp(o->format, "json"))
            return bad_usage("--json and --format together", o->format);
    } else if (strcmp(o->command, "prepare") == 0 ||
               strcmp(o->command, "resume") == 0 ||
               strcmp(o->command, "abort") == 0 ||
               strcmp(o->command, "cancel") == 0 ||
               strcmp(o->command, "jobinfo") == 0 ||
               strcmp(o->command, "shm") == 0) {
        if (optind >= argc)
            return bad_usage("missing DOMAIN", NULL);
        o->domain = argv[optind++];
        if (optind < argc)
            return bad_usage("too many operands", argv[optind]);
        if (o->format)
            return bad_usage("--format is for pool", NULL);
    } else {
        return bad_usage("unknown command", o->command);
    }
    return MIG_EXIT_OK;
}

static int parse(int argc, char **argv, struct ctl_opts *o)
{
    enum { O_LIVE = 1, O_OFFLINE, O_PROXY, O_ID, O_TO, O_FROM, O_FORMAT,
           O_CONNECT, O_WAIT, O_HELP, O_VERSION, O_RELEASE, O_LEASE,
           O_JSON, O_LIMIT, O_DOMAIN, O_GPUS, O_MODEL };
    static const struct option opts[] = {
        {"live", no_argument, NULL, O_LIVE},
        {"offline", no_argument, NULL, O_OFFLINE},
        {"proxy", required_argument, NULL, O_PROXY},
        {"id", required_argument, NULL, O_ID},
        {"to", required_argument, NULL, O_TO},
        {"from", required_argument, NULL, O_FROM},
        {"format", required_argument, NULL, O_FORMAT},
        {"connect", required_argument, NULL, O_CONNECT},
        {"wait", required_argument, NULL, O_WAIT},
        {"release", no_argument, NULL, O_RELEASE},
        {"lease", required_argument, NULL, O_LEASE},
        {"json", no_argument, NULL, O_JSON},
        {"limit", required_argument, NULL, O_LIMIT},
        {"domain", required_argument, NULL, O_DOMAIN},
        {"gpus", required_argument, NULL, O_GPUS},
        {"gpu-model", required_argument, NULL, O_MODEL},
        {"help", no_argument, NULL, O_HELP},
        {"version", no_argument, NULL, O_VERSION},
        {NULL, 0, NULL, 0},
    };
    char *end;
    int c;

    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case O_LIVE: o->live = true; break;
        case O_OFFLINE: o->offline = true; break;
        case O_PROXY: o->proxy = optarg; break;
        case O_ID: o->id = optarg; break;
        case O_TO: o->to = optarg; break;
        case O_FROM: o->from = optarg; break;
        case O_FORMAT: o->format = optarg; break;
        case O_CONNECT: o->connect = optarg; break;
        case O_RELEASE: o->release = true; break;
        case O_LEASE: o->lease = optarg; break;
        case O_JSON: o->json = true; break;
        case O_LIMIT: o->limit = optarg; break;
        case O_DOMAIN: o->of_domain = optarg; break;
        case O_GPUS: o->gpus = optarg; break;
        case O_MODEL:
            if (o->n_models == HD_MAX_GPUS || !*optarg ||
                strlen(optarg) > 63)
                return bad_usage("bad --gpu-model (at most 16, each 1 to "
                                 "63 characters)", optarg);
            o->models[o->n_models++] = optarg;
            break;
        case O_WAIT:
            errno = 0;
            o->wait = strtod(optarg, &end);
            if (errno || end == optarg || *end || !isfinite(o->wait) ||
                o->wait < 0 || o->wait > MIG_MAX_WAIT)
                return bad_usage("bad --wait", optarg);
            break;
        case O_HELP: usage(stdout); return MIG_EXIT_OK;
        case O_VERSION: crn_print_version(PROGRAM); return MIG_EXIT_OK;
        default:
            return bad_usage(optopt ? "an option lacks its value"
                                    : "unknown option",
                             argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return bad_usage("missing command", NULL);
    o->command = argv[optind++];
    c = parse_operands(argc, argv, o);
    if (c != MIG_EXIT_OK)
        return c;
    return check_options(o);
}

static char *str(const char *s)
{
    return (char *)(s ? s : "");
}

/* The pool report as the chosen format (NULL: a table), on stdout. */
static int print_pool(const Crane__Hostd__PoolReport *r, const char *format)
{
    struct hd_pool_gpu_state g[64];
    struct hd_pool_waiter_state w[64];
    struct hd_pool_prepared_state p[64];
    struct hd_history_health history;
    struct hd_pool_state s = {.host = str(r->host), .gpus = g,
                              .waiting = w, .error = str(r->error),
                              .prepared = p};
    enum hd_pool_format fmt = HD_POOL_JSON;
    struct hd_buf out = {0};
    int rc;

    if (format)
        hd_pool_format_parse(format, &fmt);
    s.n_gpus = r->n_gpus < 64 ? r->n_gpus : 64;
    s.n_waiting = r->n_waiting < 64 ? r->n_waiting : 64;
    for (size_t i = 0; i < s.n_gpus; i++)
        g[i] = (struct hd_pool_gpu_state){
            .name = str(r->gpus[i]->name), .alias = str(r->gpus[i]->alias),
            .pci = str(r->gpus[i]->pci), .holder = str(r->gpus[i]->holder),
            .reserved = r->gpus[i]->reserved};
    for (size_t i = 0; i < s.n_waiting; i++)
        w[i] = (struct hd_pool_waiter_state){
            .domain = str(r->waiting[i]->domain),
            .migration_id = str(r->waiting[i]->migration_id),
            .since = r->waiting[i]->since,
            .gpus = r->waiting[i]->gpus};
    s.n_prepared = r->n_prepared < 64 ? r->n_prepared : 64;
    for (size_t i = 0; i < s.n_prepared; i++)
        p[i] = (struct hd_pool_prepared_state){
            .domain = str(r->prepared[i]->domain),
            .migration_id = str(r->prepared[i]->migration_id),
            .since = r->prepared[i]->since,
            .lease_s = r->prepared[i]->lease_s,
            .lease_left = r->prepared[i]->lease_left};
    if (r->err && !*s.error)
        s.error = strerror(-r->err);
    if (r->history) {
        history = (struct hd_history_health){
            .degraded = r->history->degraded,
            .read_only = r->history->read_only,
            .unsaved = (size_t)r->history->unsaved,
            .dropped = r->history->dropped, .since = r->history->since};
        mig_clean(history.reason, sizeof(history.reason),
                  str(r->history->reason), false);
        s.history = &history;
    }
    if (format)
        rc = hd_pool_render(&out, &s, fmt);
    else if ((rc = hd_pool_render(&out, &s, fmt)) == 0)
        rc = ctl_print_pool_table(stdout, &s); /* checked as JSON would be */
    if (rc == 0 && format)
        fputs(out.data, stdout);
    hd_buf_free(&out);
    if (rc < 0) {
        CRN_ERROR("malformed pool report from crane-hostd "
                "(%s)", strerror(-rc));
        return MIG_EXIT_NO_ANSWER;
    }
    if (*s.error) {
        char why[300];

        CRN_ERROR("crane-hostd could not read the hypervisor: "
                "%s (no GPU's holder is known)",
                mig_clean(why, sizeof(why), s.error, false));
        return MIG_EXIT_FAILED;
    }
    if (s.history && s.history->degraded)
        CRN_WARN("crane-hostd's migration history is degraded"
                "%s: %zu migration(s) kept in memory only, %llu lost (%s)",
                s.history->read_only ? " (read-only)" : "",
                s.history->unsaved, s.history->dropped,
                *s.history->reason ? s.history->reason : "no reason given");
    return MIG_EXIT_OK;
}

static void build(const struct ctl_opts *o, Crane__Hostd__ClientRequest *q,
                  Crane__Hostd__HostPrepare *p, Crane__Hostd__HostResume *r,
                  Crane__Hostd__HostAbort *a, Crane__Hostd__PoolQuery *pq,
                  Crane__Hostd__HostShm *s)
{
    if (!strcmp(o->command, "shm")) {
        s->domain = str(o->domain);
        s->release = o->release;
        q->msg_case = CRANE__HOSTD__CLIENT_REQUEST__MSG_SHM;
        q->shm = s;
        return;
    }
    if (!strcmp(o->command, "prepare")) {
        p->domain = str(o->domain);
        p->live = o->live;
        p->proxy = str(o->proxy);
        p->migration_id = str(o->id);
        p->dest_host = str(o->to);
        /* The daemon's default unless given; 0 (none) goes as -1. */
        p->lease_s = !o->lease ? 0 : o->lease_s ? (int32_t)o->lease_s : -1;
        q->msg_case = CRANE__HOSTD__CLIENT_REQUEST__MSG_PREPARE;
        q->prepare = p;
    } else if (!strcmp(o->command, "resume")) {
        r->domain = str(o->domain);
        r->migration_id = str(o->id);
        r->src_host = str(o->from);
        r->live = !o->offline;
        r->gpus = (uint32_t)o->gpus_n;
        r->gpu_models = (char **)o->models;
        r->n_gpu_models = o->n_models;
        q->msg_case = CRANE__HOSTD__CLIENT_REQUEST__MSG_RESUME;
        q->resume = r;
    } else if (!strcmp(o->command, "abort")) {
        a->domain = str(o->domain);
        a->migration_id = str(o->id);
        q->msg_case = CRANE__HOSTD__CLIENT_REQUEST__MSG_ABORT;
        q->abort = a;
    } else {
        q->msg_case = CRANE__HOSTD__CLIENT_REQUEST__MSG_POOL;
        q->pool = pq;
    }
}

/* The exit status of a step's MigrateDone. */
static int step_status(const struct ctl_opts *o, struct mig_view *v,
                       const Crane__Hostd__MigrateDone *d)
{
    bool abort = !strcmp(o->command, "abort"), refused;
    char err[600];
    int status;

    mig_clean(err, sizeof(err), d->error, false);
    v->quiet = true;
    if (d->err == -ENOENT) {
        char dom[300];

        /* virsh's words for a domain it does not know. */
        mig_clean(dom, sizeof(dom), o->domain, false);
        fprintf(stderr, "error: failed to get domain '%s'\n"
                "error: Domain not found: no domain with matching name "
                "'%s'\n", dom, dom);
        return MIG_EXIT_FAILURE;
    }
    /* A refusal changed nothing and has no summary to show: its result
     * line alone. */
    refused = d->refused || (!*d->id && !d->n_steps);
    if (refused)
        fprintf(v->out, "result: %s%s%s\n", mig_result_name(d->result),
                *err ? ": " : "", err);
    if (refused)
        status = d->result == CRANE__HOSTD__RESULT__RESULT_OK ? MIG_EXIT_OK
                 : d->result == CRANE__HOSTD__RESULT__RESULT_ROLLED_BACK
                     ? MIG_EXIT_ROLLED_BACK
                 : d->result == CRANE__HOSTD__RESULT__RESULT_REMOTING
                     ? MIG_EXIT_REMOTING
                     : MIG_EXIT_FAILED;
    else
        status = mig_print_done(v, d, o->domain);
    /* One stderr line for a status other than 0, in the step's words. */
    switch (status) {
    case MIG_EXIT_ROLLED_BACK:
        /* abort's own success is the migration rolled back. */
        if (abort)
            return MIG_EXIT_OK;
        CRN_ERROR("%s %.255s refused or undone: it runs on "
                "here as before%s%s", o->command, o->domain,
                *err ? ": " : "", err);
        break;
    case MIG_EXIT_REMOTING:
        CRN_WARN("%s %.255s: no free GPU here: its programs "
                "run remotely until crane-hostd attaches one by itself",
                o->command, o->domain);
        break;
    case MIG_EXIT_FAILED:
        CRN_ERROR("%s %.255s failed%s%s%s", o->command,
                o->domain, *err ? ": " : "", err,
                !refused && (abort || !strcmp(o->command, "prepare"))
                    ? " (operator attention: the VM may have no GPU)"
                    : refused ? " (refused: nothing changed)" : "");
        break;
    default:
        break;
    }
    return status;
}

/* A connection to crane-hostd's control socket, its answers awaited at
 * most --wait seconds; -1 (logged) when none is to be had. */
static int connect_hostd(const struct ctl_opts *o)
{
    struct crn_endpoint ep;
    int fd;

    crn_endpoint_parse(o->connect, &ep);
    if ((fd = crn_endpoint_connect(&ep)) < 0) {
        CRN_ERROR("cannot connect to crane-hostd at %s: %s (is "
                "crane-hostd running?)", o->connect, strerror(-fd));
        return -1;
    }
    if (o->wait > 0) {
        struct timeval tv = {.tv_sec = (time_t)o->wait,
                             .tv_usec = (suseconds_t)((o->wait -
                                                       floor(o->wait)) *
                                                      1e6)};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    }
    return fd;
}

/* Sends Q and reads the one reply of a view into *OUT (to free). */
static int ask(const struct ctl_opts *o, Crane__Hostd__ClientRequest *q,
               Crane__Hostd__DaemonReply **out)
{
    uint8_t *buf = NULL;
    size_t len;
    int fd, rc;

    *out = NULL;
    if ((fd = connect_hostd(o)) < 0)
        return MIG_EXIT_NO_ANSWER;
    rc = crn_frame_write(fd, &q->base);
    if (rc == 0)
        rc = crn_frame_read(fd, &buf, &len, MIG_MAX_REPLY);
    close(fd);
    if (rc < 0) {
        CRN_ERROR("no answer from crane-hostd at %s: %s",
                o->connect, rc == -ENODATA || rc == -EPIPE
                                ? "connection closed (an older crane-hostd?)"
                                : strerror(-rc));
        return MIG_EXIT_NO_ANSWER;
    }
    *out = crane__hostd__daemon_reply__unpack(NULL, len, buf);
    free(buf);
    if (*out == NULL) {
        CRN_ERROR("malformed reply from crane-hostd");
        return MIG_EXIT_NO_ANSWER;
    }
    return -1;
}

/* history, or the running migrations for list, into *OUT (to free). */
static int ask_history(const struct ctl_opts *o, bool running,
                       Crane__Hostd__DaemonReply **out)
{
    Crane__Hostd__ClientRequest q = CRANE__HOSTD__CLIENT_REQUEST__INIT;
    Crane__Hostd__CtlHistoryQuery h = CRANE__HOSTD__CTL_HISTORY_QUERY__INIT;
    int status;

    h.limit = running ? 1000 : (uint32_t)o->limit_n;
    h.domain = str(o->of_domain);
    h.running = running;
    q.msg_case = CRANE__HOSTD__CLIENT_REQUEST__MSG_CTL_HISTORY;
    q.ctl_history = &h;
    if ((status = ask(o, &q, out)) >= 0)
        return status;
    if ((*out)->msg_case != CRANE__HOSTD__DAEMON_REPLY__MSG_CTL_HISTORY ||
        !(*out)->ctl_history) {
        CRN_ERROR("malformed reply from crane-hostd (not a "
                "history)");
        return MIG_EXIT_NO_ANSWER;
    }
    if ((*out)->ctl_history->err) {
        CRN_ERROR("crane-hostd cannot read its history: %s",
                strerror(-(*out)->ctl_history->err));
        return MIG_EXIT_FAILED;
    }
    return -1;
}

static int view(const struct ctl_opts *o)
{
    Crane__Hostd__ClientRequest q = CRANE__HOSTD__CLIENT_REQUEST__INIT;
    Crane__Hostd__PoolQuery pq = CRANE__HOSTD__POOL_QUERY__INIT;
    Crane__Hostd__CtlJobQuery jq = CRANE__HOSTD__CTL_JOB_QUERY__INIT;
    Crane__Hostd__DaemonReply *a = NULL, *b = NULL;
    int status;

    if (!strcmp(o->command, "history")) {
        status = ask_history(o, false, &a);
        if (status < 0)
            status = ctl_print_history(stdout, a->ctl_history, o->json) < 0
                         ? MIG_EXIT_FAILED : MIG_EXIT_OK;
    } else if (!strcmp(o->command, "list")) {
        q.msg_case = CRANE__HOSTD__CLIENT_REQUEST__MSG_POOL;
        q.pool = &pq;
        status = ask(o, &q, &a);
        if (status < 0 && (a->msg_case != CRANE__HOSTD__DAEMON_REPLY__MSG_POOL ||
                           !a->pool)) {
            CRN_ERROR("malformed reply from crane-hostd (not "
                    "a pool)");
            status = MIG_EXIT_NO_ANSWER;
        }
        if (status < 0)
            status = ask_history(o, true, &b);
        if (status < 0)
            status = ctl_print_list(stdout, a->pool, b->ctl_history,
                                    o->json) < 0 ? MIG_EXIT_FAILED
                                                 : MIG_EXIT_OK;
    } else {
        jq.domain = str(o->domain);
        q.msg_case = CRANE__HOSTD__CLIENT_REQUEST__MSG_CTL_JOB;
        q.ctl_job = &jq;
        status = ask(o, &q, &a);
        if (status < 0 && (a->msg_case != CRANE__HOSTD__DAEMON_REPLY__MSG_CTL_JOB ||
                           !a->ctl_job)) {
            CRN_ERROR("malformed reply from crane-hostd (not "
                    "a job)");
            status = MIG_EXIT_NO_ANSWER;
        } else if (status < 0 && !a->ctl_job->found) {
            char dom[300];

            mig_clean(dom, sizeof(dom), o->domain, false);
            fprintf(stderr, "error: failed to get domain '%s'\n", dom);
            status = a->ctl_job->err ? MIG_EXIT_NO_ANSWER : MIG_EXIT_FAILURE;
        } else if (status < 0) {
            status = ctl_print_job(stdout, a->ctl_job, o->domain, o->json) < 0
                         ? MIG_EXIT_FAILED : MIG_EXIT_OK;
        }
    }
    if (a)
        crane__hostd__daemon_reply__free_unpacked(a, NULL);
    if (b)
        crane__hostd__daemon_reply__free_unpacked(b, NULL);
    return status;
}

static int run(const struct ctl_opts *o)
{
    Crane__Hostd__ClientRequest q = CRANE__HOSTD__CLIENT_REQUEST__INIT;
    Crane__Hostd__HostPrepare p = CRANE__HOSTD__HOST_PREPARE__INIT;
    Crane__Hostd__HostResume r = CRANE__HOSTD__HOST_RESUME__INIT;
    Crane__Hostd__HostAbort a = CRANE__HOSTD__HOST_ABORT__INIT;
    Crane__Hostd__PoolQuery pq = CRANE__HOSTD__POOL_QUERY__INIT;
    Crane__Hostd__HostShm s = CRANE__HOSTD__HOST_SHM__INIT;
    struct mig_view v = {.out = stdout, .last_percent = -1};
    int fd, rc, status = MIG_EXIT_NO_ANSWER;

    if (!strcmp(o->command, "cancel"))
        return mig_cancel_command(o->connect, o->domain, o->id);

    build(o, &q, &p, &r, &a, &pq, &s);
    if ((fd = connect_hostd(o)) < 0)
        return MIG_EXIT_NO_ANSWER;
    if ((rc = crn_frame_write(fd, &q.base)) < 0) {
        CRN_ERROR("sending the request to %s: %s", o->connect,
                strerror(-rc));
        goto out;
    }
    for (;;) {
        Crane__Hostd__DaemonReply *m;
        uint8_t *buf;
        size_t len;

        if ((rc = crn_frame_read(fd, &buf, &len, MIG_MAX_REPLY)) < 0) {
            mig_view_break(&v);
            CRN_ERROR("%s from crane-hostd at %s; the step "
                    "may go on there: " MIG_FOLLOW,
                    rc == -EAGAIN ? "no message for --wait seconds"
                    : rc == -ENODATA || rc == -EPIPE ? "connection closed"
                                                      : strerror(-rc),
                    o->connect);
            break;
        }
        m = crane__hostd__daemon_reply__unpack(NULL, len, buf);
        free(buf);
        if (!m) {
            CRN_ERROR("malformed reply from crane-hostd");
            break;
        }
        if (m->msg_case == CRANE__HOSTD__DAEMON_REPLY__MSG_PROGRESS &&
            m->progress) {
            mig_show_progress(&v, m->progress, false);
            crane__hostd__daemon_reply__free_unpacked(m, NULL);
            continue;
        }
        if (m->msg_case == CRANE__HOSTD__DAEMON_REPLY__MSG_DONE && m->done &&
            mig_result_name(m->done->result))
            status = q.msg_case == CRANE__HOSTD__CLIENT_REQUEST__MSG_POOL
                         ? MIG_EXIT_NO_ANSWER
                         : step_status(o, &v, m->done);
        else if (m->msg_case == CRANE__HOSTD__DAEMON_REPLY__MSG_POOL &&
                 m->pool &&
                 q.msg_case == CRANE__HOSTD__CLIENT_REQUEST__MSG_POOL)
            status = print_pool(m->pool, o->format ? o->format
                                         : o->json ? "json" : NULL);
        else
            CRN_ERROR("malformed reply from crane-hostd (not "
                    "an answer to %s)", o->command);
        crane__hostd__daemon_reply__free_unpacked(m, NULL);
        break;
    }
out:
    close(fd);
    return status;
}

int main(int argc, char **argv)
{
    struct ctl_opts o = {0};
    int status;

    crn_log_init_cli(PROGRAM);
    status = parse(argc, argv, &o);
    if (status >= 0)
        return status;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!strcmp(o.command, "list") || !strcmp(o.command, "history") ||
        !strcmp(o.command, "jobinfo"))
        return view(&o);
    return run(&o);
}
