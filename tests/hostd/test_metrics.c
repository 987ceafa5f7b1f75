/* Unit tests of host-daemon/web/metrics.c: the Prometheus exposition. */
#include "runner.h"

#include "fixture.h"
#include "host-daemon/web/metrics.h"
#include "proto/version.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Renders the metrics of the history at PATH into a string to free. */
static char *scrape(struct hd_history *h)
{
    struct hd_metrics m;
    struct hd_buf out = {0};

    ASSERT_EQ(hd_metrics_collect(h, &m), 0);
    ASSERT_EQ(hd_metrics_render(&m, &out), 0);
    return out.data;
}

/* The histogram's lines for one phase, from cumulative bucket counts. */
#define BUCKETS(p, b1, b2, b3, b4, b5, b6, b7, b8, b9, b10, b11, b12, b13,   \
                inf, sum)                                                    \
    "crane_migration_stoppage_seconds_bucket{phase=\"" p "\",le=\"0.001\"} " \
    #b1 "\n"                                                                 \
    "crane_migration_stoppage_seconds_bucket{phase=\"" p "\",le=\"0.0025\"} "\
    #b2 "\n"                                                                 \
    "crane_migration_stoppage_seconds_bucket{phase=\"" p "\",le=\"0.005\"} " \
    #b3 "\n"                                                                 \
    "crane_migration_stoppage_seconds_bucket{phase=\"" p "\",le=\"0.01\"} "  \
    #b4 "\n"                                                                 \
    "crane_migration_stoppage_seconds_bucket{phase=\"" p "\",le=\"0.025\"} " \
    #b5 "\n"                                                                 \
    "crane_migration_stoppage_seconds_bucket{phase=\"" p "\",le=\"0.05\"} "  \
    #b6 "\n"                                                                 \
    "crane_migration_stoppage_seconds_bucket{phase=\"" p "\",le=\"0.1\"} "   \
    #b7 "\n"                                                                 \
    "crane_migration_stoppage_seconds_bucket{phase=\"" p "\",le=\"0.25\"} "  \
    #b8 "\n"                                                                 \
    "crane_migration_stoppage_seconds_bucket{phase=\"" p "\",le=\"0.5\"} "   \
    #b9 "\n"                                                                 \
    "crane_migration_stoppage_seconds_bucket{phase=\"" p "\",le=\"1\"} "     \
    #b10 "\n"                                                                \
    "crane_migration_stoppage_seconds_bucket{phase=\"" p "\",le=\"2.5\"} "   \
    #b11 "\n"                                                                \
    "crane_migration_stoppage_seconds_bucket{phase=\"" p "\",le=\"5\"} "     \
    #b12 "\n"                                                                \
    "crane_migration_stoppage_seconds_bucket{phase=\"" p "\",le=\"10\"} "    \
    #b13 "\n"                                                                \
    "crane_migration_stoppage_seconds_bucket{phase=\"" p "\",le=\"+Inf\"} "  \
    #inf "\n"                                                                \
    "crane_migration_stoppage_seconds_sum{phase=\"" p "\"} " sum "\n"        \
    "crane_migration_stoppage_seconds_count{phase=\"" p "\"} " #inf "\n"

#define HISTOGRAM_HEAD                                                       \
    "# HELP crane_migration_stoppage_seconds Time a program's OpenCL calls " \
    "were held, per program and migration phase.\n"                          \
    "# TYPE crane_migration_stoppage_seconds histogram\n"

/* The downtime histogram of one mode from cumulative bucket counts. */
#define DOWNTIME(mode, b1, b2, b3, b4, b5, b6, b7, b8, b9, b10, b11, b12,   \
                 b13, b14, b15, b16, inf, sum)                               \
    DT_BUCKET(mode, "0.001", b1) DT_BUCKET(mode, "0.0025", b2)               \
    DT_BUCKET(mode, "0.005", b3) DT_BUCKET(mode, "0.01", b4)                 \
    DT_BUCKET(mode, "0.025", b5) DT_BUCKET(mode, "0.05", b6)                 \
    DT_BUCKET(mode, "0.1", b7) DT_BUCKET(mode, "0.25", b8)                   \
    DT_BUCKET(mode, "0.5", b9) DT_BUCKET(mode, "1", b10)                     \
    DT_BUCKET(mode, "2.5", b11) DT_BUCKET(mode, "5", b12)                    \
    DT_BUCKET(mode, "10", b13) DT_BUCKET(mode, "25", b14)                    \
    DT_BUCKET(mode, "50", b15) DT_BUCKET(mode, "100", b16)                   \
    DT_BUCKET(mode, "+Inf", inf)                                             \
    "crane_migration_downtime_seconds_sum{mode=\"" mode "\"} " sum "\n"     \
    "crane_migration_downtime_seconds_count{mode=\"" mode "\"} " #inf "\n"
