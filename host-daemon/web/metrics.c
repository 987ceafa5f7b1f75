/* Prometheus text exposition of the migration history's metrics. */
#include "metrics.h"

#include "host-daemon/history/history_counters.h"

#include "proto/version.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static const double bucket_le[HD_STOPPAGE_BUCKETS] = HD_STOPPAGE_LE;
static const char *const bucket_le_text[HD_STOPPAGE_BUCKETS] =
    HD_STOPPAGE_LE_TEXT;
static const double duration_le[HD_DURATION_BUCKETS] = HD_DURATION_LE;
static const char *const duration_le_text[HD_DURATION_BUCKETS] =
    HD_DURATION_LE_TEXT;
static const double downtime_le[HD_DOWNTIME_BUCKETS] = HD_DOWNTIME_LE;
static const char *const downtime_le_text[HD_DOWNTIME_BUCKETS] =
    HD_DOWNTIME_LE_TEXT;

static const char *const phase_names[HD_PHASE_COUNT] = {
    [HD_PHASE_PRE] = "pre",
    [HD_PHASE_POST] = "post",
};

/* The results crane_migrations_total counts (every finished one), in
 * exposition order: metrics.h. */
static const enum hd_result counted_results[] = {
    HD_RESULT_OK, HD_RESULT_FAILED, HD_RESULT_ROLLED_BACK, HD_RESULT_REMOTING,
};
_Static_assert(sizeof(counted_results) / sizeof(*counted_results) ==
                   HD_RESULT_COUNT - 1,
               "every result but running is counted");

int hd_metrics_observe(struct hd_metrics *m, enum hd_mode mode,
                       const char *phase, double seconds)
{
    int p;

    if (m == NULL || phase == NULL || !isfinite(seconds) || seconds < 0 ||
        hd_mode_name(mode) == NULL)
        return -EINVAL;
    if (strcmp(phase, "downtime") == 0) {
        p = mode == HD_MODE_LIVE ? 0 : 1;
        for (int i = 0; i < HD_DOWNTIME_BUCKETS; i++)
            if (seconds <= downtime_le[i])
                m->downtime[p].buckets[i]++;
        m->downtime[p].count++;
        m->downtime[p].sum += seconds;
        return 0;
    }
    for (p = 0; p < HD_PHASE_COUNT; p++)
        if (strcmp(phase, phase_names[p]) == 0)
            break;
    if (p == HD_PHASE_COUNT)
        return -EINVAL;
    for (int i = 0; i < HD_STOPPAGE_BUCKETS; i++)
        if (seconds <= bucket_le[i])
            m->stoppage[p].buckets[i]++;
    m->stoppage[p].count++;
    m->stoppage[p].sum += seconds;
    return 0;
}

int hd_metrics_observe_duration(struct hd_metrics *m, enum hd_mode mode,
                                double seconds)
{
    int i;

    if (m == NULL || hd_mode_name(mode) == NULL || !isfinite(seconds) ||
        seconds < 0)
        return -EINVAL;
    i = mode == HD_MODE_LIVE ? 0 : 1;
    for (int b = 0; b < HD_DURATION_BUCKETS; b++)
        if (seconds <= duration_le[b])
            m->duration[i].buckets[b]++;
    m->duration[i].count++;
    m->duration[i].sum += seconds;
    return 0;
}

static int duration_cb(void *arg, enum hd_mode mode, double seconds)
{
    /* A hand-edited row that ends before it starts is skipped. */
    int rc = hd_metrics_observe_duration(arg, mode, seconds);

    return rc == -EINVAL ? 0 : rc;
}

static int observe_cb(void *arg, enum hd_mode mode, const char *phase,
                      double seconds)
{
    /* The history returns only "pre", "post" and "downtime"; a hand-edited row with a
     * negative time is skipped rather than failing the whole scrape. */
    int rc = hd_metrics_observe(arg, mode, phase, seconds);

    return rc == -EINVAL ? 0 : rc;
}

