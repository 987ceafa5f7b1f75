/* crane-proxy: options, logging, signals; runs the remoting server. */
#include "ctxpool.h"
#include "devices.h"
#include "kout.h"
#include "proto/log.h"
#include "server.h"
#include "supervisor.h"

#include "proto/endpoint.h"
#include "proto/lane.h"
#include "proto/notify.h"
#include "proto/pcopy.h"
#include "proto/version.h"

#include <errno.h>
#include <stddef.h>
#include <getopt.h>
#include <math.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "Usage: crane-proxy --listen ENDPOINT [options]\n"
    "\n"
    "Executes remoted OpenCL calls (docs/remoting.md) on this machine's\n"
    "devices for many clients at once, each a tenant with its own objects.\n"
    "\n"
    "  --listen ENDPOINT   unix:PATH, tcp:HOST:PORT or vsock:CID:PORT\n"
    "                      (required)\n"
    "  --device SPEC       devices offered: all (default), gpu, cpu,\n"
    "                      accelerator, P (platform index) or P:D\n"
    "  --auth-key FILE     require clients to prove they hold this key\n"
    "                      (HMAC-SHA256 over a random nonce)\n"
    "  --tls MODE          on a tcp: endpoint: x509 (certificates in\n"
    "                      libvirt's layout under --pki-dir), psk (TLS\n"
    "                      with --auth-key's bytes as the key), none (in\n"
    "                      clear), or auto (default: x509 where the PKI\n"
    "                      holds CA/cacert.pem and the server pair, else\n"
    "                      psk with --auth-key, else none)\n"
    "  --pki-dir DIR       x509 files: DIR/CA/cacert.pem,\n"
    "                      DIR/libvirt/servercert.pem,\n"
    "                      DIR/libvirt/private/serverkey.pem (default\n"
    "                      /etc/pki)\n"
    "  --quota BYTES       device memory per tenant (suffixes K, M, G;\n"
    "                      default 0: no limit)\n"
    "  --grace SECONDS     keep a disconnected tenant's objects this long\n"
    "                      for a Hello with its resume token (default 0)\n"
    "  --isolation MODE    tenant (default): each tenant in a worker\n"
    "                      process of its own, so that a call that crashes\n"
    "                      the vendor library ends only that tenant; none:\n"
    "                      every tenant in this process\n"
    "  --spares N          with --isolation tenant: workers kept started\n"
    "                      and idle, each ready for a new tenant (1 to 64,\n"
    "                      default 2)\n"
    "  --no-shm            never take a client's shared-memory area: bulk\n"
    "                      bytes stay on the stream (default: a client on\n"
    "                      a unix: socket may hand over a memfd)\n"
    "  --shm-dir DIR       clients on any endpoint may name a file in DIR\n"
    "                      as their shared area (an ivshmem region's\n"
    "                      backing file, e.g. /dev/shm)\n"
    "  --shm-pci DIR       in a proxy domain: clients on any endpoint may\n"
    "                      name a shared area by the token in its header,\n"
    "                      found in BAR 2 of an ivshmem-plain device under\n"
    "                      DIR (/sys/bus/pci/devices) that the host plugged\n"
    "                      into both the client's VM and this one\n"
    "  --max-lanes N       a TCP client may open N extra streams (lanes)\n"
    "                      that carry the bytes of its big reads and\n"
    "                      writes in parallel, each authenticated and\n"
    "                      under TLS as its connection (0 to 16, default\n"
    "                      8; 0: none)\n"
    "  --log-level LEVEL   error, warn, info (default) or debug\n"
    "  --help              this text\n"
    "  --version           print \"crane-proxy VERSION\" and exit\n"
    "\n"
    "Bounds on each peer (a unix socket's user, a TCP peer's address);\n"
    "0 turns a bound off:\n"
    "  --handshake-timeout SECONDS  TCP accept (TLS included) to Welcome,\n"
    "                      else Refused and closed (default 5)\n"
    "  --max-unauthenticated N  connections in their handshake (TLS or\n"
    "                      Hello to Welcome) at once; a new one closes the\n"
    "                      oldest (default 64)\n"
    "  --max-unauthenticated-per-peer N  of them, from one peer; a new one\n"
    "                      closes that peer's oldest (default 32)\n"
    "  --max-peer-connections N  connections past the handshake per peer\n"
    "                      (with --isolation tenant: its tenants, those\n"
    "                      kept for --grace included; default 256)\n"
    "  --max-objects N     OpenCL objects per tenant (default 1048576);\n"
    "                      beyond, creations fail CL_OUT_OF_RESOURCES\n"
    "  --max-queued BYTES  requests read ahead of execution, and replies\n"
    "                      not yet written, per connection (default 256M)\n"
    "  --release-timeout SECONDS  with --isolation tenant: a tenant whose\n"
    "                      client left (after --grace, if any) and whose\n"
    "                      worker has not ended this long after (a kernel\n"
    "                      that never ends holds it) has its worker killed\n"
    "                      and its device released (default 5)\n"
    "  --max-kernel-seconds N  with --isolation tenant: a tenant's call\n"
    "                      (a wait for its kernels, a blocking copy; not a\n"
    "                      build) running longer ends the tenant: its\n"
    "                      worker is killed, the program's calls fail with\n"
    "                      CL_DEVICE_NOT_AVAILABLE (default\n"
    "                      CRANE_PROXY_MAX_KERNEL_SECONDS, else 0: none)\n"
    "  --idle-timeout SECONDS  close a connection that sent nothing this\n"
    "                      long while none of its calls ran (default 0:\n"
    "                      never; its tenant stays for --grace).  TCP\n"
    "                      connections also send keepalive probes after\n"
    "                      60 s of silence\n"
    "\n"
    "Large copies of bulk bytes (between a shared-memory area and pinned\n"
    "staging) use a quarter of the CPUs, 1 to 8 threads, or\n"
    "CRANE_COPY_THREADS (1 to 16) when set.  After each message in or\n"
    "out, the loop polls without sleeping for CRANE_PROXY_SPIN_US\n"
    "microseconds (default 50 with more than two CPUs, else 0).  A\n"
    "client's memfd area is pinned for the device (a CL_MEM_USE_HOST_PTR\n"
    "buffer over it) so that bulk bytes move straight between it and the\n"
    "device; CRANE_PROXY_PIN_RING=0 turns that off.  Each spare context\n"
    "of a GPU builds and runs a kernel once before it is offered, so that\n"
    "a program's first rebuild finds it warm; CRANE_PROXY_WARM_SPARES=0\n"
    "never, =1 on every device.  A spare taken is replaced after\n"
    "CRANE_PROXY_SPARE_DELAY_MS (default 3000), not while the program\n"
    "that took it moves its bytes.  At most CRANE_PROXY_MAX_PINNED_MB\n"
    "(default 2048) of clients' memory is pinned at once per process;\n"
    "an area beyond it is used unpinned.\n"
    "\n"
    "Signals: SIGINT/SIGTERM stop cleanly (every object released, the unix\n"
    "socket removed); SIGUSR1 logs a stats line (connections, tenants,\n"
    "objects, bytes).  UV_THREADPOOL_SIZE (default 64) bounds how many\n"
    "tenants execute at the same time.  Logs go to stderr (with journald\n"
    "priorities under systemd).\n"
    "\n"
    "Exit status: 0 stopped cleanly; 1 could not start (a key file that\n"
    "cannot be read, no such device, the endpoint cannot be listened on);\n"
    "2 bad usage (an unknown option, a missing or malformed value).\n";

