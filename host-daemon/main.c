/* crane-hostd: drives the hypervisor for GPU VM migrations on one host. */
#include "arrive.h"
#include "config.h"
#include "daemon.h"
#include "guest.h"
#include "handoff.h"
#include "health.h"
#include "host-daemon/history/history.h"
#include "host-daemon/history/history_keep.h"
#include "host-daemon/web/http.h"
#include "listen.h"
#include "proto/log.h"
#include "pool.h"
#include "proxy.h"
#include "proto/auth.h"
#include "proto/tls.h"
#include "proto/notify.h"
#include "proto/version.h"
#include "waits.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <uv.h>

static const char usage[] =
    "Usage: crane-hostd [OPTIONS]\n"
    "\n"
    "The host daemon of crane: migrates VMs that hold a passthrough GPU.  On\n"
    "crane-migrate's request it has the guest take its programs off the GPU,\n"
    "unplugs the GPU, migrates the VM (libvirt or libxl) and has the\n"
    "destination's crane-hostd plug in a free GPU of its pool and bring the\n"
    "programs back; every failure is rolled back.  It records every\n"
    "migration (SQLite) and serves a dashboard, a JSON API and Prometheus\n"
    "metrics over HTTP.\n"
    "\n"
    "Settings come from " HD_CONFIG_DEFAULT " (a missing default file means\n"
    "the defaults; --config FILE must exist); options override them:\n"
    "  --uri URI            hypervisor (default qemu:///system)\n"
    "  --backend NAME       libvirt (default) or libxl (when built in)\n"
    "  --control unix:PATH  crane-migrate's socket (/run/crane/hostd.sock)\n"
    "  --peer-listen EP     where other hosts' crane-hostd connect\n"
    "                       (tcp:0.0.0.0:7410; none: this host receives no VM)\n"
    "  --peer-key FILE      shared key of all hosts (/etc/crane/hostd.key);\n"
    "                       none: peers are not authenticated\n"
    "  --tls MODE           TLS of peer links (and tcp: guest channels):\n"
    "                       x509 (libvirt's PKI under --pki-dir), psk (the\n"
    "                       key file's bytes as the key), none, or auto\n"
    "                       (default: x509 where the PKI is complete, else\n"
    "                       psk with the key, else none)\n"
    "  --pki-dir DIR        CA/cacert.pem, libvirt/{server,client}cert.pem,\n"
    "                       libvirt/private/{server,client}key.pem\n"
    "                       (default /etc/pki, libvirt's)\n"
    "  --http ADDR:PORT     dashboard, /api, /metrics (127.0.0.1:7411; none);\n"
    "                       plain HTTP only on loopback (http_allow_plain)\n"
    "  --web-config FILE    HTTPS, client certificates, basic auth users or a\n"
    "                       bearer token for --http (Prometheus exporter-\n"
    "                       toolkit's web config file; docs/host.md)\n"
    "  --history FILE       migration history (/var/lib/crane/hostd.db)\n"
    "  --host-name NAME     this host in logs and history (hostname)\n"
    "  --gpu 'NAME pci:0000:65:00.0' | 'NAME xml:/etc/crane/gpu0.xml'\n"
    "                       a GPU of this host's pool (repeat; replaces the\n"
    "                       config file's gpu lines)\n"
    "  --log-level LEVEL    error, warn, info (default), debug\n"
    "  --config FILE        the settings file (default " HD_CONFIG_DEFAULT ")\n"
    "  --check-config       print the settings and exit\n"
    "  --help               this text\n"
    "  --version            print \"crane-hostd VERSION\" and exit\n"
    "\n"
    "Logs go to stderr (with journald priorities under systemd).  SIGINT/\n"
    "SIGTERM stop it after running migrations end.\n"
    "Exit status: 0 stopped cleanly; 1 could not start (a config or key\n"
    "file that cannot be read, the hypervisor unreachable) or lost the\n"
    "hypervisor connection (a service manager should restart it); 2 bad\n"
    "usage (an unknown option, a missing or malformed value).\n";

