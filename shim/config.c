/* Reads every CRANE_* setting of the shim once, at the first OpenCL call. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "proto/log.h"
#include "proto/pcopy.h"
#include "proto/spin.h"

struct shim_config shim_config;

static const char *env_str(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

static long env_long(const char *name, long dflt, long min)
{
    const char *v = env_str(name);
    char *end;
    long n;

    if (!v)
        return dflt;
    n = strtol(v, &end, 10);
    if (*end || n < min) {
        CRN_WARN("ignoring %s=%s: not a number >= %ld", name, v, min);
        return dflt;
    }
    return n;
}

/* CRANE_DISABLE=1, read apart from the rest: a disabled shim never
 * starts (disabled.c), so never loads the other settings' side effects. */
bool shim_config_disabled(void)
{
    const char *v = env_str("CRANE_DISABLE");
    return v && strcmp(v, "0") != 0;
}

/* The vendor libraries, their namespace and unloading (native.c). */
static void load_vendor(void)
{
    const char *ns = env_str("CRANE_VENDOR_NAMESPACE");

    shim_config.vendors_dir = env_str("CRANE_VENDORS_DIR");
    if (!shim_config.vendors_dir)
        shim_config.vendors_dir = SHIM_VENDORS_DIRS;
    shim_config.vendor_libs = env_str("CRANE_VENDOR_LIBS");
    /* Fresh namespaces are opt-in: with PoCL, a vendor thread running a
     * program's event callback has corrupted the heap (two C libraries). */
    shim_config.base_namespace = !(ns && strcmp(ns, "new") == 0);
    if (ns && strcmp(ns, "new") != 0 && strcmp(ns, "base") != 0)
        CRN_WARN("ignoring CRANE_VENDOR_NAMESPACE=%s (new|base)", ns);
    /* Whether a re-home unloads the vendor (native.c). */
    const char *unload = env_str("CRANE_VENDOR_UNLOAD");
    shim_config.vendor_unload = SHIM_UNLOAD_AUTO;
    if (unload && strcmp(unload, "always") == 0)
        shim_config.vendor_unload = SHIM_UNLOAD_ALWAYS;
    else if (unload && strcmp(unload, "never") == 0)
        shim_config.vendor_unload = SHIM_UNLOAD_NEVER;
    else if (unload && strcmp(unload, "auto") != 0)
        CRN_WARN("ignoring CRANE_VENDOR_UNLOAD=%s (auto|always|never)",
                 unload);
}

/* Re-homes: how often, how long they may take, their report. */
static void load_switch(void)
{
    shim_config.rehome_every =
        (unsigned long)env_long("CRANE_REHOME_EVERY", 0, 0);
    shim_config.rehome_timeout_ms =
        env_long("CRANE_REHOME_TIMEOUT_MS", 30000, 1);
    shim_config.kernel_wait_ms =
        env_long("CRANE_SWITCH_KERNEL_WAIT_MS", 20000, 0);
    shim_config.report_file = env_str("CRANE_REHOME_REPORT");
    shim_config.arg_info = env_long("CRANE_ARG_INFO", 0, 0) != 0;
    shim_config.binary_cache = env_long("CRANE_BINARY_CACHE", 1, 0) != 0;
}

/* The remote backend: its endpoint, security, chunks, lanes, shared
 * memory. */
static void load_remote(void)
{
    const char *backend = env_str("CRANE_BACKEND");

    shim_config.remote = env_str("CRANE_PROXY");
    if (backend && strncmp(backend, "remote:", 7) == 0) {
        shim_config.start_remote = true;
        shim_config.remote = backend + 7;
    } else if (backend && strcmp(backend, "native") != 0) {
        CRN_WARN("ignoring CRANE_BACKEND=%s (native|remote:ENDPOINT)",
                 backend);
    }
    shim_config.auth_key = env_str("CRANE_AUTH_KEY");
    shim_config.tls = env_str("CRANE_TLS");
    if (!shim_config.tls)
        shim_config.tls = "auto";
    shim_config.pki_dir = env_str("CRANE_PKI_DIR");
    shim_config.remote_chunk =
        (size_t)env_long("CRANE_REMOTE_CHUNK", 4l << 20, 4096);
    if (shim_config.remote_chunk > (64u << 20))
        shim_config.remote_chunk = 64u << 20;
    /* Lanes: each takes a core on both sides while a transfer runs, so
     * only where there are cores to spare (docs/remoting.md, "Lanes"). */
    shim_config.remote_lanes = env_long("CRANE_REMOTE_LANES",
                                        sysconf(_SC_NPROCESSORS_ONLN) >= 8
                                            ? 4 : 0, 0);
    if (shim_config.remote_lanes > 16)
        shim_config.remote_lanes = 16;
    shim_config.lanes_fault_bytes = env_long("CRANE_TEST_LANE_FAULT", 0, 0);
    shim_config.lanes_fault_bad = env_long("CRANE_TEST_LANE_BAD", 0, 0) != 0;
    /* A shared-memory area for bulk bytes to a proxy on this OS (unix:
     * endpoints only; docs/remoting.md, "Shared memory"). */
    shim_config.shm_mb = env_long("CRANE_SHM_MB", 64, 0);
    if (shim_config.shm_mb > 2000)
        shim_config.shm_mb = 2000;
    shim_config.shm_file = env_str("CRANE_SHM_FILE");
    /* Host memory for mapped pointers beside a memfd area (shim/hostmem.h):
     * bytes from and to it are never copied by the shim. */
    shim_config.shm_host_mb = env_long("CRANE_SHM_HOST_MB", 256, 0);
    if (shim_config.shm_host_mb > 4096)
        shim_config.shm_host_mb = 4096;  /* CRN_SHM_MAX_HOST */
}

