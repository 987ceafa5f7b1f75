/* Unit tests of host-daemon/web/stats.c: percentiles, trend, groups, pool. */
#include "runner.h"

#include "host-daemon/web/stats.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct hd_summary summary(const char *domain, const char *src,
                                 const char *dst, enum hd_mode mode,
                                 enum hd_result result, double start,
                                 double took, double pre, double post,
                                 double downtime)
{
    struct hd_summary s = {
        .mode = mode,
        .result = result,
        .start_time = start,
        .end_time = result == HD_RESULT_RUNNING ? 0 : start + took,
        .bytes_moved = 1000,
        .pre = pre,
        .post = post,
        .downtime = downtime,
    };

    snprintf(s.domain, sizeof(s.domain), "%s", domain);
    snprintf(s.src_host, sizeof(s.src_host), "%s", src);
    snprintf(s.dst_host, sizeof(s.dst_host), "%s", dst);
    return s;
}

/* Nearest rank: the smallest value at least P percent are no larger
 * than. */
TEST(stats_percentile)
{
    double v[20];
    double one = 7;

    for (int i = 0; i < 20; i++)
        v[i] = i + 1;
    ASSERT(hd_percentile(v, 20, 50) == 10);
    ASSERT(hd_percentile(v, 20, 95) == 19);
    ASSERT(hd_percentile(v, 20, 96) == 20);
    ASSERT(hd_percentile(v, 20, 100) == 20);
    ASSERT(hd_percentile(v, 20, 1) == 1);
    ASSERT(hd_percentile(v, 3, 50) == 2);
    ASSERT(hd_percentile(v, 4, 50) == 2);
    ASSERT(hd_percentile(v, 4, 95) == 4);
    ASSERT(hd_percentile(&one, 1, 50) == 7);
    ASSERT(hd_percentile(&one, 1, 95) == 7);
    ASSERT(isnan(hd_percentile(v, 0, 50)));
    ASSERT(isnan(hd_percentile(NULL, 3, 50)));
    ASSERT(isnan(hd_percentile(v, 20, 0)));
    ASSERT(isnan(hd_percentile(v, 20, 101)));
    ASSERT(isnan(hd_percentile(v, 20, NAN)));
}

/* Unsorted input, NANs (no value) left out of every figure. */
TEST(stats_dist_skips_missing)
{
    double v[] = {0.3, NAN, 0.1, 0.5, NAN, 0.2, 0.4};
    double none[] = {NAN, NAN};
    struct hd_dist d = hd_dist_of(v, sizeof(v) / sizeof(*v));

    ASSERT_EQ(d.n, 5);
    ASSERT(d.p50 == 0.3);
    ASSERT(d.p95 == 0.5);
    ASSERT(d.max == 0.5);
    ASSERT(fabs(d.sum - 1.5) < 1e-12);
    d = hd_dist_of(none, 2);
    ASSERT_EQ(d.n, 0);
    ASSERT(isnan(d.p50) && isnan(d.p95) && isnan(d.max) && isnan(d.sum));
    d = hd_dist_of(NULL, 0);
    ASSERT_EQ(d.n, 0);
}

