/* The dashboard's aggregates over migration summaries: percentiles, the
 * stoppage trend over time, per-host, per-VM and per-mode figures. */
#include "stats.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

double hd_percentile(const double *sorted, size_t n, double p)
{
    double rank;
    size_t i;

    if (sorted == NULL || n == 0 || !(p > 0 && p <= 100))
        return NAN;
    /* ceil(p / 100 * n), computed so that 95 % of 20 is exactly 19. */
    rank = ceil(p * (double)n / 100.0 - 1e-9);
    i = rank < 1 ? 0 : (size_t)rank - 1;
    return sorted[i < n ? i : n - 1];
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a;
    double y = *(const double *)b;

    return (x > y) - (x < y);
}

struct hd_dist hd_dist_of(double *values, size_t n)
{
    struct hd_dist d = {0, NAN, NAN, NAN, NAN};
    size_t k = 0;

    for (size_t i = 0; i < n; i++)
        if (isfinite(values[i]))
            values[k++] = values[i];
    if (k == 0)
        return d;
    qsort(values, k, sizeof(*values), cmp_double);
    d.n = k;
    d.p50 = hd_percentile(values, k, 50);
    d.p95 = hd_percentile(values, k, 95);
    d.max = values[k - 1];
    d.sum = 0;
    for (size_t i = 0; i < k; i++)
        d.sum += values[i];
    return d;
}

/* Which value of a summary a distribution is over. */
enum measure { M_PRE, M_POST, M_DOWNTIME, M_DURATION };

static double measure_of(const struct hd_summary *s, enum measure m)
{
    switch (m) {
    case M_PRE:
        return s->pre;
    case M_POST:
        return s->post;
    case M_DOWNTIME:
        return s->downtime;
    default:
        return s->result != HD_RESULT_RUNNING && s->end_time >= s->start_time
                   ? s->end_time - s->start_time
                   : NAN;
    }
}

/* The distribution of measure M over S[IDX[0..K)], SCRATCH[K] free. */
static struct hd_dist dist_over(const struct hd_summary *s, const size_t *idx,
                                size_t k, enum measure m, double *scratch)
{
    for (size_t i = 0; i < k; i++)
        scratch[i] = measure_of(&s[idx[i]], m);
    return hd_dist_of(scratch, k);
}

/* G's counts and distributions over S[IDX[0..K)]; its name is left. */
static void fill_group(struct hd_group *g, const struct hd_summary *s,
                       const size_t *idx, size_t k, double *scratch)
{
    g->count = k;
    g->last_start = NAN;
    for (size_t i = 0; i < k; i++) {
        const struct hd_summary *e = &s[idx[i]];

        if ((unsigned)e->result < HD_RESULT_COUNT)
            g->by_result[e->result]++;
        g->bytes_moved += e->bytes_moved;
        if (!(g->last_start >= e->start_time))
            g->last_start = e->start_time;
    }
    g->pre = dist_over(s, idx, k, M_PRE, scratch);
    g->post = dist_over(s, idx, k, M_POST, scratch);
    g->downtime = dist_over(s, idx, k, M_DOWNTIME, scratch);
    g->duration = dist_over(s, idx, k, M_DURATION, scratch);
}

/* One migration's part in a host's or domain's group. */
struct member {
    const char *name;
    size_t idx;
    unsigned char as_source;
    unsigned char as_destination;
};