/* The control socket and the waits and timeouts of calls and links. */
static void load_control(void)
{
    shim_config.rehome_to = env_str("CRANE_REHOME_TO");
    shim_config.device = env_str("CRANE_DEVICE");
    if (!shim_config.rehome_to)
        shim_config.rehome_to = "native";
    /* The guest daemon: a path or unix:PATH; "none" turns control off. */
    shim_config.control_socket = env_str("CRANE_SOCKET");
    if (!shim_config.control_socket)
        shim_config.control_socket = "/run/crane/guest.sock";
    else if (strcmp(shim_config.control_socket, "none") == 0)
        shim_config.control_socket = NULL;
    else if (strncmp(shim_config.control_socket, "unix:", 5) == 0)
        shim_config.control_socket += 5;
    /* A program started while the GPU is away for an offline migration
     * waits this long for it before its first call (docs/guest.md). */
    shim_config.start_wait_ms = env_long("CRANE_START_WAIT_MS", 300000, 0);
    /* How long a call polls for its answer before it sleeps (proto/spin.h;
     * docs/remoting.md, "Small calls"). */
    shim_config.remote_spin_us = crn_spin_us_from_env("CRANE_REMOTE_SPIN_US");
    shim_config.proxy_timeout_ms =
        env_long("CRANE_PROXY_TIMEOUT_MS", 20000, 100);
    shim_config.proxy_keepalive_ms =
        env_long("CRANE_PROXY_KEEPALIVE_MS", 2000, 0);
    shim_config.remote_linger_ms =
        env_long("CRANE_REMOTE_LINGER_MS", 5000, 0);
}

/* How a switch moves bytes: maps, staging, streams, pre-copy, and the
 * test hooks. */
static void load_copies(void)
{
    shim_config.portable_maps = env_long("CRANE_PORTABLE_MAPS", 0, 0) != 0;
    /* CL_MEM_ALLOC_HOST_PTR buffers over the shim's own memory (mem_own.c);
     * 0: the vendor's allocation. */
    shim_config.own_host_alloc =
        env_long("CRANE_OWN_HOST_ALLOC", 1, 0) != 0;
    shim_config.staging_mb = (unsigned)env_long("CRANE_STAGING_MB", 32, 0);
    if (shim_config.staging_mb > 1024)
        shim_config.staging_mb = 1024;
    /* Threads for a large copy of bulk bytes (pinned chunks, the shared
     * rings): default a quarter of the CPUs, 1 to 8 (proto/pcopy.h). */
    /* A switch to the proxy streams buffers from the device straight to
     * the proxy (rehome.c); 0: through the RAM copy, as before. */
    shim_config.stream_switch = env_long("CRANE_STREAM_SWITCH", 1, 0) != 0;
    /* The shared area (a memfd, proxy on this host) pinned for the native
     * vendor too: a switch's streamed buffers go device <-> ring with no
     * CPU copy (ringstream.c); 0: through the pinned chunks and RAM. */
    shim_config.pin_ring = env_long("CRANE_SHIM_PIN_RING", 1, 0) != 0;
    shim_config.copy_threads = (unsigned)env_long(
        "CRANE_COPY_THREADS", (long)crn_pcopy_default_threads(), 1);
    crn_pcopy_set_threads(shim_config.copy_threads);
    shim_config.precopy_rounds =
        (unsigned)env_long("CRANE_PRECOPY_ROUNDS", 0, 0);
    if (shim_config.precopy_rounds > 64)
        shim_config.precopy_rounds = 64;
    shim_config.prebuild = env_long("CRANE_PREBUILD", 1, 0) != 0;
    shim_config.precopy_stop_bytes =
        (size_t)env_long("CRANE_PRECOPY_STOP_KB", 4096, 0) << 10;
    shim_config.test_fail_at = env_str("CRANE_TEST_FAIL_AT");
    shim_config.test_stop_at = env_str("CRANE_TEST_STOP_AT");
    shim_config.test_stop_file = env_str("CRANE_TEST_STOP_FILE");
}

void shim_config_load(void)
{
    load_vendor();
    load_switch();
    load_remote();
    load_control();
    load_copies();
}
