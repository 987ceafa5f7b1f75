/* Durable migration history: migrations and their steps in SQLite. */
#include "history.h"

#include "log.h"

#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The schema, version 2.  Mode and result are stored by name so that an
 * operator reading the file with sqlite3 sees what they mean; CHECK
 * constraints keep out anything else.  A new file gets schema_v2 at once;
 * an older file is brought up to it by open_schema(), one upgrade step per
 * version.  A step is frozen once released: version 3 would bring its own
 * schema_v3 for new files and a step from 2, leaving upgrade_v1_to_v2 and
 * the texts it uses (MIGRATIONS_V2) as they are.
 *
 * Version 1 differed only in the result CHECK, which lacked 'remoting'.
 */
#define SCHEMA_VERSION 2

/* Version 2's migrations table, created as NAME (the upgrade builds it
 * beside the old one), and its index. */
#define MIGRATIONS_V2(name)                                                  \
    "CREATE TABLE " name " ("                                                \
    " id TEXT PRIMARY KEY,"                                                  \
    " domain TEXT NOT NULL,"                                                 \
    " src_host TEXT NOT NULL,"                                               \
    " dst_host TEXT NOT NULL,"                                               \
    " mode TEXT NOT NULL CHECK (mode IN ('live', 'offline')),"               \
    " start_time REAL NOT NULL,"                                             \
    " end_time REAL NOT NULL DEFAULT 0,"                                     \
    " result TEXT NOT NULL CHECK (result IN"                                 \
    "  ('running', 'ok', 'failed', 'rolled-back', 'remoting')),"             \
    " error TEXT NOT NULL DEFAULT '',"                                       \
    " bytes_moved INTEGER NOT NULL DEFAULT 0 CHECK (bytes_moved >= 0));"
#define MIGRATIONS_V2_INDEX                                                  \
    "CREATE INDEX migrations_by_start ON migrations (start_time);"

static const char schema_v2[] =
    MIGRATIONS_V2("migrations")
    MIGRATIONS_V2_INDEX
    "CREATE TABLE steps ("
    " migration_id TEXT NOT NULL REFERENCES migrations (id)"
    "  ON DELETE CASCADE,"
    " seq INTEGER NOT NULL,"
    " phase TEXT NOT NULL,"
    " pid INTEGER,"           /* NULL: a host step */
    " program TEXT,"
    " start_offset REAL NOT NULL,"
    " duration REAL NOT NULL,"
    " PRIMARY KEY (migration_id, seq));"
    "INSERT INTO schema_version (version) VALUES (2);";

/*
 * Version 1 to 2: SQLite cannot alter a CHECK constraint, so the table is
 * rebuilt as its documentation prescribes (lang_altertable.html, "Making
 * Other Kinds Of Table Schema Changes"): create the new table under another
 * name, copy the rows (rowid too: it orders migrations that started in the
 * same second), drop the old table, rename the new one, recreate the index.
 * The new table is renamed, not the old one, so that steps' REFERENCES
 * migrations still names it.  Foreign keys must be off (open_schema), or
 * the DROP would delete every step by cascade.
 */
static const char upgrade_v1_to_v2[] =
    MIGRATIONS_V2("migrations_v2")
    "INSERT INTO migrations_v2 (rowid, id, domain, src_host, dst_host, mode,"
    " start_time, end_time, result, error, bytes_moved)"
    " SELECT rowid, id, domain, src_host, dst_host, mode, start_time,"
    " end_time, result, error, bytes_moved FROM migrations;"
    "DROP TABLE migrations;"
    "ALTER TABLE migrations_v2 RENAME TO migrations;"
    MIGRATIONS_V2_INDEX
    "UPDATE schema_version SET version = 2;";

#define MIGRATION_COLUMNS                                                    \
    "id, domain, src_host, dst_host, mode, start_time, end_time, result, "   \
    "error, bytes_moved"

/* Every statement, prepared once at open. */
enum stmt_id {
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
    ST_COUNT
};

static const char *const stmt_sql[ST_COUNT] = {
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
        "SELECT phase, duration FROM steps"
        " WHERE (pid IS NOT NULL AND phase IN ('pre', 'post'))"
        " OR (pid IS NULL AND phase = 'downtime')"
        " ORDER BY migration_id, seq",
    /* Steps go with their migration (ON DELETE CASCADE). */
    [ST_PRUNE] = "DELETE FROM migrations"
                 " WHERE result != 'running' AND end_time < ?",
};

