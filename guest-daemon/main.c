/* crane-guestd: options, config, signals; runs the guest daemon's loop. */
#include "config.h"
#include "driver.h"
#include "guestd.h"
#include "host.h"
#include "proto/log.h"
#include "migrate.h"
#include "programs.h"
#include "status.h"

#include "proto/notify.h"
#include "proto/version.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static const char usage[] =
    "Usage: crane-guestd [options]\n"
    "\n"
    "The guest daemon of crane: registers every OpenCL program running\n"
    "under the crane shim in this VM and, on the host's command, takes them\n"
    "all off the GPU (prepare), unloads and reloads the GPU driver, and\n"
    "brings them back (resume, abort).  docs/guest.md has the details.\n"
    "\n"
    "  --config FILE       settings (default " GD_CONFIG_DEFAULT
    "; a missing\n"
    "                      default file means built-in defaults)\n"
    "  --listen PATH       the shims' unix socket (/run/crane/guest.sock)\n"
    "  --host CHANNEL      the host: a virtio-serial port path\n"
    "                      (/dev/virtio-ports/org.crane.guest.0), or\n"
    "                      unix:PATH / tcp:HOST:PORT / vsock:CID:PORT to\n"
    "                      listen on (tcp: and vsock: need host_key in the\n"
    "                      config; tcp: speaks TLS as tls and pki_dir say:\n"
    "                      psk with host_key by default, x509 with a PKI\n"
    "                      in libvirt's layout; docs/guest.md)\n"
    "  --control ENDPOINT  cranectl's socket (unix:/run/crane/ctl.sock),\n"
    "                      or none\n"
    "  --state FILE        state file (/run/crane/guestd.state)\n"
    "  --log-level LEVEL   error, warn, info (default) or debug\n"
    "  --check-config      read the settings, print them, and exit\n"
    "  --help              this text\n"
    "  --version           print \"crane-guestd VERSION\" and exit\n"
    "\n"
    "Logs go to stderr (with journald priorities under systemd).\n"
    "Signals: SIGINT/SIGTERM stop (the state file stays, so a restarted\n"
    "daemon finishes a migration left half done).\n"
    "Exit status: 0 stopped cleanly; 1 could not start (a config file or a\n"
    "socket that cannot be used); 2 bad usage (an unknown option, a missing\n"
    "or malformed value).\n";

/* Programs' events go up to the migration and to status rounds. */
static const struct gd_program_events program_events = {
    .registered = gd_migrate_on_registered,
    .acked = gd_migrate_on_ack,
    .answered = gd_status_on_answer,
    .gone = gd_migrate_on_gone,
};

static int fail(const char *fmt, const char *arg)
{
    crn_log_say(CRN_LOG_ERROR, fmt, arg);
    return 1;
}

/* Room for max_programs connections plus the daemon's own descriptors:
 * raises the soft limit on open files up to the hard one, and lowers
 * max_programs (with a warning) when even that is too little. */
static void fit_open_files(struct gd_config *cfg)
{
    const rlim_t reserve = GD_MAX_HOST_CONNS + 64;
    struct rlimit rl;
    rlim_t want = (rlim_t)cfg->max_programs + reserve;

    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return;
    if (rl.rlim_cur < want) {
        rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want
                          ? want
                          : rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur < want) {
        unsigned fit = rl.rlim_cur > reserve + 1
                           ? (unsigned)(rl.rlim_cur - reserve)
                           : 1;
        CRN_WARN("max_programs %u: only %llu open files allowed; serving "
                "at most %u program connections",
                cfg->max_programs, (unsigned long long)rl.rlim_cur, fit);
        cfg->max_programs = fit;
    }
}

static void close_handle(uv_handle_t *h, void *arg)
{
    (void)arg;
    if (!uv_is_closing(h))
        uv_close(h, NULL);
}

static void stop(struct gd_daemon *d)
{
    if (d->stopping)
        return;
    d->stopping = true;
    crn_notify("STOPPING=1");
    gd_programs_close(d);
    gd_host_stop(d);
    uv_close((uv_handle_t *)&d->sig_int, NULL);
    uv_close((uv_handle_t *)&d->sig_term, NULL);
    uv_close((uv_handle_t *)&d->fan_timer, NULL);
    uv_close((uv_handle_t *)&d->drv_timer, NULL);
    uv_close((uv_handle_t *)&d->grace, NULL);
    gd_status_close(d);
    /* Children still running (modprobe, a probe) are closed too. */
    uv_walk(d->loop, close_handle, NULL);
}

static void on_signal(uv_signal_t *s, int signum)
{
    struct gd_daemon *d = s->data;

    CRN_INFO("signal %d: stopping%s", signum,
            d->op ? " (the state file keeps the operation in flight)" : "");
    stop(d);
}

/* Options and the config file into D->cfg; returns -1 to go on, else the
 * exit status. */
