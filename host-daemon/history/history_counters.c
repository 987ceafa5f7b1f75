/* The history's counters that never go down: a table beside the rows,
 * bumped in the transaction that ends a migration, never pruned. */
/*
 * Prometheus takes a counter that goes down for a restart of its source,
 * so counters recomputed from the rows would reset at every daily prune.
 * Each finished migration is instead added once, in the transaction that
 * ends it (hd_history_finish, record, store), to the `counters` table:
 * (metric, label, bucket) -> value, histograms' buckets cumulative as
 * exposed.  Pruning deletes rows, never counters.  A file made before the
 * table is given it at open, counting the migrations it holds then.
 */
#include "history_counters.h"

#include "history_db.h"
#include "proto/log.h"
#include "host-daemon/web/metrics_le.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#define COUNTERS_TABLE                                                       \
    "CREATE TABLE counters ("                                                \
    " metric TEXT NOT NULL,"                                                 \
    " label TEXT NOT NULL,"                                                  \
    " bucket INTEGER NOT NULL,"                                              \
    " value REAL NOT NULL DEFAULT 0 CHECK (value >= 0),"                     \
    " PRIMARY KEY (metric, label, bucket))"

#define BUMP_SQL                                                             \
    "INSERT INTO counters (metric, label, bucket, value) VALUES (?, ?, ?, ?)" \
    " ON CONFLICT (metric, label, bucket) DO UPDATE"                         \
    " SET value = value + excluded.value"

/* The steps a metric observes, as metrics.c's histograms took them. */
#define STEPS_SQL                                                            \
    "SELECT phase, duration FROM steps WHERE migration_id = ?"               \
    " AND ((pid IS NOT NULL AND phase IN ('pre', 'post'))"                   \
    "  OR (pid IS NULL AND phase = 'downtime')) ORDER BY seq"

static const double stoppage_le[HD_STOPPAGE_BUCKETS] = HD_STOPPAGE_LE;
static const double downtime_le[HD_DOWNTIME_BUCKETS] = HD_DOWNTIME_LE;
static const double duration_le[HD_DURATION_BUCKETS] = HD_DURATION_LE;

static int prepare(struct hd_history *h, const char *sql, sqlite3_stmt **s)
{
    int rc = sqlite3_prepare_v2(h->db, sql, -1, s, NULL);

    return rc == SQLITE_OK ? 0 : hd__log_sqlite(h, rc, sql);
}

static int bump(struct hd_history *h, sqlite3_stmt *s, const char *metric,
                const char *label, int bucket, double by)
{
    sqlite3_reset(s);
    sqlite3_bind_text(s, 1, metric, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, label, -1, SQLITE_STATIC);
    sqlite3_bind_int(s, 3, bucket);
    sqlite3_bind_double(s, 4, by);
    return hd__stmt_run(h, s);
}

/* One observation of SECONDS into histogram METRIC{LABEL} of N bounds. */
static int observe(struct hd_history *h, sqlite3_stmt *s, const char *metric,
                   const char *label, const double *le, int n,
                   double seconds)
{
    int rc = 0;

    if (!isfinite(seconds) || seconds < 0)
        return 0; /* a hand-edited row: skipped, as the scrape did */
    for (int b = 0; rc == 0 && b < n; b++)
        if (seconds <= le[b])
            rc = bump(h, s, metric, label, b, 1);
    if (rc == 0)
        rc = bump(h, s, metric, label, HD_COUNTER_COUNT, 1);
    if (rc == 0)
        rc = bump(h, s, metric, label, HD_COUNTER_SUM, seconds);
    return rc;
}

/* The program steps and downtime of migration ID (of MODE). */
static int add_steps(struct hd_history *h, sqlite3_stmt *b, const char *id,
                     const char *mode)
{
    sqlite3_stmt *s;
    int rc = prepare(h, STEPS_SQL, &s);

    if (rc != 0)
        return rc;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    while (rc == 0 && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        const char *phase = (const char *)sqlite3_column_text(s, 0);
        double d = sqlite3_column_double(s, 1);

        rc = 0;
        if (phase && strcmp(phase, "downtime") == 0)
            rc = observe(h, b, "downtime", mode, downtime_le,
                         HD_DOWNTIME_BUCKETS, d);
        else if (phase)
            rc = observe(h, b, "stoppage", phase, stoppage_le,
                         HD_STOPPAGE_BUCKETS, d);
    }
    if (rc == SQLITE_DONE)
        rc = 0;
    else if (rc > 0)
        rc = hd__log_sqlite(h, rc, "reading a migration's steps");
    sqlite3_finalize(s);
    return rc;
}

