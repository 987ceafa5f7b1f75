/* crane-hostctl's views as tables (the default) or JSON (--json): the
 * pool, the domains this host knows, the history, a domain's job. */
/*
 * Tables are for people, in virsh's manner: a header line, a rule of '-',
 * one row per item, names cleaned of control characters (mig_clean) so a
 * guest's or operator's string can forge no line.  JSON is for scripts:
 * every field, strings escaped by the dashboard's escaper (json.c).
 */
#include "hostctl.h"

#include "host-daemon/web/buf.h"
#include "host-daemon/web/json.h"
#include "migrate_cli.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define NAME_W 24

static const char *clean(char *buf, size_t len, const char *s)
{
    return mig_clean(buf, len, s, true);
}

/* Epoch seconds T as local "YYYY-MM-DD HH:MM:SS", "-" for 0. */
static const char *when(char *buf, size_t len, double t)
{
    struct tm tm;
    time_t s = (time_t)t;

    if (t <= 0 || !localtime_r(&s, &tm) ||
        !strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm))
        snprintf(buf, len, "-");
    return buf;
}

/* SECONDS as milliseconds, "-" when negative (not recorded). */
static const char *ms(char *buf, size_t len, double seconds)
{
    if (!isfinite(seconds) || seconds < 0)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.1f", seconds * 1e3);
    return buf;
}

static void rule(FILE *out, int width)
{
    for (int i = 0; i < width; i++)
        fputc('-', out);
    fputc('\n', out);
}

int ctl_print_pool_table(FILE *out, const struct hd_pool_state *s)
{
    char a[NAME_W + 8], b[NAME_W + 8], c[96];
    size_t held, reserved, free_n;

    fprintf(out, " %-12s %-14s %-9s %s\n", "GPU", "PCI", "STATE", "HOLDER");
    rule(out, 60);
    for (size_t i = 0; i < s->n_gpus; i++) {
        const struct hd_pool_gpu_state *g = &s->gpus[i];
        const char *state = *s->error    ? "unknown"
                            : *g->holder ? "held"
                            : g->reserved ? "reserved"
                                          : "free";

        fprintf(out, " %-12s %-14s %-9s %s\n", clean(a, sizeof(a), g->name),
                clean(b, sizeof(b), g->pci), state,
                clean(c, sizeof(c), g->holder));
    }
    hd_pool_count(s, &held, &reserved, &free_n);
    fprintf(out, "\nhost %s: %zu GPU(s), %zu free, %zu held, %zu reserved\n",
            clean(c, sizeof(c), s->host), s->n_gpus, free_n, held, reserved);
    for (size_t i = 0; i < s->n_waiting; i++) {
        char many[32] = "a GPU";

        if (s->waiting[i].gpus > 1)
            snprintf(many, sizeof(many), "%u GPUs", s->waiting[i].gpus);
        fprintf(out, "waiting for %s: %s (migration %s, since %s)\n", many,
                clean(a, sizeof(a), s->waiting[i].domain),
                clean(b, sizeof(b), s->waiting[i].migration_id),
                when(c, sizeof(c), s->waiting[i].since));
    }
    for (size_t i = 0; i < s->n_prepared; i++) {
        const struct hd_pool_prepared_state *p = &s->prepared[i];

        fprintf(out, "prepared: %s (migration %s, ", clean(a, sizeof(a),
                p->domain), clean(b, sizeof(b), p->migration_id));
        if (p->lease_left < 0)
            fprintf(out, "no lease)\n");
        else
            fprintf(out, "lease %.0f s left)\n", p->lease_left);
    }
    if (s->history && s->history->degraded)
        fprintf(out, "history degraded%s: %zu migration(s) in memory only\n",
                s->history->read_only ? " (read-only)" : "",
                s->history->unsaved);
    return ferror(out) ? -EIO : 0;
}

static void json_migration(struct hd_buf *b, const Crane__Hostd__CtlMigration *m)
{
    hd_buf_puts(b, "{\"id\":");
    hd_json_put_string(b, m->id);
    hd_buf_puts(b, ",\"domain\":");
    hd_json_put_string(b, m->domain);
    hd_buf_puts(b, ",\"source\":");
    hd_json_put_string(b, m->src_host);
    hd_buf_puts(b, ",\"destination\":");
    hd_json_put_string(b, m->dst_host);
    hd_buf_puts(b, ",\"mode\":");
    hd_json_put_string(b, m->mode);
    hd_buf_puts(b, ",\"result\":");
    hd_json_put_string(b, m->result);
    hd_buf_puts(b, ",\"phase\":");
    hd_json_put_string(b, m->phase);
    hd_buf_printf(b, ",\"start\":%.3f,\"end\":", m->start);
    if (m->end > 0)
        hd_buf_printf(b, "%.3f", m->end);
    else
        hd_buf_puts(b, "null");
    hd_buf_printf(b, ",\"bytes\":%llu", (unsigned long long)m->bytes);
    hd_buf_puts(b, ",\"pre_s\":");
    hd_buf_puts(b, m->pre >= 0 ? "" : "null");
    if (m->pre >= 0)
        hd_buf_put_double(b, m->pre);
    hd_buf_puts(b, ",\"post_s\":");
    hd_buf_puts(b, m->post >= 0 ? "" : "null");
    if (m->post >= 0)
        hd_buf_put_double(b, m->post);
    hd_buf_puts(b, ",\"downtime_s\":");
    hd_buf_puts(b, m->downtime >= 0 ? "" : "null");
    if (m->downtime >= 0)
        hd_buf_put_double(b, m->downtime);
    hd_buf_puts(b, ",\"error\":");
    hd_json_put_string(b, m->error);
    hd_buf_puts(b, "}");
}

