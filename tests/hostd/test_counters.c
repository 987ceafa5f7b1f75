/* Unit tests of host-daemon/history/history_counters.c: counters that never go
 * down, whatever is pruned, reopened or stored twice. */
#include "runner.h"

#include "fixture.h"
#include "host-daemon/history/history_counters.h"
#include "host-daemon/web/metrics.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void collect(struct hd_history *h, struct hd_metrics *m)
{
    ASSERT_EQ(hd_metrics_collect(h, m), 0);
}

/* Every counter of A equal to B's (the gauges aside). */
static void same_counters(const struct hd_metrics *a,
                          const struct hd_metrics *b)
{
    for (int r = HD_RESULT_OK; r < HD_RESULT_COUNT; r++)
        ASSERT_EQ(a->totals.by_result[r], b->totals.by_result[r]);
    ASSERT_EQ(a->totals.bytes_moved, b->totals.bytes_moved);
    ASSERT(memcmp(a->stoppage, b->stoppage, sizeof(a->stoppage)) == 0);
    ASSERT(memcmp(a->downtime, b->downtime, sizeof(a->downtime)) == 0);
    ASSERT(memcmp(a->duration, b->duration, sizeof(a->duration)) == 0);
}

/* Two finished migrations with a program's stoppage and the VM's
 * downtime each, and a running one. */
static void fill(struct hd_history *h)
{
    struct hd_migration a = fixture_migration("m-a", "vm", 1000);
    struct hd_migration b = fixture_migration("m-b", "vm", 2000);
    struct hd_migration r = fixture_migration("m-r", "vm", 3000);
    struct hd_step s[] = {
        fixture_step("pre", 11, "prog", 0, 0.004),
        fixture_step("downtime", 0, NULL, 1, 0.2),
        fixture_step("post", 11, "prog", 2, 0.3),
    };

    a.bytes_moved = 1000;
    b.bytes_moved = 24;
    b.result = HD_RESULT_ROLLED_BACK;
    r.result = HD_RESULT_RUNNING;
    r.end_time = 0;
    ASSERT_EQ(hd_history_record(h, &a, s, 3), 0);
    ASSERT_EQ(hd_history_record(h, &b, s, 3), 0);
    ASSERT_EQ(hd_history_begin(h, &r), 0);
    ASSERT_EQ(hd_history_add_step(h, "m-r", &s[0]), 0);
    ASSERT_EQ(hd_history_progress(h, "m-r", 500), 0);
}

TEST(counters_survive_prune_and_restart)
{
    struct fixture_db f;
    struct hd_history *h = NULL;
    struct hd_metrics before, after;
    unsigned removed = 0;

    fixture_db_make(&f);
    ASSERT_EQ(hd_history_open(f.path, &h), 0);
    fill(h);
    collect(h, &before);
    ASSERT_EQ(before.totals.by_result[HD_RESULT_OK], 1);
    ASSERT_EQ(before.totals.by_result[HD_RESULT_ROLLED_BACK], 1);
    ASSERT_EQ(before.totals.by_result[HD_RESULT_RUNNING], 1);
    ASSERT_EQ(before.totals.bytes_moved, 1524);
    ASSERT_EQ(before.stoppage[HD_PHASE_PRE].count, 3); /* running's too */
    ASSERT_EQ(before.downtime[0].count, 2);
    ASSERT_EQ(before.duration[0].count, 2);

    /* The daily prune takes both finished rows: nothing goes down. */
    ASSERT_EQ(hd_history_prune(h, 2500 + 10, &removed), 0);
    ASSERT_EQ(removed, 2);
    collect(h, &after);
    same_counters(&before, &after);

    /* A restart reads the same counters back. */
    hd_history_close(h);
    ASSERT_EQ(hd_history_open(f.path, &h), 0);
    collect(h, &after);
    same_counters(&before, &after);

    /* The running one ends: counted once, its bytes and step kept. */
    ASSERT_EQ(hd_history_finish(h, "m-r", HD_RESULT_OK, 3005, ""), 0);
    collect(h, &after);
    ASSERT_EQ(after.totals.by_result[HD_RESULT_OK], 2);
    ASSERT_EQ(after.totals.by_result[HD_RESULT_RUNNING], 0);
    ASSERT_EQ(after.totals.bytes_moved, 1524);
    ASSERT_EQ(after.stoppage[HD_PHASE_PRE].count, 3);
    ASSERT_EQ(after.duration[0].count, 3);
    ASSERT_EQ(hd_history_prune(h, 1e9, &removed), 0);
    ASSERT_EQ(removed, 1);
    collect(h, &before);
    same_counters(&before, &after);
    hd_history_close(h);
    fixture_db_remove(&f);
}

/* A file from before the counters: given them at open, from its rows,
 * once. */
TEST(counters_seeded_from_older_file)
{
    struct fixture_db f;
    struct hd_history *h = NULL;
    struct hd_metrics before, after;
    sqlite3 *db = NULL;

    fixture_db_make(&f);
    ASSERT_EQ(hd_history_open(f.path, &h), 0);
    fill(h);
    collect(h, &before);
    hd_history_close(h);
    ASSERT_EQ(sqlite3_open(f.path, &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "DROP TABLE counters", NULL, NULL, NULL),
              SQLITE_OK);
    sqlite3_close(db);

    /* Read-only, the rows are counted as before the table existed. */
    ASSERT_EQ(hd_history_open_read_only(f.path, &h), 0);
    collect(h, &after);
    same_counters(&before, &after);
    hd_history_close(h);

    for (int i = 0; i < 2; i++) {
        ASSERT_EQ(hd_history_open(f.path, &h), 0);
        collect(h, &after);
        same_counters(&before, &after);
        hd_history_close(h);
    }
    fixture_db_remove(&f);
}

/* The backlog's store of a migration already ended adds nothing; of a
 * running one that ends, adds it once. */
TEST(counters_store_counts_once)
{
    struct fixture_db f;
    struct hd_history *h = NULL;
    struct hd_migration a = fixture_migration("m-a", "vm", 1000);
    struct hd_migration r = fixture_migration("m-r", "vm", 2000);
    struct hd_metrics m;

    fixture_db_make(&f);
    ASSERT_EQ(hd_history_open(f.path, &h), 0);
    a.bytes_moved = 10;
    ASSERT_EQ(hd_history_store(h, &a, NULL, 0), 0);
    ASSERT_EQ(hd_history_store(h, &a, NULL, 0), 0);
    r.result = HD_RESULT_RUNNING;
    r.end_time = 0;
    r.bytes_moved = 5;
    ASSERT_EQ(hd_history_begin(h, &r), 0);
    r.result = HD_RESULT_FAILED;
    r.end_time = 2001;
    ASSERT_EQ(hd_history_store(h, &r, NULL, 0), 0);
    ASSERT_EQ(hd_history_store(h, &r, NULL, 0), 0);
    collect(h, &m);
    ASSERT_EQ(m.totals.by_result[HD_RESULT_OK], 1);
    ASSERT_EQ(m.totals.by_result[HD_RESULT_FAILED], 1);
    ASSERT_EQ(m.totals.bytes_moved, 15);
    ASSERT_EQ(m.duration[0].count, 2);
    ASSERT_EQ(hd_history_each_counter(h, NULL, NULL), -EINVAL);
    hd_history_close(h);
    fixture_db_remove(&f);
}
