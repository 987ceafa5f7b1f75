/* Sums over the migration history: totals, stoppage times, durations and
 * the per-migration summaries the dashboard's stats are computed from. */
#include "history_db.h"

#include "proto/log.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int hd_history_totals(struct hd_history *h, struct hd_totals *t)
{
    sqlite3_stmt *s;
    int rc;

    if (h == NULL || t == NULL)
        return -EINVAL;
    memset(t, 0, sizeof(*t));
    s = hd__stmt(h, ST_TOTALS);
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        int r = hd__name_index(hd__result_names, HD_RESULT_COUNT,
                           (const char *)sqlite3_column_text(s, 0));
        double bytes = sqlite3_column_double(s, 2);

        if (r < 0) {
            CRN_ERROR("history %s: a migration has an unknown result",
                     h->path);
            rc = -EIO;
            break;
        }
        t->by_result[r] = (uint64_t)sqlite3_column_int64(s, 1);
        /* total() sums in floating point: exact up to 2^53 bytes. */
        t->bytes_moved += (uint64_t)bytes;
    }
    if (rc == SQLITE_DONE)
        rc = 0;
    else if (rc > 0)
        rc = hd__log_sqlite(h, rc, "summing migrations");
    sqlite3_reset(s);
    return rc;
}

/* The caller's function (one of the two) and argument, for a row
 * function to call. */
struct stats_caller {
    hd_stoppage_fn *stoppage;
    hd_duration_fn *duration;
    void *arg;
};

/* What each_row_of_known_mode calls for a row S of mode MODE. */
typedef int mode_row_fn(const struct stats_caller *c, sqlite3_stmt *s,
                        enum hd_mode mode);

/* Calls ROW with C for each row of statement ID whose mode (column
 * MODE_COL) is known, until ROW returns non-zero; -EINVAL without H or
 * the caller's function.  WHAT names the reading in a log line should
 * SQLite fail. */
static int each_row_of_known_mode(struct hd_history *h, enum hd__stmt_id id,
                                  int mode_col, mode_row_fn *row,
                                  struct stats_caller *c, const char *what)
{
    sqlite3_stmt *s;
    int rc = 0;
    int src = SQLITE_DONE;

    if (h == NULL || (c->stoppage == NULL && c->duration == NULL))
        return -EINVAL;
    s = hd__stmt(h, id);
    while (rc == 0 && (src = sqlite3_step(s)) == SQLITE_ROW) {
        int mode = hd__name_index(hd__mode_names, HD__MODE_NAMES,
                                  (const char *)sqlite3_column_text(s,
                                                                    mode_col));

        /* A hand-edited row with an unknown mode is left out. */
        if (mode > 0)
            rc = row(c, s, (enum hd_mode)mode);
    }
    if (rc == 0 && src != SQLITE_DONE)
        rc = hd__log_sqlite(h, src, what);
    sqlite3_reset(s);
    return rc;
}

/* A row of ST_STOPPAGES: phase, seconds, mode. */
static int stoppage_row(const struct stats_caller *c, sqlite3_stmt *s,
                        enum hd_mode mode)
{
    const char *phase = (const char *)sqlite3_column_text(s, 0);

    return c->stoppage(c->arg, mode, phase != NULL ? phase : "",
                       sqlite3_column_double(s, 1));
}

int hd_history_each_stoppage(struct hd_history *h, hd_stoppage_fn *fn,
                             void *arg)
{
    struct stats_caller c = { .stoppage = fn, .arg = arg };

    return each_row_of_known_mode(h, ST_STOPPAGES, 2, stoppage_row, &c,
                                  "reading stoppage times");
}

/* A REAL column of S, NAN when NULL. */
static double column_or_nan(sqlite3_stmt *s, int col)
{
    if (sqlite3_column_type(s, col) == SQLITE_NULL)
        return NAN;
    return sqlite3_column_double(s, col);
}

/* The row of S (ST_SUMMARIES) into the hd_summary ROW: an hd__row_fn. */
static int read_summary(struct hd_history *h, sqlite3_stmt *s, void *row)
{
    struct hd_summary *out = row;
    int mode, result;
    sqlite3_int64 bytes;

    memset(out, 0, sizeof(*out));
    hd__copy_text(out->domain, HD_NAME_MAX, s, 0);
    hd__copy_text(out->src_host, HD_NAME_MAX, s, 1);
    hd__copy_text(out->dst_host, HD_NAME_MAX, s, 2);
    mode = hd__name_index(hd__mode_names, HD__MODE_NAMES,
                          (const char *)sqlite3_column_text(s, 3));
    result = hd__name_index(hd__result_names, HD_RESULT_COUNT,
                            (const char *)sqlite3_column_text(s, 4));
    out->start_time = sqlite3_column_double(s, 5);
    out->end_time = sqlite3_column_double(s, 6);
    bytes = sqlite3_column_int64(s, 7);
    out->pre = column_or_nan(s, 8);
    out->post = column_or_nan(s, 9);
    out->downtime = column_or_nan(s, 10);
    if (mode < 0 || result < 0 || bytes < 0) {
        CRN_ERROR("history %s: a migration of %s has a corrupt row", h->path,
                 out->domain);
        return -EIO;
    }
    out->mode = (enum hd_mode)mode;
    out->result = (enum hd_result)result;
    out->bytes_moved = (uint64_t)bytes;
    return 0;
}

int hd_history_summaries(struct hd_history *h, const struct hd_filter *f,
                         size_t limit, struct hd_summary **out, size_t *n,
                         uint64_t *total)
{
    struct hd_summary *list = NULL;
    void *rows = NULL;
    sqlite3_stmt *s;
    size_t count = 0;
    int rc;

    if (h == NULL || hd_filter_check(f) != 0 || out == NULL || n == NULL ||
        limit == 0 || limit > HD_SUMMARY_MAX)
        return -EINVAL;
    *out = NULL;
    *n = 0;
    rc = hd__tx_begin(h, 0);
    if (rc != 0)
        return rc;
    s = hd__stmt(h, ST_QUERY_COUNT);
    hd__bind_filter(s, f);
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        if (total != NULL)
            *total = (uint64_t)sqlite3_column_int64(s, 0);
        rc = 0;
    } else {
        rc = hd__log_sqlite(h, rc, "counting migrations");
    }
    sqlite3_reset(s);
    if (rc == 0) {
        s = hd__stmt(h, ST_SUMMARIES);
        hd__bind_filter(s, f);
        sqlite3_bind_int64(s, 7, (sqlite3_int64)limit);
        rc = hd__read_rows(h, s, limit, sizeof(*list), read_summary,
                           "summing up migrations", &rows, &count);
        list = rows;
    }
    rc = hd__tx_end(h, rc);
    if (rc != 0) {
        free(list);
        return rc;
    }
    *out = list;
    *n = count;
    return 0;
}

/* A row of ST_DURATIONS: mode, seconds. */
static int duration_row(const struct stats_caller *c, sqlite3_stmt *s,
                        enum hd_mode mode)
{
    return c->duration(c->arg, mode, sqlite3_column_double(s, 1));
}

int hd_history_each_duration(struct hd_history *h, hd_duration_fn *fn,
                             void *arg)
{
    struct stats_caller c = { .duration = fn, .arg = arg };

    return each_row_of_known_mode(h, ST_DURATIONS, 0, duration_row, &c,
                                  "reading durations");
}