static int cmp_member(const void *a, const void *b)
{
    const struct member *x = a;
    const struct member *y = b;
    int c = strcmp(x->name, y->name);

    return c != 0 ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

static int cmp_group(const void *a, const void *b)
{
    const struct hd_group *x = a;
    const struct hd_group *y = b;

    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return strcmp(x->name, y->name);
}

/*
 * Groups M[0..K) (sorted by name) into *OUT, most migrations first, at
 * most HD_GROUPS_MAX; *LEFT_OUT gets how many more there were.
 */
static int make_groups(const struct hd_summary *s, struct member *mem,
                       size_t k, double *scratch, size_t *idx,
                       struct hd_group **out, size_t *n_out, size_t *left_out)
{
    struct hd_group *groups = NULL;
    size_t n = 0;

    *out = NULL;
    *n_out = *left_out = 0;
    if (k == 0)
        return 0;
    qsort(mem, k, sizeof(*mem), cmp_member);
    groups = calloc(k, sizeof(*groups));
    if (groups == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < k;) {
        struct hd_group *g = &groups[n++];
        size_t j = i;
        size_t m = 0;

        for (; j < k && strcmp(mem[j].name, mem[i].name) == 0; j++) {
            idx[m++] = mem[j].idx;
            g->as_source += mem[j].as_source;
            g->as_destination += mem[j].as_destination;
        }
        snprintf(g->name, sizeof(g->name), "%s", mem[i].name);
        fill_group(g, s, idx, m, scratch);
        i = j;
    }
    qsort(groups, n, sizeof(*groups), cmp_group);
    if (n > HD_GROUPS_MAX) {
        *left_out = n - HD_GROUPS_MAX;
        n = HD_GROUPS_MAX;
    }
    *out = groups;
    *n_out = n;
    return 0;
}

/* The trend: each bucket's migrations and their distributions. */
static void make_trend(const struct hd_summary *s, size_t n, unsigned buckets,
                       double from, double to, size_t *idx, double *scratch,
                       struct hd_stats *st)
{
    double width;

    if (n > 0 && from <= 0) {
        from = s[0].start_time;
        for (size_t i = 1; i < n; i++)
            from = fmin(from, s[i].start_time);
    }
    if (n > 0 && to <= 0) {
        to = s[0].start_time;
        for (size_t i = 1; i < n; i++)
            to = fmax(to, s[i].start_time);
        to += 1;                      /* the newest inside the last one */
    }
    if (n == 0 && (from <= 0 || to <= 0))
        return;                       /* no span to divide */
    if (!(to > from))
        to = from + 1;
    width = (to - from) / buckets;
    st->n_trend = buckets;
    for (unsigned b = 0; b < buckets; b++) {
        struct hd_bucket *bk = &st->trend[b];
        size_t k = 0;

        bk->start = from + width * b;
        bk->end = b + 1 == buckets ? to : from + width * (b + 1);
        for (size_t i = 0; i < n; i++) {
            double t = s[i].start_time;

            if (t >= bk->start && t < bk->end) {
                idx[k++] = i;
                bk->failed += s[i].result == HD_RESULT_FAILED ||
                              s[i].result == HD_RESULT_ROLLED_BACK;
            }
        }
        bk->count = k;
        bk->pre = dist_over(s, idx, k, M_PRE, scratch);
        bk->post = dist_over(s, idx, k, M_POST, scratch);
        bk->downtime = dist_over(s, idx, k, M_DOWNTIME, scratch);
        for (int m = 0; m < 2; m++) {
            size_t km = 0;

            for (size_t i = 0; i < k; i++)
                if (s[idx[i]].mode == (m == 0 ? HD_MODE_LIVE : HD_MODE_OFFLINE))
                    scratch[km++] = s[idx[i]].downtime;
            bk->downtime_by_mode[m] = hd_dist_of(scratch, km);
        }
    }
}

int hd_stats_compute(const struct hd_summary *s, size_t n, unsigned buckets,
                     double from, double to, struct hd_stats *out)
{
    struct member *mem = NULL;
    size_t *idx = NULL;
    double *scratch = NULL;
    size_t k = 0;
    int rc = -ENOMEM;

    if (out == NULL)
        return -EINVAL;
    memset(out, 0, sizeof(*out));
    if ((s == NULL && n != 0) || n > HD_SUMMARY_MAX || buckets == 0 ||
        buckets > HD_TREND_MAX || !isfinite(from) || !isfinite(to) ||
        from < 0 || to < 0)
        return -EINVAL;
    /* Two members (source, destination) per migration at most. */
    idx = calloc(2 * n + 1, sizeof(*idx));
    scratch = calloc(2 * n + 1, sizeof(*scratch));
    mem = calloc(2 * n + 1, sizeof(*mem));
    if (idx == NULL || scratch == NULL || mem == NULL)
        goto out;

    out->count = n;
    for (size_t i = 0; i < n; i++)
        idx[i] = i;
    fill_group(&out->all, s, idx, n, scratch);
    for (int m = 0; m < 2; m++) {
        enum hd_mode mode = m == 0 ? HD_MODE_LIVE : HD_MODE_OFFLINE;

        k = 0;
        for (size_t i = 0; i < n; i++)
            if (s[i].mode == mode)
                idx[k++] = i;
        snprintf(out->modes[m].name, sizeof(out->modes[m].name), "%s",
                 hd_mode_name(mode));
        fill_group(&out->modes[m], s, idx, k, scratch);
    }
    make_trend(s, n, buckets, from, to, idx, scratch, out);

    k = 0;
    for (size_t i = 0; i < n; i++) {
        bool same = strcmp(s[i].src_host, s[i].dst_host) == 0;

        mem[k++] = (struct member){s[i].src_host, i, 1, same};
        if (!same)
            mem[k++] = (struct member){s[i].dst_host, i, 0, 1};
    }
    rc = make_groups(s, mem, k, scratch, idx, &out->hosts, &out->n_hosts,
                     &out->hosts_left_out);
    if (rc != 0)
        goto out;
    for (size_t i = 0; i < n; i++)
        mem[i] = (struct member){s[i].domain, i, 0, 0};
    rc = make_groups(s, mem, n, scratch, idx, &out->domains,
                     &out->n_domains, &out->domains_left_out);
out:
    free(mem);
    free(idx);
    free(scratch);
    if (rc != 0)
        hd_stats_free(out);
    return rc;
}

void hd_stats_free(struct hd_stats *st)
{
    if (st == NULL)
        return;
    free(st->hosts);
    free(st->domains);
    st->hosts = st->domains = NULL;
    st->n_hosts = st->n_domains = 0;
}
