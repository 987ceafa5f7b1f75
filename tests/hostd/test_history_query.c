/* Unit tests of host-daemon/history/history_query.c and history_stats.c: filters,
 * pages, summaries, the destination's name. */
#include "runner.h"

#include "fixture.h"
#include "host-daemon/history/history.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 30 migrations m-00 .. m-29 started 10 s apart: vm-0/1/2 in turn, from
 * host-a to host-b (even) or host-b to host-c (odd), every fifth offline,
 * every seventh failed. */
static void fill(struct hd_history *h)
{
    for (int i = 0; i < 30; i++) {
        char id[16], dom[16];
        struct hd_migration m;
        struct hd_step st[3] = {
            fixture_step("pre", 10, "prog", 0, 0.001 * (i + 1)),
            fixture_step("pre", 11, "other", 0, 0.0005),
            fixture_step("downtime", 0, NULL, 1, 0.1),
        };

        snprintf(id, sizeof(id), "m-%02d", i);
        snprintf(dom, sizeof(dom), "vm-%d", i % 3);
        m = fixture_migration(id, dom, 1000 + 10 * i);
        if (i % 2) {
            snprintf(m.src_host, sizeof(m.src_host), "host-b");
            snprintf(m.dst_host, sizeof(m.dst_host), "host-c");
        }
        if (i % 5 == 0)
            m.mode = HD_MODE_OFFLINE;
        if (i % 7 == 0)
            m.result = HD_RESULT_FAILED;
        ASSERT_EQ(hd_history_record(h, &m, st, i % 4 == 0 ? 0 : 3), 0);
    }
}

/* Runs a query and checks the ids it returns, newest first, and the
 * total. */
static void expect_ids(struct hd_history *h, const struct hd_filter *f,
                       uint64_t offset, size_t limit, uint64_t total,
                       const char *ids)
{
    struct hd_migration *list = NULL;
    size_t n = 0;
    uint64_t all = 12345;
    char got[1024] = "";

    ASSERT_EQ(hd_history_query(h, f, offset, limit, &list, &n, &all), 0);
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(got);

        snprintf(got + l, sizeof(got) - l, "%s%s", i ? " " : "", list[i].id);
    }
    free(list);
    ASSERT_STR_EQ(got, ids);
    ASSERT_EQ(all, total);
}

TEST(history_query_filters)
{
    struct fixture_db db;
    struct hd_history *h = NULL;
    struct hd_filter f;

    fixture_db_make(&db);
    ASSERT_EQ(hd_history_open(db.path, &h), 0);
    fill(h);

    hd_filter_init(&f);
    expect_ids(h, &f, 0, 3, 30, "m-29 m-28 m-27");
    snprintf(f.domain, sizeof(f.domain), "vm-1");
    expect_ids(h, &f, 0, 100, 10,
               "m-28 m-25 m-22 m-19 m-16 m-13 m-10 m-07 m-04 m-01");
    f.mode = HD_MODE_OFFLINE;
    expect_ids(h, &f, 0, 100, 2, "m-25 m-10");
    f.result = HD_RESULT_FAILED;
    expect_ids(h, &f, 0, 100, 0, "");

    /* A host as source or destination. */
    hd_filter_init(&f);
    snprintf(f.host, sizeof(f.host), "host-c");
    expect_ids(h, &f, 0, 4, 15, "m-29 m-27 m-25 m-23");
    snprintf(f.host, sizeof(f.host), "host-b");
    expect_ids(h, &f, 0, 2, 30, "m-29 m-28");
    f.result = HD_RESULT_FAILED;
    expect_ids(h, &f, 0, 100, 5, "m-28 m-21 m-14 m-07 m-00");

    /* since <= start < until. */
    hd_filter_init(&f);
    f.since = 1100;
    f.until = 1150;
    expect_ids(h, &f, 0, 100, 5, "m-14 m-13 m-12 m-11 m-10");
    f.until = 0;
    expect_ids(h, &f, 0, 1, 20, "m-29");

    /* Names match exactly: no pattern, no injection. */
    hd_filter_init(&f);
    snprintf(f.domain, sizeof(f.domain), "vm-%%");
    expect_ids(h, &f, 0, 10, 0, "");
    snprintf(f.domain, sizeof(f.domain), "x' OR '1'='1");
    expect_ids(h, &f, 0, 10, 0, "");

    hd_history_close(h);
    fixture_db_remove(&db);
}

