/* crane-hostd's settings: defaults, config file, command-line overrides. */
#include "config.h"

#include "proto/conffile.h"
#include "proto/endpoint.h"
#include "proto/tls.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void hd_config_defaults(struct hd_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    snprintf(cfg->uri, sizeof(cfg->uri), "qemu:///system");
    snprintf(cfg->backend, sizeof(cfg->backend), "libvirt");
    if (gethostname(cfg->host_name, sizeof(cfg->host_name) - 1) < 0 ||
        !cfg->host_name[0])
        snprintf(cfg->host_name, sizeof(cfg->host_name), "localhost");
    snprintf(cfg->control, sizeof(cfg->control), "unix:/run/crane/hostd.sock");
    cfg->control_mode = 0600;
    snprintf(cfg->peer_listen, sizeof(cfg->peer_listen), "tcp:0.0.0.0:%u",
             HD_PEER_PORT);
    cfg->peer_port = HD_PEER_PORT;
    snprintf(cfg->peer_key, sizeof(cfg->peer_key), "/etc/crane/hostd.key");
    snprintf(cfg->tls, sizeof(cfg->tls), "auto");
    snprintf(cfg->pki_dir, sizeof(cfg->pki_dir), "%s", CRN_TLS_PKI_DEFAULT);
    snprintf(cfg->http, sizeof(cfg->http), "127.0.0.1:7411");
    snprintf(cfg->history, sizeof(cfg->history), "/var/lib/crane/hostd.db");
    cfg->history_keep_days = 365;
    snprintf(cfg->channel, sizeof(cfg->channel), "org.crane.guest.0");
    cfg->detach_timeout_ms = 10000;
    cfg->attach_timeout_ms = 10000;
    cfg->prepare_deadline_ms = 30000;
    cfg->resume_deadline_ms = 60000;
    cfg->gpu_retry_ms = 5000;
    cfg->prepare_lease_s = 600;
    snprintf(cfg->proxy_key, sizeof(cfg->proxy_key), "/etc/crane/proxy.key");
    cfg->proxy_timeout_ms = 3000;
    cfg->proxy_start_ms = 120000;
    snprintf(cfg->log_level, sizeof(cfg->log_level), "info");
    snprintf(cfg->migrate_tls, sizeof(cfg->migrate_tls), "auto");
    snprintf(cfg->qemu_conf, sizeof(cfg->qemu_conf), "/etc/libvirt/qemu.conf");
}

/* Whole milliseconds, 1 ms to a day. */
static int ms(uint32_t *dst, const char *v)
{
    unsigned long n;
    int rc = crn_conf_uint(v, 10, 1, 86400000UL, &n);

    if (rc == 0)
        *dst = (uint32_t)n;
    return rc;
}

/* "none" or empty turns an optional listener off. */
static int optional(char *dst, size_t len, const char *v)
{
    return crn_conf_text(dst, len, strcmp(v, "none") == 0 ? "" : v);
}

/* ADDR:PORT with a numeric address (IPv6 in brackets). */
static int http_address(const char *v)
{
    char ep[HD_TEXT + 8];
    struct crn_endpoint e;

    snprintf(ep, sizeof(ep), "tcp:%s", v);
    return crn_endpoint_parse(ep, &e);
}

/* The ` model:MODEL` ending V (cut off in the copy WHAT) into G. */
static int gpu_model(struct hd_gpu_conf *g, char *what)
{
    char *m = strstr(what, " model:");
    size_t n;

    if (!m)
        return 0;
    n = strlen(m + 7);
    if (n == 0 || n >= sizeof(g->model) ||
        strspn(m + 7, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                      "0123456789_.-") != n)
        return -EINVAL;
    memcpy(g->model, m + 7, n + 1);
    while (m > what && m[-1] == ' ')
        m--;
    *m = '\0';
    return 0;
}

/* The ` mem:GIB` tag of WHAT (1 to 65536, cut out of it) into G. */
static int gpu_mem(struct hd_gpu_conf *g, char *what)
{
    char *m = strstr(what, " mem:"), *end;
    unsigned long v;

    if (!m)
        return 0;
    errno = 0;
    v = strtoul(m + 5, &end, 10);
    if (errno || end == m + 5 || (*end && *end != ' ') || v < 1 ||
        v > 65536 || m[5] < '0' || m[5] > '9')
        return -EINVAL;
    g->mem_gib = (uint32_t)v;
    memmove(m, end, strlen(end) + 1);
    return 0;
}

/* NAME pci:DDDD:BB:SS.F  or  NAME xml:FILE, then maybe model:MODEL and
 * mem:GIB */