/* The histogram of METRIC{LABEL} in M, with its bucket count into *N. */
static uint64_t *histogram_of(struct hd_metrics *m, const char *metric,
                              const char *label, int *n, uint64_t **count,
                              double **sum)
{
    int i = -1;

    if (strcmp(metric, "stoppage") == 0) {
        for (int p = 0; p < HD_PHASE_COUNT; p++)
            if (strcmp(label, phase_names[p]) == 0)
                i = p;
        if (i < 0)
            return NULL;
        *n = HD_STOPPAGE_BUCKETS;
        *count = &m->stoppage[i].count;
        *sum = &m->stoppage[i].sum;
        return m->stoppage[i].buckets;
    }
    i = strcmp(label, "live") == 0 ? 0 : strcmp(label, "offline") == 0 ? 1
                                                                       : -1;
    if (i < 0)
        return NULL;
    if (strcmp(metric, "downtime") == 0) {
        *n = HD_DOWNTIME_BUCKETS;
        *count = &m->downtime[i].count;
        *sum = &m->downtime[i].sum;
        return m->downtime[i].buckets;
    }
    if (strcmp(metric, "duration") == 0) {
        *n = HD_DURATION_BUCKETS;
        *count = &m->duration[i].count;
        *sum = &m->duration[i].sum;
        return m->duration[i].buckets;
    }
    return NULL;
}

/* One persisted counter (history_counters.h) into M; others are left. */
static int counter_cb(void *arg, const char *metric, const char *label,
                      int bucket, double value)
{
    struct hd_metrics *m = arg;
    uint64_t *buckets, *count;
    double *sum;
    int n;

    if (!isfinite(value) || value < 0)
        return 0;
    if (strcmp(metric, "migrations") == 0) {
        for (size_t i = 0; i < sizeof(counted_results) /
                                   sizeof(*counted_results); i++)
            if (strcmp(label, hd_result_name(counted_results[i])) == 0)
                m->totals.by_result[counted_results[i]] = (uint64_t)value;
        return 0;
    }
    if (strcmp(metric, "bytes") == 0) {
        m->totals.bytes_moved += (uint64_t)value;
        return 0;
    }
    buckets = histogram_of(m, metric, label, &n, &count, &sum);
    if (buckets == NULL)
        return 0;
    if (bucket >= 0 && bucket < n)
        buckets[bucket] = (uint64_t)value;
    else if (bucket == HD_COUNTER_COUNT)
        *count = (uint64_t)value;
    else if (bucket == HD_COUNTER_SUM)
        *sum = value;
    return 0;
}

/* The counters recomputed from the rows: a file without persisted ones
 * (an older one opened read-only). */
static int collect_rows(struct hd_history *h, struct hd_metrics *m)
{
    int rc = hd_history_totals(h, &m->totals);

    if (rc == 0)
        rc = hd_history_each_stoppage(h, observe_cb, m);
    if (rc == 0)
        rc = hd_history_each_duration(h, duration_cb, m);
    return rc;
}

int hd_metrics_collect(struct hd_history *h, struct hd_metrics *m)
{
    struct hd_totals now;
    uint64_t running_bytes = 0;
    int rc;

    if (h == NULL || m == NULL)
        return -EINVAL;
    memset(m, 0, sizeof(*m));
    /* The running ones from the rows; what ended from the counters, which
     * neither a prune nor a restart lowers. */
    rc = hd_history_totals(h, &now);
    if (rc == 0)
        rc = hd_history_running_bytes(h, &running_bytes);
    if (rc == 0)
        rc = hd_history_each_counter(h, counter_cb, m);
    if (rc == 0)
        rc = hd_history_each_running_stoppage(h, observe_cb, m);
    if (rc == -ENOENT) {
        memset(m, 0, sizeof(*m));
        return collect_rows(h, m);
    }
    m->totals.by_result[HD_RESULT_RUNNING] = now.by_result[HD_RESULT_RUNNING];
    m->totals.bytes_moved += running_bytes;
    return rc;
}

int hd_metrics_put_label_value(struct hd_buf *out, const char *value)
{
    const char *p = value;

    if (out == NULL || value == NULL)
        return -EINVAL;
    while (*p != '\0') {
        size_t run = strcspn(p, "\\\"\n");

        hd_buf_put(out, p, run);
        p += run;
        if (*p == '\0')
            break;
        hd_buf_puts(out, *p == '\\' ? "\\\\" : *p == '"' ? "\\\"" : "\\n");
        p++;
    }
    return out->err;
}

/* NAME{LABEL="VALUE"} or NAME{LABEL="VALUE",le="LE"}, then " ". */
static void put_series(struct hd_buf *out, const char *name,
                       const char *label, const char *value, const char *le)
{
    hd_buf_printf(out, "%s{%s=\"", name, label);
    hd_metrics_put_label_value(out, value);
    hd_buf_puts(out, "\"");
    if (le != NULL)
        hd_buf_printf(out, ",le=\"%s\"", le);
    hd_buf_puts(out, "} ");
}

