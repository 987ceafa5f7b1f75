/* crane-guestd's settings: defaults, config file, command-line overrides. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/conffile.h"
#include "proto/tls.h"
#include "proto/endpoint.h"

void gd_config_defaults(struct gd_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    snprintf(cfg->listen, sizeof(cfg->listen), "/run/crane/guest.sock");
    cfg->listen_mode = 0660;
    snprintf(cfg->program_group, sizeof(cfg->program_group), "crane");
    cfg->register_timeout_ms = 5000;
    cfg->max_programs = 1024;
    cfg->host_handshake_ms = 10000;
    cfg->host_idle_ms = 600000;
    cfg->host_keepalive_s = 30;
    snprintf(cfg->host, sizeof(cfg->host),
             "/dev/virtio-ports/org.crane.guest.0");
    snprintf(cfg->control, sizeof(cfg->control), "unix:/run/crane/ctl.sock");
    snprintf(cfg->tls, sizeof(cfg->tls), "auto");
    snprintf(cfg->pki_dir, sizeof(cfg->pki_dir), "/etc/pki");
    cfg->control_mode = 0600;
    snprintf(cfg->state_file, sizeof(cfg->state_file),
             "/run/crane/guestd.state");
    snprintf(cfg->modprobe, sizeof(cfg->modprobe), "/sbin/modprobe");
    snprintf(cfg->vendors_dir, sizeof(cfg->vendors_dir),
             "/etc/OpenCL/vendors");
    snprintf(cfg->pci_root, sizeof(cfg->pci_root), "/sys/bus/pci/devices");
    snprintf(cfg->gpu_type, sizeof(cfg->gpu_type), "gpu");
    snprintf(cfg->log_level, sizeof(cfg->log_level), "info");
    cfg->mode = GD_MODE_LIVE;
    cfg->prepare_deadline_ms = 30000;
    cfg->resume_deadline_ms = 30000;
    cfg->abort_deadline_ms = 30000;
    cfg->gpu_wait_ms = 60000;
    cfg->gpus = 1;
    cfg->gpu_poll_ms = 100;
    cfg->probe_timeout_ms = 20000;
    cfg->modprobe_timeout_ms = 30000;
    cfg->reconnect_grace_ms = 5000;
}

static int ms(uint32_t *dst, const char *v)
{
    unsigned long n;
    int rc = crn_conf_uint(v, 10, 0, 24ul * 3600 * 1000, &n);

    if (rc == 0)
        *dst = (uint32_t)n;
    return rc;
}

static int file_mode(unsigned *dst, const char *v)
{
    unsigned long n;
    int rc = crn_conf_uint(v, 8, 0, 0777, &n);

    if (rc == 0)
        *dst = (unsigned)n;
    return rc;
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

static int endpoint_or_path(const char *v)
{
    struct crn_endpoint ep;

    if (strncmp(v, "unix:", 5) == 0 || strncmp(v, "tcp:", 4) == 0 ||
        strncmp(v, "vsock:", 6) == 0)
        return crn_endpoint_parse(v, &ep);
    return v[0] == '/' ? 0 : -EINVAL;
}

int gd_config_set(struct gd_config *cfg, const char *key, const char *v,
                  char *why, size_t why_len)
{
    struct crn_endpoint ep;
    int rc = -EINVAL;
    const char *hint = "";

    if (strcmp(key, "listen") == 0) {
        if (strncmp(v, "unix:", 5) == 0)
            v += 5;
        rc = v[0] == '/' && strlen(v) < 108 ? crn_conf_text(cfg->listen,
                                                    sizeof(cfg->listen), v)
                                            : -EINVAL;
        hint = "an absolute socket path";
    } else if (strcmp(key, "listen_mode") == 0) {
        rc = file_mode(&cfg->listen_mode, v);
        hint = "octal, e.g. 0660";
    } else if (strcmp(key, "program_group") == 0) {
        rc = strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                       "0123456789_.-") == strlen(v) && v[0] != '-'
                 ? crn_conf_text(cfg->program_group,
                                 sizeof(cfg->program_group), v)
                 : -EINVAL;
        hint = "a group name, or empty for the daemon's group";
    } else if (strcmp(key, "max_programs") == 0) {
        unsigned long n;
        rc = crn_conf_uint(v, 10, 1, 65536, &n);
        if (rc == 0)
            cfg->max_programs = (unsigned)n;
        hint = "1 to 65536 connections";
    } else if (strcmp(key, "host_keepalive_s") == 0) {
        unsigned long n;
        rc = crn_conf_uint(v, 10, 0, 7200, &n);
        if (rc == 0)
            cfg->host_keepalive_s = (uint32_t)n;
        hint = "seconds, 0 for off";
    } else if (strcmp(key, "host_key") == 0) {
        rc = !*v || strcmp(v, "none") == 0
                 ? (cfg->host_key[0] = '\0', 0)
             : v[0] == '/' ? crn_conf_text(cfg->host_key,
                                           sizeof(cfg->host_key), v)
                           : -EINVAL;
        hint = "an absolute path to a key file, or none";
    } else if ((rc = crn_tls_conf_setting(key, v, cfg->tls, sizeof(cfg->tls),
                                          cfg->pki_dir, sizeof(cfg->pki_dir),
                                          &hint)) != 1) {
        /* tls or pki_dir: rc and hint are set */
    } else if (strcmp(key, "host") == 0) {
        rc = endpoint_or_path(v);
        if (rc == 0)
            rc = crn_conf_text(cfg->host, sizeof(cfg->host), v);
        hint = "a port path, unix:PATH, tcp:HOST:PORT or vsock:CID:PORT";
    } else if (strcmp(key, "control") == 0) {
        rc = !*v || strcmp(v, "none") == 0 ? (cfg->control[0] = '\0', 0)
             : crn_endpoint_parse(v, &ep) == 0
                 ? crn_conf_text(cfg->control, sizeof(cfg->control), v)
                 : -EINVAL;
        hint = "unix:PATH, tcp:HOST:PORT, vsock:CID:PORT or none";
    } else if (strcmp(key, "control_mode") == 0) {
        rc = file_mode(&cfg->control_mode, v);
        hint = "octal, e.g. 0600";
    } else if (strcmp(key, "state_file") == 0) {
        rc = v[0] == '/' ? crn_conf_text(cfg->state_file, sizeof(cfg->state_file), v)
                         : -EINVAL;
        hint = "an absolute path";
    } else if (strcmp(key, "modprobe") == 0) {
        rc = *v ? crn_conf_text(cfg->modprobe, sizeof(cfg->modprobe), v) : -EINVAL;
        hint = "a command";
    } else if (strcmp(key, "modules") == 0) {
        rc = words(&cfg->modules[0][0], sizeof(cfg->modules[0]),
                   GD_MAX_MODULES, &cfg->n_modules, v);
        if (rc == 0)
            rc = check_modules(cfg);
        hint = "up to 16 module names";
    } else if (strcmp(key, "gpu_device") == 0) {
        rc = words(&cfg->gpu_devices[0][0], sizeof(cfg->gpu_devices[0]),
                   GD_MAX_DEVICES, &cfg->n_gpu_devices, v);
        hint = "up to 8 paths";
    } else if (strcmp(key, "vendor_lib") == 0) {
        rc = crn_conf_text(cfg->vendor_lib, sizeof(cfg->vendor_lib), v);
    } else if (strcmp(key, "vendors_dir") == 0) {
        rc = crn_conf_text(cfg->vendors_dir, sizeof(cfg->vendors_dir), v);
    } else if (strcmp(key, "pci_root") == 0) {
        rc = v[0] == '/' ? crn_conf_text(cfg->pci_root, sizeof(cfg->pci_root), v)
                         : -EINVAL;
        hint = "an absolute path";
    } else if (strcmp(key, "gpus") == 0) {
        char *end;
        unsigned long n = strtoul(v, &end, 10);

        rc = *v >= '1' && *v <= '9' && !*end && n <= 16 ? 0 : -EINVAL;
        if (rc == 0)
            cfg->gpus = (unsigned)n;
        hint = "1 to 16";
    } else if (strcmp(key, "gpu_type") == 0) {
        rc = strcmp(v, "gpu") == 0 || strcmp(v, "cpu") == 0 ||
                     strcmp(v, "accelerator") == 0 ||
                     strcmp(v, "all") == 0 || strcmp(v, "none") == 0
                 ? crn_conf_text(cfg->gpu_type, sizeof(cfg->gpu_type), v)
                 : -EINVAL;
        hint = "gpu, cpu, accelerator, all or none";
    } else if (strcmp(key, "proxy") == 0) {
        rc = !*v || crn_endpoint_parse(v, &ep) == 0
                 ? crn_conf_text(cfg->proxy, sizeof(cfg->proxy), v)
                 : -EINVAL;
        hint = "unix:PATH or tcp:HOST:PORT";
    } else if (strcmp(key, "mode") == 0) {
        rc = 0;
        if (strcmp(v, "live") == 0)
            cfg->mode = GD_MODE_LIVE;
        else if (strcmp(v, "offline") == 0)
            cfg->mode = GD_MODE_OFFLINE;
        else
            rc = -EINVAL;
        hint = "live or offline";
    } else if (strcmp(key, "log_level") == 0) {
        rc = strcmp(v, "error") == 0 || strcmp(v, "warn") == 0 ||
                     strcmp(v, "info") == 0 || strcmp(v, "debug") == 0
                 ? crn_conf_text(cfg->log_level, sizeof(cfg->log_level), v)
                 : -EINVAL;
        hint = "error, warn, info or debug";
    } else {
        static const struct {
            const char *key;
            size_t off;
        } times[] = {
            {"prepare_deadline_ms",
             offsetof(struct gd_config, prepare_deadline_ms)},
            {"resume_deadline_ms",
             offsetof(struct gd_config, resume_deadline_ms)},
            {"abort_deadline_ms",
             offsetof(struct gd_config, abort_deadline_ms)},
            {"gpu_wait_ms", offsetof(struct gd_config, gpu_wait_ms)},
            {"gpu_poll_ms", offsetof(struct gd_config, gpu_poll_ms)},
            {"probe_timeout_ms",
             offsetof(struct gd_config, probe_timeout_ms)},
            {"modprobe_timeout_ms",
             offsetof(struct gd_config, modprobe_timeout_ms)},
            {"reconnect_grace_ms",
             offsetof(struct gd_config, reconnect_grace_ms)},
            {"register_timeout_ms",
             offsetof(struct gd_config, register_timeout_ms)},
            {"host_handshake_ms",
             offsetof(struct gd_config, host_handshake_ms)},
            {"host_idle_ms", offsetof(struct gd_config, host_idle_ms)},
        };
        for (size_t i = 0; i < sizeof(times) / sizeof(*times); i++) {
            if (strcmp(key, times[i].key) == 0) {
                rc = ms((uint32_t *)((char *)cfg + times[i].off), v);
                hint = "milliseconds";
                if (rc == 0 && strcmp(key, "gpu_poll_ms") == 0 &&
                    cfg->gpu_poll_ms < 10)
                    rc = -EINVAL;
                /* 0 would close every connection at once. */
                if (rc == 0 && (strcmp(key, "register_timeout_ms") == 0 ||
                                strcmp(key, "host_handshake_ms") == 0) &&
                    *(uint32_t *)((char *)cfg + times[i].off) < 100) {
                    rc = -EINVAL;
                    hint = "milliseconds, at least 100";
                }
                break;
            }
        }
        if (!*hint) {
            snprintf(why, why_len, "unknown setting '%s'", key);
            return -EINVAL;
        }
    }
    return rc < 0 ? crn_conf_bad(why, why_len, key, v, hint) : 0;
}

static int set_cb(void *arg, const char *key, const char *value, char *why,
                  size_t why_len)
{
    return gd_config_set(arg, key, value, why, why_len);
}

int gd_config_load(struct gd_config *cfg, const char *path, int must_exist,
                   char *why, size_t why_len)
{
    return crn_conf_read(path, must_exist, set_cb, cfg, why, why_len);
}
