/* The history's internals shared by its files (history*.c); not an API. */
#ifndef HD_HISTORY_DB_H
#define HD_HISTORY_DB_H

#include "history.h"

#include <sqlite3.h>

#define MIGRATION_COLUMNS                                                    \
    "id, domain, src_host, dst_host, mode, start_time, end_time, result, "   \
    "error, bytes_moved"

/* The WHERE clause of a struct hd_filter, parameters ?1 to ?6
 * (hd__bind_filter binds them). */
#define FILTER_WHERE                                                         \
    " WHERE (?1 IS NULL OR domain = ?1)"                                     \
    " AND (?2 IS NULL OR src_host = ?2 OR dst_host = ?2)"                    \
    " AND (?3 IS NULL OR mode = ?3)"                                         \
    " AND (?4 IS NULL OR result = ?4)"                                       \
    " AND (?5 IS NULL OR start_time >= ?5)"                                  \
    " AND (?6 IS NULL OR start_time < ?6)"

/* Every statement, prepared once at open. */
enum hd__stmt_id {
    ST_BEGIN_READ,
    ST_BEGIN_WRITE,
    ST_COMMIT,
    ST_ROLLBACK,
    ST_INSERT_MIGRATION,
    ST_INSERT_STEP,
    ST_RESULT_OF,
    ST_COUNT_STEPS,
    ST_SET_PROGRESS,
    ST_SET_FINISH,
    ST_LIST,
    ST_GET,
    ST_GET_STEPS,
    ST_TOTALS,
    ST_STOPPAGES,
    ST_PRUNE,
    ST_SET_DESTINATION,
    ST_QUERY,
    ST_QUERY_COUNT,
    ST_SUMMARIES,
    ST_DURATIONS,
    ST_SET_STORED,
    ST_COUNT
};

/* Their SQL, indexed by enum hd__stmt_id (history.c). */
extern const char *const hd__stmt_sql[ST_COUNT];

struct hd_history {
    sqlite3 *db;
    char *path;                     /* for log lines */
    sqlite3_stmt *stmt[ST_COUNT];
};

/* Names as stored, indexed by enum hd_mode and enum hd_result. */
#define HD__MODE_NAMES 3
extern const char *const hd__mode_names[HD__MODE_NAMES];
extern const char *const hd__result_names[HD_RESULT_COUNT];

/* Index of NAME in NAMES[0..N), or -1. */
int hd__name_index(const char *const *names, int n, const char *name);

/* Logs SQLite's error RC while doing WHAT; returns it as -errno. */
int hd__log_sqlite(struct hd_history *h, int rc, const char *what);

/* Statement ID, reset and its bindings cleared. */
sqlite3_stmt *hd__stmt(struct hd_history *h, enum hd__stmt_id id);

/* Steps S to its end (it must return no row); returns 0 or -errno. */
int hd__stmt_run(struct hd_history *h, sqlite3_stmt *s);

/* A read (WRITE 0) or write transaction; hd__tx_end commits when RC is
 * 0, else rolls back, and returns RC or the commit's error. */
int hd__tx_begin(struct hd_history *h, int write);
int hd__tx_end(struct hd_history *h, int rc);

/* Checks of what reaches the database. */
int hd__text_ok(const char *s, size_t max, int may_be_empty);
int hd__id_ok(const char *id);
int hd__seconds_ok(double s);

/* Binds F (checked) to ?1..?6 of S (FILTER_WHERE). */
void hd__bind_filter(sqlite3_stmt *s, const struct hd_filter *f);

/* Copies column COL of S, at most MAX bytes, into OUT[MAX + 1]. */
void hd__copy_text(char *out, size_t max, sqlite3_stmt *s, int col);

/* The row of S (MIGRATION_COLUMNS, from column 0) into *M; -EIO for a
 * corrupt row (the file may have been edited by hand). */
int hd__read_migration(struct hd_history *h, sqlite3_stmt *s,
                       struct hd_migration *m);

/* What hd__read_rows calls to read the row of S into ROW. */
typedef int hd__row_fn(struct hd_history *h, sqlite3_stmt *s, void *row);

/* Reads the rows of S (at most LIMIT) by READ into a calloc'ed array of
 * SIZE-byte rows, *OUT (NULL for none), their count *N; S is reset.  WHAT
 * names the reading in the log should SQLite fail; on an error nothing is
 * kept and *OUT, *N are untouched. */
int hd__read_rows(struct hd_history *h, sqlite3_stmt *s, size_t limit,
                  size_t size, hd__row_fn *read, const char *what,
                  void **out, size_t *n);

/* Creates table job_stats when missing (history_job.c; at open). */
int hd__history_job_schema(struct hd_history *h);

#endif /* HD_HISTORY_DB_H */
