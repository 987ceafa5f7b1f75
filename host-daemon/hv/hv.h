/* The hypervisor interface crane-hostd drives: libvirt (KVM/QEMU, Xen via
 * libvirt's libxl driver) or libxl directly. */
#ifndef HD_HV_H
#define HD_HV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#define HV_NAME_MAX 255      /* domain names */
#define HV_ALIAS_MAX 127     /* device aliases: "ua-" and [A-Za-z0-9_-] */
#define HV_PATH_MAX 107      /* a unix socket path (sockaddr_un) */

/*
 * One GPU of this host's pool.  XML is the device element libvirt attaches
 * (a <hostdev> for a PCI address, or any device for a stand-in) and carries
 * <alias name='ALIAS'/>, by which the device is found in a domain and
 * detached.  PCI is the address (0000:65:00.0) for a PCI GPU, "" for a
 * stand-in; the libxl backend needs it.  MODEL is what a VM's GPUs are
 * matched by on another host (config `model:`).
 */
struct hv_gpu {
    char name[64];
    char alias[HV_ALIAS_MAX + 1];
    char pci[16];
    char model[64];          /* the pool's `model:` for it, "" none */
    uint32_t mem_gib;        /* the pool's `mem:` for it, 0 none */
    char *xml;               /* owned by the pool */
};

/* What the daemon needs to know of one domain. */
struct hv_domain {
    char name[HV_NAME_MAX + 1];
    char uuid[37];
    bool running;
    /* The host end of the guest channel (the unix socket of the
     * virtio-serial port named CHANNEL_NAME), "" when it has none. */
    char channel[HV_PATH_MAX + 1];
};

enum hv_event_kind {
    HV_EV_DEVICE_REMOVED = 1,  /* ALIAS left DOMAIN (unplug completed) */
    HV_EV_DEVICE_ADDED,        /* ALIAS is in DOMAIN */
    HV_EV_DOMAIN_STARTED,      /* DOMAIN runs here (started, or arrived
                                  by migration, or resumed) */
    HV_EV_DOMAIN_STOPPED,      /* DOMAIN no longer runs here (shut off,
                                  crashed, migrated away) */
    HV_EV_CONNECTION_LOST,     /* the hypervisor connection is gone (no
                                  domain); may come from any thread */
    HV_EV_DOMAIN_MIGRATED_OUT, /* DOMAIN left this host by a migration
                                  (HV_EV_DOMAIN_STOPPED follows) */
    HV_EV_DOMAIN_SHUT_OFF,     /* DOMAIN's process ended for any other
                                  reason (HV_EV_DOMAIN_STOPPED follows).
                                  Unlike HV_EV_DOMAIN_STOPPED, never sent
                                  for the guest's shutdown that precedes
                                  the end of an outgoing migration */
};

struct hv_event {
    enum hv_event_kind kind;
    char domain[HV_NAME_MAX + 1];
    char alias[HV_ALIAS_MAX + 1]; /* device events only */
};

/* Called on the loop thread for every event of every domain. */
typedef void hv_event_fn(void *arg, const struct hv_event *ev);

/* A migration job as the hypervisor reports it (virsh domjobinfo); 0
 * where it says nothing. */
struct hv_job {
    bool active;
    double elapsed;          /* seconds */
    uint64_t data_total;     /* bytes */
    uint64_t data_processed;
    uint64_t data_remaining;
    double downtime;         /* seconds, when known (after it finished) */
    uint64_t memory_total, memory_processed, memory_remaining;
    uint64_t memory_bps;     /* bytes per second */
    uint64_t dirty_rate;     /* pages per second */
    uint64_t page_size;
    uint64_t iterations;
    uint64_t disk_total, disk_processed, disk_remaining, disk_bps;
    double expected_downtime; /* seconds */
    double setup_time;       /* seconds */
};

