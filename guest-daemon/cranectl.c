/* cranectl: sends crane-guestd what the host would send, prints the answer. */
#include "ctl_print.h"

#include "proto/auth.h"
#include "proto/control_ops.h"
#include "proto/control.pb-c.h"
#include "proto/endpoint.h"
#include "proto/guest_auth.h"
#include "proto/tls.h"
#include "proto/frame.h"
#include "proto/log.h"
#include "proto/version.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CTL_DEFAULT_CONNECT "unix:/run/crane/ctl.sock"
#define CTL_MAX_FRAME (16u << 20)

/* --help's text: the head, each host command's lines (its row in the
 * table below, in the order of proto/control_ops.def), then the tail. */
static const char usage_head[] =
    "Usage: cranectl [--connect ENDPOINT] [--timeout SECONDS] [--key FILE]\n"
    "                [--tls MODE] [--pki-dir DIR] COMMAND\n"
    "\n"
    "Drives crane-guestd by hand: sends what the host daemon would send.\n"
    "\n"
    "commands:\n";

static const char usage_tail[] =
    "\n"
    "options:\n"
    "  --connect ENDPOINT  the daemon's control socket or host channel\n"
    "                      (default $CRANECTL_CONNECT, else\n"
    "                      " CTL_DEFAULT_CONNECT ")\n"
    "  --timeout SECONDS   how long to wait for the answer (default 300)\n"
    "  --key FILE          the shared key of a tcp: host channel (the\n"
    "                      daemon's host_key; default $CRANECTL_KEY);\n"
    "                      unix: endpoints take none\n"
    "  --tls MODE          TLS to a tcp: host channel: x509 (client\n"
    "                      certificate in libvirt's layout under --pki-dir),\n"
    "                      psk (--key's bytes as the key), none, or auto\n"
    "                      (default: x509 where the PKI is complete, else\n"
    "                      psk with --key, else none)\n"
    "  --pki-dir DIR       CA/cacert.pem, libvirt/clientcert.pem,\n"
    "                      libvirt/private/clientkey.pem (default /etc/pki)\n"
    "  --help              this text\n"
    "  --version           print \"cranectl VERSION\" and exit\n"
    "\n"
    "Exit status: 0 done; 1 failure (the daemon reports one, or the key\n"
    "file cannot be read); 2 bad usage (an unknown option or command, a\n"
    "missing or malformed value); 3 no answer from the daemon; 4 done,\n"
    "but programs were lost to a fault (listed as `lost`, with why).\n";

/* Each host command's lines in --help (usage_<name>, named by its row). */
static const char usage_status[] =
    "  status                      programs, their mode, state size and\n"
    "                              last timings; the daemon's phase\n";
static const char usage_prepare[] =
    "  prepare [--proxy ENDPOINT] [--live|--offline] [--deadline MS]\n"
    "                              take every program off the GPU (live:\n"
    "                              onto the proxy; offline: state to RAM,\n"
    "                              calls held) and unload the GPU driver\n";
static const char usage_resume[] =
    "  resume [--deadline MS]      load the driver, wait for the GPU, bring\n"
    "                              every program back to passthrough\n";
static const char usage_abort[] =
    "  abort [--deadline MS]       undo a prepare (or finish a failed one)\n";
static const char usage_shm[] =
    "  shm [--pci ADDR] [--size BYTES] [--deadline MS]\n"
    "                              the host plugged an ivshmem-plain device\n"
    "                              shared with the proxy domain (ADDR as its\n"
    "                              libvirt addressed it; else the only one,\n"
    "                              of BYTES): each remoting program moves its\n"
    "                              bulk bytes through a part of it\n"
    "  shm --release [--deadline MS]\n"
    "                              every program gives its part up (bulk\n"
    "                              bytes back on the stream, calls in flight\n"
    "                              finished) so that the device can go\n";

static int parse_u32(const char *s, uint32_t *out)
{
    char *end;
    unsigned long v;

    errno = 0;
    v = strtoul(s, &end, 10);
    if (errno || end == s || *end || *s == '-' || v > 3600ul * 1000)
        return -EINVAL;
    *out = (uint32_t)v;
    return 0;
}

/* On a tcp: endpoint: authenticates with KEY (none: the daemon says what
 * it wants). */
static int authenticate(int fd, const char *endpoint, const uint8_t *key,
                        size_t key_len, double timeout)
{
    char why[256];
    int rc;

    if (!key)
        return 0;
    rc = crn_guest_auth_client(fd, key, key_len,
                               timeout < 10 ? (unsigned)(timeout * 1e3)
                                            : 10000,
                               why, sizeof(why));
    if (rc < 0)
        CRN_ERROR("authenticating to %s: %s", endpoint,
                why);
    return rc;
}