static struct hd_daemon daemon_state;

/* TLS of peer links (both ends: a host connects and accepts) and of tcp:
 * guest channels (this side connects), from tls and pki_dir, the key
 * files for psk (proto/tls.h). */
static int start_tls(struct hd_daemon *d)
{
    struct crn_tls_config *guest = NULL;
    enum crn_tls_mode mode = CRN_TLS_AUTO;
    char why[512];

    crn_tls_mode_parse(d->cfg.tls, &mode);
    if (crn_tls_config_new(mode, CRN_TLS_BOTH, d->cfg.pki_dir,
                           *d->cfg.peer_key ? d->cfg.peer_key : NULL,
                           &d->tls, why, sizeof(why)) < 0) {
        crn_log_say(CRN_LOG_ERROR, "peer TLS: %s", why);
        return -1;
    }
    if (crn_tls_config_new(mode, CRN_TLS_CLIENT, d->cfg.pki_dir,
                           *d->cfg.guest_key ? d->cfg.guest_key : NULL,
                           &guest, why, sizeof(why)) < 0) {
        crn_log_say(CRN_LOG_ERROR, "guest channel TLS: %s", why);
        return -1;
    }
    hd_guest_set_tls(guest);
    /* The proxy probe speaks TLS as the programs do (psk from proxy_key
     * under auto, as crane-proxy --auth-key does). */
    if (*d->cfg.proxy &&
        crn_tls_config_new(mode, CRN_TLS_CLIENT, d->cfg.pki_dir,
                           *d->cfg.proxy_key ? d->cfg.proxy_key : NULL,
                           &d->proxy_tls, why, sizeof(why)) < 0) {
        crn_log_say(CRN_LOG_ERROR, "proxy TLS: %s", why);
        return -1;
    }
    if (d->tls)
        CRN_INFO("peer links: TLS %s",
                crn_tls_mode_name(crn_tls_config_mode(d->tls)));
    else if (*d->cfg.peer_listen)
        CRN_WARN("peer links without TLS (tls = %s%s): migration streams "
                "cross the network in clear", d->cfg.tls,
                mode == CRN_TLS_AUTO ? ", no PKI and no peer_key" : "");
    return 0;
}
static struct hd_listeners *listeners;
static uv_signal_t sig_int, sig_term;
static uv_timer_t retry_timer, stop_timer, prune_timer, lease_timer;
static uv_timer_t history_timer, health_timer;

/* Every 30 s: the proxy's and peers' gauges probed (health.c). */
static void on_health(uv_timer_t *t)
{
    hd_health_tick(t->data);
}

static void on_history_retry(uv_timer_t *t)
{
    hd_history_retry(t->data);
}

/* Finished migrations older than history_keep_days go (at start-up, then
 * daily), so the file does not grow forever. */
static void on_prune(uv_timer_t *t)
{
    struct hd_daemon *d = t->data;
    struct hd_history *h;
    unsigned removed = 0;

    if (!d->cfg.history_keep_days ||
        hd_history_open(d->cfg.history, &h) < 0)
        return;
    if (hd_history_prune(h, hd_wall() - d->cfg.history_keep_days * 86400.0,
                         &removed) == 0 && removed)
        CRN_INFO("history: %u migration(s) older than %u days removed",
                removed, d->cfg.history_keep_days);
    hd_history_close(h);
}

static uv_async_t lost_async;
static int exit_status;

static void on_signal(uv_signal_t *s, int signum);
static void stop(struct hd_daemon *d);

/* libvirt went away (restarted, crashed): stop with status 1 once running
 * migrations end, and let the service manager start a fresh daemon, which
 * connects again and takes waiting VMs up from the history. */
static void on_lost(uv_async_t *a)
{
    CRN_ERROR("the hypervisor connection is lost: stopping (exit 1) so that "
             "the service manager restarts crane-hostd");
    exit_status = 1;
    stop(a->data);
}

