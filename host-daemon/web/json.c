/* JSON rendering of the migration history for the HTTP API. */
#include "json.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>

/* Length of the valid UTF-8 sequence at S (1-4), or 0 if it is invalid. */
static size_t utf8_len(const unsigned char *s)
{
    uint32_t cp;
    size_t n;

    if (s[0] < 0x80)
        return 1;
    if (s[0] >= 0xc2 && s[0] <= 0xdf) {
        n = 2;
        cp = s[0] & 0x1f;
    } else if (s[0] >= 0xe0 && s[0] <= 0xef) {
        n = 3;
        cp = s[0] & 0x0f;
    } else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
        n = 4;
        cp = s[0] & 0x07;
    } else {
        return 0;   /* a continuation byte, 0xc0/0xc1, or 0xf5.. */
    }
    /* A NUL ends the loop as a non-continuation byte: no overread. */
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
        (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
        return 0;
    return n;
}

int hd_json_put_string(struct hd_buf *out, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;

    if (out == NULL || s == NULL)
        return -EINVAL;
    hd_buf_puts(out, "\"");
    while (*p != '\0') {
        const unsigned char *run = p;
        size_t n;

        /* Copy plain printable ASCII and valid UTF-8 in one go. */
        while (*p >= 0x20 && *p != '"' && *p != '\\' && *p != 0x7f &&
               (n = utf8_len(p)) != 0)
            p += n;
        hd_buf_put(out, (const char *)run, (size_t)(p - run));
        if (*p == '\0')
            break;
        switch (*p) {
        case '"':  hd_buf_puts(out, "\\\""); break;
        case '\\': hd_buf_puts(out, "\\\\"); break;
        case '\b': hd_buf_puts(out, "\\b"); break;
        case '\f': hd_buf_puts(out, "\\f"); break;
        case '\n': hd_buf_puts(out, "\\n"); break;
        case '\r': hd_buf_puts(out, "\\r"); break;
        case '\t': hd_buf_puts(out, "\\t"); break;
        default:
            if (*p < 0x20 || *p == 0x7f)
                hd_buf_printf(out, "\\u%04x", *p);
            else
                hd_buf_puts(out, "\\ufffd");  /* invalid UTF-8 byte */
        }
        p++;
    }
    return hd_buf_puts(out, "\"");
}

/* A JSON number for seconds, or null when V is not finite. */
static void put_seconds(struct hd_buf *out, double v)
{
    if (isfinite(v))
        hd_buf_put_double(out, v);
    else
        hd_buf_puts(out, "null");
}

static void put_field(struct hd_buf *out, const char *name, const char *s)
{
    hd_buf_printf(out, ",\"%s\":", name);
    hd_json_put_string(out, s);
}

static void put_step(struct hd_buf *out, const struct hd_step *st)
{
    hd_buf_puts(out, "{\"phase\":");
    hd_json_put_string(out, st->phase);
    if (st->pid != 0) {
        hd_buf_printf(out, ",\"pid\":%u", (unsigned)st->pid);
        put_field(out, "program", st->program);
    } else {
        hd_buf_puts(out, ",\"pid\":null,\"program\":null");
    }
    hd_buf_puts(out, ",\"start_offset\":");
    put_seconds(out, st->start_offset);
    hd_buf_puts(out, ",\"duration\":");
    put_seconds(out, st->duration);
    hd_buf_puts(out, "}");
}

