/* The dashboard's aggregates over migration summaries: percentiles, the
 * stoppage trend over time, per-host, per-VM and per-mode figures. */
#ifndef HD_STATS_H
#define HD_STATS_H

#include "host-daemon/history/history.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HD_TREND_MAX 200       /* buckets of a trend */
#define HD_TREND_DEFAULT 24
#define HD_GROUPS_MAX 100      /* hosts or domains one answer lists */

/* A distribution: how many values, their nearest-rank p50 and p95, the
 * largest, the sum; the numbers are NAN when N is 0. */
struct hd_dist {
    uint64_t n;
    double p50;
    double p95;
    double max;
    double sum;
};

/* The figures of one host, domain or mode over the migrations it took
 * part in. */
struct hd_group {
    char name[HD_NAME_MAX + 1];
    uint64_t count;
    uint64_t by_result[HD_RESULT_COUNT];
    uint64_t as_source;        /* hosts: migrations from it */
    uint64_t as_destination;   /* hosts: migrations to it */
    uint64_t bytes_moved;
    double last_start;
    struct hd_dist pre;        /* worst program's stoppage per migration */
    struct hd_dist post;
    struct hd_dist downtime;   /* the VM's own pause */
    struct hd_dist duration;   /* finished migrations, start to end */
};

/* The migrations that started in [start, end). */
struct hd_bucket {
    double start;
    double end;
    uint64_t count;
    uint64_t failed;           /* failed or rolled back */
    struct hd_dist pre;
    struct hd_dist post;
    struct hd_dist downtime;
    /* The downtime per mode: a live VM pauses for the last round only,
     * an offline one for the whole copy (index HD_MODE_LIVE - 1, ...). */
    struct hd_dist downtime_by_mode[2];
};

struct hd_stats {
    uint64_t count;            /* summaries the figures are over */
    struct hd_group all;       /* name "" */
    struct hd_group modes[2];  /* "live", "offline", always both */
    size_t n_trend;
    struct hd_bucket trend[HD_TREND_MAX];
    /* Sorted by count, then name; at most HD_GROUPS_MAX of each, the
     * rest counted in *_left_out.  Owned: hd_stats_free. */
    struct hd_group *hosts;
    size_t n_hosts;
    size_t hosts_left_out;
    struct hd_group *domains;
    size_t n_domains;
    size_t domains_left_out;
};

/*
 * The nearest-rank P-th percentile (0 < P <= 100) of SORTED[0..N), in
 * ascending order: the smallest value at least P percent of the values
 * are no larger than, SORTED[ceil(P / 100 * N) - 1].  NAN when N is 0.
 */
double hd_percentile(const double *sorted, size_t n, double p);

/* The distribution of VALUES[0..N) (reordered: sorted), NANs left out. */
struct hd_dist hd_dist_of(double *values, size_t n);

/*
 * Figures over S[0..N) into *OUT (freed with hd_stats_free): all of them,
 * per mode, per host (as source or destination), per domain, and a trend
 * of BUCKETS (1..HD_TREND_MAX) equal spans over [FROM, TO) (0 for either:
 * the oldest start, and just past the newest).  -EINVAL: bad arguments;
 * -ENOMEM.
 */
int hd_stats_compute(const struct hd_summary *s, size_t n, unsigned buckets,
                     double from, double to, struct hd_stats *out);
void hd_stats_free(struct hd_stats *st);

#endif /* HD_STATS_H */
