/* The history's internals its files share: the statements' text, the
 * names of modes and results, SQLite's errors as -errno, transactions,
 * the checks of ids, texts and times, a column copied within bounds. */
#include "history_db.h"

#include "proto/log.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const hd__stmt_sql[ST_COUNT] = {
    [ST_BEGIN_READ] = "BEGIN",
    [ST_BEGIN_WRITE] = "BEGIN IMMEDIATE",
    [ST_COMMIT] = "COMMIT",
    [ST_ROLLBACK] = "ROLLBACK",
    [ST_INSERT_MIGRATION] =
        "INSERT INTO migrations (" MIGRATION_COLUMNS ")"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    [ST_INSERT_STEP] =
        "INSERT INTO steps (migration_id, seq, phase, pid, program,"
        " start_offset, duration) VALUES (?, ?, ?, ?, ?, ?, ?)",
    [ST_RESULT_OF] = "SELECT result FROM migrations WHERE id = ?",
    [ST_COUNT_STEPS] = "SELECT count(*) FROM steps WHERE migration_id = ?",
    [ST_SET_PROGRESS] = "UPDATE migrations SET bytes_moved = ? WHERE id = ?",
    [ST_SET_FINISH] =
        "UPDATE migrations SET result = ?, end_time = ?, error = ?"
        " WHERE id = ?",
    [ST_LIST] = "SELECT " MIGRATION_COLUMNS " FROM migrations"
                " ORDER BY start_time DESC, rowid DESC LIMIT ?",
    [ST_GET] = "SELECT " MIGRATION_COLUMNS " FROM migrations WHERE id = ?",
    [ST_GET_STEPS] =
        "SELECT phase, pid, program, start_offset, duration FROM steps"
        " WHERE migration_id = ? ORDER BY seq LIMIT " "4096",
    [ST_TOTALS] = "SELECT result, count(*), total(bytes_moved)"
                  " FROM migrations GROUP BY result",
    [ST_STOPPAGES] =
        "SELECT s.phase, s.duration, m.mode FROM steps s"
        " JOIN migrations m ON m.id = s.migration_id"
        " WHERE (s.pid IS NOT NULL AND s.phase IN ('pre', 'post'))"
        " OR (s.pid IS NULL AND s.phase = 'downtime')"
        " ORDER BY s.migration_id, s.seq",
    /* Steps go with their migration (ON DELETE CASCADE). */
    [ST_PRUNE] = "DELETE FROM migrations"
                 " WHERE result != 'running' AND end_time < ?",
    [ST_SET_DESTINATION] = "UPDATE migrations SET dst_host = ? WHERE id = ?",
    [ST_QUERY] = "SELECT " MIGRATION_COLUMNS " FROM migrations" FILTER_WHERE
                 " ORDER BY start_time DESC, rowid DESC LIMIT ?7 OFFSET ?8",
    [ST_QUERY_COUNT] = "SELECT count(*) FROM migrations" FILTER_WHERE,
    /* The steps' primary key (migration_id, seq) serves each subquery. */
    [ST_SUMMARIES] =
        "SELECT domain, src_host, dst_host, mode, result, start_time,"
        " end_time, bytes_moved,"
        " (SELECT max(duration) FROM steps WHERE migration_id = id"
        "  AND pid IS NOT NULL AND phase = 'pre'),"
        " (SELECT max(duration) FROM steps WHERE migration_id = id"
        "  AND pid IS NOT NULL AND phase = 'post'),"
        " (SELECT max(duration) FROM steps WHERE migration_id = id"
        "  AND pid IS NULL AND phase = 'downtime')"
        " FROM migrations" FILTER_WHERE
        " ORDER BY start_time DESC, rowid DESC LIMIT ?7",
    [ST_DURATIONS] = "SELECT mode, end_time - start_time FROM migrations"
                     " WHERE result != 'running'",
    [ST_SET_STORED] =
        "UPDATE migrations SET result = ?, end_time = ?, error = ?,"
        " bytes_moved = max(bytes_moved, ?), dst_host = ? WHERE id = ?",
};

_Static_assert(HD_STEPS_MAX == 4096, "ST_GET_STEPS's LIMIT is HD_STEPS_MAX");

const char *const hd__mode_names[HD__MODE_NAMES] = {
    [HD_MODE_LIVE] = "live",
    [HD_MODE_OFFLINE] = "offline",
};