static int gpu_line(struct hd_config *cfg, const char *v)
{
    struct hd_gpu_conf *g;
    const char *sp = strchr(v, ' ');
    char what[HD_TEXT + 80];
    size_t name_len;
    unsigned d, b, s, f;
    char tail;

    if (cfg->n_gpus >= HD_MAX_GPUS || !sp || strlen(sp) >= sizeof(what))
        return -EINVAL;
    name_len = (size_t)(sp - v);
    if (name_len == 0 || name_len >= sizeof(g->name) ||
        strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                  "0123456789_-") != name_len)
        return -EINVAL;
    g = &cfg->gpus[cfg->n_gpus];
    memset(g, 0, sizeof(*g));
    snprintf(what, sizeof(what), "%s", sp + strspn(sp, " "));
    if (gpu_mem(g, what) < 0 || gpu_model(g, what) < 0)
        return -EINVAL;
    memcpy(g->name, v, name_len);
    for (size_t i = 0; i < cfg->n_gpus; i++)
        if (strcmp(cfg->gpus[i].name, g->name) == 0)
            return -EINVAL;
    if (strncmp(what, "pci:", 4) == 0) {
        if (sscanf(what + 4, "%4x:%2x:%2x.%1x%c", &d, &b, &s, &f, &tail) != 4 ||
            strlen(what + 4) != 12 || s > 31 || f > 7)
            return -EINVAL;
        snprintf(g->pci, sizeof(g->pci), "%04x:%02x:%02x.%x", d, b, s, f);
    } else if (strncmp(what, "xml:", 4) == 0 && what[4] == '/') {
        if (crn_conf_text(g->xml_file, sizeof(g->xml_file), what + 4) < 0)
            return -EINVAL;
    } else {
        return -EINVAL;
    }
    cfg->n_gpus++;
    return 0;
}

/* The migration's own settings: 1 when KEY is none of them, else 0 or
 * -EINVAL with *HINT set. */
static int migrate_setting(struct hd_config *cfg, const char *key,
                           const char *v, const char **hint)
{
    if (strcmp(key, "migrate_tls") == 0) {
        *hint = "auto, on or off";
        return strcmp(v, "auto") == 0 || strcmp(v, "on") == 0 ||
                       strcmp(v, "off") == 0
                   ? crn_conf_text(cfg->migrate_tls,
                                   sizeof(cfg->migrate_tls), v)
                   : -EINVAL;
    }
    if (strcmp(key, "qemu_conf") == 0) {
        *hint = "an absolute path";
        return v[0] == '/'
                   ? crn_conf_text(cfg->qemu_conf, sizeof(cfg->qemu_conf), v)
                   : -EINVAL;
    }
    return 1;
}

