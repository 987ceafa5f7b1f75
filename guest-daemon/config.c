/* crane-guestd's settings: defaults, config file, command-line overrides. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/conffile.h"
#include "proto/conftable.h"
#include "proto/tls.h"
#include "proto/endpoint.h"
#include "proto/log.h"

/* unix:PATH or PATH: an absolute socket path (sun_path's 108 bytes). */
static int set_listen(void *arg, const char *key, const char *v,
                      const char **hint)
{
    struct gd_config *cfg = arg;

    (void)key;
    (void)hint;
    if (strncmp(v, "unix:", 5) == 0)
        v += 5;
    return v[0] == '/' && strlen(v) < 108
               ? crn_conf_text(cfg->listen, sizeof(cfg->listen), v)
               : -EINVAL;
}

/* A group name, or empty for the daemon's group. */
static int group_name(const char *v)
{
    return strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                     "0123456789_.-") == strlen(v) && v[0] != '-'
               ? 0
               : -EINVAL;
}

static int set_tls(void *arg, const char *key, const char *v,
                   const char **hint)
{
    struct gd_config *cfg = arg;

    return crn_tls_conf_setting(key, v, cfg->tls, sizeof(cfg->tls),
                                cfg->pki_dir, sizeof(cfg->pki_dir), hint);
}

/* A virtio-serial port's path, or an endpoint to listen on (tests). */
static int endpoint_or_path(const char *v)
{
    if (strncmp(v, "unix:", 5) == 0 || strncmp(v, "tcp:", 4) == 0 ||
        strncmp(v, "vsock:", 6) == 0)
        return crn_conf_endpoint(v);
    return crn_conf_abs_path(v);
}

/* Whitespace-separated words into a fixed table. */
static int words(char *table, size_t width, size_t max, size_t *n,
                 const char *v)
{
    char copy[1024];
    char *save = NULL;

    if (strlen(v) >= sizeof(copy))
        return -ENAMETOOLONG;
    snprintf(copy, sizeof(copy), "%s", v);
    *n = 0;
    for (char *w = strtok_r(copy, " \t,", &save); w;
         w = strtok_r(NULL, " \t,", &save)) {
        if (*n == max || strlen(w) >= width)
            return -E2BIG;
        snprintf(table + *n * width, width, "%s", w);
        (*n)++;
    }
    return 0;
}

/* A module name as modprobe takes it: no option, no path. */
static int check_modules(const struct gd_config *cfg)
{
    for (size_t i = 0; i < cfg->n_modules; i++) {
        const char *m = cfg->modules[i];
        if (m[0] == '-')
            return -EINVAL;
        for (; *m; m++)
            if (!isalnum((unsigned char)*m) && *m != '_' && *m != '-')
                return -EINVAL;
    }
    return 0;
}

static int set_modules(void *arg, const char *key, const char *v,
                       const char **hint)
{
    struct gd_config *cfg = arg;
    int rc = words(&cfg->modules[0][0], sizeof(cfg->modules[0]),
                   GD_MAX_MODULES, &cfg->n_modules, v);

    (void)key;
    (void)hint;
    return rc < 0 ? rc : check_modules(cfg);
}

static int set_gpu_devices(void *arg, const char *key, const char *v,
                           const char **hint)
{
    struct gd_config *cfg = arg;

    (void)key;
    (void)hint;
    return words(&cfg->gpu_devices[0][0], sizeof(cfg->gpu_devices[0]),
                 GD_MAX_DEVICES, &cfg->n_gpu_devices, v);
}

static int set_mode(void *arg, const char *key, const char *v,
                    const char **hint)
{
    struct gd_config *cfg = arg;

    (void)key;
    (void)hint;
    if (strcmp(v, "live") == 0)
        cfg->mode = GD_MODE_LIVE;
    else if (strcmp(v, "offline") == 0)
        cfg->mode = GD_MODE_OFFLINE;
    else
        return -EINVAL;
    return 0;
}

static void print_words(const void *arg, const char *key)
{
    const struct gd_config *cfg = arg;
    int modules = strcmp(key, "modules") == 0;
    size_t n = modules ? cfg->n_modules : cfg->n_gpu_devices;

    printf("%s =", key);
    for (size_t i = 0; i < n; i++)
        printf(" %s", modules ? cfg->modules[i] : cfg->gpu_devices[i]);
    printf("\n");
}