static void on_hv_event(void *arg, const struct hv_event *ev)
{
    struct hd_daemon *d = arg;

    if (ev->kind == HV_EV_CONNECTION_LOST) {
        uv_async_send(&lost_async);      /* any thread */
        return;
    }

    CRN_DEBUG("event %d %s %s", ev->kind, ev->domain, ev->alias);
    hd_waits_signal(d->waits, ev);
    hd_handoff_event(d, ev);
    if (ev->kind == HV_EV_DOMAIN_STOPPED && *d->cfg.proxy_domain &&
        strcmp(ev->domain, d->cfg.proxy_domain) == 0)
        hd_proxy_lost(d);
    /* A GPU may have come free. */
    if (ev->kind == HV_EV_DEVICE_REMOVED || ev->kind == HV_EV_DOMAIN_STOPPED)
        hd_waiting_kick(d);
}

static void on_retry(uv_timer_t *t)
{
    hd_waiting_kick(t->data);
}

/* Prepared VMs whose lease ran out are aborted (handoff.c). */
static void on_lease(uv_timer_t *t)
{
    hd_handoff_tick(t->data);
}

static void on_stop_poll(uv_timer_t *t)
{
    struct hd_daemon *d = t->data;
    unsigned jobs;

    pthread_mutex_lock(&d->jobs_lock);
    jobs = d->jobs;
    pthread_mutex_unlock(&d->jobs_lock);
    if (jobs == 0)
        uv_stop(d->loop);
}

static void on_signal(uv_signal_t *s, int signum)
{
    CRN_INFO("signal %d: stopping once running migrations end", signum);
    stop(s->data);
}

/* Stops accepting, then ends the loop once every job has ended. */
static void stop(struct hd_daemon *d)
{
    pthread_mutex_lock(&d->jobs_lock);
    if (d->stopping) {
        pthread_mutex_unlock(&d->jobs_lock);
        return;
    }
    d->stopping = true;
    pthread_mutex_unlock(&d->jobs_lock);
    crn_notify("STOPPING=1");
    hd_listen_stop(listeners);
    uv_timer_stop(&retry_timer);
    uv_timer_stop(&prune_timer);
    uv_timer_stop(&health_timer);
    uv_timer_stop(&history_timer);
    uv_timer_stop(&lease_timer);
    /* Jobs need the loop (libvirt's events) until they end. */
    uv_timer_start(&stop_timer, on_stop_poll, 0, 100);
}

static void close_walk(uv_handle_t *h, void *arg)
{
    (void)arg;
    if (!uv_is_closing(h))
        uv_close(h, NULL);
}

/* Options, then the settings file, then the options' settings over it.
 * Returns -1 to go on, else the status to exit with (--help, --version,
 * --check-config, bad usage or settings). */
