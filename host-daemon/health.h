/* crane-hostd's view of what it depends on, for the metrics' gauges: the
 * proxy domain's reachability and the peers', probed with bounds. */
#ifndef HD_HEALTH_H
#define HD_HEALTH_H

#include "host-daemon/web/metrics.h"

#include <stdbool.h>

struct hd_daemon;
struct hd_health;

/* A fresh state (nothing known) into *OUT; 0 or -ENOMEM. */
int hd_health_new(struct hd_health **out);
void hd_health_free(struct hd_health *h);

/* The outcome of a connection to the crane-hostd at ENDPOINT (a
 * migration's check, or a probe): remembered, at most HD_GAUGE_PEERS
 * peers (the oldest forgotten). */
void hd_health_peer(struct hd_health *h, const char *endpoint, bool up);

/* From the daemon's timer: a probe of the proxy (when `proxy` is set) and
 * of every peer remembered, on a job thread, each within its timeout
 * (proxy_timeout_ms; the peers' handshake bound); none while one runs. */
void hd_health_tick(struct hd_daemon *d);

/* The gauges now into *OUT (the hypervisor's left as they are). */
void hd_health_read(struct hd_health *h, struct hd_gauges *out);

/* hd_http_sources.gauges for crane-hostd: ARG is its struct hd_daemon. */
void hd_daemon_gauges(void *arg, struct hd_gauges *out);

#endif /* HD_HEALTH_H */