static void print_mode(const void *arg, const char *key)
{
    const struct gd_config *cfg = arg;

    printf("%s = %s\n", key, cfg->mode == GD_MODE_OFFLINE ? "offline" : "live");
}

#define TEXT(k, f, fl, chk, d, h, dc)                                      \
    {.key = k, .type = CRN_CONF_TEXT, .off = offsetof(struct gd_config, f),  \
     .size = sizeof(((struct gd_config *)0)->f), .flags = fl, .check = chk,  \
     .dflt = d, .hint = h, .doc = dc}
#define UINT(k, f, lo, hi, d, h, dc)                                       \
    {.key = k, .type = CRN_CONF_UINT, .off = offsetof(struct gd_config, f),  \
     .size = sizeof(((struct gd_config *)0)->f), .min = lo, .max = hi,       \
     .dflt = d, .hint = h, .doc = dc}
#define MS(k, f, lo, d, h, dc) UINT(k, f, lo, 24ul * 3600 * 1000, d, h, dc)
#define MODE(k, f, d, h, dc)                                               \
    {.key = k, .type = CRN_CONF_MODE, .off = offsetof(struct gd_config, f),  \
     .size = sizeof(((struct gd_config *)0)->f), .dflt = d, .hint = h,       \
     .doc = dc}
#define CHOICE(k, f, c, d, h, dc)                                          \
    {.key = k, .type = CRN_CONF_CHOICE, .off = offsetof(struct gd_config, f),\
     .size = sizeof(((struct gd_config *)0)->f), .choices = c, .dflt = d,    \
     .hint = h, .doc = dc}
/* A special key printed as the text field F, or by PR. */
#define SPECIAL_TEXT(k, f, fn, d, h, dc)                                   \
    {.key = k, .type = CRN_CONF_SPECIAL, .off = offsetof(struct gd_config, f),\
     .size = sizeof(((struct gd_config *)0)->f), .set = fn, .dflt = d,       \
     .hint = h, .doc = dc}
#define SPECIAL(k, fn, pr, d, h, dc)                                       \
    {.key = k, .type = CRN_CONF_SPECIAL, .set = fn, .print = pr, .dflt = d,  \
     .hint = h, .doc = dc}

