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

int hd_history_each_stoppage(struct hd_history *h, hd_stoppage_fn *fn,
                             void *arg)
{
    sqlite3_stmt *s;
    int rc = 0;
    int src = SQLITE_DONE;

    if (h == NULL || fn == NULL)
        return -EINVAL;
    s = hd__stmt(h, ST_STOPPAGES);
    while (rc == 0 && (src = sqlite3_step(s)) == SQLITE_ROW) {
        const char *phase = (const char *)sqlite3_column_text(s, 0);
        int mode = hd__name_index(hd__mode_names, HD__MODE_NAMES,
                                  (const char *)sqlite3_column_text(s, 2));

        /* A hand-edited row with an unknown mode is left out. */
        if (mode > 0)
            rc = fn(arg, (enum hd_mode)mode, phase != NULL ? phase : "",
                    sqlite3_column_double(s, 1));
    }
    if (rc == 0 && src != SQLITE_DONE)
        rc = hd__log_sqlite(h, src, "reading stoppage times");
    sqlite3_reset(s);
    return rc;
}

/* A REAL column of S, NAN when NULL. */
static double column_or_nan(sqlite3_stmt *s, int col)
{
    if (sqlite3_column_type(s, col) == SQLITE_NULL)
        return NAN;
    return sqlite3_column_double(s, col);
}

static int read_summary(struct hd_history *h, sqlite3_stmt *s,
                        struct hd_summary *out)
{
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
        while (count < limit && (rc = sqlite3_step(s)) == SQLITE_ROW) {
            if (list == NULL && (list = calloc(limit, sizeof(*list))) == NULL) {
                rc = -ENOMEM;
                break;
            }
            rc = read_summary(h, s, &list[count]);
            if (rc != 0)
                break;
            count++;
        }
        if (count == limit || rc == SQLITE_DONE)
            rc = 0;
        else if (rc > 0)
            rc = hd__log_sqlite(h, rc, "summing up migrations");
        sqlite3_reset(s);
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

int hd_history_each_duration(struct hd_history *h, hd_duration_fn *fn,
                             void *arg)
{
    sqlite3_stmt *s;
    int rc = 0;
    int src = SQLITE_DONE;

    if (h == NULL || fn == NULL)
        return -EINVAL;
    s = hd__stmt(h, ST_DURATIONS);
    while (rc == 0 && (src = sqlite3_step(s)) == SQLITE_ROW) {
        int mode = hd__name_index(hd__mode_names, HD__MODE_NAMES,
                                  (const char *)sqlite3_column_text(s, 0));

        /* A hand-edited row with an unknown mode is left out. */
        if (mode > 0)
            rc = fn(arg, (enum hd_mode)mode, sqlite3_column_double(s, 1));
    }
    if (rc == 0 && src != SQLITE_DONE)
        rc = hd__log_sqlite(h, src, "reading durations");
    sqlite3_reset(s);
    return rc;
}