int hd_config_set(struct hd_config *cfg, const char *key, const char *v,
                  char *why, size_t why_len)
{
    struct crn_endpoint ep;
    const char *hint = "";
    unsigned long n;
    int rc;

    if ((rc = migrate_setting(cfg, key, v, &hint)) != 1) {
        /* migrate_tls or qemu_conf: rc and hint are set */
    } else if (strcmp(key, "uri") == 0) {
        rc = *v ? crn_conf_text(cfg->uri, sizeof(cfg->uri), v) : -EINVAL;
        hint = "a hypervisor URI, e.g. qemu:///system";
    } else if (strcmp(key, "backend") == 0) {
        rc = strcmp(v, "libvirt") == 0 || strcmp(v, "libxl") == 0
                 ? crn_conf_text(cfg->backend, sizeof(cfg->backend), v)
                 : -EINVAL;
        hint = "libvirt or libxl";
    } else if (strcmp(key, "host_name") == 0) {
        rc = *v && strlen(v) < 256 ? crn_conf_text(cfg->host_name,
                                          sizeof(cfg->host_name), v)
                                   : -EINVAL;
    } else if (strcmp(key, "control") == 0) {
        rc = crn_endpoint_parse(v, &ep) == 0 && ep.kind == CRN_EP_UNIX
                 ? crn_conf_text(cfg->control, sizeof(cfg->control), v)
                 : -EINVAL;
        hint = "unix:PATH";
    } else if (strcmp(key, "control_mode") == 0) {
        rc = crn_conf_uint(v, 8, 0, 0777, &n);
        if (rc == 0)
            cfg->control_mode = (unsigned)n;
        hint = "an octal file mode";
    } else if (strcmp(key, "peer_listen") == 0) {
        rc = strcmp(v, "none") == 0 || (crn_endpoint_parse(v, &ep) == 0 &&
                                        ep.kind == CRN_EP_TCP)
                 ? optional(cfg->peer_listen, sizeof(cfg->peer_listen), v)
                 : -EINVAL;
        hint = "tcp:ADDRESS:PORT or none";
    } else if (strcmp(key, "peer_port") == 0) {
        rc = crn_conf_uint(v, 10, 1, 65535, &n);
        if (rc == 0)
            cfg->peer_port = (uint16_t)n;
        hint = "1-65535";
    } else if (strcmp(key, "peer_key") == 0) {
        rc = strcmp(v, "none") == 0 || v[0] == '/'
                 ? optional(cfg->peer_key, sizeof(cfg->peer_key), v)
                 : -EINVAL;
        hint = "an absolute path, or none (peers unauthenticated)";
    } else if (strcmp(key, "guest_key") == 0) {
        rc = strcmp(v, "none") == 0 || v[0] == '/'
                 ? optional(cfg->guest_key, sizeof(cfg->guest_key), v)
                 : -EINVAL;
        hint = "an absolute path, or none";
    } else if ((rc = crn_tls_conf_setting(key, v, cfg->tls, sizeof(cfg->tls),
                                          cfg->pki_dir, sizeof(cfg->pki_dir),
                                          &hint)) != 1) {
        /* tls or pki_dir: rc and hint are set */
    } else if (strcmp(key, "http") == 0) {
        rc = strcmp(v, "none") == 0 || http_address(v) == 0
                 ? optional(cfg->http, sizeof(cfg->http), v)
                 : -EINVAL;
        hint = "ADDRESS:PORT or none";
    } else if (strcmp(key, "web_config") == 0) {
        rc = strcmp(v, "none") == 0 || v[0] == '/'
                 ? optional(cfg->web_config, sizeof(cfg->web_config), v)
                 : -EINVAL;
        hint = "an absolute path (exporter-toolkit's web config), or none";
    } else if (strcmp(key, "http_allow_plain") == 0) {
        rc = strcmp(v, "yes") == 0 || strcmp(v, "no") == 0 ? 0 : -EINVAL;
        cfg->http_allow_plain = strcmp(v, "yes") == 0;
        hint = "yes or no";
    } else if (strcmp(key, "history") == 0) {
        rc = v[0] == '/' || strcmp(v, ":memory:") == 0
                 ? crn_conf_text(cfg->history, sizeof(cfg->history), v)
                 : -EINVAL;
        hint = "an absolute path";
    } else if (strcmp(key, "history_keep_days") == 0) {
        rc = crn_conf_uint(v, 10, 0, 36500, &n);
        if (rc == 0)
            cfg->history_keep_days = (uint32_t)n;
        hint = "days, 0 (keep all) to 36500";
    } else if (strcmp(key, "channel") == 0) {
        rc = *v ? crn_conf_text(cfg->channel, sizeof(cfg->channel), v) : -EINVAL;
    } else if (strcmp(key, "gpu") == 0) {
        rc = gpu_line(cfg, v);
        hint = "NAME pci:DDDD:BB:SS.F or NAME xml:/PATH, unique names, "
               "at most 16";
    } else if (strcmp(key, "detach_timeout_ms") == 0) {
        rc = ms(&cfg->detach_timeout_ms, v);
    } else if (strcmp(key, "attach_timeout_ms") == 0) {
        rc = ms(&cfg->attach_timeout_ms, v);
    } else if (strcmp(key, "prepare_deadline_ms") == 0) {
        rc = ms(&cfg->prepare_deadline_ms, v);
    } else if (strcmp(key, "resume_deadline_ms") == 0) {
        rc = ms(&cfg->resume_deadline_ms, v);
    } else if (strcmp(key, "gpu_retry_ms") == 0) {
        rc = ms(&cfg->gpu_retry_ms, v);
    } else if (strcmp(key, "prepare_lease_s") == 0) {
        rc = crn_conf_uint(v, 10, 0, HD_LEASE_MAX_S, &n);
        if (rc == 0)
            cfg->prepare_lease_s = (uint32_t)n;
        hint = "seconds, 0 (no lease) to 604800";
    } else if (strcmp(key, "proxy_domain") == 0) {
        rc = strlen(v) <= 255 ? optional(cfg->proxy_domain,
                                         sizeof(cfg->proxy_domain), v)
                              : -EINVAL;
        hint = "a domain name of this host, or none";
    } else if (strcmp(key, "proxy") == 0) {
        rc = strcmp(v, "none") == 0 || crn_endpoint_parse(v, &ep) == 0
                 ? optional(cfg->proxy, sizeof(cfg->proxy), v)
                 : -EINVAL;
        hint = "tcp:HOST:PORT (or unix:PATH), or none";
    } else if (strcmp(key, "proxy_key") == 0) {
        rc = strcmp(v, "none") == 0 || v[0] == '/'
                 ? optional(cfg->proxy_key, sizeof(cfg->proxy_key), v)
                 : -EINVAL;
        hint = "an absolute path, or none (the proxy does not authenticate)";
    } else if (strcmp(key, "proxy_timeout_ms") == 0) {
        rc = ms(&cfg->proxy_timeout_ms, v);
    } else if (strcmp(key, "proxy_start_ms") == 0) {
        rc = ms(&cfg->proxy_start_ms, v);
    } else if (strcmp(key, "proxy_shm_mb") == 0) {
        unsigned long n;
        /* ivshmem's memory is a power of two. */
        rc = crn_conf_uint(v, 10, 0, 1024, &n);
        if (rc == 0 && n & (n - 1))
            rc = -EINVAL;
        if (rc == 0)
            cfg->proxy_shm_mb = (uint32_t)n;
        hint = "MiB, a power of two up to 1024, or 0 (none)";
    } else if (strcmp(key, "log_level") == 0) {
        rc = strcmp(v, "error") == 0 || strcmp(v, "warn") == 0 ||
                     strcmp(v, "info") == 0 || strcmp(v, "debug") == 0
                 ? crn_conf_text(cfg->log_level, sizeof(cfg->log_level), v)
                 : -EINVAL;
        hint = "error, warn, info or debug";
    } else {
        snprintf(why, why_len, "unknown key '%s'", key);
        return -EINVAL;
    }
    if (rc < 0 && strstr(key, "_ms"))
        hint = "milliseconds, 1 to 86400000";
    return rc < 0 ? crn_conf_bad(why, why_len, key, v, hint) : 0;
}

