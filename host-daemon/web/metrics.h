/* Prometheus text exposition of the migration history's metrics. */
#ifndef HD_METRICS_H
#define HD_METRICS_H

#include "buf.h"
#include "host-daemon/history/backlog.h"
#include "host-daemon/history/history.h"
#include "metrics_le.h"
#include <stdbool.h>
#include <stddef.h>

/* The stoppage phases the histogram has a series for, always shown. */
enum hd_stoppage_phase { HD_PHASE_PRE, HD_PHASE_POST, HD_PHASE_COUNT };

/* Peers crane_peer_up shows, at most. */
#define HD_GAUGE_PEERS 32

/* What crane-hostd depends on, each shown when KNOWN (health.c). */
struct hd_gauges {
    bool hv_known, hv_connected;       /* the hypervisor answers */
    bool proxy_known, proxy_up;        /* the proxy domain's crane-proxy */
    size_t n_peers;
    struct {
        char name[128];                /* the peer's endpoint */
        bool up;
    } peers[HD_GAUGE_PEERS];
};

/* Everything one scrape shows; filled from the history, or by hand. */
struct hd_metrics {
    struct hd_totals totals;
    struct {
        uint64_t buckets[HD_STOPPAGE_BUCKETS]; /* cumulative, as exposed */
        uint64_t count;
        double sum;
    } stoppage[HD_PHASE_COUNT];
    /* The VMs' own downtime (the hypervisor's job stats), by mode (index
     * HD_MODE_LIVE - 1, HD_MODE_OFFLINE - 1). */
    struct {
        uint64_t buckets[HD_DOWNTIME_BUCKETS];
        uint64_t count;
        double sum;
    } downtime[2];
    /* Finished migrations, start to end, by mode (index HD_MODE_LIVE - 1,
     * HD_MODE_OFFLINE - 1). */
    struct {
        uint64_t buckets[HD_DURATION_BUCKETS];
        uint64_t count;
        double sum;
    } duration[2];
    /* The GPU pool now (hd_pool_count), when KNOWN: its gauges. */
    struct {
        bool known;
        size_t free, held, reserved, waiting;
    } pool;
    /* The history's health (backlog.h), when KNOWN: its gauges. */
    struct {
        bool known;
        bool unreadable;          /* no history counters: left out */
        struct hd_history_health health;
    } history;
    struct hd_gauges gauges;
};

/* Adds one program's stoppage of SECONDS in PHASE ("pre" or "post"), or
 * the downtime of a VM migrated in MODE (PHASE "downtime"); -EINVAL for
 * another phase or mode, or a negative or non-finite time. */
int hd_metrics_observe(struct hd_metrics *m, enum hd_mode mode,
                       const char *phase, double seconds);

/* Adds one finished migration of MODE that took SECONDS; -EINVAL for an
 * unknown mode or a negative or non-finite time. */
int hd_metrics_observe_duration(struct hd_metrics *m, enum hd_mode mode,
                                double seconds);

/* Fills *M from the history: totals by result, bytes moved (running
 * migrations' progress included), every stoppage and downtime recorded. */
int hd_metrics_collect(struct hd_history *h, struct hd_metrics *m);

/*
 * Appends M in the Prometheus text format (version 0.0.4) to OUT, in this
 * order:
 *   crane_migration_stoppage_seconds{phase}  histogram: "pre", then "post"
 *   crane_migration_downtime_seconds{mode}   histogram: the VM paused,
 *                                            "live", then "offline"
 *   crane_migration_duration_seconds{mode}   histogram: finished ones,
 *                                            "live", then "offline"
 *   crane_migrations_total{result}           counter of finished ones:
 *                                            "ok", "failed", "rolled-back",
 *                                            "remoting", each always shown
 *   crane_migrations_running                 gauge
 *   crane_migration_bytes_total              counter
 *   crane_gpu_pool_gpus{state}               gauge, when M->pool.known:
 *                                            "free", "held", "reserved"
 *   crane_gpu_pool_waiting_vms               gauge, when M->pool.known: VMs
 *                                            received that wait for a GPU
 *   crane_history_degraded                   gauge, when M->history.known:
 *                                            1 while a migration is not on
 *                                            disk or the file is read-only
 *   crane_history_read_only                  gauge, likewise
 *   crane_history_unsaved_migrations         gauge, likewise: kept in memory
 *   crane_history_dropped_migrations_total   counter, likewise: lost past
 *                                            the backlog's bound
 *   crane_hypervisor_connected               gauge, when gauges.hv_known:
 *                                            1 while the hypervisor answers
 *   crane_proxy_up                           gauge, when gauges.proxy_known:
 *                                            1 when the last probe of the
 *                                            proxy domain's crane-proxy
 *                                            was answered in time
 *   crane_peer_up{peer}                      gauge per peer: 1 when the
 *                                            last connection to it worked
 *   crane_build_info{version}                gauge, always 1
 * Returns 0 or OUT's error.
 */
int hd_metrics_render(const struct hd_metrics *m, struct hd_buf *out);

/* Appends VALUE escaped for a label value (\\, \", \n), without quotes. */
int hd_metrics_put_label_value(struct hd_buf *out, const char *value);

#endif /* HD_METRICS_H */