TEST(stats_groups_and_trend)
{
    const struct hd_summary s[] = {
        /* newest first, as the history returns them */
        summary("vm-a", "host-a", "host-b", HD_MODE_LIVE, HD_RESULT_RUNNING,
                1090, 0, 0.04, NAN, NAN),
        summary("vm-b", "host-b", "host-c", HD_MODE_OFFLINE,
                HD_RESULT_FAILED, 1060, 30, NAN, NAN, NAN),
        summary("vm-a", "host-b", "host-a", HD_MODE_LIVE,
                HD_RESULT_ROLLED_BACK, 1050, 4, 0.02, 0.2, NAN),
        summary("vm-b", "host-a", "host-b", HD_MODE_OFFLINE, HD_RESULT_OK,
                1020, 20, 0.01, 0.1, 2.0),
        summary("vm-a", "host-a", "host-b", HD_MODE_LIVE, HD_RESULT_OK,
                1000, 10, 0.03, 0.3, 0.05),
    };
    struct hd_stats *st = calloc(1, sizeof(*st));

    ASSERT(st != NULL);
    ASSERT_EQ(hd_stats_compute(s, 5, 4, 1000, 1100, st), 0);
    ASSERT_EQ(st->count, 5);
    ASSERT_EQ(st->all.count, 5);
    ASSERT_EQ(st->all.by_result[HD_RESULT_OK], 2);
    ASSERT_EQ(st->all.by_result[HD_RESULT_RUNNING], 1);
    ASSERT_EQ(st->all.bytes_moved, 5000);
    ASSERT(st->all.last_start == 1090);
    ASSERT_EQ(st->all.pre.n, 4);
    ASSERT(st->all.pre.p50 == 0.02 && st->all.pre.p95 == 0.04);
    ASSERT_EQ(st->all.post.n, 3);
    ASSERT(st->all.post.p50 == 0.2 && st->all.post.max == 0.3);
    ASSERT_EQ(st->all.downtime.n, 2);
    ASSERT(st->all.downtime.p50 == 0.05 && st->all.downtime.p95 == 2.0);
    /* The running one has no duration yet. */
    ASSERT_EQ(st->all.duration.n, 4);
    ASSERT(st->all.duration.p50 == 10 && st->all.duration.max == 30);

    /* Per mode: both, always, in order. */
    ASSERT_STR_EQ(st->modes[0].name, "live");
    ASSERT_EQ(st->modes[0].count, 3);
    ASSERT_STR_EQ(st->modes[1].name, "offline");
    ASSERT_EQ(st->modes[1].count, 2);
    ASSERT_EQ(st->modes[1].downtime.n, 1);
    ASSERT_EQ(st->modes[1].bytes_moved, 2000);

    /* Hosts: by count, then name; each migration counted once per host. */
    ASSERT_EQ(st->n_hosts, 3);
    ASSERT_EQ(st->hosts_left_out, 0);
    ASSERT_STR_EQ(st->hosts[0].name, "host-b");
    ASSERT_EQ(st->hosts[0].count, 5);
    ASSERT_EQ(st->hosts[0].as_source, 2);
    ASSERT_EQ(st->hosts[0].as_destination, 3);
    ASSERT_STR_EQ(st->hosts[1].name, "host-a");
    ASSERT_EQ(st->hosts[1].count, 4);
    ASSERT_EQ(st->hosts[1].as_source, 3);
    ASSERT_EQ(st->hosts[1].as_destination, 1);
    ASSERT_STR_EQ(st->hosts[2].name, "host-c");
    ASSERT_EQ(st->hosts[2].count, 1);
    ASSERT_EQ(st->hosts[2].by_result[HD_RESULT_FAILED], 1);

    ASSERT_EQ(st->n_domains, 2);
    ASSERT_STR_EQ(st->domains[0].name, "vm-a");
    ASSERT_EQ(st->domains[0].count, 3);
    ASSERT(st->domains[0].pre.max == 0.04);
    ASSERT_STR_EQ(st->domains[1].name, "vm-b");

    /* Four spans of 25 s over [1000, 1100). */
    ASSERT_EQ(st->n_trend, 4);
    ASSERT(st->trend[0].start == 1000 && st->trend[0].end == 1025);
    ASSERT(st->trend[3].start == 1075 && st->trend[3].end == 1100);
    ASSERT_EQ(st->trend[0].count, 2);
    ASSERT(st->trend[0].pre.p50 == 0.01 && st->trend[0].pre.p95 == 0.03);
    ASSERT(st->trend[0].downtime.max == 2.0);
    /* Downtime per mode: the offline one's 2 s, the live one's 50 ms. */
    ASSERT_EQ(st->trend[0].downtime_by_mode[0].n, 1);
    ASSERT(st->trend[0].downtime_by_mode[0].max == 0.05);
    ASSERT_EQ(st->trend[0].downtime_by_mode[1].n, 1);
    ASSERT(st->trend[0].downtime_by_mode[1].p50 == 2.0);
    ASSERT_EQ(st->trend[1].count, 0);
    ASSERT_EQ(st->trend[1].pre.n, 0);
    ASSERT(isnan(st->trend[1].pre.p50));
    ASSERT_EQ(st->trend[2].count, 2);
    ASSERT_EQ(st->trend[2].failed, 2);
    ASSERT_EQ(st->trend[3].count, 1);
    hd_stats_free(st);

    /* Without bounds: the oldest start to just past the newest. */
    ASSERT_EQ(hd_stats_compute(s, 5, 1, 0, 0, st), 0);
    ASSERT_EQ(st->n_trend, 1);
    ASSERT(st->trend[0].start == 1000 && st->trend[0].end == 1091);
    ASSERT_EQ(st->trend[0].count, 5);
    hd_stats_free(st);

    /* A window leaves out what started outside it. */
    ASSERT_EQ(hd_stats_compute(s, 5, 2, 1040, 1080, st), 0);
    ASSERT_EQ(st->trend[0].count + st->trend[1].count, 2);
    hd_stats_free(st);

    ASSERT_EQ(hd_stats_compute(NULL, 0, 3, 0, 0, st), 0);
    ASSERT_EQ(st->n_trend, 0);
    ASSERT_EQ(st->n_hosts, 0);
    hd_stats_free(st);
    ASSERT_EQ(hd_stats_compute(s, 5, 0, 0, 0, st), -EINVAL);
    ASSERT_EQ(hd_stats_compute(s, 5, HD_TREND_MAX + 1, 0, 0, st), -EINVAL);
    ASSERT_EQ(hd_stats_compute(s, 5, 2, NAN, 0, st), -EINVAL);
    ASSERT_EQ(hd_stats_compute(s, 5, 2, -1, 0, st), -EINVAL);
    ASSERT_EQ(hd_stats_compute(NULL, 2, 2, 0, 0, st), -EINVAL);
    free(st);
}

/* More domains than an answer lists: the busiest kept, the rest counted. */
TEST(stats_groups_bounded)
{
    size_t n = HD_GROUPS_MAX + 20;
    struct hd_summary *s = calloc(n + 1, sizeof(*s));
    struct hd_stats *st = calloc(1, sizeof(*st));
    char name[32];

    ASSERT(s != NULL && st != NULL);
    for (size_t i = 0; i < n; i++) {
        snprintf(name, sizeof(name), "vm-%03zu", i);
        s[i] = summary(name, "a", "b", HD_MODE_LIVE, HD_RESULT_OK,
                       1000 + i, 1, NAN, NAN, NAN);
    }
    s[n] = summary("vm-119", "a", "b", HD_MODE_LIVE, HD_RESULT_OK, 999, 1,
                   NAN, NAN, NAN);
    ASSERT_EQ(hd_stats_compute(s, n + 1, 1, 0, 0, st), 0);
    ASSERT_EQ(st->n_domains, HD_GROUPS_MAX);
    ASSERT_EQ(st->domains_left_out, 20);
    ASSERT_STR_EQ(st->domains[0].name, "vm-119");
    ASSERT_EQ(st->domains[0].count, 2);
    ASSERT_STR_EQ(st->domains[1].name, "vm-000");
    hd_stats_free(st);
    free(st);
    free(s);
}
