/* The shim's settings, all read from the environment in one place. */
#ifndef CRANE_SHIM_CONFIG_H
#define CRANE_SHIM_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* CRANE_VENDOR_UNLOAD: when a re-home unloads the vendor (native.c). */
enum shim_unload {
    SHIM_UNLOAD_AUTO,            /* only when the GPU leaves and the vendor
                                    holds device files, or in a fresh
                                    namespace per load */
    SHIM_UNLOAD_ALWAYS,          /* at every re-home off it */
    SHIM_UNLOAD_NEVER,           /* kept loaded for the process's life */
};

/* Where .icd files name the vendors, by default: crane's own folder (the
 * vendors' files a crane-guest package took over), then the system's. */
#define SHIM_VENDORS_DIRS "/etc/crane/vendors.d:/etc/OpenCL/vendors"

struct shim_config {
    const char *vendors_dir;     /* CRANE_VENDORS_DIR: ':'-separated folders */
    const char *vendor_libs;     /* CRANE_VENDOR_LIBS, ':'-separated */
    bool base_namespace;         /* unless CRANE_VENDOR_NAMESPACE=new */
    enum shim_unload vendor_unload;  /* CRANE_VENDOR_UNLOAD */
    unsigned long rehome_every;  /* CRANE_REHOME_EVERY (test hook) */
    long rehome_timeout_ms;      /* CRANE_REHOME_TIMEOUT_MS */
    long kernel_wait_ms;         /* CRANE_SWITCH_KERNEL_WAIT_MS: how long
                                    a switch waits for the program's
                                    kernels before it is refused */
    const char *report_file;     /* CRANE_REHOME_REPORT */
    bool arg_info;               /* CRANE_ARG_INFO=1: add -cl-kernel-arg-info */
    bool binary_cache;           /* CRANE_BINARY_CACHE=0 turns it off */
    bool start_remote;           /* CRANE_BACKEND=remote:ENDPOINT */
    const char *remote;          /* the proxy endpoint: from CRANE_BACKEND,
                                    else CRANE_PROXY */
    const char *auth_key;        /* CRANE_AUTH_KEY: the proxy's key file */
    const char *tls;             /* CRANE_TLS: auto|x509|psk|none for a
                                    tcp: proxy (proto/tls.h) */
    const char *pki_dir;         /* CRANE_PKI_DIR: x509 files, libvirt's
                                    layout (default /etc/pki) */
    size_t remote_chunk;         /* CRANE_REMOTE_CHUNK: bytes per message */
    long remote_lanes;           /* CRANE_REMOTE_LANES: extra TCP streams
                                    for big transfers (remote_lanes.c) */
    long lanes_fault_bytes;      /* CRANE_TEST_LANE_FAULT: lane 0 dies
                                    after sending this many bytes */
    bool lanes_fault_bad;        /* CRANE_TEST_LANE_BAD=1: ... sends a
                                    piece out of place instead */
    long shm_mb;                 /* CRANE_SHM_MB: shared area, 0: none */
    const char *shm_file;        /* CRANE_SHM_FILE: area from a file */
    long shm_host_mb;            /* CRANE_SHM_HOST_MB: host-memory region
                                    for mapped pointers, 0: none */
    const char *rehome_to;       /* CRANE_REHOME_TO: native|remote|alternate */
    const char *control_socket;  /* CRANE_SOCKET: crane-guestd's socket
                                    (/run/crane/guest.sock); NULL: none */
    long start_wait_ms;          /* CRANE_START_WAIT_MS: how long a program
                                    started during an offline migration
                                    waits for the GPU (control_start.c) */
    long proxy_timeout_ms;       /* CRANE_PROXY_TIMEOUT_MS: no sign of life
                                    from the proxy this long fails calls */
    long remote_spin_us;         /* CRANE_REMOTE_SPIN_US: a call polls for
                                    its answer this long, then sleeps */
    long proxy_keepalive_ms;     /* CRANE_PROXY_KEEPALIVE_MS: ping period
                                    while a call waits (0: off) */
    long remote_linger_ms;       /* CRANE_REMOTE_LINGER_MS: how long the
                                    proxy's objects are kept after a switch
                                    back, for the next switch (rehome.c) */
    bool portable_maps;          /* CRANE_PORTABLE_MAPS=1: maps in shim
                                    memory from the start (map.c) */
    bool own_host_alloc;         /* CRANE_OWN_HOST_ALLOC (1): the host
                                    memory of CL_MEM_ALLOC_HOST_PTR buffers
                                    is the shim's (mem_own.c) */
    const char *test_fail_at;    /* CRANE_TEST_FAIL_AT=STEP[:N] (fault.c) */
    const char *test_stop_at;    /* CRANE_TEST_STOP_AT=STEP[:N] */
    const char *test_stop_file;  /* CRANE_TEST_STOP_FILE */
    unsigned staging_mb;         /* CRANE_STAGING_MB: pinned MiB per vendor
                                    context for a switch's copies (0: off,
                                    staging.c) */
    unsigned copy_threads;       /* CRANE_COPY_THREADS: threads per large
                                    bulk copy (proto/pcopy.h) */
    bool stream_switch;          /* CRANE_STREAM_SWITCH: a switch to the
                                    proxy streams buffers (rehome.c) */
    bool pin_ring;               /* CRANE_SHIM_PIN_RING: the shared area
                                    pinned for the native vendor, a switch's
                                    bytes moved with no CPU copy
                                    (ringstream.c) */
    unsigned precopy_rounds;     /* CRANE_PRECOPY_ROUNDS: copy rounds while
                                    the program runs, before a switch stops
                                    it (0: off, precopy.c) */
    bool prebuild;               /* CRANE_PREBUILD: a switch to the proxy
                                    makes its objects there ahead, before
                                    the gate closes (prebuild.c) */
    size_t precopy_stop_bytes;   /* CRANE_PRECOPY_STOP_KB: a round that
                                    found fewer dirty bytes ends them */
    const char *device;          /* CRANE_DEVICE: where devices land after a
                                    switch (docs/shim.md, "Devices") */
};

extern struct shim_config shim_config;
void shim_config_load(void);
/* CRANE_DISABLE set (not "0"): the shim stays out (disabled.c). */
bool shim_config_disabled(void);

/* Test hook (fault.c): 0, or -EIO where CRANE_TEST_FAIL_AT names STEP;
 * waits where CRANE_TEST_STOP_AT does. */
int shim_fault_at(const char *step);
/* A switch (number WHICH, from 1) begins: the hooks count visits anew. */
void shim_fault_switch(unsigned long which);

#endif