/* Sends MSG to EP (ENDPOINT, parsed) and waits up to TIMEOUT seconds for
 * the answer with its id. */
static int exchange(const char *endpoint, const struct crn_endpoint *ep,
                    const struct crn_tls_config *tls,
                    const uint8_t *key, size_t key_len,
                    Crane__Control__HostMessage *msg, double timeout,
                    Crane__Control__GuestMessage **out)
{
    struct timespec ts;
    double deadline;
    int fd, rc;

    fd = crn_endpoint_connect(ep);
    if (fd < 0) {
        CRN_ERROR("cannot connect to %s: %s (is "
                        "crane-guestd running?)",
                endpoint, strerror(-fd));
        return fd;
    }
    if (ep->kind == CRN_EP_TCP && tls) {
        char why[512];
        fd = crn_tls_wrap_client(tls, fd, ep->host,
                                 timeout < 10 ? (unsigned)(timeout * 1e3)
                                              : 10000,
                                 why, sizeof(why));
        if (fd < 0) {
            CRN_ERROR("%s: %s", endpoint, why);
            return fd;
        }
    }
    if (ep->kind == CRN_EP_TCP &&
        (rc = authenticate(fd, endpoint, key, key_len, timeout)) < 0) {
        close(fd);
        return rc;
    }
    clock_gettime(CLOCK_MONOTONIC, &ts);
    msg->id = (uint64_t)getpid() << 20 | (uint64_t)(ts.tv_nsec & 0xfffff);
    if ((rc = crn_frame_write(fd, &msg->base)) < 0) {
        CRN_ERROR("sending to %s: %s", endpoint,
                strerror(-rc));
        close(fd);
        return rc;
    }
    deadline = ts.tv_sec + ts.tv_nsec / 1e9 + timeout;
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        uint8_t *buf;
        size_t len;
        double left;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        left = deadline - (ts.tv_sec + ts.tv_nsec / 1e9);
        if (left <= 0 || poll(&p, 1, (int)ceil(left * 1e3)) == 0) {
            CRN_ERROR("no answer from %s within %.0f s",
                    endpoint, timeout);
            rc = -ETIMEDOUT;
            break;
        }
        if ((rc = crn_frame_read(fd, &buf, &len, CTL_MAX_FRAME)) < 0) {
            CRN_ERROR("reading from %s: %s", endpoint,
                    rc == -ENODATA ? "the daemon closed the connection"
                                   : strerror(-rc));
            break;
        }
        *out = crane__control__guest_message__unpack(NULL, len, buf);
        free(buf);
        if (!*out ||
            (*out)->msg_case != CRANE__CONTROL__GUEST_MESSAGE__MSG_ACK) {
            CRN_ERROR("undecodable answer from %s",
                    endpoint);
            if (*out)
                crane__control__guest_message__free_unpacked(*out, NULL);
            *out = NULL;
            rc = -EPROTO;
            break;
        }
        if ((*out)->id == msg->id || (*out)->id == 0)
            break;
        /* An answer meant for an earlier request on a shared channel. */
        crane__control__guest_message__free_unpacked(*out, NULL);
        *out = NULL;
    }
    close(fd);
    return rc;
}

/* What the command line asks: the connection and the message to send. */
struct ctl_args {
    const char *endpoint, *key_path, *pki_dir, *cmd;
    enum crn_tls_mode tls_mode;
    double timeout;
    uint32_t deadline;
    bool prepare_opts, shm_opts;
    Crane__Control__Shm shm;
    Crane__Control__StatusRequest status;
    Crane__Control__Prepare prepare;
    Crane__Control__Resume resume;
    Crane__Control__Abort abort_;
    Crane__Control__HostMessage msg;
};

/* Each host command's payload put into the message (build_<name>, named
 * by its row; the row's case is already set).  -1, or 2 on bad usage. */
static int build_status(struct ctl_args *a)
{
    if (a->deadline)
        return crn_usage_error("%s takes no --deadline", a->cmd);
    a->msg.status = &a->status;
    return -1;
}

static int build_prepare(struct ctl_args *a)
{
    a->prepare.deadline_ms = a->deadline;
    a->msg.prepare = &a->prepare;
    return -1;
}

static int build_resume(struct ctl_args *a)
{
    a->resume.deadline_ms = a->deadline;
    a->msg.resume = &a->resume;
    return -1;
}