static const struct crn_conf_key rows[] = {
    SPECIAL_TEXT("listen", listen, set_listen, "/run/crane/guest.sock",
            "an absolute socket path", "the shims' unix socket"),
    MODE("listen_mode", listen_mode, "0660", "octal, e.g. 0660",
         "the shims' socket's file mode"),
    TEXT("program_group", program_group, 0, group_name, "crane",
         "a group name, or empty for the daemon's group",
         "the shims' socket's group"),
    MS("register_timeout_ms", register_timeout_ms, 100, "5000",
       "milliseconds, at least 100", "a connection must register by then"),
    UINT("max_programs", max_programs, 1, 65536, "1024",
         "1 to 65536 connections", "connections on the shims' socket"),
    TEXT("host", host, 0, endpoint_or_path,
         "/dev/virtio-ports/org.crane.guest.0",
         "a port path, unix:PATH, tcp:HOST:PORT or vsock:CID:PORT",
         "the host channel"),
    TEXT("host_key", host_key, CRN_CONF_NONE | CRN_CONF_EMPTY,
         crn_conf_abs_path, NULL, "an absolute path to a key file, or none",
         "the host channel's shared key file"),
    SPECIAL_TEXT("tls", tls, set_tls, "auto", NULL, "a tcp: host channel's TLS"),
    SPECIAL_TEXT("pki_dir", pki_dir, set_tls, "/etc/pki", NULL,
            "x509 files, libvirt's layout"),
    MS("host_handshake_ms", host_handshake_ms, 100, "10000",
       "milliseconds, at least 100", "to authenticate on a keyed channel"),
    MS("host_idle_ms", host_idle_ms, 0, "600000", "milliseconds",
       "a host connection with nothing asked is closed after"),
    UINT("host_keepalive_s", host_keepalive_s, 0, 7200, "30",
         "seconds, 0 for off", "TCP keepalive idle time"),
    TEXT("control", control, CRN_CONF_NONE | CRN_CONF_EMPTY,
         crn_conf_endpoint, "unix:/run/crane/ctl.sock",
         "unix:PATH, tcp:HOST:PORT, vsock:CID:PORT or none",
         "cranectl's endpoint"),
    MODE("control_mode", control_mode, "0600", "octal, e.g. 0600",
         "its file mode"),
    TEXT("state_file", state_file, 0, crn_conf_abs_path,
         "/run/crane/guestd.state", "an absolute path",
         "what survives a restart"),
    TEXT("modprobe", modprobe, 0, crn_conf_nonempty, "/sbin/modprobe",
         "a command", "run as MODPROBE [-r] MODULE"),
    SPECIAL("modules", set_modules, print_words, NULL, "up to 16 module names",
            "unloaded in this order, loaded in reverse"),
    SPECIAL("gpu_device", set_gpu_devices, print_words, NULL, "up to 8 paths",
            "device nodes that must exist when the GPU is usable"),
    UINT("gpus", gpus, 1, 16, "1", "1 to 16", "GPUs the probe must count"),
    TEXT("vendor_lib", vendor_lib, 0, NULL, NULL, NULL,
         "the probed library; empty: every .icd's"),
    TEXT("vendors_dir", vendors_dir, 0, NULL, "/etc/OpenCL/vendors", NULL,
         "where .icd files are"),
    TEXT("pci_root", pci_root, 0, crn_conf_abs_path, "/sys/bus/pci/devices",
         "an absolute path", "PCI devices (ivshmem for shared areas)"),
    CHOICE("gpu_type", gpu_type, "gpu|cpu|accelerator|all|none", "gpu",
           "gpu, cpu, accelerator, all or none",
           "the devices probed; none: the device nodes alone"),
    TEXT("proxy", proxy, CRN_CONF_EMPTY, crn_conf_endpoint, NULL,
         "unix:PATH or tcp:HOST:PORT", "default proxy for live prepares"),
    SPECIAL("mode", set_mode, print_mode, "live", "live or offline",
            "default migration mode"),
    MS("prepare_deadline_ms", prepare_deadline_ms, 0, "30000",
       "milliseconds", "for the programs' part of a prepare"),
    MS("resume_deadline_ms", resume_deadline_ms, 0, "30000", "milliseconds",
       "for the programs' part of a resume"),
    MS("abort_deadline_ms", abort_deadline_ms, 0, "30000", "milliseconds",
       "for the programs' part of an abort"),
    MS("gpu_wait_ms", gpu_wait_ms, 0, "60000", "milliseconds",
       "how long a resume waits for the GPU"),
    MS("gpu_poll_ms", gpu_poll_ms, 10, "100", "milliseconds",
       "how often it looks"),
    MS("probe_timeout_ms", probe_timeout_ms, 0, "20000", "milliseconds",
       "one OpenCL probe"),
    MS("modprobe_timeout_ms", modprobe_timeout_ms, 0, "30000",
       "milliseconds", "one modprobe"),
    MS("reconnect_grace_ms", reconnect_grace_ms, 0, "5000", "milliseconds",
       "after a restart, for shims to return"),
    CHOICE("log_level", log_level, "error|warn|info|debug", "info",
           "error, warn, info or debug", "the least severe message logged"),
};

const struct crn_conf_table gd_config_table = {
    rows, sizeof(rows) / sizeof(*rows), "unknown setting '%s'"};

void gd_config_defaults(struct gd_config *cfg)
{
    char why[256];

    /* A default its own row refuses is a bug of the table. */
    if (crn_conf_defaults(&gd_config_table, cfg, sizeof(*cfg), why, sizeof(why)) < 0)
        CRN_ERROR("settings table: %s", why);
}

int gd_config_set(struct gd_config *cfg, const char *key, const char *v,
                  char *why, size_t why_len)
{
    return crn_conf_set(&gd_config_table, cfg, key, v, why, why_len);
}

void gd_config_print(const struct gd_config *cfg)
{
    crn_conf_print(&gd_config_table, cfg);
}

int gd_config_load(struct gd_config *cfg, const char *path, int must_exist,
                   char *why, size_t why_len)
{
    return crn_conf_load(&gd_config_table, cfg, path, must_exist, why,
                         why_len);
}
