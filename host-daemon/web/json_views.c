/* JSON of the dashboard's views: a page of the history and its stats (the
 * HTTP API's /api/migrations and /api/stats; the pool: pool_report.c). */
#include "json.h"

#include <errno.h>
#include <math.h>

/* A JSON number, or null when V is not finite. */
static void put_number(struct hd_buf *out, double v)
{
    if (isfinite(v))
        hd_buf_put_double(out, v);
    else
        hd_buf_puts(out, "null");
}

static void put_key(struct hd_buf *out, const char *key)
{
    hd_buf_printf(out, ",\"%s\":", key);
}

static void put_dist(struct hd_buf *out, const char *key,
                     const struct hd_dist *d)
{
    put_key(out, key);
    hd_buf_printf(out, "{\"n\":%llu,\"p50\":", (unsigned long long)d->n);
    put_number(out, d->p50);
    hd_buf_puts(out, ",\"p95\":");
    put_number(out, d->p95);
    hd_buf_puts(out, ",\"max\":");
    put_number(out, d->max);
    hd_buf_puts(out, ",\"sum\":");
    put_number(out, d->sum);
    hd_buf_puts(out, "}");
}

static void put_group(struct hd_buf *out, const struct hd_group *g)
{
    hd_buf_puts(out, "{\"name\":");
    hd_json_put_string(out, g->name);
    hd_buf_printf(out, ",\"count\":%llu,\"results\":{",
                  (unsigned long long)g->count);
    for (int r = 0; r < HD_RESULT_COUNT; r++)
        hd_buf_printf(out, "%s\"%s\":%llu", r ? "," : "",
                      hd_result_name((enum hd_result)r),
                      (unsigned long long)g->by_result[r]);
    hd_buf_printf(out, "},\"as_source\":%llu,\"as_destination\":%llu,"
                  "\"bytes_moved\":%llu,\"last_start\":",
                  (unsigned long long)g->as_source,
                  (unsigned long long)g->as_destination,
                  (unsigned long long)g->bytes_moved);
    put_number(out, g->last_start);
    put_dist(out, "pre", &g->pre);
    put_dist(out, "post", &g->post);
    put_dist(out, "downtime", &g->downtime);
    put_dist(out, "duration", &g->duration);
    hd_buf_puts(out, "}");
}

static void put_groups(struct hd_buf *out, const char *key,
                       const struct hd_group *g, size_t n, size_t left_out)
{
    put_key(out, key);
    hd_buf_puts(out, "[");
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            hd_buf_puts(out, ",");
        put_group(out, &g[i]);
    }
    hd_buf_printf(out, "],\"%s_left_out\":%zu", key, left_out);
}

int hd_json_stats(struct hd_buf *out, const struct hd_stats *st,
                  uint64_t total)
{
    if (out == NULL || st == NULL)
        return -EINVAL;
    hd_buf_printf(out, "{\"count\":%llu,\"total\":%llu,\"all\":",
                  (unsigned long long)st->count, (unsigned long long)total);
    put_group(out, &st->all);
    hd_buf_puts(out, ",\"modes\":[");
    put_group(out, &st->modes[0]);
    hd_buf_puts(out, ",");
    put_group(out, &st->modes[1]);
    hd_buf_puts(out, "],\"trend\":[");
    for (size_t i = 0; i < st->n_trend; i++) {
        const struct hd_bucket *b = &st->trend[i];

        hd_buf_puts(out, i > 0 ? ",{\"start\":" : "{\"start\":");
        put_number(out, b->start);
        hd_buf_puts(out, ",\"end\":");
        put_number(out, b->end);
        hd_buf_printf(out, ",\"count\":%llu,\"failed\":%llu",
                      (unsigned long long)b->count,
                      (unsigned long long)b->failed);
        put_dist(out, "pre", &b->pre);
        put_dist(out, "post", &b->post);
        put_dist(out, "downtime", &b->downtime);
        put_dist(out, "downtime_live", &b->downtime_by_mode[0]);
        put_dist(out, "downtime_offline", &b->downtime_by_mode[1]);
        hd_buf_puts(out, "}");
    }
    hd_buf_puts(out, "]");
    put_groups(out, "hosts", st->hosts, st->n_hosts, st->hosts_left_out);
    put_groups(out, "domains", st->domains, st->n_domains,
               st->domains_left_out);
    return hd_buf_puts(out, "}\n");
}

int hd_json_page(struct hd_buf *out, const struct hd_migration *list,
                 size_t n, uint64_t total, uint64_t offset, size_t limit)
{
    int rc;

    if (out == NULL)
        return -EINVAL;
    /* {"migrations":[...]} without its closing brace, then the paging. */
    rc = hd_json_migration_list(out, list, n);
    if (rc != 0)
        return rc;
    if (out->len < 1 || out->data[out->len - 1] != '}')
        return -EIO;
    out->len--;
    return hd_buf_printf(out, ",\"total\":%llu,\"offset\":%llu,"
                         "\"limit\":%zu}\n", (unsigned long long)total,
                         (unsigned long long)offset, limit);
}
