/* Unit tests of host-daemon/history/history_write.c: the SQLite migration history. */
#include "runner.h"

#include "fixture.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct hd_history *open_ok(const char *path)
{
    struct hd_history *h = NULL;

    ASSERT_EQ(hd_history_open(path, &h), 0);
    ASSERT(h != NULL);
    return h;
}

/* Fetches ID and checks it against M and its N steps. */
static void expect_stored(struct hd_history *h, const struct hd_migration *m,
                          const struct hd_step *steps, size_t n)
{
    struct hd_migration got;
    struct hd_step *got_steps = NULL;
    size_t got_n = 99;

    ASSERT_EQ(hd_history_get(h, m->id, &got, &got_steps, &got_n), 0);
    fixture_assert_same_migration(&got, m);
    ASSERT_EQ(got_n, n);
    fixture_assert_same_steps(got_steps, steps, n);
    free(got_steps);
}

static const struct hd_step two_steps[] = {
    {.phase = "pre", .pid = 4242, .program = "matmul",
     .start_offset = 0.010, .duration = 0.125},
    {.phase = "detach", .start_offset = 0.2, .duration = 0.75},
};

TEST(history_roundtrip)
{
    struct fixture_db f;
    struct hd_history *h;
    struct hd_migration a = fixture_migration("m-1", "vm-alpha", 1000.5);
    struct hd_migration b = fixture_migration("m-2", "vm-beta", 2000.25);
    struct hd_migration *list = NULL;
    size_t n = 0;

    fixture_db_make(&f);
    h = open_ok(f.path);
    b.mode = HD_MODE_OFFLINE;
    b.result = HD_RESULT_ROLLED_BACK;
    snprintf(b.error, sizeof(b.error), "detach timed out after 30 s");
    b.bytes_moved = UINT64_C(1) << 40;
    ASSERT_EQ(hd_history_record(h, &a, two_steps, 2), 0);
    ASSERT_EQ(hd_history_record(h, &b, NULL, 0), 0);

    ASSERT_EQ(hd_history_list(h, 10, &list, &n), 0);
    ASSERT_EQ(n, 2);
    fixture_assert_same_migration(&list[0], &b);   /* newest first */
    fixture_assert_same_migration(&list[1], &a);
    free(list);
    ASSERT_EQ(hd_history_list(h, 1, &list, &n), 0);
    ASSERT_EQ(n, 1);
    ASSERT_STR_EQ(list[0].id, "m-2");
    free(list);

    expect_stored(h, &a, two_steps, 2);
    expect_stored(h, &b, NULL, 0);
    hd_history_close(h);
    fixture_db_remove(&f);
}

TEST(history_live_progress)
{
    struct fixture_db f;
    struct hd_history *h;
    struct hd_migration m = fixture_migration("live-7", "vm", 50);
    struct hd_step s = fixture_step("post", 9, "ffmpeg", 3, 0.02);

    fixture_db_make(&f);
    h = open_ok(f.path);
    m.result = HD_RESULT_RUNNING;
    m.end_time = 0;
    m.bytes_moved = 0;
    ASSERT_EQ(hd_history_begin(h, &m), 0);
    ASSERT_EQ(hd_history_begin(h, &m), -EEXIST);
    ASSERT_EQ(hd_history_add_step(h, m.id, &two_steps[0]), 0);
    ASSERT_EQ(hd_history_add_step(h, m.id, &two_steps[1]), 0);
    ASSERT_EQ(hd_history_progress(h, m.id, 4096), 0);
    m.bytes_moved = 4096;
    expect_stored(h, &m, two_steps, 2);

    ASSERT_EQ(hd_history_add_step(h, m.id, &s), 0);
    ASSERT_EQ(hd_history_finish(h, m.id, HD_RESULT_FAILED, 60,
                                "destination has no free GPU"),
              0);
    m.result = HD_RESULT_FAILED;
    m.end_time = 60;
    snprintf(m.error, sizeof(m.error), "destination has no free GPU");
    {
        struct hd_step all[3] = {two_steps[0], two_steps[1], s};

        expect_stored(h, &m, all, 3);
    }
    /* A finished migration is closed; unknown ids are reported. */
    ASSERT_EQ(hd_history_finish(h, m.id, HD_RESULT_OK, 61, ""), -EALREADY);
    ASSERT_EQ(hd_history_progress(h, m.id, 1), -EALREADY);
    ASSERT_EQ(hd_history_add_step(h, m.id, &s), -EALREADY);
    ASSERT_EQ(hd_history_progress(h, "nope", 1), -ENOENT);
    ASSERT_EQ(hd_history_add_step(h, "nope", &s), -ENOENT);
    ASSERT_EQ(hd_history_finish(h, "nope", HD_RESULT_OK, 1, ""), -ENOENT);
    hd_history_close(h);
    fixture_db_remove(&f);
}