_Static_assert(HD_STEPS_MAX == 4096, "ST_GET_STEPS's LIMIT is HD_STEPS_MAX");

struct hd_history {
    sqlite3 *db;
    char *path;                     /* for log lines */
    sqlite3_stmt *stmt[ST_COUNT];
};

static const char *const mode_names[] = {
    [HD_MODE_LIVE] = "live",
    [HD_MODE_OFFLINE] = "offline",
};

static const char *const result_names[] = {
    [HD_RESULT_RUNNING] = "running",
    [HD_RESULT_OK] = "ok",
    [HD_RESULT_FAILED] = "failed",
    [HD_RESULT_ROLLED_BACK] = "rolled-back",
    [HD_RESULT_REMOTING] = "remoting",
};
_Static_assert(sizeof(result_names) / sizeof(*result_names) ==
                   HD_RESULT_COUNT,
               "a name for every enum hd_result");

const char *hd_mode_name(enum hd_mode mode)
{
    if (mode != HD_MODE_LIVE && mode != HD_MODE_OFFLINE)
        return NULL;
    return mode_names[mode];
}

const char *hd_result_name(enum hd_result result)
{
    if ((unsigned)result >= HD_RESULT_COUNT)
        return NULL;
    return result_names[result];
}

/* Index of NAME in NAMES[0..N), or -1. */
static int name_index(const char *const *names, int n, const char *name)
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

static int log_sqlite(struct hd_history *h, int rc, const char *what)
{
    HD_ERROR("history %s: %s: %s (sqlite %d)", h->path, what,
             sqlite3_errmsg(h->db), rc);
    return sqlite_errno(rc);
}

/* Readies statement ID for new bindings. */
static sqlite3_stmt *stmt_get(struct hd_history *h, enum stmt_id id)
{
    sqlite3_stmt *s = h->stmt[id];

    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return s;
}

/* Steps S to its end (it must return no row); returns 0 or -errno. */
static int stmt_run(struct hd_history *h, sqlite3_stmt *s)
{
    int rc = sqlite3_step(s);

    sqlite3_reset(s);
    if (rc != SQLITE_DONE)
        return log_sqlite(h, rc, sqlite3_sql(s));
    return 0;
}

static int tx_begin(struct hd_history *h, int write)
{
    return stmt_run(h, stmt_get(h, write ? ST_BEGIN_WRITE : ST_BEGIN_READ));
}

/* Commits when RC is 0, else rolls back; returns RC or the commit's error. */
static int tx_end(struct hd_history *h, int rc)
{
    if (rc == 0) {
        rc = stmt_run(h, stmt_get(h, ST_COMMIT));
        if (rc == 0)
            return 0;
    }
    if (!sqlite3_get_autocommit(h->db))
        stmt_run(h, stmt_get(h, ST_ROLLBACK));
    return rc;
}

/* --- validation: everything that reaches the database is checked ---------- */

static int text_ok(const char *s, size_t max, int may_be_empty)
{
    size_t n;

    if (s == NULL)
        return 0;
    n = strnlen(s, max + 1);
    return n <= max && (may_be_empty || n > 0);
}

static int id_ok(const char *id)
{
    if (!text_ok(id, HD_ID_MAX, 0))
        return 0;
    for (const char *p = id; *p != '\0'; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
              (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' ||
              *p == '-'))
            return 0;
    return 1;
}

static int seconds_ok(double s)
{
    return isfinite(s) && s >= 0;
}

static int check_migration(const struct hd_migration *m)
{
    if (m == NULL || !id_ok(m->id) || !text_ok(m->domain, HD_NAME_MAX, 0) ||
        !text_ok(m->src_host, HD_NAME_MAX, 0) ||
        !text_ok(m->dst_host, HD_NAME_MAX, 0) ||
        !text_ok(m->error, HD_ERROR_MAX, 1) || hd_mode_name(m->mode) == NULL ||
        hd_result_name(m->result) == NULL || !seconds_ok(m->start_time) ||
        !seconds_ok(m->end_time) || m->bytes_moved > INT64_MAX)
        goto bad;
    if (m->result == HD_RESULT_RUNNING ? m->end_time != 0
                                       : m->end_time < m->start_time)
        goto bad;
    return 0;
bad:
    HD_ERROR("history: refusing an invalid migration record%s%.*s",
             m != NULL && id_ok(m->id) ? " " : "", HD_ID_MAX,
             m != NULL && id_ok(m->id) ? m->id : "");
    return -EINVAL;
}