static int build_abort(struct ctl_args *a)
{
    a->abort_.deadline_ms = a->deadline;
    a->msg.abort = &a->abort_;
    return -1;
}

static int build_shm(struct ctl_args *a)
{
    if (a->shm.release && ((a->shm.pci && *a->shm.pci) || a->shm.size))
        return crn_usage_error("%s takes neither --pci nor --size",
                               "shm --release");
    a->shm.deadline_ms = a->deadline;
    a->msg.shm = &a->shm;
    return -1;
}

/* cranectl's commands: one per row of the host hop, indexed by Op, so that
 * a new host operation asks here for its usage_<name> and build_<name>. */
struct ctl_cmd {
    const char *usage;
    int (*build)(struct ctl_args *a);
};

#define CTL_CMD_HOST(name) {usage_##name, build_##name}
#define CTL_CMD_NONE(name) {NULL, NULL}
#define CRN_CONTROL_OP(OP, name, host, host_exec, shim, shim_exec)         \
    [CRANE__CONTROL__OP__OP_##OP] = CTL_CMD_##host(name),
static const struct ctl_cmd ctl_cmds[] = {
#include "proto/control_ops.def"
};
#undef CRN_CONTROL_OP
#undef CTL_CMD_HOST
#undef CTL_CMD_NONE

static void print_usage(void)
{
    fputs(usage_head, stdout);
    for (size_t i = 0; i < sizeof(ctl_cmds) / sizeof(ctl_cmds[0]); i++)
        if (ctl_cmds[i].usage)
            fputs(ctl_cmds[i].usage, stdout);
    fputs(usage_tail, stdout);
}

/* The options before the command word.  -1 to go on, else the exit
 * status (0 after --help or --version, 2 on bad usage). */
static int parse_globals(struct ctl_args *a, int argc, char **argv)
{
    static const struct option global_opts[] = {
        {"connect", required_argument, NULL, 'c'},
        {"timeout", required_argument, NULL, 't'},
        {"key", required_argument, NULL, 'k'},
        {"tls", required_argument, NULL, 'T'},
        {"pki-dir", required_argument, NULL, 'P'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    int opt;

    opterr = 0;
    /* Global options stop at the command word. */
    while ((opt = getopt_long(argc, argv, "+", global_opts, NULL)) != -1) {
        char *end;
        switch (opt) {
        case 'c': a->endpoint = optarg; break;
        case 'k': a->key_path = optarg; break;
        case 'T':
            if (crn_tls_mode_parse(optarg, &a->tls_mode) < 0)
                return crn_usage_error(
                    "bad --tls '%s' (x509, psk, none or auto)", optarg);
            break;
        case 'P': a->pki_dir = optarg; break;
        case 't':
            a->timeout = strtod(optarg, &end);
            if (*end || end == optarg || !(a->timeout > 0) ||
                a->timeout > 86400)
                return crn_usage_error("bad --timeout '%s' (seconds)", optarg);
            break;
        case 'h': print_usage(); return 0;
        case 'V': crn_print_version("cranectl"); return 0;
        default: return crn_usage_error("unknown option '%s'",
                                        argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return crn_usage_error("%s", "a command is needed");
    return -1;
}

/* The command's options (ARGV[0] is the command).  -1 or 2 as above. */
static int parse_command_opts(struct ctl_args *a, int argc, char **argv)
{
    static const struct option cmd_opts[] = {
        {"proxy", required_argument, NULL, 'p'},
        {"live", no_argument, NULL, 'l'},
        {"offline", no_argument, NULL, 'o'},
        {"deadline", required_argument, NULL, 'd'},
        {"pci", required_argument, NULL, 'a'},
        {"size", required_argument, NULL, 's'},
        {"release", no_argument, NULL, 'r'},
        {NULL, 0, NULL, 0},
    };
    int opt;

    optind = 1;
    while ((opt = getopt_long(argc, argv, "+", cmd_opts, NULL)) != -1) {
        switch (opt) {
        case 'p':
            a->prepare.proxy = optarg;
            a->prepare_opts = true;
            break;
        case 'l':
            a->prepare.mode = CRANE__CONTROL__MIGRATION_MODE__MIGRATION_LIVE;
            a->prepare_opts = true;
            break;
        case 'o':
            a->prepare.mode =
                CRANE__CONTROL__MIGRATION_MODE__MIGRATION_OFFLINE;
            a->prepare_opts = true;
            break;
        case 'd':
            if (parse_u32(optarg, &a->deadline) < 0)
                return crn_usage_error("bad --deadline '%s' (milliseconds)",
                                       optarg);
            break;
        case 'a':
            a->shm.pci = optarg;
            a->shm_opts = true;
            break;
        case 's': {
            char *end;
            errno = 0;
            a->shm.size = strtoull(optarg, &end, 10);
            if (errno || end == optarg || *end || *optarg == '-')
                return crn_usage_error("bad --size '%s' (bytes)", optarg);
            a->shm_opts = true;
            break;
        }
        case 'r':
            a->shm.release = true;
            a->shm_opts = true;
            break;
        default: return crn_usage_error("unknown option '%s'",
                                        argv[optind - 1]);
        }
    }
    if (optind < argc)
        return crn_usage_error("unexpected argument '%s'", argv[optind]);
    return -1;
}

/* The message of the command, by its row.  -1, or 2 on bad usage. */
static int build_message(struct ctl_args *a)
{
    Crane__Control__Op op = crn_control_op_by_name(a->cmd);

    if (op != CRANE__CONTROL__OP__OP_PREPARE && a->prepare_opts)
        return crn_usage_error("--proxy, --live and --offline go with %s",
                               "prepare");
    if (op != CRANE__CONTROL__OP__OP_SHM && a->shm_opts)
        return crn_usage_error("--pci, --size and --release go with %s", "shm");
    if (op == CRANE__CONTROL__OP__OP_NONE)
        return crn_usage_error("unknown command '%s'", a->cmd);
    a->msg.msg_case = crn_control_op(op)->host_case;
    return ctl_cmds[op].build(a);
}

/* Sends the message, prints the answer: the exit status. */
static int send_message(struct ctl_args *a)
{
    Crane__Control__GuestMessage *answer = NULL;
    struct crn_tls_config *tls = NULL;
    struct crn_endpoint ep;
    const char *key_path = a->key_path;
    uint8_t *key = NULL;
    size_t key_len = 0, lost = 0;
    char why[512];
    int rc;

    if (crn_endpoint_parse(a->endpoint, &ep) < 0)
        return crn_usage_error("bad endpoint '%s' (unix:PATH or tcp:HOST:PORT)",
                               a->endpoint);
    if (ep.kind == CRN_EP_TCP && key_path && *key_path &&
        (rc = crn_auth_key_load(key_path, &key, &key_len)) < 0) {
        CRN_ERROR("key %s: %s", key_path,
                rc == -EINVAL ? "empty" : strerror(-rc));
        return 1;
    }
    if (ep.kind == CRN_EP_TCP &&
        crn_tls_config_new(a->tls_mode, CRN_TLS_CLIENT, a->pki_dir,
                           key_path && *key_path ? key_path : NULL, &tls, why,
                           sizeof(why)) < 0) {
        CRN_ERROR("TLS: %s", why);
        free(key);
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    rc = exchange(a->endpoint, &ep, tls, key, key_len, &a->msg, a->timeout,
                  &answer);
    crn_tls_config_free(tls);
    if (key) {
        explicit_bzero(key, key_len);
        free(key);
    }
    if (rc < 0)
        return 3;
    rc = ctl_print_ack(stdout, answer->ack, &lost);
    crane__control__guest_message__free_unpacked(answer, NULL);
    return rc != 0 ? 1 : lost ? 4 : 0;
}

int main(int argc, char **argv)
{
    static struct ctl_args a = {
        .tls_mode = CRN_TLS_AUTO,
        .timeout = 300,
        .shm = CRANE__CONTROL__SHM__INIT,
        .status = CRANE__CONTROL__STATUS_REQUEST__INIT,
        .prepare = CRANE__CONTROL__PREPARE__INIT,
        .resume = CRANE__CONTROL__RESUME__INIT,
        .abort_ = CRANE__CONTROL__ABORT__INIT,
        .msg = CRANE__CONTROL__HOST_MESSAGE__INIT,
    };
    int rc;

    crn_log_init_cli("cranectl");
    a.endpoint = getenv("CRANECTL_CONNECT");
    a.key_path = getenv("CRANECTL_KEY");
    if (!a.endpoint || !*a.endpoint)
        a.endpoint = CTL_DEFAULT_CONNECT;
    if ((rc = parse_globals(&a, argc, argv)) >= 0)
        return rc;
    a.cmd = argv[optind];
    argc -= optind;
    argv += optind;
    if ((rc = parse_command_opts(&a, argc, argv)) >= 0 ||
        (rc = build_message(&a)) >= 0)
        return rc;
    return send_message(&a);
}