/* Parses a byte count with an optional K, M or G suffix. */
static int parse_bytes(const char *s, uint64_t *out)
{
    char *end;
    unsigned long long v;
    int shift = 0;

    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno || end == s || *s == '-')
        return -EINVAL;
    if (*end == 'K' || *end == 'k')
        shift = 10;
    else if (*end == 'M' || *end == 'm')
        shift = 20;
    else if (*end == 'G' || *end == 'g')
        shift = 30;
    else if (*end)
        return -EINVAL;
    if (shift && end[1])
        return -EINVAL;
    if (shift && v > (UINT64_MAX >> shift))
        return -ERANGE;
    *out = (uint64_t)v << shift;
    return 0;
}

static int parse_count(const char *s, uint64_t *out)
{
    char *end;
    unsigned long long v;

    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno || end == s || *end || *s == '-')
        return -EINVAL;
    *out = v;
    return 0;
}

static int parse_seconds(const char *s, uint64_t *ms)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < 0 || v > 86400 * 365)
        return -EINVAL;
    *ms = (uint64_t)(v * 1000.0 + 0.5);
    return 0;
}

static void close_handle(uv_handle_t *h, void *arg)
{
    (void)arg;
    if (!uv_is_closing(h))
        uv_close(h, NULL);
}

static int fail(const char *fmt, const char *arg)
{
    crn_log_say(CRN_LOG_ERROR, fmt, arg);
    return 1;
}

