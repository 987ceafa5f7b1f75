/* Sums over the migration history: totals by result, stoppage times. */
#include "history_db.h"

#include "log.h"

#include <errno.h>
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
            HD_ERROR("history %s: a migration has an unknown result",
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

        rc = fn(arg, phase != NULL ? phase : "", sqlite3_column_double(s, 1));
    }
    if (rc == 0 && src != SQLITE_DONE)
        rc = hd__log_sqlite(h, src, "reading stoppage times");
    sqlite3_reset(s);
    return rc;
}