#define DT_BUCKET(mode, le, n)                                               \
    "crane_migration_downtime_seconds_bucket{mode=\"" mode "\",le=\"" le     \
    "\"} " #n "\n"
#define DOWNTIME_HEAD                                                        \
    "# HELP crane_migration_downtime_seconds Time a migrating VM was "       \
    "paused (the hypervisor's downtime), by mode.\n"                         \
    "# TYPE crane_migration_downtime_seconds histogram\n"

#define COUNTERS(ok, failed, rolled, remoting, running, bytes)               \
    "# HELP crane_migrations_total Finished migrations, by result.\n"        \
    "# TYPE crane_migrations_total counter\n"                                \
    "crane_migrations_total{result=\"ok\"} " #ok "\n"                       \
    "crane_migrations_total{result=\"failed\"} " #failed "\n"               \
    "crane_migrations_total{result=\"rolled-back\"} " #rolled "\n"          \
    "crane_migrations_total{result=\"remoting\"} " #remoting "\n"          \
    "# HELP crane_migrations_running Migrations in progress.\n"              \
    "# TYPE crane_migrations_running gauge\n"                                \
    "crane_migrations_running " #running "\n"                                \
    "# HELP crane_migration_bytes_total Bytes moved by migrations, running " \
    "ones included.\n"                                                       \
    "# TYPE crane_migration_bytes_total counter\n"                           \
    "crane_migration_bytes_total " #bytes "\n"

/* The duration histogram of one mode from cumulative bucket counts. */
#define DURATION(mode, b1, b2, b3, b4, b5, b6, b7, b8, b9, b10, b11, b12,   \
                 inf, sum)                                                   \
    "crane_migration_duration_seconds_bucket{mode=\"" mode "\",le=\"0.5\"} " \
    #b1 "\n"                                                                 \
    "crane_migration_duration_seconds_bucket{mode=\"" mode "\",le=\"1\"} "   \
    #b2 "\n"                                                                 \
    "crane_migration_duration_seconds_bucket{mode=\"" mode "\",le=\"2.5\"} " \
    #b3 "\n"                                                                 \
    "crane_migration_duration_seconds_bucket{mode=\"" mode "\",le=\"5\"} "   \
    #b4 "\n"                                                                 \
    "crane_migration_duration_seconds_bucket{mode=\"" mode "\",le=\"10\"} "  \
    #b5 "\n"                                                                 \
    "crane_migration_duration_seconds_bucket{mode=\"" mode "\",le=\"25\"} "  \
    #b6 "\n"                                                                 \
    "crane_migration_duration_seconds_bucket{mode=\"" mode "\",le=\"50\"} "  \
    #b7 "\n"                                                                 \
    "crane_migration_duration_seconds_bucket{mode=\"" mode "\",le=\"100\"} " \
    #b8 "\n"                                                                 \
    "crane_migration_duration_seconds_bucket{mode=\"" mode "\",le=\"250\"} " \
    #b9 "\n"                                                                 \
    "crane_migration_duration_seconds_bucket{mode=\"" mode "\",le=\"500\"} " \
    #b10 "\n"                                                                \
    "crane_migration_duration_seconds_bucket{mode=\"" mode "\",le=\"1000\"} "\
    #b11 "\n"                                                                \
    "crane_migration_duration_seconds_bucket{mode=\"" mode "\",le=\"2500\"} "\
    #b12 "\n"                                                                \
    "crane_migration_duration_seconds_bucket{mode=\"" mode "\",le=\"+Inf\"} "\
    #inf "\n"                                                                \
    "crane_migration_duration_seconds_sum{mode=\"" mode "\"} " sum "\n"      \
    "crane_migration_duration_seconds_count{mode=\"" mode "\"} " #inf "\n"

#define DURATION_HEAD                                                        \
    "# HELP crane_migration_duration_seconds Time a finished migration "     \
    "took, start to end, by mode.\n"                                         \
    "# TYPE crane_migration_duration_seconds histogram\n"

/* Fails unless TEXT is GOLDEN then the build info line. */
static void assert_golden(const char *text, const char *golden)
{
    char *want = NULL;

    ASSERT(asprintf(&want,
                    "%s# HELP crane_build_info The crane version that serves "
                    "these metrics.\n# TYPE crane_build_info gauge\n"
                    "crane_build_info{version=\"%s\"} 1\n",
                    golden, crn_version()) > 0);
    if (strcmp(text, want) != 0)
        fprintf(stderr, "%s", text);
    ASSERT_STR_EQ(text, want);
    free(want);
}

