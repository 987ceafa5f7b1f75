/* crane-hostd's settings: defaults, config file, command-line overrides. */
#ifndef HD_CONFIG_H
#define HD_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#define HD_CONFIG_DEFAULT "/etc/crane/hostd.conf"
#define HD_MAX_GPUS 16
#define HD_TEXT 256
#define HD_PEER_PORT 7410
#define HD_LEASE_MAX_S 604800   /* prepare_lease_s and --lease: a week */

/* One `gpu = NAME pci:ADDRESS` or `gpu = NAME xml:FILE` line, either
 * with ` model:MODEL` and ` mem:GIB` after it. */
struct hd_gpu_conf {
    char name[64];
    char pci[16];                /* 0000:65:00.0, or "" */
    char xml_file[HD_TEXT];      /* device XML file, or "" */
    char model[64];              /* what a VM's GPUs are matched by, "" */
    uint32_t mem_gib;            /* its memory (`mem:`), 0 not said */
};

struct hd_config {
    char uri[HD_TEXT];           /* the hypervisor's URI */
    char backend[16];            /* libvirt, libxl */
    char host_name[HD_TEXT];     /* this host in logs, history, peers */
    char control[HD_TEXT];       /* crane-migrate's endpoint (unix:PATH) */
    unsigned control_mode;
    char peer_listen[HD_TEXT];   /* tcp:ADDR:PORT for other hosts, "" none */
    uint16_t peer_port;          /* a peer's port when only its host is known */
    char peer_key[HD_TEXT];      /* shared key file; "" (none): no auth */
    char guest_key[HD_TEXT];     /* key of tcp: guest channels; "": none */
    char tls[8];                 /* auto|x509|psk|none (proto/tls.h) */
    char pki_dir[HD_TEXT];       /* x509 files in libvirt's layout */
    char http[HD_TEXT];          /* ADDR:PORT of the dashboard, "" none */
    char web_config[HD_TEXT];    /* its HTTPS and credentials, "" none */
    int http_allow_plain;        /* plain HTTP on a non-loopback address */
    char history[HD_TEXT];       /* SQLite file */
    uint32_t history_keep_days;  /* finished migrations kept; 0: all */
    char channel[HD_TEXT];       /* the guest channel's virtio-serial name */
    struct hd_gpu_conf gpus[HD_MAX_GPUS];
    size_t n_gpus;
    uint32_t detach_timeout_ms;  /* for the guest to let the GPU go */
    uint32_t attach_timeout_ms;
    uint32_t prepare_deadline_ms;
    uint32_t resume_deadline_ms;
    uint32_t gpu_retry_ms;       /* VMs waiting for a GPU: retry period */
    uint32_t prepare_lease_s;    /* a prepared VM is aborted after; 0: never */
    /* The proxy domain programs remote to during a live migration. */
    char proxy_domain[HD_TEXT];  /* its name here, "" none (runs elsewhere) */
    char proxy[HD_TEXT];         /* its endpoint as guests reach it, "" none */
    char proxy_key[HD_TEXT];     /* the key crane-proxy was given, "" none */
    uint32_t proxy_timeout_ms;   /* one probe: connect and handshake */
    uint32_t proxy_start_ms;     /* for a proxy domain just started to answer */
    uint32_t proxy_shm_mb;       /* ivshmem area for a VM remoting to the
                                    proxy domain here; 0: none */
    char log_level[16];
    /* Encrypted VM memory: libvirt's VIR_MIGRATE_TLS for every migration
     * (on), none unless crane-migrate --tls (off), or on when qemu_conf
     * sets migrate_tls_force = 1 or libvirt refuses a migration without
     * TLS (auto). */
    char migrate_tls[8];         /* auto|on|off */
    char qemu_conf[HD_TEXT];     /* the qemu.conf auto reads */
};

/* Every key: its type, default, range and one-line doc (config.c). */
struct crn_conf_table;
extern const struct crn_conf_table hd_config_table;

void hd_config_defaults(struct hd_config *cfg);
/* Reads PATH over CFG (MUST_EXIST false: a missing file is fine).  0, or a
 * negative errno with WHY holding "FILE:LINE: reason". */
int hd_config_load(struct hd_config *cfg, const char *path, int must_exist,
                   char *why, size_t why_len);
/* Sets one key as a config line would.  0 or -EINVAL with WHY. */
int hd_config_set(struct hd_config *cfg, const char *key, const char *value,
                  char *why, size_t why_len);
/* Prints every setting as the config file would hold it. */
void hd_config_print(const struct hd_config *cfg);

#endif /* HD_CONFIG_H */