struct hv_migrate_args {
    const char *dest_uri;    /* the destination's hypervisor URI */
    const char *migrate_uri; /* the migration stream's URI, or NULL */
    const char *dest_xml;    /* the domain XML for the destination, or NULL */
    bool live, p2p, persistent, undefine_source;
    /* virsh migrate's further options (proto/hostd.proto MigrateOptions);
     * a backend refuses with -EOPNOTSUPP what it cannot do. */
    bool tls;                /* VIR_MIGRATE_TLS */
    bool tls_if_refused;     /* retry with TLS when libvirt wants it */
    bool copy_storage_all, copy_storage_inc, copy_storage_sync;
    const char *const *migrate_disks; /* target names, N_MIGRATE_DISKS */
    size_t n_migrate_disks;
    bool auto_converge, abort_on_error, compressed, unsafe;
    bool change_protection, tunnelled, zerocopy;
    bool parallel;
    unsigned parallel_connections; /* 0: libvirt's default */
    uint64_t bandwidth_mib;  /* MiB/s, 0: no limit */
    const char *listen_address, *dname, *disks_uri, *tls_destination;
    unsigned disks_port;     /* 0: libvirt's default */
    /* For a backend that carries the migration stream itself (libxl):
     * opens a connection to the destination's crane-hostd, ready for the
     * stream, and hands back its fd in *FD, which the backend then owns
     * and closes.  0 or -errno.  The daemon supplies it (its authenticated
     * peer link, peer.c), so that the backend needs no peer protocol.
     * Called on the thread that called migrate, with STREAM_ARG.  The
     * libvirt backend ignores it. */
    int (*open_stream)(void *stream_arg, int *fd);
    void *stream_arg;
};

struct hv;

/* A backend.  open and close run on the loop thread; every other entry may
 * be called from any thread, concurrently (each blocks its caller); all
 * return 0 or -errno and log where they fail. */
struct hv_ops {
    const char *name;        /* "libvirt", "libxl" */
    /* Connects to URI; events of every domain go to FN on LOOP's thread. */
    int (*open)(const char *uri, const char *channel_name, uv_loop_t *loop,
                hv_event_fn *fn, void *arg, struct hv **out);
    void (*close)(struct hv *hv);
    /* -ENOENT: no such domain. */
    int (*domain)(struct hv *hv, const char *name, struct hv_domain *out);
    /* For each of the N pool GPUs, the running domain holding it into
     * HOLDER[i] ("" when free). */
    int (*holders)(struct hv *hv, const struct hv_gpu *gpus, size_t n,
                   char (*holder)[HV_NAME_MAX + 1]);
    /* Asks for the GPU to be unplugged; the removal completes with
     * HV_EV_DEVICE_REMOVED (the guest must let it go).  -ENOENT: the
     * domain does not hold it. */
    int (*detach)(struct hv *hv, const char *domain, const struct hv_gpu *gpu);
    /* Plugs the GPU in; HV_EV_DEVICE_ADDED follows. */
    int (*attach)(struct hv *hv, const char *domain, const struct hv_gpu *gpu);
    /* 1 when DOMAIN holds GPU now, 0 when not. */
    int (*has_gpu)(struct hv *hv, const char *domain, const struct hv_gpu *gpu);
    /* Migrates DOMAIN; returns when it is done or failed.  Blocking. */
    int (*migrate)(struct hv *hv, const char *domain,
                   const struct hv_migrate_args *args);
    /* The running migration job of DOMAIN (or the last one's stats). */
    int (*job)(struct hv *hv, const char *domain, struct hv_job *out);
    /* Pauses DOMAIN (virsh migrate --timeout: forces a live migration to
     * finish). */
    int (*suspend)(struct hv *hv, const char *domain);
    /* Lets a suspended DOMAIN run again (a failed migration's rollback). */
    int (*unpause)(struct hv *hv, const char *domain);
    /* Cancels DOMAIN's running migration job (virDomainAbortJob): the
     * blocked migrate call then fails and the VM runs on here.  NULL: the
     * backend cannot. */
    int (*abort_job)(struct hv *hv, const char *domain);
    /* Boots the defined, shut-off DOMAIN (the proxy domain); returns once
     * it runs, not once its guest is up.  NULL: the backend cannot. */
    int (*start)(struct hv *hv, const char *domain);
};

extern const struct hv_ops hv_libvirt_ops;
#ifdef HD_HAVE_LIBXL
extern const struct hv_ops hv_libxl_ops;
#endif

/* The hypervisor's own words for the last failure of a backend call on
 * this thread (backends set it where they log), "" when none. */
const char *hv_last_error(void);
void hv_set_last_error(const char *text);

/* The backend called NAME, or NULL. */
const struct hv_ops *hv_backend(const char *name);

#endif /* HD_HV_H */