static int set_cb(void *arg, const char *key, const char *value, char *why,
                  size_t why_len)
{
    return hd_config_set(arg, key, value, why, why_len);
}

int hd_config_load(struct hd_config *cfg, const char *path, int must_exist,
                   char *why, size_t why_len)
{
    return crn_conf_read(path, must_exist, set_cb, cfg, why, why_len);
}

void hd_config_print(const struct hd_config *c)
{
    printf("uri = %s\nbackend = %s\nhost_name = %s\ncontrol = %s\n"
           "control_mode = %04o\npeer_listen = %s\npeer_port = %u\n"
           "peer_key = %s\nguest_key = %s\ntls = %s\npki_dir = %s\n"
           "http = %s\nweb_config = %s\nhttp_allow_plain = %s\n"
           "history = %s\n"
           "history_keep_days = %u\nchannel = %s\n",
           c->uri, c->backend, c->host_name, c->control, c->control_mode,
           *c->peer_listen ? c->peer_listen : "none", c->peer_port,
           *c->peer_key ? c->peer_key : "none",
           *c->guest_key ? c->guest_key : "none", c->tls, c->pki_dir,
           *c->http ? c->http : "none",
           *c->web_config ? c->web_config : "none",
           c->http_allow_plain ? "yes" : "no", c->history, c->history_keep_days, c->channel);
    for (size_t i = 0; i < c->n_gpus; i++) {
        printf("gpu = %s %s%s%s%s", c->gpus[i].name,
               *c->gpus[i].pci ? "pci:" : "xml:",
               *c->gpus[i].pci ? c->gpus[i].pci : c->gpus[i].xml_file,
               *c->gpus[i].model ? " model:" : "", c->gpus[i].model);
        if (c->gpus[i].mem_gib)
            printf(" mem:%u", c->gpus[i].mem_gib);
        putchar('\n');
    }
    printf("detach_timeout_ms = %u\nattach_timeout_ms = %u\n"
           "prepare_deadline_ms = %u\nresume_deadline_ms = %u\n"
           "gpu_retry_ms = %u\nprepare_lease_s = %u\n",
           c->detach_timeout_ms, c->attach_timeout_ms,
           c->prepare_deadline_ms, c->resume_deadline_ms, c->gpu_retry_ms,
           c->prepare_lease_s);
    printf("proxy_domain = %s\nproxy = %s\nproxy_key = %s\n"
           "proxy_timeout_ms = %u\nproxy_start_ms = %u\nproxy_shm_mb = %u\n"
           "log_level = %s\nmigrate_tls = %s\nqemu_conf = %s\n",
           *c->proxy_domain ? c->proxy_domain : "none",
           *c->proxy ? c->proxy : "none",
           *c->proxy_key ? c->proxy_key : "none", c->proxy_timeout_ms,
           c->proxy_start_ms, c->proxy_shm_mb, c->log_level, c->migrate_tls,
           c->qemu_conf);
}