/* The command line itself is wrong: exit 2, as every crane program. */
static int bad_usage(const char *fmt, const char *arg)
{
    fail(fmt, arg);
    return 2;
}

/* How an option's value is read: into the field at its row's offset of
 * struct px_options (a string, bytes, seconds as ms, a count), or by
 * special_option. */
enum opt_kind { OPT_STRING, OPT_BYTES, OPT_SECONDS, OPT_COUNT, OPT_SPECIAL };

/* The options: one row each (--help's text is `usage` above). */
static const struct opt_row {
    const char *name;
    enum opt_kind kind;
    size_t off;                  /* in struct px_options, but OPT_SPECIAL */
    int has_arg;
    const char *hint;            /* the values it takes, for its error */
} opt_rows[] = {
#define FIELD(f) offsetof(struct px_options, f)
    {"listen", OPT_STRING, FIELD(listen), 1, ""},
    {"device", OPT_STRING, FIELD(device), 1, ""},
    {"auth-key", OPT_STRING, FIELD(auth_key), 1, ""},
    {"tls", OPT_SPECIAL, 0, 1, "(x509, psk, none or auto)"},
    {"pki-dir", OPT_STRING, FIELD(pki_dir), 1, ""},
    {"quota", OPT_BYTES, FIELD(quota), 1, "(bytes, K, M or G)"},
    {"grace", OPT_SECONDS, FIELD(grace_ms), 1, "(seconds)"},
    {"log-level", OPT_SPECIAL, 0, 1, "(error, warn, info, debug)"},
    {"handshake-timeout", OPT_SECONDS, FIELD(limits.handshake_ms), 1,
     "(seconds)"},
    {"max-unauthenticated", OPT_COUNT, FIELD(limits.max_unauth), 1,
     "(a count)"},
    {"max-unauthenticated-per-peer", OPT_COUNT,
     FIELD(limits.max_unauth_peer), 1, "(a count)"},
    {"max-peer-connections", OPT_COUNT, FIELD(limits.max_peer_conns), 1,
     "(a count)"},
    {"max-objects", OPT_COUNT, FIELD(limits.max_objects), 1, "(a count)"},
    {"max-queued", OPT_BYTES, FIELD(limits.max_queued), 1,
     "(bytes, K, M or G)"},
    {"idle-timeout", OPT_SECONDS, FIELD(limits.idle_ms), 1, "(seconds)"},
    {"release-timeout", OPT_SECONDS, FIELD(limits.release_ms), 1,
     "(seconds)"},
    {"max-kernel-seconds", OPT_SPECIAL, 0, 1, "(seconds)"},
    {"isolation", OPT_SPECIAL, 0, 1, "(tenant or none)"},
    {"spares", OPT_SPECIAL, 0, 1, "(1 to 64)"},
    {"no-shm", OPT_SPECIAL, 0, 0, ""},
    {"shm-dir", OPT_STRING, FIELD(shm_dir), 1, ""},
    {"shm-pci", OPT_STRING, FIELD(shm_pci), 1, ""},
    {"max-lanes", OPT_SPECIAL, 0, 1, "(0 to 16)"},
    /* Internal: a worker started by the supervisor (supervisor.c). */
    {"worker", OPT_SPECIAL, 0, 0, ""},
    {"help", OPT_SPECIAL, 0, 0, ""},
    {"version", OPT_SPECIAL, 0, 0, ""},
#undef FIELD
};
#define N_OPTS (sizeof(opt_rows) / sizeof(opt_rows[0]))

/* What parsing leaves besides struct px_options. */
struct parsed {
    bool worker;
    const char *max_kernel;      /* --max-kernel-seconds, or the env's */
};

/* An option of kind OPT_SPECIAL: 0, 1 when it needs main to exit 0
 * (--help, --version), or -1 for a bad value. */
static int special_option(const char *name, const char *arg,
                          struct px_options *o, struct parsed *p)
{
    uint64_t n;