static int flush_buf(FILE *out, struct hd_buf *b)
{
    int rc = b->err;

    if (rc == 0 && b->data)
        fputs(b->data, out);
    hd_buf_free(b);
    return rc;
}

int ctl_print_history(FILE *out, const Crane__Hostd__CtlHistory *h,
                      bool json)
{
    char id[72], dom[NAME_W + 8], t[32], res[24], pre[24], post[24], dt[24];

    if (json) {
        struct hd_buf b = {0};

        hd_buf_puts(&b, "{\"migrations\":[");
        for (size_t i = 0; i < h->n_migrations; i++) {
            if (i)
                hd_buf_puts(&b, ",");
            json_migration(&b, h->migrations[i]);
        }
        hd_buf_printf(&b, "],\"total\":%llu}\n",
                      (unsigned long long)h->total);
        return flush_buf(out, &b);
    }
    fprintf(out, " %-24s %-20s %-11s %-7s %9s %9s %10s  %s\n", "ID",
            "DOMAIN", "RESULT", "MODE", "PRE(ms)", "POST(ms)",
            "DOWN(ms)", "WHEN");
    rule(out, 112);
    for (size_t i = 0; i < h->n_migrations; i++) {
        const Crane__Hostd__CtlMigration *m = h->migrations[i];

        fprintf(out, " %-24s %-20s %-11s %-7s %9s %9s %10s  %s\n",
                clean(id, sizeof(id), m->id), clean(dom, sizeof(dom),
                m->domain), clean(res, sizeof(res), m->result), m->mode,
                ms(pre, sizeof(pre), m->pre), ms(post, sizeof(post), m->post),
                ms(dt, sizeof(dt), m->downtime), when(t, sizeof(t), m->start));
    }
    if (h->total > h->n_migrations)
        fprintf(out, "(%zu of %llu shown: --limit N for more)\n",
                h->n_migrations, (unsigned long long)h->total);
    return ferror(out) ? -EIO : 0;
}

/* One row of the list: a domain and what this host knows of it. */
struct row {
    const char *domain, *gpu, *state, *migration, *phase;
    double since;
};

/* The row of DOMAIN in ROWS (N of MAX), added when new; NULL when full. */
static struct row *row_of(struct row *rows, size_t *n, size_t max,
                          const char *domain)
{
    for (size_t i = 0; i < *n; i++)
        if (!strcmp(rows[i].domain, domain))
            return &rows[i];
    if (*n == max)
        return NULL;
    rows[*n] = (struct row){.domain = domain, .gpu = "", .state = "",
                            .migration = "", .phase = ""};
    return &rows[(*n)++];
}

static size_t list_rows(const Crane__Hostd__PoolReport *p,
                        const Crane__Hostd__CtlHistory *h, struct row *rows,
                        size_t max)
{
    size_t n = 0;
    struct row *r;

    for (size_t i = 0; p && i < p->n_gpus; i++)
        if (*p->gpus[i]->holder &&
            (r = row_of(rows, &n, max, p->gpus[i]->holder))) {
            r->gpu = p->gpus[i]->name;
            r->state = "running";
        }
    for (size_t i = 0; p && i < p->n_waiting; i++)
        if ((r = row_of(rows, &n, max, p->waiting[i]->domain))) {
            r->state = "waiting-gpu";
            r->migration = p->waiting[i]->migration_id;
            r->since = p->waiting[i]->since;
        }
    for (size_t i = 0; p && i < p->n_prepared; i++)
        if ((r = row_of(rows, &n, max, p->prepared[i]->domain))) {
            r->state = "prepared";
            r->migration = p->prepared[i]->migration_id;
            r->since = p->prepared[i]->since;
        }
    for (size_t i = 0; h && i < h->n_migrations; i++)
        if ((r = row_of(rows, &n, max, h->migrations[i]->domain))) {
            if (!*r->state || !strcmp(r->state, "running"))
                r->state = "migrating";
            r->migration = h->migrations[i]->id;
            r->phase = h->migrations[i]->phase;
            r->since = h->migrations[i]->start;
        }
    return n;
}