TEST(history_record_is_atomic)
{
    struct fixture_db f;
    struct hd_history *h;
    struct hd_migration m = fixture_migration("dup", "vm", 1);
    struct hd_step other[3] = {
        fixture_step("pre", 1, "a", 0, 1),
        fixture_step("pre", 2, "b", 0, 1),
        fixture_step("pre", 3, "c", 0, 1),
    };

    fixture_db_make(&f);
    h = open_ok(f.path);
    ASSERT_EQ(hd_history_record(h, &m, two_steps, 2), 0);
    /* The second insert fails on the id: none of its steps may stay. */
    ASSERT_EQ(hd_history_record(h, &m, other, 3), -EEXIST);
    expect_stored(h, &m, two_steps, 2);
    /* A bad step anywhere refuses the whole record. */
    other[2].duration = -1;
    snprintf(m.id, sizeof(m.id), "fresh");
    ASSERT_EQ(hd_history_record(h, &m, other, 3), -EINVAL);
    {
        struct hd_migration got;
        struct hd_step *steps;
        size_t n;

        ASSERT_EQ(hd_history_get(h, "fresh", &got, &steps, &n), -ENOENT);
    }
    hd_history_close(h);
    fixture_db_remove(&f);
}

/* --- the file as SQLite sees it, on a connection of the test's own ------- */

static sqlite3 *raw_open(const char *path)
{
    sqlite3 *db = NULL;

    ASSERT_EQ(sqlite3_open(path, &db), SQLITE_OK);
    return db;
}

