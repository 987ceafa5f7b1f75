/* crane-hostd's settings: defaults, config file, command-line overrides. */
#include "config.h"

#include "proto/conffile.h"
#include "proto/conftable.h"
#include "proto/endpoint.h"
#include "proto/log.h"
#include "proto/tls.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ADDR:PORT with a numeric address (IPv6 in brackets). */
static int http_address(const char *v)
{
    char ep[HD_TEXT + 8];

    snprintf(ep, sizeof(ep), "tcp:%s", v);
    return crn_conf_endpoint(ep);
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

static int set_gpu(void *arg, const char *key, const char *v,
                   const char **hint)
{
    (void)key;
    (void)hint;
    return gpu_line(arg, v);
}

static void print_gpus(const void *arg, const char *key)
{
    const struct hd_config *c = arg;

    for (size_t i = 0; i < c->n_gpus; i++) {
        printf("%s = %s %s%s%s%s", key, c->gpus[i].name,
               *c->gpus[i].pci ? "pci:" : "xml:",
               *c->gpus[i].pci ? c->gpus[i].pci : c->gpus[i].xml_file,
               *c->gpus[i].model ? " model:" : "", c->gpus[i].model);
        if (c->gpus[i].mem_gib)
            printf(" mem:%u", c->gpus[i].mem_gib);
        putchar('\n');
    }
}

static int set_tls(void *arg, const char *key, const char *v,
                   const char **hint)
{
    struct hd_config *cfg = arg;

    return crn_tls_conf_setting(key, v, cfg->tls, sizeof(cfg->tls),
                                cfg->pki_dir, sizeof(cfg->pki_dir), hint);
}

/* ivshmem's memory is a power of two. */
static int set_shm_mb(void *arg, const char *key, const char *v,
                      const char **hint)
{
    struct hd_config *cfg = arg;
    unsigned long n;
    int rc = crn_conf_uint(v, 10, 0, 1024, &n);

    (void)key;
    (void)hint;
    if (rc == 0 && n & (n - 1))
        rc = -EINVAL;
    if (rc == 0)
        cfg->proxy_shm_mb = (uint32_t)n;
    return rc;
}

static void print_shm_mb(const void *arg, const char *key)
{
    printf("%s = %u\n", key, ((const struct hd_config *)arg)->proxy_shm_mb);
}

static int unix_endpoint(const char *v)
{
    struct crn_endpoint ep;

    return crn_endpoint_parse(v, &ep) == 0 && ep.kind == CRN_EP_UNIX
               ? 0
               : -EINVAL;
}

static int tcp_endpoint(const char *v)
{
    struct crn_endpoint ep;

    return crn_endpoint_parse(v, &ep) == 0 && ep.kind == CRN_EP_TCP
               ? 0
               : -EINVAL;
}

static int history_path(const char *v)
{
    return v[0] == '/' || strcmp(v, ":memory:") == 0 ? 0 : -EINVAL;
}

#define FIELD(f)                                                            \
    .off = offsetof(struct hd_config, f),                                    \
    .size = sizeof(((struct hd_config *)0)->f)
#define TEXT(k, f, fl, chk, d, h, dc)                                      \
    {.key = k, .type = CRN_CONF_TEXT, FIELD(f), .flags = fl, .check = chk,   \
     .dflt = d, .hint = h, .doc = dc}
#define UINT(k, f, lo, hi, d, h, dc)                                       \
    {.key = k, .type = CRN_CONF_UINT, FIELD(f), .min = lo, .max = hi,        \
     .dflt = d, .hint = h, .doc = dc}
#define MS(k, f, d, dc)                                                    \
    UINT(k, f, 1, 86400000UL, d, "milliseconds, 1 to 86400000", dc)
#define CHOICE(k, f, c, d, h, dc)                                          \
    {.key = k, .type = CRN_CONF_CHOICE, FIELD(f), .choices = c, .dflt = d,   \
     .hint = h, .doc = dc}
#define ABS_OR_NONE(k, f, d, h, dc)                                        \
    TEXT(k, f, CRN_CONF_NONE, crn_conf_abs_path, d, h, dc)
#define STR(x) #x
#define XSTR(x) STR(x)

static const struct crn_conf_key rows[] = {
    TEXT("uri", uri, 0, crn_conf_nonempty, "qemu:///system",
         "a hypervisor URI, e.g. qemu:///system", "the hypervisor's URI"),
    CHOICE("backend", backend, "libvirt|libxl", "libvirt", "libvirt or libxl",
           "the hypervisor backend"),
    TEXT("host_name", host_name, 0, crn_conf_nonempty, NULL, NULL,
         "this host in logs, history, peers (default: the hostname)"),
    TEXT("control", control, 0, unix_endpoint, "unix:/run/crane/hostd.sock",
         "unix:PATH", "crane-migrate's endpoint"),
    {.key = "control_mode", .type = CRN_CONF_MODE, FIELD(control_mode),
     .dflt = "0600", .hint = "an octal file mode", .doc = "its file mode"},
    TEXT("peer_listen", peer_listen, CRN_CONF_NONE, tcp_endpoint,
         "tcp:0.0.0.0:" XSTR(HD_PEER_PORT), "tcp:ADDRESS:PORT or none",
         "where other hosts reach this one"),
    UINT("peer_port", peer_port, 1, 65535, XSTR(HD_PEER_PORT), "1-65535",
         "a peer's port when only its host is known"),
    ABS_OR_NONE("peer_key", peer_key, "/etc/crane/hostd.key",
                "an absolute path, or none (peers unauthenticated)",
                "the peers' shared key file"),
    ABS_OR_NONE("guest_key", guest_key, NULL, "an absolute path, or none",
                "the key of tcp: guest channels"),
    {.key = "tls", .type = CRN_CONF_SPECIAL, FIELD(tls), .set = set_tls,
     .dflt = "auto", .doc = "TLS on the TCP links: auto, x509, psk, none"},
    {.key = "pki_dir", .type = CRN_CONF_SPECIAL, FIELD(pki_dir),
     .set = set_tls, .dflt = CRN_TLS_PKI_DEFAULT,
     .doc = "x509 files in libvirt's layout"},
    {.key = "http", .type = CRN_CONF_TEXT, FIELD(http),
     .flags = CRN_CONF_NONE, .check = http_address, .dflt = "127.0.0.1:7411",
     .hint = "ADDRESS:PORT or none", .doc = "the dashboard's address"},
    ABS_OR_NONE("web_config", web_config, NULL,
                "an absolute path (exporter-toolkit's web config), or none",
                "the dashboard's HTTPS and credentials"),
    {.key = "http_allow_plain", .type = CRN_CONF_YESNO,
     FIELD(http_allow_plain), .dflt = "no", .hint = "yes or no",
     .doc = "plain HTTP on a non-loopback address"},
    TEXT("history", history, 0, history_path, "/var/lib/crane/hostd.db",
         "an absolute path", "the SQLite file of migrations"),
    UINT("history_keep_days", history_keep_days, 0, 36500, "365",
         "days, 0 (keep all) to 36500", "finished migrations kept"),
    TEXT("channel", channel, 0, crn_conf_nonempty, "org.crane.guest.0", NULL,
         "the guest channel's virtio-serial name"),
    {.key = "gpu", .type = CRN_CONF_SPECIAL, .set = set_gpu,
     .print = print_gpus,
     .hint = "NAME pci:DDDD:BB:SS.F or NAME xml:/PATH, then model:MODEL "
             "and mem:GIB, unique names, "
             "at most 16",
     .doc = "a GPU of this host (a line each)"},
    MS("detach_timeout_ms", detach_timeout_ms, "10000",
       "for the guest to let the GPU go"),
    MS("attach_timeout_ms", attach_timeout_ms, "10000",
       "for a GPU to attach"),
    MS("prepare_deadline_ms", prepare_deadline_ms, "30000",
       "the guest's deadline for a prepare"),
    MS("resume_deadline_ms", resume_deadline_ms, "60000",
       "the guest's deadline for a resume (and an abort)"),
    MS("gpu_retry_ms", gpu_retry_ms, "5000",
       "VMs waiting for a GPU: retry period"),
    UINT("prepare_lease_s", prepare_lease_s, 0, HD_LEASE_MAX_S, "600",
         "seconds, 0 (no lease) to 604800",
         "a prepared VM is aborted after; 0: never"),
    TEXT("proxy_domain", proxy_domain, CRN_CONF_NONE | CRN_CONF_EMPTY, NULL,
         NULL, "a domain name of this host, or none",
         "the proxy domain's name here"),
    TEXT("proxy", proxy, CRN_CONF_NONE, crn_conf_endpoint, NULL,
         "tcp:HOST:PORT (or unix:PATH), or none",
         "the proxy's endpoint as guests reach it"),
    ABS_OR_NONE("proxy_key", proxy_key, "/etc/crane/proxy.key",
                "an absolute path, or none (the proxy does not "
                "authenticate)",
                "the key crane-proxy was given"),
    MS("proxy_timeout_ms", proxy_timeout_ms, "3000",
       "one probe of the proxy: connect and handshake"),
    MS("proxy_start_ms", proxy_start_ms, "120000",
       "for a proxy domain just started to answer"),
    {.key = "proxy_shm_mb", .type = CRN_CONF_SPECIAL, .set = set_shm_mb,
     .print = print_shm_mb, .dflt = "0",
     .hint = "MiB, a power of two up to 1024, or 0 (none)",
     .doc = "ivshmem area for a VM remoting to the proxy domain here"},
    CHOICE("log_level", log_level, "error|warn|info|debug", "info",
           "error, warn, info or debug", "the least severe message logged"),
    CHOICE("migrate_tls", migrate_tls, "auto|on|off", "auto",
           "auto, on or off", "libvirt's TLS for the VM's memory"),
    TEXT("qemu_conf", qemu_conf, 0, crn_conf_abs_path,
         "/etc/libvirt/qemu.conf", "an absolute path",
         "the qemu.conf migrate_tls = auto reads"),
};

const struct crn_conf_table hd_config_table = {
    rows, sizeof(rows) / sizeof(*rows), "unknown key '%s'"};

void hd_config_defaults(struct hd_config *cfg)
{
    char why[256];

    /* A default its own row refuses is a bug of the table. */
    if (crn_conf_defaults(&hd_config_table, cfg, sizeof(*cfg), why, sizeof(why)) < 0)
        CRN_ERROR("settings table: %s", why);
    if (gethostname(cfg->host_name, sizeof(cfg->host_name) - 1) < 0 ||
        !cfg->host_name[0])
        snprintf(cfg->host_name, sizeof(cfg->host_name), "localhost");
}

int hd_config_set(struct hd_config *cfg, const char *key, const char *v,
                  char *why, size_t why_len)
{
    return crn_conf_set(&hd_config_table, cfg, key, v, why, why_len);
}

int hd_config_load(struct hd_config *cfg, const char *path, int must_exist,
                   char *why, size_t why_len)
{
    return crn_conf_load(&hd_config_table, cfg, path, must_exist, why,
                         why_len);
}

void hd_config_print(const struct hd_config *cfg)
{
    crn_conf_print(&hd_config_table, cfg);
}