/* The object; with its "steps" array when WITH_STEPS. */
static int put_migration(struct hd_buf *out, const struct hd_migration *m,
                         int with_steps, const struct hd_step *steps,
                         size_t n_steps)
{
    const char *mode;
    const char *result;

    mode = hd_mode_name(m->mode);
    result = hd_result_name(m->result);
    if (mode == NULL || result == NULL)
        return -EINVAL;
    hd_buf_puts(out, "{\"id\":");
    hd_json_put_string(out, m->id);
    put_field(out, "domain", m->domain);
    put_field(out, "source", m->src_host);
    put_field(out, "destination", m->dst_host);
    put_field(out, "mode", mode);
    hd_buf_puts(out, ",\"start_time\":");
    put_seconds(out, m->start_time);
    hd_buf_puts(out, ",\"end_time\":");
    if (m->result == HD_RESULT_RUNNING)
        hd_buf_puts(out, "null");
    else
        put_seconds(out, m->end_time);
    put_field(out, "result", result);
    put_field(out, "error", m->error);
    hd_buf_printf(out, ",\"bytes_moved\":%llu",
                  (unsigned long long)m->bytes_moved);
    if (with_steps) {
        hd_buf_puts(out, ",\"steps\":[");
        for (size_t i = 0; i < n_steps; i++) {
            if (i > 0)
                hd_buf_puts(out, ",");
            put_step(out, &steps[i]);
        }
        hd_buf_puts(out, "]");
    }
    return hd_buf_puts(out, "}");
}

int hd_json_migration(struct hd_buf *out, const struct hd_migration *m,
                      const struct hd_step *steps, size_t n_steps)
{
    return hd_json_migration_job(out, m, steps, n_steps, NULL);
}

/* "job":{...}: the hypervisor's figures, bytes and seconds. */
static void put_job(struct hd_buf *out, const struct hd_job_stats *j)
{
    hd_buf_printf(out,
                  ",\"job\":{\"elapsed\":%.3f,\"data_total\":%llu,"
                  "\"data_processed\":%llu,\"data_remaining\":%llu,"
                  "\"memory_total\":%llu,\"memory_processed\":%llu,"
                  "\"memory_remaining\":%llu,\"memory_bps\":%llu,"
                  "\"dirty_rate\":%llu,\"page_size\":%llu,"
                  "\"iterations\":%llu,\"disk_total\":%llu,"
                  "\"disk_processed\":%llu,\"disk_remaining\":%llu,"
                  "\"disk_bps\":%llu,\"expected_downtime\":%.3f,"
                  "\"downtime\":%.3f,\"setup_time\":%.3f}",
                  j->elapsed, (unsigned long long)j->data_total,
                  (unsigned long long)j->data_processed,
                  (unsigned long long)j->data_remaining,
                  (unsigned long long)j->memory_total,
                  (unsigned long long)j->memory_processed,
                  (unsigned long long)j->memory_remaining,
                  (unsigned long long)j->memory_bps,
                  (unsigned long long)j->dirty_rate,
                  (unsigned long long)j->page_size,
                  (unsigned long long)j->iterations,
                  (unsigned long long)j->disk_total,
                  (unsigned long long)j->disk_processed,
                  (unsigned long long)j->disk_remaining,
                  (unsigned long long)j->disk_bps, j->expected_downtime,
                  j->downtime, j->setup_time);
}

int hd_json_migration_job(struct hd_buf *out, const struct hd_migration *m,
                          const struct hd_step *steps, size_t n_steps,
                          const struct hd_job_stats *job)
{
    int rc;

    if (out == NULL || m == NULL || (steps == NULL && n_steps != 0))
        return -EINVAL;
    rc = put_migration(out, m, 1, steps, n_steps);
    if (rc != 0 || job == NULL)
        return rc;
    /* Inside the object put_migration closed. */
    if (out->len == 0 || out->data[out->len - 1] != '}')
        return -EINVAL;
    out->len--;
    put_job(out, job);
    return hd_buf_puts(out, "}");
}

int hd_json_migration_list(struct hd_buf *out,
                           const struct hd_migration *list, size_t n)
{
    int rc = 0;

    if (out == NULL || (list == NULL && n != 0))
        return -EINVAL;
    hd_buf_puts(out, "{\"migrations\":[");
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (i > 0)
            hd_buf_puts(out, ",");
        rc = put_migration(out, &list[i], 0, NULL, 0);
    }
    if (rc != 0)
        return rc;
    return hd_buf_puts(out, "]}");
}