static int configure(struct gd_daemon *d, int argc, char **argv)
{
    static const struct option longopts[] = {
        {"config", required_argument, NULL, 'c'},
        {"listen", required_argument, NULL, 'l'},
        {"host", required_argument, NULL, 'H'},
        {"control", required_argument, NULL, 'C'},
        {"state", required_argument, NULL, 's'},
        {"log-level", required_argument, NULL, 'L'},
        {"check-config", no_argument, NULL, 'k'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    const char *config = NULL, *set_keys[8], *set_values[8];
    size_t n_set = 0;
    bool check = false;
    char why[512];
    int opt;

    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        const char *key = NULL;
        switch (opt) {
        case 'c': config = optarg; break;
        case 'l': key = "listen"; break;
        case 'H': key = "host"; break;
        case 'C': key = "control"; break;
        case 's': key = "state_file"; break;
        case 'L': key = "log_level"; break;
        case 'k': check = true; break;
        case 'h': fputs(usage, stdout); return 0;
        case 'V': crn_print_version("crane-guestd"); return 0;
        case ':':
            return crn_usage_error("option '%s' needs a value",
                                   argv[optind - 1]);
        default:
            return crn_usage_error("unknown option '%s'", argv[optind - 1]);
        }
        if (key && n_set < 8) {
            set_keys[n_set] = key;
            set_values[n_set++] = optarg;
        }
    }
    if (optind < argc)
        return crn_usage_error("unexpected argument '%s'", argv[optind]);
    gd_config_defaults(&d->cfg);
    if (gd_config_load(&d->cfg, config ? config : GD_CONFIG_DEFAULT,
                       config != NULL, why, sizeof(why)) < 0)
        return fail("%s", why);
    for (size_t i = 0; i < n_set; i++)
        if (gd_config_set(&d->cfg, set_keys[i], set_values[i], why,
                          sizeof(why)) < 0)
            return crn_usage_error("%s", why);
    crn_log_set_level(d->cfg.log_level);
    if (check) {
        gd_config_print(&d->cfg);
        return 0;
    }
    return -1;
}

int main(int argc, char **argv)
{
    static struct gd_daemon d;
    static struct gd_driver_run drv;
    uv_loop_t loop;
    char why[512];
    ssize_t n;
    int rc;

    crn_notify_init();
    /* The probe child (driver.c): crane-guestd --probe-gpu LIB
     * --gpu-type TYPE --vendors-dir DIR [--gpus N]. */
    if ((argc == 7 || (argc == 9 && strcmp(argv[7], "--gpus") == 0)) &&
        strcmp(argv[1], "--probe-gpu") == 0 &&
        strcmp(argv[3], "--gpu-type") == 0 &&
        strcmp(argv[5], "--vendors-dir") == 0)
        return gd_probe_gpu(argv[2], argv[4], argv[6],
                            argc == 9 ? atol(argv[8]) : 1);

    crn_log_init("crane-guestd");
    if ((rc = configure(&d, argc, argv)) >= 0)
        return rc;
    signal(SIGPIPE, SIG_IGN);
    fit_open_files(&d.cfg);
    n = readlink("/proc/self/exe", d.self_exe, sizeof(d.self_exe) - 1);
    if (n <= 0)
        return fail("%s", "cannot find my own executable in /proc/self/exe");
    d.self_exe[n] = '\0';

    uv_loop_init(&loop);
    d.loop = &loop;
    d.drv = &drv;
    uv_timer_init(&loop, &d.fan_timer);
    uv_timer_init(&loop, &d.drv_timer);
    d.fan_timer.data = d.drv_timer.data = &d;
    gd_status_init(&d);
    gd_daemon_recover(&d, gd_migrate_recover);
    rc = gd_programs_listen(&d, &program_events, why, sizeof(why));
    if (rc == 0)
        rc = gd_host_start(&d, why, sizeof(why));
    uv_signal_init(&loop, &d.sig_int);
    uv_signal_init(&loop, &d.sig_term);
    d.sig_int.data = d.sig_term.data = &d;
    if (rc < 0) {
        stop(&d);
        uv_run(&loop, UV_RUN_DEFAULT);
        uv_loop_close(&loop);
        free(d.host);
        return fail("%s", why);
    }
    uv_signal_start(&d.sig_int, on_signal, SIGINT);
    uv_signal_start(&d.sig_term, on_signal, SIGTERM);
    CRN_INFO("serving shims on %s (phase %s, %zu module(s) configured)",
            d.cfg.listen, gd_phase_name(d.phase), d.cfg.n_modules);
    /* The shims' socket and the host channel are set up. */
    crn_notify("READY=1");
    uv_run(&loop, UV_RUN_DEFAULT);
    CRN_INFO("stopped");
    free(d.op);
    free(d.host);
    if (uv_loop_close(&loop) != 0)
        CRN_WARN("loop closed with handles open");
    return 0;
}