int hd__counters_add(struct hd_history *h, const char *id)
{
    sqlite3_stmt *m = NULL, *b = NULL;
    char mode[16], result[16];
    double start, end;
    int64_t bytes;
    int rc;

    rc = prepare(h, "SELECT mode, result, start_time, end_time, bytes_moved"
                    " FROM migrations WHERE id = ?", &m);
    if (rc == 0)
        rc = prepare(h, BUMP_SQL, &b);
    if (rc != 0)
        goto out;
    sqlite3_bind_text(m, 1, id, -1, SQLITE_STATIC);
    rc = sqlite3_step(m);
    if (rc != SQLITE_ROW) {
        rc = rc == SQLITE_DONE ? -ENOENT
                               : hd__log_sqlite(h, rc, "reading a migration");
        goto out;
    }
    hd__copy_text(mode, sizeof(mode) - 1, m, 0);
    hd__copy_text(result, sizeof(result) - 1, m, 1);
    start = sqlite3_column_double(m, 2);
    end = sqlite3_column_double(m, 3);
    bytes = sqlite3_column_int64(m, 4);
    rc = 0;
    if (strcmp(result, "running") == 0)
        goto out;
    rc = bump(h, b, "migrations", result, HD_COUNTER_COUNT, 1);
    if (rc == 0 && bytes > 0)
        rc = bump(h, b, "bytes", "", HD_COUNTER_COUNT, (double)bytes);
    if (rc == 0)
        rc = observe(h, b, "duration", mode, duration_le,
                     HD_DURATION_BUCKETS, end - start);
    if (rc == 0)
        rc = add_steps(h, b, id, mode);
out:
    sqlite3_finalize(m);
    sqlite3_finalize(b);
    if (rc != 0)
        CRN_ERROR("history %s: cannot count migration %s (%s)", h->path, id,
                 strerror(-rc));
    return rc;
}

/* Whether the file has the counters table, into *HAS. */
static int has_table(struct hd_history *h, int *has)
{
    sqlite3_stmt *s;
    int rc = prepare(h, "SELECT 1 FROM sqlite_master WHERE type = 'table'"
                        " AND name = 'counters'", &s);

    if (rc != 0)
        return rc;
    rc = sqlite3_step(s);
    *has = rc == SQLITE_ROW;
    sqlite3_finalize(s);
    return rc == SQLITE_ROW || rc == SQLITE_DONE
               ? 0 : hd__log_sqlite(h, rc, "looking for the counters");
}

/* Inside the open's transaction: the table, then every finished row. */
static int seed(struct hd_history *h)
{
    sqlite3_stmt *s;
    char id[HD_ID_MAX + 1];
    int rc = sqlite3_exec(h->db, COUNTERS_TABLE, NULL, NULL, NULL);

    if (rc != SQLITE_OK)
        return hd__log_sqlite(h, rc, "making the counters");
    rc = prepare(h, "SELECT id FROM migrations WHERE result != 'running'"
                    " ORDER BY rowid", &s);
    while (rc == 0 && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        hd__copy_text(id, HD_ID_MAX, s, 0);
        rc = hd__counters_add(h, id);
    }
    if (rc == SQLITE_DONE)
        rc = 0;
    else if (rc > 0)
        rc = hd__log_sqlite(h, rc, "counting the migrations");
    sqlite3_finalize(s);
    return rc;
}