const char *const hd__result_names[HD_RESULT_COUNT] = {
    [HD_RESULT_RUNNING] = "running",
    [HD_RESULT_OK] = "ok",
    [HD_RESULT_FAILED] = "failed",
    [HD_RESULT_ROLLED_BACK] = "rolled-back",
    [HD_RESULT_REMOTING] = "remoting",
};
_Static_assert(sizeof(hd__result_names) / sizeof(*hd__result_names) ==
                   HD_RESULT_COUNT,
               "a name for every enum hd_result");

const char *hd_mode_name(enum hd_mode mode)
{
    if (mode != HD_MODE_LIVE && mode != HD_MODE_OFFLINE)
        return NULL;
    return hd__mode_names[mode];
}

const char *hd_result_name(enum hd_result result)
{
    if ((unsigned)result >= HD_RESULT_COUNT)
        return NULL;
    return hd__result_names[result];
}

/* Index of NAME in NAMES[0..N), or -1. */
int hd__name_index(const char *const *names, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (names[i] != NULL && name != NULL && strcmp(names[i], name) == 0)
            return i;
    return -1;
}

/* An SQLite result code as -errno. */
static int sqlite_errno(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return -EBUSY;
    case SQLITE_NOMEM:
        return -ENOMEM;
    case SQLITE_FULL:
        return -ENOSPC;
    case SQLITE_READONLY:
    case SQLITE_PERM:
        return -EACCES;
    case SQLITE_CONSTRAINT:
        return -EINVAL;
    default:
        return -EIO;
    }
}

int hd__log_sqlite(struct hd_history *h, int rc, const char *what)
{
    CRN_ERROR("history %s: %s: %s (sqlite %d)", h->path, what,
             sqlite3_errmsg(h->db), rc);
    return sqlite_errno(rc);
}

/* Readies statement ID for new bindings. */
sqlite3_stmt *hd__stmt(struct hd_history *h, enum hd__stmt_id id)
{
    sqlite3_stmt *s = h->stmt[id];

    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return s;
}

/* Steps S to its end (it must return no row); returns 0 or -errno. */
int hd__stmt_run(struct hd_history *h, sqlite3_stmt *s)
{
    int rc = sqlite3_step(s);

    sqlite3_reset(s);
    if (rc != SQLITE_DONE)
        return hd__log_sqlite(h, rc, sqlite3_sql(s));
    return 0;
}

int hd__read_rows(struct hd_history *h, sqlite3_stmt *s, size_t limit,
                  size_t size, hd__row_fn *read, const char *what,
                  void **out, size_t *n)
{
    char *list = NULL;
    size_t count = 0;
    int rc;

    while (count < limit && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (list == NULL) {
            list = calloc(limit, size);
            if (list == NULL) {
                rc = -ENOMEM;
                break;
            }
        }
        rc = read(h, s, list + count * size);
        if (rc != 0)
            break;
        count++;
    }
    if (count == limit || rc == SQLITE_DONE)
        rc = 0;
    else if (rc > 0)
        rc = hd__log_sqlite(h, rc, what);
    sqlite3_reset(s);
    if (rc != 0) {
        free(list);
        return rc;
    }
    *out = list;
    *n = count;
    return 0;
}

int hd__tx_begin(struct hd_history *h, int write)
{
    return hd__stmt_run(h, hd__stmt(h, write ? ST_BEGIN_WRITE : ST_BEGIN_READ));
}

/* Commits when RC is 0, else rolls back; returns RC or the commit's error. */
int hd__tx_end(struct hd_history *h, int rc)
{
    if (rc == 0) {
        rc = hd__stmt_run(h, hd__stmt(h, ST_COMMIT));
        if (rc == 0)
            return 0;
    }
    if (!sqlite3_get_autocommit(h->db))
        hd__stmt_run(h, hd__stmt(h, ST_ROLLBACK));
    return rc;
}

/* --- validation: everything that reaches the database is checked ---------- */

int hd__text_ok(const char *s, size_t max, int may_be_empty)
{
    size_t n;

    if (s == NULL)
        return 0;
    n = strnlen(s, max + 1);
    return n <= max && (may_be_empty || n > 0);
}

int hd__id_ok(const char *id)
{
    if (!hd__text_ok(id, HD_ID_MAX, 0))
        return 0;
    for (const char *p = id; *p != '\0'; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
              (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' ||
              *p == '-'))
            return 0;
    return 1;
}

int hd__seconds_ok(double s)
{
    return isfinite(s) && s >= 0;
}

/* Copies column COL of S, at most MAX bytes, into OUT[MAX + 1]. */
void hd__copy_text(char *out, size_t max, sqlite3_stmt *s, int col)
{
    const char *t = (const char *)sqlite3_column_text(s, col);

    snprintf(out, max + 1, "%s", t != NULL ? t : "");
}
