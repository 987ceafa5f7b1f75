/* The proxy domain: started through the hypervisor, probed over the network before a live migration. */
#ifndef HD_PROXY_H
#define HD_PROXY_H

#include "daemon.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Boots the configured proxy domain (proxy_domain) when it is defined here
 * and shut off; *STARTED says whether it did.  0 also when none is
 * configured or it already runs (a paused one is left paused: an operator
 * paused it).  -errno with WHY otherwise.
 */
int hd_proxy_ensure_running(struct hd_daemon *d, bool *started, char *why,
                            size_t why_len);

/*
 * One handshake with the crane-proxy at ENDPOINT, as a program's shim would
 * do it: Hello, the key's answer to its challenge (D's proxy key), Welcome
 * with at least one OpenCL device; all within TIMEOUT_MS.  0 with
 * *DEVICES (may be NULL) set; -errno with WHY (no answer, refused, wrong
 * key, no device).  A proxy that asks no key while we hold one is accepted
 * with a warning.
 */
int hd_proxy_probe(const struct hd_daemon *d, const char *endpoint,
                   uint32_t timeout_ms, unsigned *devices, char *why,
                   size_t why_len);

/*
 * Before a live migration: the proxy domain runs (started if it was shut
 * off, then given proxy_start_ms to answer) and ENDPOINT answers a probe.
 * 0, or -errno with WHY: the migration must not start.
 */
int hd_proxy_ready(struct hd_daemon *d, const char *endpoint, char *why,
                   size_t why_len);

/*
 * Loop thread: the proxy domain stopped.  Starts a job that notes it in
 * every migration whose VM waits here for a GPU (its programs remote
 * through that proxy: their OpenCL calls now fail) and boots the proxy
 * domain again.
 */
void hd_proxy_lost(struct hd_daemon *d);

#endif /* HD_PROXY_H */