/* One labelled series of a histogram: cumulative BUCKETS under LE, +Inf,
 * _sum and _count. */
static void put_histogram(struct hd_buf *out, const char *name,
                          const char *label, const char *value,
                          const uint64_t *buckets, const char *const *le,
                          int n, uint64_t count, double sum)
{
    char series[96];

    snprintf(series, sizeof(series), "%s_bucket", name);
    for (int b = 0; b < n; b++) {
        put_series(out, series, label, value, le[b]);
        hd_buf_printf(out, "%llu\n", (unsigned long long)buckets[b]);
    }
    put_series(out, series, label, value, "+Inf");
    hd_buf_printf(out, "%llu\n", (unsigned long long)count);
    snprintf(series, sizeof(series), "%s_sum", name);
    put_series(out, series, label, value, NULL);
    hd_buf_put_double(out, sum);
    hd_buf_puts(out, "\n");
    snprintf(series, sizeof(series), "%s_count", name);
    put_series(out, series, label, value, NULL);
    hd_buf_printf(out, "%llu\n", (unsigned long long)count);
}

#define STOPPAGE "crane_migration_stoppage_seconds"

static void render_stoppage(const struct hd_metrics *m, struct hd_buf *out)
{
    hd_buf_printf(out,
                  "# HELP %s Time a program's OpenCL calls were held, per "
                  "program and migration phase.\n# TYPE %s histogram\n",
                  STOPPAGE, STOPPAGE);
    for (int p = 0; p < HD_PHASE_COUNT; p++)
        put_histogram(out, STOPPAGE, "phase", phase_names[p],
                      m->stoppage[p].buckets, bucket_le_text,
                      HD_STOPPAGE_BUCKETS, m->stoppage[p].count,
                      m->stoppage[p].sum);
}

/* The live and the offline series (index 0 and 1). */
static const char *mode_of(int i)
{
    return hd_mode_name(i == 0 ? HD_MODE_LIVE : HD_MODE_OFFLINE);
}

#define DOWNTIME "crane_migration_downtime_seconds"

static void render_downtime(const struct hd_metrics *m, struct hd_buf *out)
{
    hd_buf_printf(out,
                  "# HELP %s Time a migrating VM was paused (the "
                  "hypervisor's downtime), by mode.\n# TYPE %s histogram\n",
                  DOWNTIME, DOWNTIME);
    for (int i = 0; i < 2; i++)
        put_histogram(out, DOWNTIME, "mode", mode_of(i),
                      m->downtime[i].buckets, downtime_le_text,
                      HD_DOWNTIME_BUCKETS, m->downtime[i].count,
                      m->downtime[i].sum);
}

#define DURATION "crane_migration_duration_seconds"

static void render_duration(const struct hd_metrics *m, struct hd_buf *out)
{
    hd_buf_printf(out,
                  "# HELP %s Time a finished migration took, start to "
                  "end, by mode.\n# TYPE %s histogram\n",
                  DURATION, DURATION);
    for (int i = 0; i < 2; i++)
        put_histogram(out, DURATION, "mode", mode_of(i),
                      m->duration[i].buckets, duration_le_text,
                      HD_DURATION_BUCKETS, m->duration[i].count,
                      m->duration[i].sum);
}

static void render_pool(const struct hd_metrics *m, struct hd_buf *out)
{
    hd_buf_printf(out,
                  "# HELP crane_gpu_pool_gpus GPUs of this host's pool, by "
                  "state.\n# TYPE crane_gpu_pool_gpus gauge\n"
                  "crane_gpu_pool_gpus{state=\"free\"} %zu\n"
                  "crane_gpu_pool_gpus{state=\"held\"} %zu\n"
                  "crane_gpu_pool_gpus{state=\"reserved\"} %zu\n",
                  m->pool.free, m->pool.held, m->pool.reserved);
    hd_buf_printf(out,
                  "# HELP crane_gpu_pool_waiting_vms VMs received here that "
                  "wait for a free GPU (their programs remote).\n"
                  "# TYPE crane_gpu_pool_waiting_vms gauge\n"
                  "crane_gpu_pool_waiting_vms %zu\n",
                  m->pool.waiting);
}