    if (strcmp(name, "tls") == 0)
        return crn_tls_mode_parse(arg, &o->tls_mode) < 0 ? -1 : 0;
    if (strcmp(name, "log-level") == 0)
        return crn_log_set_level(arg) < 0 ? -1 : 0;
    if (strcmp(name, "max-kernel-seconds") == 0) {
        p->max_kernel = arg;
        return 0;
    }
    if (strcmp(name, "isolation") == 0) {
        if (strcmp(arg, "tenant") && strcmp(arg, "none"))
            return -1;
        o->role = strcmp(arg, "none") ? PX_ROLE_SUPERVISOR : PX_ROLE_SINGLE;
        return 0;
    }
    if (strcmp(name, "spares") == 0) {
        if (parse_count(arg, &n) < 0 || n < 1 || n > 64)
            return -1;
        o->spares = (unsigned)n;
        return 0;
    }
    if (strcmp(name, "max-lanes") == 0) {
        if (parse_count(arg, &n) < 0 || n > CRN_LANES_MAX)
            return -1;
        o->max_lanes = (unsigned)n;
        return 0;
    }
    if (strcmp(name, "no-shm") == 0)
        o->no_shm = true;
    else if (strcmp(name, "worker") == 0)
        p->worker = true;
    else if (strcmp(name, "help") == 0)
        fputs(usage, stdout);
    else
        crn_print_version("crane-proxy");
    return strcmp(name, "help") && strcmp(name, "version") ? 0 : 1;
}

/* Option ROW's value ARG into O (or P): 0, 1 to exit 0, -1 bad. */
static int take_option(const struct opt_row *row, const char *arg,
                       struct px_options *o, struct parsed *p)
{
    char *field = (char *)o + row->off;

    switch (row->kind) {
    case OPT_STRING:
        *(const char **)(void *)field = arg;
        return 0;
    case OPT_BYTES:
        return parse_bytes(arg, (uint64_t *)(void *)field) < 0 ? -1 : 0;
    case OPT_SECONDS:
        return parse_seconds(arg, (uint64_t *)(void *)field) < 0 ? -1 : 0;
    case OPT_COUNT:
        return parse_count(arg, (uint64_t *)(void *)field) < 0 ? -1 : 0;
    case OPT_SPECIAL:
        break;
    }
    return special_option(row->name, arg, o, p);
}

/* What the options say together, once all are read: 0, or exits 2. */
static int check_options(int argc, char **argv, struct px_options *o,
                         struct parsed *p, struct crn_endpoint *ep)
{
    if (optind < argc)
        return bad_usage("unexpected argument '%s' (see --help)",
                         argv[optind]);
    if (!o->listen)
        return bad_usage("%s", "--listen ENDPOINT is required (see --help)");
    if (p->max_kernel && p->max_kernel[0] &&
        parse_seconds(p->max_kernel, &o->limits.max_call_ms) < 0)
        return bad_usage("bad --max-kernel-seconds or "
                         "CRANE_PROXY_MAX_KERNEL_SECONDS '%s' (seconds)",
                         p->max_kernel);
    if (o->limits.max_call_ms && o->role == PX_ROLE_SINGLE)
        return bad_usage("%s", "--max-kernel-seconds needs --isolation "
                               "tenant (only a worker can be ended)");
    if (crn_endpoint_parse(o->listen, ep) < 0)
        return bad_usage("bad endpoint '%s' (unix:PATH, tcp:HOST:PORT or "
                         "vsock:CID:PORT)", o->listen);
    if (p->worker)
        o->role = PX_ROLE_WORKER;
    o->argv = argv;
    return 0;
}

/* The command line into O and EP: -1 to go on, else main's exit status. */
static int parse_options(int argc, char **argv, struct px_options *o,
                         struct crn_endpoint *ep)
{
    struct option longopts[N_OPTS + 1];
    struct parsed p = {.max_kernel = getenv("CRANE_PROXY_MAX_KERNEL_SECONDS")};
    char why[256];
    int opt, idx, rc;

    for (size_t i = 0; i < N_OPTS; i++)
        longopts[i] = (struct option){opt_rows[i].name,
                                      opt_rows[i].has_arg ? required_argument
                                                          : no_argument,
                                      NULL, 1000 + (int)i};
    longopts[N_OPTS] = (struct option){NULL, 0, NULL, 0};
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":", longopts, &idx)) != -1) {
        if (opt == ':')
            return bad_usage("option '%s' needs a value (see --help)",
                             argv[optind - 1]);
        if (opt < 1000 || opt >= 1000 + (int)N_OPTS)
            return bad_usage("unknown option '%s' (see --help)",
                             argv[optind - 1]);
        const struct opt_row *row = &opt_rows[opt - 1000];
        rc = take_option(row, optarg, o, &p);
        if (rc == 1)
            return 0;
        if (rc < 0) {
            snprintf(why, sizeof(why), "bad --%s '%s' %s", row->name, optarg,
                     row->hint);
            return bad_usage("%s", why);
        }
    }
    rc = check_options(argc, argv, o, &p, ep);
    return rc ? rc : -1;
}

