/* Unit tests of host-daemon/history/backlog.c and hd_history_store: migrations the
 * history could not take, kept and written later. */
#include "runner.h"

#include "fixture.h"
#include "host-daemon/history/backlog.h"
#include "host-daemon/history/history_counters.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A migration stored whole where it was not recorded; one recorded gets
 * its outcome and the steps after its own. */
TEST(backlog_history_store)
{
    struct fixture_db db;
    struct hd_history *h;
    struct hd_migration m = fixture_migration("m-s", "vm", 1000), got;
    struct hd_step s[3] = {
        fixture_step("pre", 7, "prog", 0, 0.5),
        fixture_step("migrate", 0, NULL, 0.5, 2),
        fixture_step("post", 7, "prog", 2.5, 0.25),
    };
    struct hd_step *steps = NULL;
    size_t n = 0;

    fixture_db_make(&db);
    ASSERT_EQ(hd_history_open(db.path, &h), 0);
    ASSERT_EQ(hd_history_store(h, &m, s, 2), 0);
    ASSERT_EQ(hd_history_get(h, "m-s", &got, &steps, &n), 0);
    fixture_assert_same_migration(&got, &m);
    ASSERT_EQ(n, 2);
    free(steps);
    /* The same run's end, kept later: outcome and the third step. */
    m.result = HD_RESULT_ROLLED_BACK;
    snprintf(m.error, sizeof(m.error), "undone");
    m.end_time = 1010;
    ASSERT_EQ(hd_history_store(h, &m, &s[2], 1), 0);
    ASSERT_EQ(hd_history_get(h, "m-s", &got, &steps, &n), 0);
    ASSERT_EQ(got.result, HD_RESULT_ROLLED_BACK);
    ASSERT_STR_EQ(got.error, "undone");
    ASSERT_EQ(n, 3);
    fixture_assert_same_steps(steps, s, 3);
    free(steps);
    /* Bad input is refused before anything is written. */
    m.id[0] = '\0';
    ASSERT_EQ(hd_history_store(h, &m, NULL, 0), -EINVAL);
    hd_history_close(h);
    fixture_db_remove(&db);
}

/* Kept twice under one id (a run left waiting, then ended): one entry;
 * a history that cannot be opened keeps it; a writable one takes it
 * whole, and the health says so at each point. */
TEST(backlog_keep_and_flush)
{
    struct fixture_db db;
    struct hd_backlog *b;
    struct hd_history *h;
    struct hd_history_health hh;
    struct hd_migration m = fixture_migration("m-k", "vm", 2000), got;
    struct hd_step s1 = fixture_step("detach", 0, NULL, 0, 1);
    struct hd_step s2 = fixture_step("attach", 0, NULL, 5, 1);
    struct hd_step *steps = NULL;
    char bad[200];
    size_t n = 0;

    fixture_db_make(&db);
    ASSERT_EQ(hd_backlog_new(&b), 0);
    hd_backlog_health(b, &hh);
    ASSERT(!hh.degraded && hh.unsaved == 0 && hh.since == 0);
    m.result = HD_RESULT_RUNNING;
    m.end_time = 0;
    ASSERT_EQ(hd_backlog_keep(b, &m, &s1, 1, "disk full"), 0);
    m.result = HD_RESULT_OK;
    m.end_time = 2010;
    m.bytes_moved = 4096;
    ASSERT_EQ(hd_backlog_keep(b, &m, &s2, 1, "disk full"), 0);
    hd_backlog_health(b, &hh);
    ASSERT(hh.degraded && hh.unsaved == 1 && hh.since > 0);
    ASSERT_STR_EQ(hh.reason, "disk full");
    snprintf(bad, sizeof(bad), "%s.none/h.db", db.path);
    ASSERT(hd_backlog_flush(b, bad) < 0);
    hd_backlog_health(b, &hh);
    ASSERT(hh.degraded && hh.unsaved == 1);
    ASSERT_EQ(hd_backlog_flush(b, db.path), 0);
    hd_backlog_health(b, &hh);
    ASSERT(!hh.degraded && hh.unsaved == 0 && hh.since == 0);
    ASSERT_EQ(hd_history_open(db.path, &h), 0);
    ASSERT_EQ(hd_history_get(h, "m-k", &got, &steps, &n), 0);
    ASSERT_EQ(got.result, HD_RESULT_OK);
    ASSERT_EQ(got.bytes_moved, 4096);
    ASSERT_EQ(n, 2);
    ASSERT_STR_EQ(steps[1].phase, "attach");
    free(steps);
    hd_history_close(h);
    /* Read-only: degraded until a flush finds it writable, and the
     * generation moves then. */
    hd_backlog_set_read_only(b, true, "read-only file system");
    hd_backlog_health(b, &hh);
    ASSERT(hh.degraded && hh.read_only && hh.generation == 0);
    ASSERT_EQ(hd_backlog_flush(b, db.path), 0);
    hd_backlog_health(b, &hh);
    ASSERT(!hh.degraded && !hh.read_only && hh.generation == 1);
    hd_backlog_free(b);
    fixture_db_remove(&db);
}

/* Past the bound (HD_BACKLOG_MAX, 5 here) the oldest finished migrations are dropped; the
 * flush that writes the rest counts the drops in the file, so the total
 * a restarted daemon starts from (hd_history_dropped) never goes down. */
TEST(backlog_dropped_survive_restart)
{
    struct fixture_db db;
    struct hd_backlog *b;
    struct hd_history *h;
    struct hd_history_health hh;
    uint64_t n = 99;

    fixture_db_make(&db);
    ASSERT_EQ(hd_backlog_new(&b), 0);
    hd_backlog_set_max(b, 5);
    for (int i = 0; i < 5 + 3; i++) {
        char id[32];
        struct hd_migration m;

        snprintf(id, sizeof(id), "d-%d", i);
        m = fixture_migration(id, "vm", 3000 + i);
        ASSERT_EQ(hd_backlog_keep(b, &m, NULL, 0, "disk full"), 0);
    }
    hd_backlog_health(b, &hh);
    ASSERT(hh.degraded && hh.unsaved == 5);
    ASSERT_EQ(hh.dropped, 3);
    ASSERT_EQ(hh.dropped_total, 3);
    ASSERT_EQ(hd_history_open(db.path, &h), 0);
    ASSERT_EQ(hd_history_dropped(h, &n), 0);
    ASSERT_EQ(n, 0);
    hd_history_close(h);
    ASSERT_EQ(hd_backlog_flush(b, db.path), 0);
    hd_backlog_health(b, &hh);
    ASSERT(hh.unsaved == 0 && hh.dropped_total == 3);
    /* A second flush with nothing kept counts nothing twice. */
    ASSERT_EQ(hd_backlog_flush(b, db.path), 0);
    hd_backlog_free(b);
    ASSERT_EQ(hd_history_open(db.path, &h), 0);
    ASSERT_EQ(hd_history_dropped(h, &n), 0);
    ASSERT_EQ(n, 3);
    hd_history_close(h);
    /* The restarted daemon's backlog starts from the file's count. */
    ASSERT_EQ(hd_backlog_new(&b), 0);
    hd_backlog_set_dropped_base(b, n);
    hd_backlog_health(b, &hh);
    ASSERT(!hh.degraded && hh.dropped == 0 && hh.dropped_total == 3);
    hd_backlog_free(b);
    fixture_db_remove(&db);
}