/* A known history: five migrations, every result, host steps that do not
 * count (but the downtime), a stoppage exactly on a bucket bound and one
 * past the last. */
TEST(metrics_golden)
{
    static const char golden[] =
        HISTOGRAM_HEAD
        BUCKETS("pre", 1, 1, 2, 2, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, "0.0675")
        BUCKETS("post", 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 2, 2, 2, 3, "13.8")
        /* a's 0.06 s (live); c, offline, paused 40 s */
        DOWNTIME_HEAD
        DOWNTIME("live", 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                 "0.06")
        DOWNTIME("offline", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1,
                 1, "40")
        /* Finished: a, b, e live in 2.5 s each (a bucket bound), c
         * offline in 40 s; d runs and is not counted. */
        DURATION_HEAD
        DURATION("live", 0, 0, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, "7.5")
        DURATION("offline", 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, "40")
        COUNTERS(1, 1, 1, 1, 1, 7168);
    struct fixture_db f;
    struct hd_history *h = NULL;
    struct hd_migration a = fixture_migration("m-a", "vm-a", 100);
    struct hd_migration b = fixture_migration("m-b", "vm-b", 200);
    struct hd_migration c = fixture_migration("m-c", "vm-c", 300);
    struct hd_migration d = fixture_migration("m-d", "vm-d", 400);
    struct hd_migration e = fixture_migration("m-e", "vm-e", 500);
    struct hd_step sa[] = {
        fixture_step("detach", 0, NULL, 0, 0.8),
        fixture_step("pre", 101, "matmul", 0, 0.004),
        fixture_step("pre", 102, "ffmpeg", 0, 0.0125),
        fixture_step("migrate", 0, NULL, 1, 3),
        fixture_step("downtime", 0, NULL, 3.9, 0.06),
        fixture_step("post", 101, "matmul", 4, 0.3),
        fixture_step("post", 102, "ffmpeg", 4, 1.5),
    };
    struct hd_step sb = fixture_step("pre", 7, "sim", 0, 0.001);
    struct hd_step sc[] = {
        fixture_step("post", 9, "train", 2, 12),
        fixture_step("downtime", 0, NULL, 1, 40),
    };
    struct hd_step sd = fixture_step("pre", 11, "render", 0, 0.05);
    struct hd_step se = fixture_step("arrive", 0, NULL, 3, 0.5);
    char *text;

    a.bytes_moved = 1000;
    b.result = HD_RESULT_ROLLED_BACK;
    b.bytes_moved = 24;
    c.result = HD_RESULT_FAILED;
    c.bytes_moved = 0;
    c.mode = HD_MODE_OFFLINE;
    c.end_time = c.start_time + 40;
    d.result = HD_RESULT_RUNNING;
    d.end_time = 0;
    d.bytes_moved = 0;
    e.result = HD_RESULT_REMOTING;
    e.bytes_moved = 2048;

    fixture_db_make(&f);
    ASSERT_EQ(hd_history_open(f.path, &h), 0);
    ASSERT_EQ(hd_history_record(h, &a, sa, sizeof(sa) / sizeof(*sa)), 0);
    ASSERT_EQ(hd_history_record(h, &b, &sb, 1), 0);
    ASSERT_EQ(hd_history_record(h, &c, sc, 2), 0);
    ASSERT_EQ(hd_history_record(h, &e, &se, 1), 0);
    ASSERT_EQ(hd_history_begin(h, &d), 0);
    ASSERT_EQ(hd_history_add_step(h, "m-d", &sd), 0);
    ASSERT_EQ(hd_history_progress(h, "m-d", 4096), 0);
    text = scrape(h);
    assert_golden(text, golden);
    free(text);
    hd_history_close(h);
    fixture_db_remove(&f);
}

TEST(metrics_empty_history)
{
    static const char golden[] =
        HISTOGRAM_HEAD
        BUCKETS("pre", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, "0")
        BUCKETS("post", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, "0")
        DOWNTIME_HEAD
        DOWNTIME("live", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                 "0")
        DOWNTIME("offline", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                 0, "0")
        DURATION_HEAD
        DURATION("live", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, "0")
        DURATION("offline", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, "0")
        COUNTERS(0, 0, 0, 0, 0, 0);
    struct fixture_db f;
    struct hd_history *h = NULL;
    char *text;

    fixture_db_make(&f);
    ASSERT_EQ(hd_history_open(f.path, &h), 0);
    text = scrape(h);
    assert_golden(text, golden);
    free(text);
    hd_history_close(h);
    fixture_db_remove(&f);
}

