/* crane-guestd's settings: defaults, config file, command-line overrides. */
#ifndef GD_CONFIG_H
#define GD_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#define GD_CONFIG_DEFAULT "/etc/crane/guestd.conf"
#define GD_MAX_MODULES 16
#define GD_MAX_DEVICES 8
#define GD_TEXT 256

enum gd_default_mode { GD_MODE_LIVE = 1, GD_MODE_OFFLINE = 2 };

struct gd_config {
    char listen[GD_TEXT];        /* the shims' unix socket (a path) */
    unsigned listen_mode;        /* its file mode (0660: owner and group) */
    char program_group[64];      /* the socket's group ("": the daemon's) */
    uint32_t register_timeout_ms;  /* a connection must register by then */
    unsigned max_programs;       /* connections on the shims' socket */
    char host[GD_TEXT];          /* virtio-serial port path, or unix:/tcp:
                                    to listen on (tests) */
    char host_key[GD_TEXT];      /* shared key file; required for tcp: */
    char tls[8];                 /* tcp: host channel: auto|x509|psk|none */
    char pki_dir[GD_TEXT];       /* x509 files, libvirt's layout */
    uint32_t host_handshake_ms;  /* to authenticate on a keyed channel */
    uint32_t host_idle_ms;       /* a host connection with nothing asked */
    uint32_t host_keepalive_s;   /* TCP keepalive idle time; 0: off */
    char control[GD_TEXT];       /* cranectl's endpoint; "" for none */
    unsigned control_mode;       /* its file mode (0600: root only) */
    char state_file[GD_TEXT];
    char modprobe[GD_TEXT];      /* the command run as MODPROBE [-r] MOD */
    char modules[GD_MAX_MODULES][64];  /* unloaded in this order, loaded
                                          in reverse */
    size_t n_modules;
    char gpu_devices[GD_MAX_DEVICES][GD_TEXT];  /* must exist when usable */
    size_t n_gpu_devices;
    char vendor_lib[GD_TEXT];    /* probed library; "": every .icd's */
    char vendors_dir[GD_TEXT];   /* where .icd files are */
    char pci_root[GD_TEXT];      /* PCI devices (ivshmem for shared areas) */
    unsigned gpus;               /* GPUs the probe must count (1..16) */
    char gpu_type[16];           /* gpu, cpu, accelerator, all; none:
                                    the device nodes alone, no probe */
    char proxy[GD_TEXT];         /* default proxy for live prepares */
    enum gd_default_mode mode;   /* default migration mode */
    uint32_t prepare_deadline_ms;
    uint32_t resume_deadline_ms;   /* programs' part of a resume */
    uint32_t abort_deadline_ms;
    uint32_t gpu_wait_ms;          /* how long a resume waits for the GPU */
    uint32_t gpu_poll_ms;
    uint32_t probe_timeout_ms;
    uint32_t modprobe_timeout_ms;
    uint32_t reconnect_grace_ms;   /* after a restart, for shims to return */
    char log_level[16];
};

/* Every key: its type, default, range and one-line doc (config.c). */
struct crn_conf_table;
extern const struct crn_conf_table gd_config_table;

/* Fills CFG with the defaults. */
void gd_config_defaults(struct gd_config *cfg);
/*
 * Reads PATH over CFG: lines `key = value`, `#` comments, blank lines.
 * MUST_EXIST false lets a missing file mean "defaults".  Returns 0, or a
 * negative errno with WHY holding one line (file:line: reason).
 */
int gd_config_load(struct gd_config *cfg, const char *path, int must_exist,
                   char *why, size_t why_len);
/* Sets one key from text, as a config line would.  0 or -EINVAL. */
int gd_config_set(struct gd_config *cfg, const char *key, const char *value,
                  char *why, size_t why_len);
/* Prints every setting as the config file would hold it. */
void gd_config_print(const struct gd_config *cfg);

#endif /* GD_CONFIG_H */