static int check_step(const struct hd_step *s)
{
    if (s == NULL || !text_ok(s->phase, HD_PHASE_MAX, 0) ||
        !text_ok(s->program, HD_PROGRAM_MAX, 1) ||
        (s->pid == 0) != (s->program[0] == '\0') ||
        !seconds_ok(s->start_offset) || !seconds_ok(s->duration)) {
        HD_ERROR("history: refusing an invalid step");
        return -EINVAL;
    }
    return 0;
}

/* --- writing -------------------------------------------------------------- */

static int insert_migration(struct hd_history *h, const struct hd_migration *m)
{
    sqlite3_stmt *s = stmt_get(h, ST_INSERT_MIGRATION);
    int rc;

    sqlite3_bind_text(s, 1, m->id, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, m->domain, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 3, m->src_host, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 4, m->dst_host, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 5, hd_mode_name(m->mode), -1, SQLITE_STATIC);
    sqlite3_bind_double(s, 6, m->start_time);
    sqlite3_bind_double(s, 7, m->end_time);
    sqlite3_bind_text(s, 8, hd_result_name(m->result), -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 9, m->error, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 10, (sqlite3_int64)m->bytes_moved);
    rc = sqlite3_step(s);
    sqlite3_reset(s);
    if (rc == SQLITE_DONE)
        return 0;
    if (sqlite3_extended_errcode(h->db) == SQLITE_CONSTRAINT_PRIMARYKEY) {
        HD_ERROR("history %s: migration %s is already recorded", h->path,
                 m->id);
        return -EEXIST;
    }
    return log_sqlite(h, rc, "recording a migration");
}

static int insert_step(struct hd_history *h, const char *id, int64_t seq,
                       const struct hd_step *st)
{
    sqlite3_stmt *s = stmt_get(h, ST_INSERT_STEP);

    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, seq);
    sqlite3_bind_text(s, 3, st->phase, -1, SQLITE_STATIC);
    if (st->pid != 0) {
        sqlite3_bind_int64(s, 4, st->pid);
        sqlite3_bind_text(s, 5, st->program, -1, SQLITE_STATIC);
    }
    sqlite3_bind_double(s, 6, st->start_offset);
    sqlite3_bind_double(s, 7, st->duration);
    return stmt_run(h, s);
}

int hd_history_record(struct hd_history *h, const struct hd_migration *m,
                      const struct hd_step *steps, size_t n)
{
    int rc;

    if (h == NULL || (steps == NULL && n != 0) || n > HD_STEPS_MAX)
        return -EINVAL;
    rc = check_migration(m);
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = check_step(&steps[i]);
    if (rc != 0)
        return rc;
    rc = tx_begin(h, 1);
    if (rc != 0)
        return rc;
    rc = insert_migration(h, m);
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = insert_step(h, m->id, (int64_t)i, &steps[i]);
    return tx_end(h, rc);
}

int hd_history_begin(struct hd_history *h, const struct hd_migration *m)
{
    if (h == NULL || m == NULL || m->result != HD_RESULT_RUNNING)
        return -EINVAL;
    return hd_history_record(h, m, NULL, 0);
}

/* Inside a write transaction: -ENOENT unless ID is recorded and running. */
static int expect_running(struct hd_history *h, const char *id)
{
    sqlite3_stmt *s = stmt_get(h, ST_RESULT_OF);
    int rc;

    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        const char *r = (const char *)sqlite3_column_text(s, 0);

        rc = r != NULL && strcmp(r, "running") == 0 ? 0 : -EALREADY;
    } else if (rc == SQLITE_DONE) {
        rc = -ENOENT;
    } else {
        rc = log_sqlite(h, rc, "looking up a migration");
    }
    sqlite3_reset(s);
    if (rc == -ENOENT || rc == -EALREADY)
        HD_ERROR("history %s: migration %s is %s", h->path, id,
                 rc == -ENOENT ? "not recorded" : "already finished");
    return rc;
}