TEST(history_query_paging)
{
    struct fixture_db db;
    struct hd_history *h = NULL;
    struct hd_filter f;
    struct hd_migration *list = NULL;
    size_t n = 1;

    fixture_db_make(&db);
    ASSERT_EQ(hd_history_open(db.path, &h), 0);
    fill(h);
    hd_filter_init(&f);
    /* Pages cover the whole history, past the newest 100 too, once. */
    expect_ids(h, &f, 0, 4, 30, "m-29 m-28 m-27 m-26");
    expect_ids(h, &f, 4, 4, 30, "m-25 m-24 m-23 m-22");
    expect_ids(h, &f, 28, 4, 30, "m-01 m-00");
    expect_ids(h, &f, 30, 4, 30, "");
    expect_ids(h, &f, 1000000, 4, 30, "");
    f.result = HD_RESULT_FAILED;
    expect_ids(h, &f, 2, 2, 5, "m-14 m-07");
    /* Bounds. */
    ASSERT_EQ(hd_history_query(h, &f, 0, 0, &list, &n, NULL), -EINVAL);
    ASSERT_EQ(hd_history_query(h, &f, 0, HD_LIST_MAX + 1, &list, &n, NULL),
              -EINVAL);
    ASSERT_EQ(hd_history_query(h, &f, (uint64_t)INT64_MAX + 1, 1, &list, &n,
                               NULL), -EINVAL);
    ASSERT_EQ(hd_history_query(h, NULL, 0, 1, &list, &n, NULL), -EINVAL);
    f.result = HD_RESULT_COUNT;
    ASSERT_EQ(hd_history_query(h, &f, 0, 1, &list, &n, NULL), -EINVAL);
    hd_filter_init(&f);
    f.mode = 3;
    ASSERT_EQ(hd_filter_check(&f), -EINVAL);
    hd_filter_init(&f);
    f.since = NAN;
    ASSERT_EQ(hd_filter_check(&f), -EINVAL);
    hd_filter_init(&f);
    memset(f.domain, 'a', sizeof(f.domain));
    ASSERT_EQ(hd_filter_check(&f), -EINVAL);
    hd_history_close(h);
    fixture_db_remove(&db);
}

TEST(history_query_summaries)
{
    struct fixture_db db;
    struct hd_history *h = NULL;
    struct hd_filter f;
    struct hd_summary *s = NULL;
    size_t n = 0;
    uint64_t total = 0;

    fixture_db_make(&db);
    ASSERT_EQ(hd_history_open(db.path, &h), 0);
    fill(h);
    hd_filter_init(&f);
    ASSERT_EQ(hd_history_summaries(h, &f, 5, &s, &n, &total), 0);
    ASSERT_EQ(n, 5);
    ASSERT_EQ(total, 30);
    /* m-29: the worst program's pre, the downtime; no post recorded. */
    ASSERT_STR_EQ(s[0].domain, "vm-2");
    ASSERT_STR_EQ(s[0].src_host, "host-b");
    ASSERT_STR_EQ(s[0].dst_host, "host-c");
    ASSERT(fabs(s[0].pre - 0.030) < 1e-12);
    ASSERT(isnan(s[0].post));
    ASSERT(s[0].downtime == 0.1);
    ASSERT(s[0].start_time == 1290 && s[0].end_time == 1292.5);
    ASSERT_EQ(s[0].bytes_moved, 1u << 20);
    /* m-28 has no steps at all. */
    ASSERT(isnan(s[1].pre) && isnan(s[1].downtime));
    ASSERT_EQ(s[1].result, HD_RESULT_FAILED);
    free(s);
    f.mode = HD_MODE_OFFLINE;
    ASSERT_EQ(hd_history_summaries(h, &f, HD_SUMMARY_MAX, &s, &n, &total),
              0);
    ASSERT_EQ(n, 6);
    ASSERT_EQ(total, 6);
    ASSERT_EQ(s[5].mode, HD_MODE_OFFLINE);
    free(s);
    ASSERT_EQ(hd_history_summaries(h, &f, HD_SUMMARY_MAX + 1, &s, &n, NULL),
              -EINVAL);
    ASSERT_EQ(hd_history_summaries(h, &f, 0, &s, &n, NULL), -EINVAL);
    hd_history_close(h);
    fixture_db_remove(&db);
}

/* The source learns the destination's name from its answer. */
TEST(history_query_destination_named)
{
    struct fixture_db db;
    struct hd_history *h = NULL;
    struct hd_migration m = fixture_migration("m-x", "vm", 100);
    struct hd_migration got;
    struct hd_step *steps = NULL;
    size_t n = 0;

    m.result = HD_RESULT_RUNNING;
    m.end_time = 0;
    snprintf(m.dst_host, sizeof(m.dst_host), "192.0.2.7");
    fixture_db_make(&db);
    ASSERT_EQ(hd_history_open(db.path, &h), 0);
    ASSERT_EQ(hd_history_begin(h, &m), 0);
    ASSERT_EQ(hd_history_set_destination(h, "m-x", "gpu-host-b"), 0);
    ASSERT_EQ(hd_history_get(h, "m-x", &got, &steps, &n), 0);
    ASSERT_STR_EQ(got.dst_host, "gpu-host-b");
    ASSERT_EQ(hd_history_set_destination(h, "m-x", ""), -EINVAL);
    ASSERT_EQ(hd_history_set_destination(h, "m-y", "b"), -ENOENT);
    ASSERT_EQ(hd_history_finish(h, "m-x", HD_RESULT_OK, 200, ""), 0);
    ASSERT_EQ(hd_history_set_destination(h, "m-x", "c"), -EALREADY);
    hd_history_close(h);
    fixture_db_remove(&db);
}