/* The process's tuning for bulk bytes, before any thread starts. */
static void tune_process(void)
{
    /* Before the first work item starts libuv's pool: each tenant's calls
     * may block one thread while the device works. */
    setenv("UV_THREADPOOL_SIZE", "64", 0);
    signal(SIGPIPE, SIG_IGN);
    /* Chunks of up to 4 MiB come and go all the time: keep them in the
     * heap instead of a fresh mmap each, which costs a page fault per 4 KiB
     * touched (measured: a third of the proxy's time in bulk transfers). */
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
    /* Bulk copies between the shared area and the pinned staging are
     * spread over a quarter of the CPUs (proto/pcopy.h), or as many
     * threads as CRANE_COPY_THREADS says (the shim's knob, for
     * measurements of both sides at once). */
    const char *ct = getenv("CRANE_COPY_THREADS");
    crn_pcopy_set_threads(ct && atoi(ct) > 0 ? (unsigned)atoi(ct)
                                             : crn_pcopy_default_threads());
}

int main(int argc, char **argv)
{
    struct px_options opts = {
        .role = PX_ROLE_SUPERVISOR,
        .device = "all",
        .spares = 2,
        .max_lanes = 8,
        .tls_mode = CRN_TLS_AUTO,
        .limits = {.handshake_ms = 5000,
                   .max_unauth = 64,
                   .max_unauth_peer = 32,
                   .max_peer_conns = 256,
                   .release_ms = 5000,
                   .max_objects = 1u << 20,
                   .max_queued = 256u << 20},
    };
    struct crn_endpoint ep;
    struct px_devices devs;
    struct px_server srv;
    uv_loop_t loop;
    char why[512];
    bool vendor;
    int rc, status;

    crn_notify_init();
    crn_log_init("crane-proxy");
    if ((rc = parse_options(argc, argv, &opts, &ep)) >= 0)
        return rc;
    tune_process();
    /* The supervisor never loads the vendor: its workers do, after their
     * own start (never a fork of a process with the vendor's threads). */
    vendor = opts.role != PX_ROLE_SUPERVISOR;
    /* A worker's one tenant gets what its kernels print (kout.h). */
    if (opts.role == PX_ROLE_WORKER && px_kout_start(why, sizeof(why)) < 0)
        return fail("%s", why);
    if (vendor) {
        if (px_devices_open(opts.device, &devs, why, sizeof(why)) < 0)
            return fail("%s", why);
        px_ctxpool_init(&devs);
    }
    uv_loop_init(&loop);
    rc = px_server_init(&srv, &loop, &opts, vendor ? &devs : NULL, why,
                        sizeof(why));
    if (rc == 0 && opts.role == PX_ROLE_SUPERVISOR)
        rc = px_super_init(&srv, argv, why, sizeof(why));
    if (rc == 0 && opts.role == PX_ROLE_WORKER)
        rc = px_worker_init(&srv, why, sizeof(why));
    if (rc < 0) {
        if (srv.listening) {
            uv_close(&srv.lis.handle, NULL);
            if (srv.created_socket)
                unlink(srv.ep.path);
        }
        uv_walk(&loop, close_handle, NULL);
        uv_run(&loop, UV_RUN_DEFAULT);
        uv_loop_close(&loop);
        px_server_fini(&srv);
        px_super_status(&srv);
        if (vendor) {
            px_ctxpool_fini();
            px_devices_close(&devs);
        }
        return fail("%s", why);
    }
    px_server_run(&srv);
    px_server_fini(&srv);
    px_kout_stop();
    px_worker_free(&srv);
    status = px_super_status(&srv);
    if (opts.role != PX_ROLE_WORKER && status == 0)
        CRN_INFO("stopped");
    if (uv_loop_close(&loop) != 0)
        CRN_WARN("loop closed with handles open");
    if (vendor) {
        px_ctxpool_fini();
        px_devices_close(&devs);
    }
    return status;
}