int hd_history_add_step(struct hd_history *h, const char *id,
                        const struct hd_step *step)
{
    sqlite3_stmt *s;
    int64_t seq = 0;
    int rc;

    if (h == NULL || !id_ok(id))
        return -EINVAL;
    rc = check_step(step);
    if (rc != 0)
        return rc;
    rc = tx_begin(h, 1);
    if (rc != 0)
        return rc;
    rc = expect_running(h, id);
    if (rc == 0) {
        s = stmt_get(h, ST_COUNT_STEPS);
        sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
        rc = sqlite3_step(s);
        if (rc == SQLITE_ROW) {
            seq = sqlite3_column_int64(s, 0);
            rc = 0;
        } else {
            rc = log_sqlite(h, rc, "counting steps");
        }
        sqlite3_reset(s);
    }
    if (rc == 0 && seq >= HD_STEPS_MAX) {
        HD_ERROR("history %s: migration %s has %d steps already", h->path,
                 id, HD_STEPS_MAX);
        rc = -ENOSPC;
    }
    if (rc == 0)
        rc = insert_step(h, id, seq, step);
    return tx_end(h, rc);
}

int hd_history_progress(struct hd_history *h, const char *id,
                        uint64_t bytes_moved)
{
    sqlite3_stmt *s;
    int rc;

    if (h == NULL || !id_ok(id) || bytes_moved > INT64_MAX)
        return -EINVAL;
    rc = tx_begin(h, 1);
    if (rc != 0)
        return rc;
    rc = expect_running(h, id);
    if (rc == 0) {
        s = stmt_get(h, ST_SET_PROGRESS);
        sqlite3_bind_int64(s, 1, (sqlite3_int64)bytes_moved);
        sqlite3_bind_text(s, 2, id, -1, SQLITE_STATIC);
        rc = stmt_run(h, s);
    }
    return tx_end(h, rc);
}

int hd_history_finish(struct hd_history *h, const char *id,
                      enum hd_result result, double end_time,
                      const char *error)
{
    sqlite3_stmt *s;
    int rc;

    if (h == NULL || !id_ok(id) || result == HD_RESULT_RUNNING ||
        hd_result_name(result) == NULL || !seconds_ok(end_time) ||
        !text_ok(error, HD_ERROR_MAX, 1))
        return -EINVAL;
    rc = tx_begin(h, 1);
    if (rc != 0)
        return rc;
    rc = expect_running(h, id);
    if (rc == 0) {
        s = stmt_get(h, ST_SET_FINISH);
        sqlite3_bind_text(s, 1, hd_result_name(result), -1, SQLITE_STATIC);
        sqlite3_bind_double(s, 2, end_time);
        sqlite3_bind_text(s, 3, error, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 4, id, -1, SQLITE_STATIC);
        rc = stmt_run(h, s);
    }
    return tx_end(h, rc);
}

int hd_history_prune(struct hd_history *h, double before, unsigned *removed)
{
    sqlite3_stmt *s;
    int rc;

    if (h == NULL || !seconds_ok(before))
        return -EINVAL;
    rc = tx_begin(h, 1);
    if (rc != 0)
        return rc;
    s = stmt_get(h, ST_PRUNE);
    sqlite3_bind_double(s, 1, before);
    rc = stmt_run(h, s);
    if (rc == 0 && removed != NULL)
        *removed = (unsigned)sqlite3_changes(h->db);
    return tx_end(h, rc);
}

/* --- reading: the file may have been edited by hand, so rows are checked -- */

/* Copies column COL of S, at most MAX bytes, into OUT[MAX + 1]. */
static void copy_text(char *out, size_t max, sqlite3_stmt *s, int col)
{
    const char *t = (const char *)sqlite3_column_text(s, col);

    snprintf(out, max + 1, "%s", t != NULL ? t : "");
}

static int read_migration(struct hd_history *h, sqlite3_stmt *s,
                          struct hd_migration *m)
{
    int mode;
    int result;
    sqlite3_int64 bytes;