static void render_history(const struct hd_metrics *m, struct hd_buf *out)
{
    const struct hd_history_health *h = &m->history.health;

    hd_buf_printf(out,
                  "# HELP crane_history_degraded 1 while a migration this "
                  "daemon ran is not in its history file (full or read-only "
                  "disk).\n# TYPE crane_history_degraded gauge\n"
                  "crane_history_degraded %d\n"
                  "# HELP crane_history_read_only 1 while the history file "
                  "can only be read.\n# TYPE crane_history_read_only gauge\n"
                  "crane_history_read_only %d\n"
                  "# HELP crane_history_unsaved_migrations Migrations kept "
                  "in memory until the history takes them.\n"
                  "# TYPE crane_history_unsaved_migrations gauge\n"
                  "crane_history_unsaved_migrations %zu\n"
                  "# HELP crane_history_dropped_migrations_total Migrations "
                  "lost: more were kept in memory than it holds.\n"
                  "# TYPE crane_history_dropped_migrations_total counter\n"
                  "crane_history_dropped_migrations_total %llu\n",
                  h->degraded, h->read_only, h->unsaved, h->dropped_total);
}

/* What the history counts: histograms, totals, bytes. */
static void render_counters(const struct hd_metrics *m, struct hd_buf *out)
{
    render_stoppage(m, out);
    render_downtime(m, out);
    render_duration(m, out);
    hd_buf_puts(out, "# HELP crane_migrations_total Finished migrations, "
                     "by result.\n# TYPE crane_migrations_total counter\n");
    for (size_t i = 0; i < sizeof(counted_results) / sizeof(*counted_results);
         i++) {
        enum hd_result r = counted_results[i];

        put_series(out, "crane_migrations_total", "result", hd_result_name(r),
                   NULL);
        hd_buf_printf(out, "%llu\n",
                      (unsigned long long)m->totals.by_result[r]);
    }
    hd_buf_printf(out,
                  "# HELP crane_migrations_running Migrations in progress.\n"
                  "# TYPE crane_migrations_running gauge\n"
                  "crane_migrations_running %llu\n",
                  (unsigned long long)
                      m->totals.by_result[HD_RESULT_RUNNING]);
    hd_buf_printf(out,
                  "# HELP crane_migration_bytes_total Bytes moved by "
                  "migrations, running ones included.\n"
                  "# TYPE crane_migration_bytes_total counter\n"
                  "crane_migration_bytes_total %llu\n",
                  (unsigned long long)m->totals.bytes_moved);
}

/* What crane-hostd depends on: the hypervisor, the proxy, the peers. */
static void render_gauges(const struct hd_gauges *g, struct hd_buf *out)
{
    if (g->hv_known)
        hd_buf_printf(out,
                      "# HELP crane_hypervisor_connected 1 while the "
                      "hypervisor answers crane-hostd.\n"
                      "# TYPE crane_hypervisor_connected gauge\n"
                      "crane_hypervisor_connected %d\n", g->hv_connected);
    if (g->proxy_known)
        hd_buf_printf(out,
                      "# HELP crane_proxy_up 1 when the proxy domain's "
                      "crane-proxy answered the last probe in time.\n"
                      "# TYPE crane_proxy_up gauge\n"
                      "crane_proxy_up %d\n", g->proxy_up);
    if (g->n_peers)
        hd_buf_puts(out, "# HELP crane_peer_up 1 when the last connection "
                         "to a peer crane-hostd worked.\n"
                         "# TYPE crane_peer_up gauge\n");
    for (size_t i = 0; i < g->n_peers && i < HD_GAUGE_PEERS; i++) {
        put_series(out, "crane_peer_up", "peer", g->peers[i].name, NULL);
        hd_buf_printf(out, "%d\n", g->peers[i].up);
    }
}

int hd_metrics_render(const struct hd_metrics *m, struct hd_buf *out)
{
    if (m == NULL || out == NULL)
        return -EINVAL;
    /* An unreadable history leaves its counters out. */
    if (!m->history.unreadable)
        render_counters(m, out);
    if (m->pool.known)
        render_pool(m, out);
    if (m->history.known)
        render_history(m, out);
    render_gauges(&m->gauges, out);
    hd_buf_puts(out, "# HELP crane_build_info The crane version that "
                     "serves these metrics.\n"
                     "# TYPE crane_build_info gauge\n");
    put_series(out, "crane_build_info", "version", crn_version(), NULL);
    hd_buf_puts(out, "1\n");
    return out->err;
}