static int configure(struct hd_daemon *d, int argc, char **argv)
{
    static const struct option opts[] = {
        { "config", required_argument, NULL, 'c' },
        { "uri", required_argument, NULL, 'u' },
        { "backend", required_argument, NULL, 'b' },
        { "control", required_argument, NULL, 'C' },
        { "peer-listen", required_argument, NULL, 'p' },
        { "peer-key", required_argument, NULL, 'k' },
        { "tls", required_argument, NULL, 't' },
        { "pki-dir", required_argument, NULL, 'P' },
        { "http", required_argument, NULL, 'H' },
        { "web-config", required_argument, NULL, 'W' },
        { "history", required_argument, NULL, 'y' },
        { "host-name", required_argument, NULL, 'n' },
        { "gpu", required_argument, NULL, 'g' },
        { "log-level", required_argument, NULL, 'l' },
        { "check-config", no_argument, NULL, 'K' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    static const char *const keys[256] = {
        ['u'] = "uri", ['b'] = "backend", ['C'] = "control",
        ['p'] = "peer_listen", ['k'] = "peer_key", ['H'] = "http",
        ['y'] = "history", ['n'] = "host_name", ['g'] = "gpu",
        ['l'] = "log_level", ['t'] = "tls", ['P'] = "pki_dir",
        ['W'] = "web_config",
    };
    struct { int key; const char *value; } over[64];
    const char *config = HD_CONFIG_DEFAULT;
    int n_over = 0, must_exist = 0, check_only = 0, gpus_given = 0, o;
    char why[600] = "";

    opterr = 0;
    while ((o = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
        switch (o) {
        case 'c':
            config = optarg;
            must_exist = 1;
            break;
        case 'K':
            check_only = 1;
            break;
        case 'h':
            fputs(usage, stdout);
            return 0;
        case 'V':
            crn_print_version("crane-hostd");
            return 0;
        case ':':
            return crn_usage_error("option '%s' needs a value",
                                   argv[optind - 1]);
        case '?':
            return crn_usage_error("unknown option '%s'", argv[optind - 1]);
        default:
            if (n_over == 64)
                return crn_usage_error("%s", "too many options");
            over[n_over].key = o;
            over[n_over++].value = optarg;
        }
    }
    if (optind < argc)
        return crn_usage_error("unexpected argument '%s'", argv[optind]);

    hd_config_defaults(&d->cfg);
    if (hd_config_load(&d->cfg, config, must_exist, why, sizeof(why)) < 0) {
        crn_log_say(CRN_LOG_ERROR, "%s", why);
        return 1;
    }
    for (int i = 0; i < n_over; i++) {
        if (over[i].key == 'g' && !gpus_given++)
            d->cfg.n_gpus = 0;
        if (hd_config_set(&d->cfg, keys[over[i].key], over[i].value, why,
                          sizeof(why)) < 0) {
            crn_log_say(CRN_LOG_ERROR, "%s", why);
            return 2;
        }
    }
    if (check_only) {
        hd_config_print(&d->cfg);
        return 0;
    }
    return -1;
}

/* The backend and the keys the settings name (peers, TLS, guests, the
 * proxy).  Returns 0, or -1 once said why. */
static int load_keys(struct hd_daemon *d)
{
    int rc;

    if (!(d->hv_ops = hv_backend(d->cfg.backend))) {
        crn_log_say(CRN_LOG_ERROR, "backend %s is not built in",
                d->cfg.backend);
        return -1;
    }
    if (*d->cfg.peer_key &&
        (rc = crn_auth_key_load(d->cfg.peer_key, &d->key, &d->key_len)) < 0) {
        crn_log_say(CRN_LOG_ERROR, "peer key %s: %s (peer_key = none "
                "turns authentication off)", d->cfg.peer_key,
                strerror(-rc));
        return -1;
    }
    if (!*d->cfg.peer_key)
        CRN_WARN("peer_key = none: other hosts are not authenticated");
    if (start_tls(d) < 0)
        return -1;
    if (*d->cfg.guest_key) {
        uint8_t *gkey;
        size_t gkey_len;
        if ((rc = crn_auth_key_load(d->cfg.guest_key, &gkey, &gkey_len)) < 0) {
            crn_log_say(CRN_LOG_ERROR, "guest key %s: %s",
                    d->cfg.guest_key, strerror(-rc));
            return -1;
        }
        hd_guest_set_key(gkey, gkey_len);
    }
    if (*d->cfg.proxy && *d->cfg.proxy_key &&
        (rc = crn_auth_key_load(d->cfg.proxy_key, &d->proxy_key,
                                &d->proxy_key_len)) < 0) {
        crn_log_say(CRN_LOG_ERROR, "proxy key %s: %s (proxy_key = none "
                    "if the proxy does not authenticate its clients)",
                    d->cfg.proxy_key, strerror(-rc));
        return -1;
    }
    if (*d->cfg.proxy && !*d->cfg.proxy_key)
        CRN_WARN("proxy_key = none: programs reach the proxy %s without "
                "authenticating", d->cfg.proxy);
    return 0;
}

/* The HTTP server of the dashboard, the API and the metrics on the
 * address of the http setting, reading HISTORY.  Returns 0 or -errno. */
static int start_http(struct hd_daemon *d, struct hd_history *history,
                      struct hd_http **http, struct hd_web_config **web)
{
    char addr[HD_TEXT], why[600] = "";
    char *colon;
    int rc;

    snprintf(addr, sizeof(addr), "%.*s", (int)sizeof(addr) - 1, d->cfg.http);
    colon = strrchr(addr, ':');
    *colon = '\0';
    if (addr[0] == '[') {
        memmove(addr, addr + 1, strlen(addr));
        addr[strlen(addr) - 1] = '\0';
    }
    struct hd_http_sources src = {
        .pool = hd_daemon_pool_read,
        .arg = d,
        .health = hd_daemon_history_health,
        .history_path = d->cfg.history,
        .allow_plain = d->cfg.http_allow_plain,
        .gauges = hd_daemon_gauges,
    };
    if (*d->cfg.web_config &&
        (rc = hd_web_config_load(d->cfg.web_config, web, why,
                                 sizeof(why))) < 0) {
        crn_log_say(CRN_LOG_ERROR, "web_config: %s", why);
        return rc;
    }
    src.web = *web;
    if ((rc = hd_http_start_with(http, addr, (uint16_t)atoi(colon + 1),
                                 history, &src)) < 0) {
        crn_log_say(CRN_LOG_ERROR, "cannot serve HTTP on %s",
                d->cfg.http);
        return rc;
    }
    return 0;
}

/* SIGINT and SIGTERM, and the daemon's timers (retries, leases, the
 * history's backlog, health probes, the daily prune). */
static void start_timers(struct hd_daemon *d)
{
    uv_signal_init(d->loop, &sig_int);
    uv_signal_init(d->loop, &sig_term);
    sig_int.data = sig_term.data = d;
    uv_signal_start(&sig_int, on_signal, SIGINT);
    uv_signal_start(&sig_term, on_signal, SIGTERM);
    uv_timer_init(d->loop, &retry_timer);
    uv_timer_init(d->loop, &stop_timer);
    uv_timer_init(d->loop, &prune_timer);
    uv_timer_init(d->loop, &lease_timer);
    uv_timer_init(d->loop, &history_timer);
    uv_timer_init(d->loop, &health_timer);
    retry_timer.data = stop_timer.data = prune_timer.data = d;
    lease_timer.data = history_timer.data = health_timer.data = d;
    uv_timer_start(&history_timer, on_history_retry,
                   HD_HISTORY_RETRY_S * 1000, HD_HISTORY_RETRY_S * 1000);
    uv_timer_start(&lease_timer, on_lease, 1000, 1000);
    uv_timer_start(&health_timer, on_health, 1000, 30000);
    uv_timer_start(&prune_timer, on_prune, 0, 86400 * 1000);
    uv_timer_start(&retry_timer, on_retry, d->cfg.gpu_retry_ms,
                   d->cfg.gpu_retry_ms);
}

/* The history's folder, as a package would create it. */
static void make_history_dir(const char *history)
{
    char dir[HD_TEXT];
    char *slash;

    snprintf(dir, sizeof(dir), "%.*s", (int)sizeof(dir) - 1, history);
    if ((slash = strrchr(dir, '/')) && slash != dir) {
        *slash = '\0';
        mkdir(dir, 0755);
    }
}

/* The proxy domain runs from the start, so that the first live migration
 * does not wait for its boot. */
static void start_proxy_domain(struct hd_daemon *d)
{
    char why[600] = "";
    bool started;

    if (hd_proxy_ensure_running(d, &started, why, sizeof(why)) < 0)
        CRN_WARN("%s", why);
    else if (started)
        CRN_INFO("proxy domain %s started", d->cfg.proxy_domain);
}

int main(int argc, char **argv)
{
    struct hd_daemon *d = &daemon_state;
    int rc;
    struct hd_history *http_history = NULL;
    struct hd_http *http = NULL;
    struct hd_web_config *web = NULL;
    char why[600] = "";
    uv_loop_t loop;

    crn_notify_init();
    crn_log_init("crane-hostd");
    if ((rc = configure(d, argc, argv)) >= 0)
        return rc;
    crn_log_set_level(d->cfg.log_level);
    signal(SIGPIPE, SIG_IGN);

    if (load_keys(d) < 0)
        return 1;
    pthread_mutex_init(&d->jobs_lock, NULL);
    pthread_cond_init(&d->jobs_done, NULL);
    uv_loop_init(&loop);
    d->loop = &loop;

    rc = hd_pool_new(&d->cfg, &d->pool, why, sizeof(why));
    if (rc == 0)
        rc = hd_waits_new(&d->waits);
    if (rc == 0)
        rc = hd_waiting_new(&d->waiting);
    if (rc < 0) {
        crn_log_say(CRN_LOG_ERROR, "%s", *why ? why : strerror(-rc));
        goto out;
    }
    make_history_dir(d->cfg.history);
    if ((rc = hd_history_start(d, &http_history)) < 0) {
        crn_log_say(CRN_LOG_ERROR, "history %s: %s", d->cfg.history,
                strerror(-rc));
        goto out;
    }
    uv_async_init(d->loop, &lost_async, on_lost);
    lost_async.data = d;
    if ((rc = d->hv_ops->open(d->cfg.uri, d->cfg.channel, d->loop,
                              on_hv_event, d, &d->hv)) < 0) {
        crn_log_say(CRN_LOG_ERROR, "cannot connect to %s: %s",
                d->cfg.uri, strerror(-rc));
        goto out;
    }
    hd_waiting_recover(d);
    start_proxy_domain(d);
    if ((rc = hd_health_new(&d->health)) < 0)
        goto out;
    if (*d->cfg.http &&
        (rc = start_http(d, http_history, &http, &web)) < 0)
        goto out;
    if ((rc = hd_listen_start(d, &listeners, why, sizeof(why))) < 0) {
        crn_log_say(CRN_LOG_ERROR, "%s", why);
        goto out;
    }
    start_timers(d);
    CRN_INFO("crane-hostd on %s: %s (%s), %zu GPU(s), control %s, peers %s, "
            "http %s", d->cfg.host_name, d->cfg.uri, d->hv_ops->name,
            hd_pool_size(d->pool), d->cfg.control,
            *d->cfg.peer_listen ? d->cfg.peer_listen : "none",
            http ? d->cfg.http : "none");
    /* Every socket listens: systemd may start what depends on us. */
    crn_notify("READY=1");
    uv_run(d->loop, UV_RUN_DEFAULT);
    hd_jobs_wait(d);
    /* A last try, so that a disk freed meanwhile keeps every migration. */
    if (d->backlog)
        hd_backlog_flush(d->backlog, d->cfg.history);
    rc = -exit_status;
out:
    hd_http_stop(http);
    hd_web_config_free(web);
    if (d->hv)
        d->hv_ops->close(d->hv);
    uv_walk(d->loop, close_walk, NULL);
    uv_run(d->loop, UV_RUN_DEFAULT);
    hd_listen_free(listeners);
    uv_loop_close(d->loop);
    hd_history_close(http_history);
    hd_backlog_free(d->backlog);
    hd_health_free(d->health);
    hd_waiting_free(d->waiting);
    hd_waits_free(d->waits);
    hd_pool_free(d->pool);
    free(d->key);
    free(d->proxy_key);
    crn_tls_config_free(d->proxy_tls);
    CRN_INFO("crane-hostd stopped");
    return rc < 0 ? 1 : 0;
}