int hd__counters_ensure(struct hd_history *h)
{
    int has = 0, rc = has_table(h, &has);

    if (rc != 0 || has)
        return rc;
    rc = sqlite3_exec(h->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        return hd__log_sqlite(h, rc, "beginning the counters");
    /* Another process may have made them meanwhile. */
    rc = has_table(h, &has);
    if (rc == 0 && !has)
        rc = seed(h);
    if (rc == 0 && (rc = sqlite3_exec(h->db, "COMMIT", NULL, NULL, NULL)) !=
                       SQLITE_OK)
        rc = hd__log_sqlite(h, rc, "storing the counters");
    if (rc != 0)
        sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

int hd_history_each_counter(struct hd_history *h, hd_counter_fn *fn,
                            void *arg)
{
    sqlite3_stmt *s;
    int has = 0, rc;

    if (h == NULL || fn == NULL)
        return -EINVAL;
    rc = has_table(h, &has);
    if (rc != 0)
        return rc;
    if (!has)
        return -ENOENT;
    rc = prepare(h, "SELECT metric, label, bucket, value FROM counters"
                    " ORDER BY metric, label, bucket", &s);
    while (rc == 0 && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        const char *metric = (const char *)sqlite3_column_text(s, 0);
        const char *label = (const char *)sqlite3_column_text(s, 1);
        int64_t bucket = sqlite3_column_int64(s, 2);

        rc = metric && label && bucket >= INT32_MIN && bucket <= INT32_MAX
                 ? fn(arg, metric, label, (int)bucket,
                      sqlite3_column_double(s, 3))
                 : 0;
    }
    if (rc == SQLITE_DONE)
        rc = 0;
    else if (rc > 0)
        rc = hd__log_sqlite(h, rc, "reading the counters");
    sqlite3_finalize(s);
    return rc;
}

int hd_history_running_bytes(struct hd_history *h, uint64_t *bytes)
{
    sqlite3_stmt *s;
    int rc;

    if (h == NULL || bytes == NULL)
        return -EINVAL;
    rc = prepare(h, "SELECT total(bytes_moved) FROM migrations"
                    " WHERE result = 'running'", &s);
    if (rc != 0)
        return rc;
    rc = sqlite3_step(s);
    *bytes = rc == SQLITE_ROW ? (uint64_t)sqlite3_column_double(s, 0) : 0;
    sqlite3_finalize(s);
    return rc == SQLITE_ROW ? 0 : hd__log_sqlite(h, rc, "summing bytes");
}

int hd_history_each_running_stoppage(struct hd_history *h,
                                     hd_stoppage_fn *fn, void *arg)
{
    sqlite3_stmt *s;
    int rc;

    if (h == NULL || fn == NULL)
        return -EINVAL;
    rc = prepare(h, "SELECT s.phase, s.duration, m.mode FROM steps s"
                    " JOIN migrations m ON m.id = s.migration_id"
                    " WHERE m.result = 'running' AND"
                    " ((s.pid IS NOT NULL AND s.phase IN ('pre', 'post'))"
                    " OR (s.pid IS NULL AND s.phase = 'downtime'))"
                    " ORDER BY s.migration_id, s.seq", &s);
    while (rc == 0 && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        const char *phase = (const char *)sqlite3_column_text(s, 0);
        const char *mode = (const char *)sqlite3_column_text(s, 2);

        rc = phase == NULL || mode == NULL ? 0
             : fn(arg, strcmp(mode, "live") == 0 ? HD_MODE_LIVE
                                                 : HD_MODE_OFFLINE,
                  phase, sqlite3_column_double(s, 1));
    }
    if (rc == SQLITE_DONE)
        rc = 0;
    else if (rc > 0)
        rc = hd__log_sqlite(h, rc, "reading running steps");
    sqlite3_finalize(s);
    return rc;
}

/* hd_counter_fn: the "dropped" counter into *(uint64_t *)ARG. */
static int dropped_cb(void *arg, const char *metric, const char *label,
                      int bucket, double value)
{
    (void)label;
    if (strcmp(metric, "dropped") == 0 && bucket == HD_COUNTER_COUNT &&
        isfinite(value) && value >= 0)
        *(uint64_t *)arg = (uint64_t)value;
    return 0;
}

int hd_history_dropped(struct hd_history *h, uint64_t *n)
{
    int rc;

    if (h == NULL || n == NULL)
        return -EINVAL;
    *n = 0;
    rc = hd_history_each_counter(h, dropped_cb, n);
    return rc == -ENOENT ? 0 : rc;
}

int hd_history_count_dropped(struct hd_history *h, uint64_t n)
{
    sqlite3_stmt *b;
    int rc;

    if (h == NULL)
        return -EINVAL;
    if (n == 0)
        return 0;
    if ((rc = prepare(h, BUMP_SQL, &b)) != 0)
        return rc;
    /* One statement: SQLite commits it on its own. */
    rc = bump(h, b, "dropped", "", HD_COUNTER_COUNT, (double)n);
    sqlite3_finalize(b);
    if (rc != 0)
        CRN_ERROR("history %s: cannot count %llu dropped migration(s) (%s)",
                 h->path, (unsigned long long)n, strerror(-rc));
    return rc;
}