static void raw_exec(sqlite3 *db, const char *sql)
{
    ASSERT_EQ(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
}

/* The first column of SQL's first row as an integer; -1 without a row. */
static int64_t raw_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *s = NULL;
    int64_t v = -1;

    ASSERT_EQ(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
    if (sqlite3_step(s) == SQLITE_ROW)
        v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
}

/* The first column of SQL's first row as text, to sqlite3_free ("" for
 * NULL or no row). */
static char *raw_text(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *s = NULL;
    const char *t = NULL;
    char *v;

    ASSERT_EQ(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
    if (sqlite3_step(s) == SQLITE_ROW)
        t = (const char *)sqlite3_column_text(s, 0);
    v = sqlite3_mprintf("%s", t != NULL ? t : "");
    sqlite3_finalize(s);
    ASSERT(v != NULL);
    return v;
}

#define MIGRATIONS_SQL                                                       \
    "SELECT sql FROM sqlite_master WHERE type = 'table' AND"                 \
    " name = 'migrations'"

/*
 * A file exactly as the crane-hostd of schema version 1 wrote it: the
 * version table open_schema() created, then history_schema.c's schema_v1, in WAL
 * mode; then rows as that code stored them.
 */
static const char v1_schema[] =
    "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);"
    "CREATE TABLE migrations ("
    " id TEXT PRIMARY KEY,"
    " domain TEXT NOT NULL,"
    " src_host TEXT NOT NULL,"
    " dst_host TEXT NOT NULL,"
    " mode TEXT NOT NULL CHECK (mode IN ('live', 'offline')),"
    " start_time REAL NOT NULL,"
    " end_time REAL NOT NULL DEFAULT 0,"
    " result TEXT NOT NULL CHECK (result IN"
    "  ('running', 'ok', 'failed', 'rolled-back')),"
    " error TEXT NOT NULL DEFAULT '',"
    " bytes_moved INTEGER NOT NULL DEFAULT 0 CHECK (bytes_moved >= 0));"
    "CREATE INDEX migrations_by_start ON migrations (start_time);"
    "CREATE TABLE steps ("
    " migration_id TEXT NOT NULL REFERENCES migrations (id)"
    "  ON DELETE CASCADE,"
    " seq INTEGER NOT NULL,"
    " phase TEXT NOT NULL,"
    " pid INTEGER,"
    " program TEXT,"
    " start_offset REAL NOT NULL,"
    " duration REAL NOT NULL,"
    " PRIMARY KEY (migration_id, seq));"
    "INSERT INTO schema_version (version) VALUES (1);";

/* Three migrations: old-ok and old-rb start in the same second (old-rb,
 * stored later, is listed first), old-run is still running; a row deleted
 * before them leaves their rowids starting at 2. */
static const char v1_rows[] =
    "INSERT INTO migrations VALUES ('gone', 'vm', 'host-a', 'host-b',"
    " 'live', 1, 2, 'failed', '', 0);"
    "INSERT INTO migrations VALUES ('old-ok', 'vm-α', 'host-a', 'host-b',"
    " 'live', 100, 102.5, 'ok', '', 1048576);"
    "DELETE FROM migrations WHERE id = 'gone';"
    "INSERT INTO steps VALUES ('old-ok', 0, 'pre', 4242, 'matmul', 0.01,"
    " 0.125);"
    "INSERT INTO steps VALUES ('old-ok', 1, 'detach', NULL, NULL, 0.2,"
    " 0.75);"
    "INSERT INTO migrations VALUES ('old-rb', 'vm-β', 'host-a', 'host-b',"
    " 'offline', 100, 130, 'rolled-back', 'detach timed out', 1099511627776);"
    "INSERT INTO migrations (id, domain, src_host, dst_host, mode,"
    " start_time, result) VALUES ('old-run', 'vm-γ', 'host-a', 'host-c',"
    " 'live', 50, 'running');"
    "INSERT INTO steps VALUES ('old-run', 0, 'pre', 4242, 'matmul', 0.01,"
    " 0.125);";

static void make_v1_file(const char *path)
{
    sqlite3 *db = raw_open(path);
    char *mode = raw_text(db, "PRAGMA journal_mode = WAL");

    ASSERT_STR_EQ(mode, "wal");
    sqlite3_free(mode);
    raw_exec(db, "BEGIN IMMEDIATE");
    raw_exec(db, v1_schema);
    raw_exec(db, v1_rows);
    raw_exec(db, "COMMIT");
    ASSERT_EQ(sqlite3_close(db), SQLITE_OK);
}

/* The three migrations of v1_rows, as hd_history_get returns them. */
static void v1_expected(struct hd_migration *ok, struct hd_migration *rb,
                        struct hd_migration *run)
{
    *ok = fixture_migration("old-ok", "vm-α", 100);
    *rb = fixture_migration("old-rb", "vm-β", 100);
    rb->mode = HD_MODE_OFFLINE;
    rb->end_time = 130;
    rb->result = HD_RESULT_ROLLED_BACK;
    snprintf(rb->error, sizeof(rb->error), "detach timed out");
    rb->bytes_moved = UINT64_C(1) << 40;
    *run = fixture_migration("old-run", "vm-γ", 50);
    snprintf(run->dst_host, sizeof(run->dst_host), "host-c");
    run->end_time = 0;
    run->result = HD_RESULT_RUNNING;
    run->bytes_moved = 0;
}

/* Every row of v1_rows is there, in list order, with its steps. */
static void expect_v1_rows(struct hd_history *h)
{
    struct hd_migration ok, rb, run;
    struct hd_migration *list = NULL;
    size_t n = 0;

    v1_expected(&ok, &rb, &run);
    ASSERT_EQ(hd_history_list(h, HD_LIST_MAX, &list, &n), 0);
    ASSERT(n >= 3);
    fixture_assert_same_migration(&list[n - 3], &rb);
    fixture_assert_same_migration(&list[n - 2], &ok);
    free(list);
    expect_stored(h, &ok, two_steps, 2);
    expect_stored(h, &rb, NULL, 0);
}

/* The schema of a file at version 2, checked on a connection of its own;
 * returns the migrations table's SQL, to sqlite3_free. */
static char *expect_v2_file(const char *path)
{
    sqlite3 *db = raw_open(path);
    char *sql;

    ASSERT_EQ(raw_int(db, "SELECT count(*) FROM schema_version"), 1);
    ASSERT_EQ(raw_int(db, "SELECT version FROM schema_version"), 2);
    sql = raw_text(db, MIGRATIONS_SQL);
    ASSERT(strstr(sql, "'rolled-back', 'remoting'") != NULL);
    ASSERT_EQ(raw_int(db, "SELECT count(*) FROM sqlite_master WHERE"
                          " name = 'migrations_by_start' AND"
                          " tbl_name = 'migrations'"),
              1);
    ASSERT_EQ(raw_int(db, "SELECT count(*) FROM sqlite_master WHERE"
                          " name LIKE 'migrations_v%'"),
              0);
    {
        char *parent = raw_text(db, "SELECT \"table\" FROM"
                                    " pragma_foreign_key_list('steps')");

        ASSERT_STR_EQ(parent, "migrations");
        sqlite3_free(parent);
    }
    ASSERT_EQ(raw_int(db, "SELECT count(*) FROM pragma_foreign_key_check"),
              0);
    {
        char *ok = raw_text(db, "PRAGMA integrity_check");

        ASSERT_STR_EQ(ok, "ok");
        sqlite3_free(ok);
    }
    /* The CHECK still keeps out what is not a result. */
    ASSERT_EQ(sqlite3_exec(db, "INSERT INTO migrations (id, domain,"
                               " src_host, dst_host, mode, start_time,"
                               " result) VALUES ('x', 'd', 'a', 'b', 'live',"
                               " 1, 'moved')",
                           NULL, NULL, NULL),
              SQLITE_CONSTRAINT);
    ASSERT_EQ(sqlite3_close(db), SQLITE_OK);
    return sql;
}

/*
 * A file of schema version 1 (before "remoting"), opened by this code: it
 * is upgraded in place, every migration and step kept, "remoting" storable;
 * opening it again changes nothing.  A version-1 file whose upgrade cannot
 * pass the foreign key check is refused and left as it was.
 */
static void upgrade_from_v1(void)
{
    struct fixture_db f;
    struct hd_history *h = NULL;
    struct hd_migration ok, rb, run;
    struct hd_migration moved = fixture_migration("new-r", "vm-δ", 200);
    struct hd_step arrive = fixture_step("arrive", 0, NULL, 2, 0.5);
    char *sql, *again;
    sqlite3 *db;

    fixture_db_make(&f);
    make_v1_file(f.path);
    h = open_ok(f.path);
    expect_v1_rows(h);
    v1_expected(&ok, &rb, &run);
    expect_stored(h, &run, two_steps, 1);
    /* "remoting" is a result now: finishing a running one, recording a
     * new one. */
    ASSERT_EQ(hd_history_finish(h, "old-run", HD_RESULT_REMOTING, 60,
                                "on host-c: no free GPU"),
              0);
    run.result = HD_RESULT_REMOTING;
    run.end_time = 60;
    snprintf(run.error, sizeof(run.error), "on host-c: no free GPU");
    expect_stored(h, &run, two_steps, 1);
    moved.result = HD_RESULT_REMOTING;
    ASSERT_EQ(hd_history_record(h, &moved, &arrive, 1), 0);
    expect_stored(h, &moved, &arrive, 1);
    hd_history_close(h);
    sql = expect_v2_file(f.path);
    /* Rowids kept: they order the list within a second. */
    db = raw_open(f.path);
    again = raw_text(db, "SELECT group_concat(rowid, ',') FROM (SELECT rowid"
                         " FROM migrations WHERE id LIKE 'old-%' ORDER BY"
                         " id)");
    ASSERT_STR_EQ(again, "2,3,4");
    sqlite3_free(again);
    ASSERT_EQ(sqlite3_close(db), SQLITE_OK);

    /* Reopened: nothing to upgrade, nothing changed. */
    h = open_ok(f.path);
    expect_v1_rows(h);
    expect_stored(h, &run, two_steps, 1);
    expect_stored(h, &moved, &arrive, 1);
    hd_history_close(h);
    again = expect_v2_file(f.path);
    ASSERT_STR_EQ(again, sql);
    sqlite3_free(again);
    sqlite3_free(sql);
    fixture_db_remove(&f);

    /* A step of no migration (foreign keys were off when it was written):
     * the upgrade's foreign key check refuses it and rolls back. */
    fixture_db_make(&f);
    make_v1_file(f.path);
    db = raw_open(f.path);
    raw_exec(db, "INSERT INTO steps VALUES ('ghost', 0, 'pre', 7, 'p', 0,"
                 " 1)");
    sql = raw_text(db, MIGRATIONS_SQL);
    ASSERT_EQ(sqlite3_close(db), SQLITE_OK);
    h = NULL;
    ASSERT_EQ(hd_history_open(f.path, &h), -EIO);
    ASSERT(h == NULL);
    db = raw_open(f.path);
    ASSERT_EQ(raw_int(db, "SELECT version FROM schema_version"), 1);
    again = raw_text(db, MIGRATIONS_SQL);
    ASSERT_STR_EQ(again, sql);
    ASSERT_EQ(raw_int(db, "SELECT count(*) FROM migrations"), 3);
    ASSERT_EQ(raw_int(db, "SELECT count(*) FROM steps"), 4);
    ASSERT_EQ(sqlite3_close(db), SQLITE_OK);
    sqlite3_free(again);
    sqlite3_free(sql);
    fixture_db_remove(&f);
}

TEST(history_reopen_keeps_everything)
{
    struct fixture_db f;
    struct hd_history *h;
    struct hd_migration done = fixture_migration("done", "vm-α", 10);
    struct hd_migration run = fixture_migration("run", "vm-β", 20);
    struct hd_migration *list = NULL;
    size_t n = 0;

    fixture_db_make(&f);
    h = open_ok(f.path);
    run.result = HD_RESULT_RUNNING;
    run.end_time = 0;
    ASSERT_EQ(hd_history_record(h, &done, two_steps, 2), 0);
    ASSERT_EQ(hd_history_begin(h, &run), 0);
    ASSERT_EQ(hd_history_add_step(h, "run", &two_steps[0]), 0);
    hd_history_close(h);

    /* A new connection, as after a daemon restart. */
    h = open_ok(f.path);
    ASSERT_EQ(hd_history_list(h, HD_LIST_MAX, &list, &n), 0);
    ASSERT_EQ(n, 2);
    free(list);
    expect_stored(h, &done, two_steps, 2);
    expect_stored(h, &run, two_steps, 1);
    /* The running one can still be finished after the restart. */
    ASSERT_EQ(hd_history_finish(h, "run", HD_RESULT_ROLLED_BACK, 30,
                                "crane-hostd restarted"),
              0);
    hd_history_close(h);

    h = open_ok(f.path);
    run.result = HD_RESULT_ROLLED_BACK;
    run.end_time = 30;
    snprintf(run.error, sizeof(run.error), "crane-hostd restarted");
    expect_stored(h, &run, two_steps, 1);
    hd_history_close(h);
    fixture_db_remove(&f);

    /* A restart into a newer crane-hostd: the file is upgraded. */
    upgrade_from_v1();
}

TEST(history_newer_schema_refused)
{
    struct fixture_db f;
    struct hd_history *h = NULL;
    sqlite3 *db;

    fixture_db_make(&f);
    /* A new file is created at version 2 directly. */
    hd_history_close(open_ok(f.path));
    sqlite3_free(expect_v2_file(f.path));
    /* Version 3 and later are refused, the file left as it was. */
    for (int i = 0; i < 2; i++) {
        db = raw_open(f.path);
        raw_exec(db, i == 0 ? "UPDATE schema_version SET version = 3"
                            : "UPDATE schema_version SET version = 99");
        ASSERT_EQ(sqlite3_close(db), SQLITE_OK);
        ASSERT_EQ(hd_history_open(f.path, &h), -EPROTO);
        ASSERT(h == NULL);
        db = raw_open(f.path);
        ASSERT_EQ(raw_int(db, "SELECT version FROM schema_version"),
                  i == 0 ? 3 : 99);
        ASSERT_EQ(sqlite3_close(db), SQLITE_OK);
    }
    fixture_db_remove(&f);
}

/* The writer thread of history_concurrent_writer: its own connection. */
#define WRITES 60
#define STEPS_EACH 5

struct writer {
    const char *path;
    int rc;           /* 0, or the first failure */
    int done;         /* set (under lock) when the writer is finished */
    pthread_mutex_t lock;
};

static void *writer_main(void *arg)
{
    struct writer *w = arg;
    struct hd_history *h = NULL;
    struct hd_step steps[STEPS_EACH];
    int rc = hd_history_open(w->path, &h);

    for (int i = 0; i < STEPS_EACH; i++)
        steps[i] = fixture_step("pre", (unsigned)(100 + i), "prog", i, 0.5);
    for (int i = 0; rc == 0 && i < WRITES; i++) {
        char id[16];
        struct hd_migration m;

        snprintf(id, sizeof(id), "w-%d", i);
        m = fixture_migration(id, "vm", 100 + i);
        rc = hd_history_record(h, &m, steps, STEPS_EACH);
    }
    hd_history_close(h);
    pthread_mutex_lock(&w->lock);
    w->rc = rc;
    w->done = 1;
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

static int writer_done(struct writer *w)
{
    int done;

    pthread_mutex_lock(&w->lock);
    done = w->done;
    pthread_mutex_unlock(&w->lock);
    return done;
}

/* A reader on its own connection while another thread writes: every
 * migration it sees is whole (all its steps: one transaction each). */
TEST(history_concurrent_writer)
{
    struct fixture_db f;
    struct hd_history *h;
    struct writer w = {.lock = PTHREAD_MUTEX_INITIALIZER};
    struct hd_migration *list = NULL;
    pthread_t t;
    size_t n = 0;
    size_t most_seen = 0;
    int rounds = 0;

    fixture_db_make(&f);
    w.path = f.path;
    h = open_ok(f.path);   /* creates the schema before the writer starts */
    ASSERT_EQ(pthread_create(&t, NULL, writer_main, &w), 0);
    do {
        rounds++;
        ASSERT_EQ(hd_history_list(h, HD_LIST_MAX, &list, &n), 0);
        ASSERT(n >= most_seen);   /* never goes back */
        most_seen = n;
        if (n > 0) {
            struct hd_migration m;
            struct hd_step *steps = NULL;
            size_t ns = 0;
            char id[HD_ID_MAX + 1];

            memcpy(id, list[0].id, sizeof(id));
            free(list);
            ASSERT_EQ(hd_history_get(h, id, &m, &steps, &ns), 0);
            ASSERT_EQ(ns, STEPS_EACH);
            free(steps);
        } else {
            free(list);
        }
        /* Valgrind runs one thread at a time: let the writer on. */
        sched_yield();
    } while (!writer_done(&w));
    ASSERT_EQ(pthread_join(t, NULL), 0);
    ASSERT_EQ(w.rc, 0);
    ASSERT(rounds > 1);
    ASSERT_EQ(hd_history_list(h, HD_LIST_MAX, &list, &n), 0);
    ASSERT_EQ(n, WRITES);
    free(list);
    hd_history_close(h);
    fixture_db_remove(&f);
}

TEST(history_bad_inputs)
{
    struct fixture_db f;
    struct hd_history *h;
    struct hd_history *none = NULL;
    struct hd_migration m = fixture_migration("ok-id", "vm", 1);
    struct hd_migration bad;
    struct hd_step s = fixture_step("pre", 1, "p", 0, 1);
    struct hd_step bs;
    struct hd_migration *list;
    struct hd_step *steps;
    size_t n;
    char long_id[HD_ID_MAX + 2];

    fixture_db_make(&f);
    ASSERT_EQ(hd_history_open(NULL, &none), -EINVAL);
    ASSERT_EQ(hd_history_open("", &none), -EINVAL);
    ASSERT_EQ(hd_history_open(f.path, NULL), -EINVAL);
    ASSERT(hd_history_open("/nonexistent/dir/h.db", &none) < 0);
    ASSERT(none == NULL);
    h = open_ok(f.path);

    /* NULLs */
    ASSERT_EQ(hd_history_record(NULL, &m, NULL, 0), -EINVAL);
    ASSERT_EQ(hd_history_record(h, NULL, NULL, 0), -EINVAL);
    ASSERT_EQ(hd_history_record(h, &m, NULL, 1), -EINVAL);
    ASSERT_EQ(hd_history_add_step(h, NULL, &s), -EINVAL);
    ASSERT_EQ(hd_history_add_step(h, "ok-id", NULL), -EINVAL);
    ASSERT_EQ(hd_history_finish(h, "ok-id", HD_RESULT_OK, 2, NULL), -EINVAL);
    ASSERT_EQ(hd_history_list(h, 10, NULL, &n), -EINVAL);
    ASSERT_EQ(hd_history_get(h, "ok-id", NULL, &steps, &n), -EINVAL);
    ASSERT_EQ(hd_history_totals(h, NULL), -EINVAL);
    ASSERT_EQ(hd_history_each_stoppage(h, NULL, NULL), -EINVAL);

    /* Over-long or unterminated strings: a full buffer without a NUL. */
    bad = m;
    memset(bad.domain, 'd', sizeof(bad.domain));
    ASSERT_EQ(hd_history_record(h, &bad, NULL, 0), -EINVAL);
    bad = m;
    memset(bad.error, 'e', sizeof(bad.error));
    ASSERT_EQ(hd_history_record(h, &bad, NULL, 0), -EINVAL);
    memset(long_id, 'i', sizeof(long_id) - 1);
    long_id[sizeof(long_id) - 1] = '\0';
    ASSERT_EQ(hd_history_progress(h, long_id, 1), -EINVAL);
    bs = s;
    memset(bs.program, 'p', sizeof(bs.program));
    ASSERT_EQ(hd_history_record(h, &m, &bs, 1), -EINVAL);

    /* Values out of range. */
    bad = m;
    snprintf(bad.id, sizeof(bad.id), "has space");
    ASSERT_EQ(hd_history_record(h, &bad, NULL, 0), -EINVAL);
    bad = m;
    bad.id[0] = '\0';
    ASSERT_EQ(hd_history_record(h, &bad, NULL, 0), -EINVAL);
    bad = m;
    bad.src_host[0] = '\0';
    ASSERT_EQ(hd_history_record(h, &bad, NULL, 0), -EINVAL);
    bad = m;
    bad.mode = 7;
    ASSERT_EQ(hd_history_record(h, &bad, NULL, 0), -EINVAL);
    bad = m;
    bad.result = 9;
    ASSERT_EQ(hd_history_record(h, &bad, NULL, 0), -EINVAL);
    bad = m;
    bad.start_time = NAN;
    ASSERT_EQ(hd_history_record(h, &bad, NULL, 0), -EINVAL);
    bad = m;
    bad.end_time = bad.start_time - 1;
    ASSERT_EQ(hd_history_record(h, &bad, NULL, 0), -EINVAL);
    bad = m;
    bad.bytes_moved = UINT64_MAX;
    ASSERT_EQ(hd_history_record(h, &bad, NULL, 0), -EINVAL);
    ASSERT_EQ(hd_history_begin(h, &m), -EINVAL);   /* not RUNNING */
    bs = s;
    bs.program[0] = '\0';                          /* pid without a name */
    ASSERT_EQ(hd_history_record(h, &m, &bs, 1), -EINVAL);
    bs = s;
    bs.duration = INFINITY;
    ASSERT_EQ(hd_history_record(h, &m, &bs, 1), -EINVAL);
    ASSERT_EQ(hd_history_record(h, &m, &s, HD_STEPS_MAX + 1), -EINVAL);
    ASSERT_EQ(hd_history_finish(h, "ok-id", HD_RESULT_RUNNING, 2, ""),
              -EINVAL);
    ASSERT_EQ(hd_history_list(h, 0, &list, &n), -EINVAL);
    ASSERT_EQ(hd_history_list(h, HD_LIST_MAX + 1, &list, &n), -EINVAL);

    /* Nothing of the above reached the database. */
    ASSERT_EQ(hd_history_list(h, 10, &list, &n), 0);
    ASSERT_EQ(n, 0);
    ASSERT(list == NULL);
    hd_history_close(h);
    hd_history_close(NULL);
    fixture_db_remove(&f);
}

/* Old finished migrations go, with their steps; recent and running stay. */
TEST(history_prune)
{
    struct fixture_db f;
    struct hd_history *h;
    struct hd_migration old = fixture_migration("m-old", "vm", 1000);
    struct hd_migration recent = fixture_migration("m-new", "vm", 5000);
    struct hd_migration running = fixture_migration("m-run", "vm", 900);
    struct hd_migration got;
    struct hd_step *steps = NULL;
    size_t n = 0;
    unsigned removed = 99;

    fixture_db_make(&f);
    h = open_ok(f.path);
    running.result = HD_RESULT_RUNNING;
    running.end_time = 0;
    ASSERT_EQ(hd_history_record(h, &old, two_steps, 2), 0);
    ASSERT_EQ(hd_history_record(h, &recent, two_steps, 2), 0);
    ASSERT_EQ(hd_history_begin(h, &running), 0);
    ASSERT_EQ(hd_history_prune(h, 3000, &removed), 0);
    ASSERT_EQ(removed, 1);
    ASSERT_EQ(hd_history_get(h, "m-old", &got, &steps, &n), -ENOENT);
    expect_stored(h, &recent, two_steps, 2);
    ASSERT_EQ(hd_history_get(h, "m-run", &got, &steps, &n), 0);
    free(steps);
    ASSERT_EQ(hd_history_prune(h, 3000, &removed), 0);
    ASSERT_EQ(removed, 0);
    {
        /* Its steps went with it. */
        sqlite3 *db = NULL;
        sqlite3_stmt *q = NULL;

        ASSERT_EQ(sqlite3_open(f.path, &db), SQLITE_OK);
        ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT count(*) FROM steps WHERE"
                                         " migration_id = 'm-old'", -1, &q,
                                     NULL), SQLITE_OK);
        ASSERT_EQ(sqlite3_step(q), SQLITE_ROW);
        ASSERT_EQ(sqlite3_column_int(q, 0), 0);
        sqlite3_finalize(q);
        sqlite3_close(db);
    }
    ASSERT_EQ(hd_history_prune(h, NAN, NULL), -EINVAL);
    ASSERT_EQ(hd_history_prune(NULL, 3000, NULL), -EINVAL);
    hd_history_close(h);
    fixture_db_remove(&f);
}