    memset(m, 0, sizeof(*m));
    copy_text(m->id, HD_ID_MAX, s, 0);
    copy_text(m->domain, HD_NAME_MAX, s, 1);
    copy_text(m->src_host, HD_NAME_MAX, s, 2);
    copy_text(m->dst_host, HD_NAME_MAX, s, 3);
    mode = name_index(mode_names, 3, (const char *)sqlite3_column_text(s, 4));
    m->start_time = sqlite3_column_double(s, 5);
    m->end_time = sqlite3_column_double(s, 6);
    result =
        name_index(result_names, HD_RESULT_COUNT,
                   (const char *)sqlite3_column_text(s, 7));
    copy_text(m->error, HD_ERROR_MAX, s, 8);
    bytes = sqlite3_column_int64(s, 9);
    if (mode < 0 || result < 0 || bytes < 0) {
        HD_ERROR("history %s: migration %s has a corrupt row", h->path,
                 m->id);
        return -EIO;
    }
    m->mode = (enum hd_mode)mode;
    m->result = (enum hd_result)result;
    m->bytes_moved = (uint64_t)bytes;
    return 0;
}

int hd_history_list(struct hd_history *h, size_t limit,
                    struct hd_migration **out, size_t *n)
{
    struct hd_migration *list = NULL;
    sqlite3_stmt *s;
    size_t count = 0;
    int rc;

    if (h == NULL || out == NULL || n == NULL || limit == 0 ||
        limit > HD_LIST_MAX)
        return -EINVAL;
    *out = NULL;
    *n = 0;
    s = stmt_get(h, ST_LIST);
    sqlite3_bind_int64(s, 1, (sqlite3_int64)limit);
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (list == NULL) {
            list = calloc(limit, sizeof(*list));
            if (list == NULL) {
                rc = -ENOMEM;
                break;
            }
        }
        rc = read_migration(h, s, &list[count]);
        if (rc != 0)
            break;
        count++;
    }
    if (rc == SQLITE_DONE)
        rc = 0;
    else if (rc > 0)
        rc = log_sqlite(h, rc, "listing migrations");
    sqlite3_reset(s);
    if (rc != 0) {
        free(list);
        return rc;
    }
    *out = list;
    *n = count;
    return 0;
}

static int read_steps(struct hd_history *h, const char *id,
                      struct hd_step **steps, size_t *n)
{
    struct hd_step *list = NULL;
    size_t count = 0;
    size_t cap = 0;
    sqlite3_stmt *s = stmt_get(h, ST_GET_STEPS);
    int rc;

    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        struct hd_step *st;
        sqlite3_int64 pid;

        if (count == cap) {
            size_t ncap = cap != 0 ? cap * 2 : 16;
            struct hd_step *p = realloc(list, ncap * sizeof(*list));

            if (p == NULL) {
                rc = -ENOMEM;
                break;
            }
            list = p;
            cap = ncap;
        }
        st = &list[count];
        memset(st, 0, sizeof(*st));
        copy_text(st->phase, HD_PHASE_MAX, s, 0);
        pid = sqlite3_column_int64(s, 1);
        if (sqlite3_column_type(s, 1) != SQLITE_NULL) {
            if (pid <= 0 || pid > UINT32_MAX) {
                HD_ERROR("history %s: migration %s has a corrupt step",
                         h->path, id);
                rc = -EIO;
                break;
            }
            st->pid = (uint32_t)pid;
            copy_text(st->program, HD_PROGRAM_MAX, s, 2);
        }
        st->start_offset = sqlite3_column_double(s, 3);
        st->duration = sqlite3_column_double(s, 4);
        count++;
    }
    if (rc == SQLITE_DONE)
        rc = 0;
    else if (rc > 0)
        rc = log_sqlite(h, rc, "reading steps");
    sqlite3_reset(s);
    if (rc != 0) {
        free(list);
        return rc;
    }
    *steps = list;
    *n = count;
    return 0;
}

