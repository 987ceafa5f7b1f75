/* The migration history's file: its SQLite schema, upgrades, opening. */
#include "history_counters.h"
#include "history_db.h"

#include "proto/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* --- opening -------------------------------------------------------------- */

/* Runs SQL (no rows), or logs WHAT and returns -errno. */
static int exec_sql(struct hd_history *h, const char *sql, const char *what)
{
    int rc = sqlite3_exec(h->db, sql, NULL, NULL, NULL);

    return rc == SQLITE_OK ? 0 : hd__log_sqlite(h, rc, what);
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
        CRN_ERROR("history %s: table %s, row %lld, refers to a row of %s "
                 "that is not there; the file was edited by hand: fix or "
                 "delete that row", h->path,
                 (const char *)sqlite3_column_text(s, 0),
                 (long long)sqlite3_column_int64(s, 1),
                 (const char *)sqlite3_column_text(s, 2));
        rc = -EIO;
    } else if (rc == SQLITE_DONE) {
        rc = 0;
    } else {
        rc = hd__log_sqlite(h, rc, "checking foreign keys");
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
        CRN_INFO("history %s: schema upgraded from version 1 to 2", h->path);
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
        rc = hd__log_sqlite(h, rc, "reading the schema version");
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
        CRN_ERROR("history %s: schema version %d is newer than this "
                 "crane-hostd's (%d)", h->path, version, SCHEMA_VERSION);
        rc = -EPROTO;
    }
    if (rc == 0)
        rc = hd__history_job_schema(h);
    if (rc == 0)
        rc = exec_sql(h, "COMMIT", "committing the schema");
    if (rc != 0) {
        if (!sqlite3_get_autocommit(h->db))
            sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
        if (version == 1)
            CRN_ERROR("history %s: left at schema version 1", h->path);
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
        return hd__log_sqlite(h, rc, "setting WAL mode");
    if (!wal) {
        CRN_ERROR("history %s: the file cannot be put in WAL mode", h->path);
        return -EIO;
    }
    /* Foreign keys are turned on by open_schema, once the schema is up to
     * date. */
    return exec_sql(h, "PRAGMA synchronous = FULL", "setting pragmas");
}

/* Prepares every statement (a read-only file prepares writes too: they
 * fail when run). */
static int prepare_all(struct hd_history *h)
{
    for (int i = 0; i < ST_COUNT; i++) {
        int src = sqlite3_prepare_v3(h->db, hd__stmt_sql[i], -1,
                                     SQLITE_PREPARE_PERSISTENT, &h->stmt[i],
                                     NULL);

        if (src != SQLITE_OK)
            return hd__log_sqlite(h, src, hd__stmt_sql[i]);
    }
    return 0;
}

/* A struct hd_history for PATH with an open connection (FLAGS, NAME: the
 * file name or URI SQLite opens) into *OUT. */
static int open_connection(const char *path, const char *name, int flags,
                           struct hd_history **out)
{
    struct hd_history *h;
    int rc;

    *out = NULL;
    h = calloc(1, sizeof(*h));
    if (h == NULL)
        return -ENOMEM;
    h->path = strdup(path);
    if (h->path == NULL) {
        free(h);
        return -ENOMEM;
    }
    rc = sqlite3_open_v2(name, &h->db, flags | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        if (h->db != NULL) {
            rc = hd__log_sqlite(h, rc, "opening");
        } else {
            CRN_ERROR("history %s: cannot open: out of memory", path);
            rc = -ENOMEM;
        }
        hd_history_close(h);
        return rc;
    }
    sqlite3_extended_result_codes(h->db, 1);
    *out = h;
    return 0;
}

/* The end of an open that came to RC: H's statements prepared and H in
 * *OUT, or H closed and the error returned. */
static int prepare_or_close(struct hd_history *h, int rc,
                            struct hd_history **out)
{
    if (rc == 0)
        rc = prepare_all(h);
    if (rc != 0) {
        hd_history_close(h);
        return rc;
    }
    *out = h;
    return 0;
}

int hd_history_open(const char *path, struct hd_history **out)
{
    struct hd_history *h;
    int rc;

    if (path == NULL || path[0] == '\0' || out == NULL ||
        strnlen(path, 4096) >= 4096)
        return -EINVAL;
    rc = open_connection(path, path,
                         SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, &h);
    if (rc != 0)
        return rc;
    rc = open_settings(h);
    if (rc == 0)
        rc = open_schema(h);
    if (rc == 0)
        rc = hd__counters_ensure(h);
    return prepare_or_close(h, rc, out);
}

/* PATH as an SQLite URI of an immutable file (a WAL file on a read-only
 * disk cannot have its shared-memory index made): "file:" and PATH with
 * the URI's special characters escaped. */
static int immutable_uri(char *uri, size_t len, const char *path)
{
    size_t o = (size_t)snprintf(uri, len, "file:");

    for (const char *c = path; *c && o + 4 < len; c++) {
        if (*c == '%' || *c == '?' || *c == '#' || (unsigned char)*c < 0x20)
            o += (size_t)snprintf(uri + o, len - o, "%%%02X",
                                  (unsigned char)*c);
        else
            uri[o++] = *c;
    }
    if (o + 16 >= len)
        return -ENAMETOOLONG;
    snprintf(uri + o, len - o, "?immutable=1");
    return 0;
}

/* The version of H's schema, without creating anything. */
static int read_only_version(struct hd_history *h)
{
    int version = 0;
    int rc = read_version(h, &version);

    if (rc == 0 && version != SCHEMA_VERSION) {
        CRN_ERROR("history %s: schema version %d, this crane-hostd reads "
                 "%d only from a read-only file", h->path, version,
                 SCHEMA_VERSION);
        rc = -EPROTO;
    }
    return rc;
}

int hd_history_open_read_only(const char *path, struct hd_history **out)
{
    char uri[4096 * 3 + 32];
    struct hd_history *h;
    int rc;

    if (path == NULL || path[0] == '\0' || out == NULL ||
        strnlen(path, 4096) >= 4096)
        return -EINVAL;
    if (access(path, R_OK) != 0)
        return -errno;
    rc = open_connection(path, path, SQLITE_OPEN_READONLY, &h);
    if (rc == 0 && (rc = read_only_version(h)) != 0 && rc != -EPROTO) {
        /* Most often the WAL index cannot be made: read it immutable. */
        hd_history_close(h);
        h = NULL;
        rc = immutable_uri(uri, sizeof(uri), path);
        if (rc == 0)
            rc = open_connection(path, uri,
                                 SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, &h);
        if (rc == 0)
            rc = read_only_version(h);
    }
    if (rc == 0)
        rc = sqlite3_busy_timeout(h->db, 5000) == SQLITE_OK ? 0 : -EIO;
    return prepare_or_close(h, rc, out);
}

void hd_history_close(struct hd_history *h)
{
    if (h == NULL)
        return;
    for (int i = 0; i < ST_COUNT; i++)
        sqlite3_finalize(h->stmt[i]);
    if (h->db != NULL && sqlite3_close(h->db) != SQLITE_OK)
        CRN_ERROR("history %s: close: %s", h->path, sqlite3_errmsg(h->db));
    free(h->path);
    free(h);
}