int ctl_print_list(FILE *out, const Crane__Hostd__PoolReport *pool,
                   const Crane__Hostd__CtlHistory *running, bool json)
{
    struct row rows[256];
    size_t n = list_rows(pool, running, rows, 256), free_n = 0;
    char dom[NAME_W + 8], gpu[40], mig[72], ph[40], t[32];

    for (size_t i = 0; pool && i < pool->n_gpus; i++)
        free_n += !*pool->gpus[i]->holder && !pool->gpus[i]->reserved;
    if (json) {
        struct hd_buf b = {0};

        hd_buf_puts(&b, "{\"domains\":[");
        for (size_t i = 0; i < n; i++) {
            hd_buf_puts(&b, i ? ",{\"domain\":" : "{\"domain\":");
            hd_json_put_string(&b, rows[i].domain);
            hd_buf_puts(&b, ",\"state\":");
            hd_json_put_string(&b, rows[i].state);
            hd_buf_puts(&b, ",\"gpu\":");
            hd_json_put_string(&b, rows[i].gpu);
            hd_buf_puts(&b, ",\"migration\":");
            hd_json_put_string(&b, rows[i].migration);
            hd_buf_puts(&b, ",\"phase\":");
            hd_json_put_string(&b, rows[i].phase);
            hd_buf_printf(&b, ",\"since\":%.3f}", rows[i].since);
        }
        hd_buf_printf(&b, "],\"gpus\":%zu,\"free\":%zu}\n",
                      pool ? pool->n_gpus : 0, free_n);
        return flush_buf(out, &b);
    }
    fprintf(out, " %-20s %-12s %-12s %-24s %-10s %s\n", "DOMAIN", "STATE",
            "GPU", "MIGRATION", "PHASE", "SINCE");
    rule(out, 100);
    for (size_t i = 0; i < n; i++)
        fprintf(out, " %-20s %-12s %-12s %-24s %-10s %s\n",
                clean(dom, sizeof(dom), rows[i].domain), rows[i].state,
                clean(gpu, sizeof(gpu), rows[i].gpu),
                clean(mig, sizeof(mig), rows[i].migration),
                clean(ph, sizeof(ph), rows[i].phase),
                when(t, sizeof(t), rows[i].since));
    fprintf(out, "\npool: %zu GPU(s), %zu free\n", pool ? pool->n_gpus : 0,
            free_n);
    return ferror(out) ? -EIO : 0;
}

int ctl_print_job(FILE *out, const Crane__Hostd__CtlJob *j,
                  const char *domain, bool json)
{
    const Crane__Hostd__CtlMigration *m = j->migration;
    char v[300], t[32];

    if (json) {
        struct hd_buf b = {0};

        hd_buf_puts(&b, "{\"domain\":");
        hd_json_put_string(&b, domain);
        hd_buf_puts(&b, ",\"migration\":");
        if (m)
            json_migration(&b, m);
        else
            hd_buf_puts(&b, "null");
        hd_buf_puts(&b, ",\"fields\":{");
        for (size_t i = 0; i < j->n_fields; i++) {
            if (i)
                hd_buf_puts(&b, ",");
            hd_json_put_string(&b, j->fields[i]->key);
            hd_buf_puts(&b, ":");
            hd_json_put_string(&b, j->fields[i]->value);
        }
        hd_buf_puts(&b, "}}\n");
        return flush_buf(out, &b);
    }
    if (m) {
        fprintf(out, "%-17s %s\n", "Migration:", clean(v, sizeof(v), m->id));
        fprintf(out, "%-17s %s\n", "Mode:", clean(v, sizeof(v), m->mode));
        fprintf(out, "%-17s %s\n", "Phase:", clean(v, sizeof(v), m->phase));
        fprintf(out, "%-17s %s\n", "Destination:",
                clean(v, sizeof(v), m->dst_host));
        fprintf(out, "%-17s %s\n", "Started:", when(t, sizeof(t), m->start));
        fprintf(out, "%-17s %.3f s\n", "Elapsed:",
                m->start > 0 ? difftime(time(NULL), (time_t)m->start) : 0.0);
        fprintf(out, "%-17s %llu\n", "Bytes moved:",
                (unsigned long long)m->bytes);
        fprintf(out, "%-17s %s ms\n", "Worst pre:", ms(v, sizeof(v), m->pre));
    } else if (j->n_fields == 0) {
        fprintf(out, "%-17s %s\n", "Job type:", "None");
    }
    for (size_t i = 0; i < j->n_fields; i++) {
        char key[80];

        snprintf(key, sizeof(key), "%s:",
                 mig_clean(t, sizeof(t), j->fields[i]->key, false));
        fprintf(out, "%-17s %s\n", key,
                mig_clean(v, sizeof(v), j->fields[i]->value, false));
    }
    return ferror(out) ? -EIO : 0;
}