int hd_history_get(struct hd_history *h, const char *id,
                   struct hd_migration *m, struct hd_step **steps,
                   size_t *n)
{
    sqlite3_stmt *s;
    int rc;

    if (h == NULL || !id_ok(id) || m == NULL || steps == NULL || n == NULL)
        return -EINVAL;
    *steps = NULL;
    *n = 0;
    /* One read transaction: the row and its steps from the same snapshot. */
    rc = tx_begin(h, 0);
    if (rc != 0)
        return rc;
    s = stmt_get(h, ST_GET);
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        rc = read_migration(h, s, m);
    else if (rc == SQLITE_DONE)
        rc = -ENOENT;
    else
        rc = log_sqlite(h, rc, "fetching a migration");
    sqlite3_reset(s);
    if (rc == 0)
        rc = read_steps(h, id, steps, n);
    return tx_end(h, rc);
}

int hd_history_totals(struct hd_history *h, struct hd_totals *t)
{
    sqlite3_stmt *s;
    int rc;

    if (h == NULL || t == NULL)
        return -EINVAL;
    memset(t, 0, sizeof(*t));
    s = stmt_get(h, ST_TOTALS);
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        int r = name_index(result_names, HD_RESULT_COUNT,
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
        rc = log_sqlite(h, rc, "summing migrations");
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
    s = stmt_get(h, ST_STOPPAGES);
    while (rc == 0 && (src = sqlite3_step(s)) == SQLITE_ROW) {
        const char *phase = (const char *)sqlite3_column_text(s, 0);

        rc = fn(arg, phase != NULL ? phase : "", sqlite3_column_double(s, 1));
    }
    if (rc == 0 && src != SQLITE_DONE)
        rc = log_sqlite(h, src, "reading stoppage times");
    sqlite3_reset(s);
    return rc;
}

/* --- opening -------------------------------------------------------------- */

/* Runs SQL (no rows), or logs WHAT and returns -errno. */
static int exec_sql(struct hd_history *h, const char *sql, const char *what)
{
    int rc = sqlite3_exec(h->db, sql, NULL, NULL, NULL);

    return rc == SQLITE_OK ? 0 : log_sqlite(h, rc, what);
}

/* -EIO when a row refers to a parent row that is not there. */
static int check_foreign_keys(struct hd_history *h)
{
    sqlite3_stmt *s = NULL;
    int rc;

    rc = sqlite3_prepare_v2(h->db, "PRAGMA foreign_key_check", -1, &s, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        HD_ERROR("history %s: table %s, row %lld, refers to a row of %s "
                 "that is not there; the file was edited by hand: fix or "
                 "delete that row", h->path,
                 (const char *)sqlite3_column_text(s, 0),
                 (long long)sqlite3_column_int64(s, 1),
                 (const char *)sqlite3_column_text(s, 2));
        rc = -EIO;
    } else if (rc == SQLITE_DONE) {
        rc = 0;
    } else {
        rc = log_sqlite(h, rc, "checking foreign keys");
    }
    sqlite3_finalize(s);
    return rc;
}

/* Inside open_schema's transaction, foreign keys off: version 1 to 2. */
static int upgrade_v1(struct hd_history *h)
{
    int rc = exec_sql(h, upgrade_v1_to_v2, "upgrading the schema to 2");

    if (rc == 0)
        rc = check_foreign_keys(h);
    if (rc == 0)
        HD_INFO("history %s: schema upgraded from version 1 to 2", h->path);
    return rc;
}

/* The file's schema version into *VERSION: 0 for a new file. */
static int read_version(struct hd_history *h, int *version)
{
    sqlite3_stmt *s = NULL;
    int rc;

    rc = sqlite3_prepare_v2(h->db, "SELECT max(version) FROM schema_version",
                            -1, &s, NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        *version = sqlite3_column_int(s, 0);
        rc = SQLITE_OK;
    }
    if (rc != SQLITE_OK)
        rc = log_sqlite(h, rc, "reading the schema version");
    sqlite3_finalize(s);
    return rc;
}

/*
 * Creates the schema in a new file, or checks an existing file's version
 * and upgrades an older one, in one write transaction: another connection
 * opening the same file waits, then finds the version this one left.
 * Foreign keys are off until the end (an upgrade rebuilds tables; the
 * pragma is a no-op inside a transaction, so it goes around it).
 */
static int open_schema(struct hd_history *h)
{
    int version = 0;
    int rc;

    rc = exec_sql(h, "PRAGMA foreign_keys = OFF", "turning foreign keys off");
    if (rc == 0)
        rc = exec_sql(h, "BEGIN IMMEDIATE;"
                         "CREATE TABLE IF NOT EXISTS schema_version"
                         " (version INTEGER NOT NULL);",
                      "creating the schema version table");
    if (rc == 0)
        rc = read_version(h, &version);
    if (rc == 0 && version == 0) {
        rc = exec_sql(h, schema_v2, "creating the schema");
    } else if (rc == 0 && version == 1) {
        rc = upgrade_v1(h);
    } else if (rc == 0 && version > SCHEMA_VERSION) {
        HD_ERROR("history %s: schema version %d is newer than this "
                 "crane-hostd's (%d)", h->path, version, SCHEMA_VERSION);
        rc = -EPROTO;
    }
    if (rc == 0)
        rc = exec_sql(h, "COMMIT", "committing the schema");
    if (rc != 0) {
        if (!sqlite3_get_autocommit(h->db))
            sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
        if (version == 1)
            HD_ERROR("history %s: left at schema version 1", h->path);
        return rc;
    }
    return exec_sql(h, "PRAGMA foreign_keys = ON", "turning foreign keys on");
}

/* WAL: readers never block the writer; FULL: a commit survives power loss;
 * the busy timeout covers another connection's write transaction. */
static int open_settings(struct hd_history *h)
{
    sqlite3_stmt *s = NULL;
    int rc;
    int wal = 0;

    rc = sqlite3_busy_timeout(h->db, 5000);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(h->db, "PRAGMA journal_mode = WAL", -1, &s,
                                NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        const char *mode = (const char *)sqlite3_column_text(s, 0);

        wal = mode != NULL && strcmp(mode, "wal") == 0;
        rc = SQLITE_OK;
    }
    sqlite3_finalize(s);
    if (rc != SQLITE_OK)
        return log_sqlite(h, rc, "setting WAL mode");
    if (!wal) {
        HD_ERROR("history %s: the file cannot be put in WAL mode", h->path);
        return -EIO;
    }
    /* Foreign keys are turned on by open_schema, once the schema is up to
     * date. */
    return exec_sql(h, "PRAGMA synchronous = FULL", "setting pragmas");
}

int hd_history_open(const char *path, struct hd_history **out)
{
    struct hd_history *h;
    int rc;

    if (path == NULL || path[0] == '\0' || out == NULL ||
        strnlen(path, 4096) >= 4096)
        return -EINVAL;
    *out = NULL;
    h = calloc(1, sizeof(*h));
    if (h == NULL)
        return -ENOMEM;
    h->path = strdup(path);
    if (h->path == NULL) {
        free(h);
        return -ENOMEM;
    }
    rc = sqlite3_open_v2(path, &h->db,
                         SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                             SQLITE_OPEN_NOMUTEX,
                         NULL);
    if (rc != SQLITE_OK) {
        if (h->db != NULL) {
            rc = log_sqlite(h, rc, "opening");
        } else {
            HD_ERROR("history %s: cannot open: out of memory", path);
            rc = -ENOMEM;
        }
        goto fail;
    }
    sqlite3_extended_result_codes(h->db, 1);
    rc = open_settings(h);
    if (rc == 0)
        rc = open_schema(h);
    for (int i = 0; rc == 0 && i < ST_COUNT; i++) {
        int src = sqlite3_prepare_v3(h->db, stmt_sql[i], -1,
                                     SQLITE_PREPARE_PERSISTENT, &h->stmt[i],
                                     NULL);

        if (src != SQLITE_OK)
            rc = log_sqlite(h, src, stmt_sql[i]);
    }
    if (rc != 0)
        goto fail;
    *out = h;
    return 0;
fail:
    hd_history_close(h);
    return rc;
}

void hd_history_close(struct hd_history *h)
{
    if (h == NULL)
        return;
    for (int i = 0; i < ST_COUNT; i++)
        sqlite3_finalize(h->stmt[i]);
    if (h->db != NULL && sqlite3_close(h->db) != SQLITE_OK)
        HD_ERROR("history %s: close: %s", h->path, sqlite3_errmsg(h->db));
    free(h->path);
    free(h);
}