TEST(metrics_bucket_bounds)
{
    struct hd_metrics m = {0};

    /* Bounds are inclusive (le); 10 s is the last bound, 10.5 only +Inf. */
    ASSERT_EQ(hd_metrics_observe(&m, HD_MODE_LIVE, "pre", 0), 0);
    ASSERT_EQ(hd_metrics_observe(&m, HD_MODE_LIVE, "pre", 0.001), 0);
    ASSERT_EQ(hd_metrics_observe(&m, HD_MODE_LIVE, "pre", 0.0010001), 0);
    ASSERT_EQ(hd_metrics_observe(&m, HD_MODE_LIVE, "pre", 10), 0);
    ASSERT_EQ(hd_metrics_observe(&m, HD_MODE_LIVE, "pre", 10.5), 0);
    ASSERT_EQ(m.stoppage[HD_PHASE_PRE].buckets[0], 2);
    ASSERT_EQ(m.stoppage[HD_PHASE_PRE].buckets[1], 3);
    ASSERT_EQ(m.stoppage[HD_PHASE_PRE].buckets[HD_STOPPAGE_BUCKETS - 1], 4);
    ASSERT_EQ(m.stoppage[HD_PHASE_PRE].count, 5);
    ASSERT_EQ(m.stoppage[HD_PHASE_POST].count, 0);

    /* Downtime by mode, on buckets up to 100 s. */
    ASSERT_EQ(hd_metrics_observe(&m, HD_MODE_OFFLINE, "downtime", 30), 0);
    ASSERT_EQ(hd_metrics_observe(&m, HD_MODE_LIVE, "downtime", 0.02), 0);
    ASSERT_EQ(m.downtime[1].count, 1);
    ASSERT_EQ(m.downtime[1].buckets[HD_DOWNTIME_BUCKETS - 3], 0);
    ASSERT_EQ(m.downtime[1].buckets[HD_DOWNTIME_BUCKETS - 2], 1);
    ASSERT_EQ(m.downtime[0].count, 1);
    ASSERT_EQ(m.downtime[0].buckets[3], 0);
    ASSERT_EQ(m.downtime[0].buckets[4], 1);
    ASSERT_EQ(hd_metrics_observe(&m, 0, "downtime", 1), -EINVAL);
    ASSERT_EQ(hd_metrics_observe(&m, 3, "pre", 1), -EINVAL);
    ASSERT_EQ(m.downtime[0].count + m.downtime[1].count, 2);
    ASSERT_EQ(hd_metrics_observe(&m, HD_MODE_LIVE, "detach", 1), -EINVAL);
    ASSERT_EQ(hd_metrics_observe(&m, HD_MODE_LIVE, "pre", -0.5), -EINVAL);
    ASSERT_EQ(hd_metrics_observe(&m, HD_MODE_LIVE, "pre", NAN), -EINVAL);
    ASSERT_EQ(hd_metrics_observe(&m, HD_MODE_LIVE, "pre", INFINITY), -EINVAL);
    ASSERT_EQ(hd_metrics_observe(&m, HD_MODE_LIVE, NULL, 1), -EINVAL);
    ASSERT_EQ(hd_metrics_observe(NULL, HD_MODE_LIVE, "pre", 1), -EINVAL);
    ASSERT_EQ(m.stoppage[HD_PHASE_PRE].count, 5);
    ASSERT_EQ(hd_metrics_collect(NULL, &m), -EINVAL);
    {
        struct hd_buf out = {0};

        ASSERT_EQ(hd_metrics_render(NULL, &out), -EINVAL);
        ASSERT_EQ(hd_metrics_render(&m, NULL), -EINVAL);
        ASSERT(out.data == NULL);
    }
}

TEST(metrics_label_escaping)
{
    struct hd_buf out = {0};

    ASSERT_EQ(hd_metrics_put_label_value(&out, "plain"), 0);
    ASSERT_EQ(hd_metrics_put_label_value(&out, "|a\\b\"c\nd\\\\|"), 0);
    /* Tabs and UTF-8 stay as they are in the text format. */
    ASSERT_EQ(hd_metrics_put_label_value(&out, "\tvm-日本"), 0);
    ASSERT_STR_EQ(out.data, "plain|a\\\\b\\\"c\\nd\\\\\\\\|\tvm-日本");
    ASSERT_EQ(hd_metrics_put_label_value(&out, NULL), -EINVAL);
    ASSERT_EQ(hd_metrics_put_label_value(NULL, "x"), -EINVAL);
    hd_buf_free(&out);
}
