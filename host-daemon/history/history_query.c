/* Reading the migration history: lists and single migrations with steps. */
#include "history_db.h"

#include "proto/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- reading: the file may have been edited by hand, so rows are checked -- */

int hd__read_migration(struct hd_history *h, sqlite3_stmt *s,
                          struct hd_migration *m)
{
    int mode;
    int result;
    sqlite3_int64 bytes;

    memset(m, 0, sizeof(*m));
    hd__copy_text(m->id, HD_ID_MAX, s, 0);
    hd__copy_text(m->domain, HD_NAME_MAX, s, 1);
    hd__copy_text(m->src_host, HD_NAME_MAX, s, 2);
    hd__copy_text(m->dst_host, HD_NAME_MAX, s, 3);
    mode = hd__name_index(hd__mode_names, 3, (const char *)sqlite3_column_text(s, 4));
    m->start_time = sqlite3_column_double(s, 5);
    m->end_time = sqlite3_column_double(s, 6);
    result =
        hd__name_index(hd__result_names, HD_RESULT_COUNT,
                   (const char *)sqlite3_column_text(s, 7));
    hd__copy_text(m->error, HD_ERROR_MAX, s, 8);
    bytes = sqlite3_column_int64(s, 9);
    if (mode < 0 || result < 0 || bytes < 0) {
        CRN_ERROR("history %s: migration %s has a corrupt row", h->path,
                 m->id);
        return -EIO;
    }
    m->mode = (enum hd_mode)mode;
    m->result = (enum hd_result)result;
    m->bytes_moved = (uint64_t)bytes;
    return 0;
}

/* hd__read_migration as an hd__row_fn. */
static int migration_row(struct hd_history *h, sqlite3_stmt *s, void *row)
{
    return hd__read_migration(h, s, row);
}

/* Reads the rows of S (at most LIMIT) into a malloc'ed *OUT, *N. */
static int read_page(struct hd_history *h, sqlite3_stmt *s, size_t limit,
                     struct hd_migration **out, size_t *n)
{
    void *rows = NULL;
    int rc = hd__read_rows(h, s, limit, sizeof(**out), migration_row,
                           "listing migrations", &rows, n);

    if (rc == 0)
        *out = rows;
    return rc;
}

int hd_history_list(struct hd_history *h, size_t limit,
                    struct hd_migration **out, size_t *n)
{
    sqlite3_stmt *s;

    if (h == NULL || out == NULL || n == NULL || limit == 0 ||
        limit > HD_LIST_MAX)
        return -EINVAL;
    *out = NULL;
    *n = 0;
    s = hd__stmt(h, ST_LIST);
    sqlite3_bind_int64(s, 1, (sqlite3_int64)limit);
    return read_page(h, s, limit, out, n);
}

void hd_filter_init(struct hd_filter *f)
{
    memset(f, 0, sizeof(*f));
    f->result = -1;
}

int hd_filter_check(const struct hd_filter *f)
{
    if (f == NULL ||
        strnlen(f->domain, sizeof(f->domain)) >= sizeof(f->domain) ||
        strnlen(f->host, sizeof(f->host)) >= sizeof(f->host) ||
        (f->mode != 0 && hd_mode_name(f->mode) == NULL) ||
        (f->result != -1 && hd_result_name(f->result) == NULL) ||
        !hd__seconds_ok(f->since) || !hd__seconds_ok(f->until))
        return -EINVAL;
    return 0;
}

void hd__bind_filter(sqlite3_stmt *s, const struct hd_filter *f)
{
    if (f->domain[0] != '\0')
        sqlite3_bind_text(s, 1, f->domain, -1, SQLITE_STATIC);
    if (f->host[0] != '\0')
        sqlite3_bind_text(s, 2, f->host, -1, SQLITE_STATIC);
    if (f->mode != 0)
        sqlite3_bind_text(s, 3, hd_mode_name(f->mode), -1, SQLITE_STATIC);
    if (f->result != -1)
        sqlite3_bind_text(s, 4, hd_result_name(f->result), -1,
                          SQLITE_STATIC);
    if (f->since > 0)
        sqlite3_bind_double(s, 5, f->since);
    if (f->until > 0)
        sqlite3_bind_double(s, 6, f->until);
}

/* How many migrations F takes, into *TOTAL. */
static int count_filtered(struct hd_history *h, const struct hd_filter *f,
                          uint64_t *total)
{
    sqlite3_stmt *s = hd__stmt(h, ST_QUERY_COUNT);
    int rc;

    hd__bind_filter(s, f);
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        *total = (uint64_t)sqlite3_column_int64(s, 0);
        rc = 0;
    } else {
        rc = hd__log_sqlite(h, rc, "counting migrations");
    }
    sqlite3_reset(s);
    return rc;
}

int hd_history_query(struct hd_history *h, const struct hd_filter *f,
                     uint64_t offset, size_t limit, struct hd_migration **out,
                     size_t *n, uint64_t *total)
{
    sqlite3_stmt *s;
    uint64_t all = 0;
    int rc;

    if (h == NULL || hd_filter_check(f) != 0 || out == NULL || n == NULL ||
        limit == 0 || limit > HD_LIST_MAX || offset > INT64_MAX)
        return -EINVAL;
    *out = NULL;
    *n = 0;
    /* One read transaction: the page and its total from one snapshot. */
    rc = hd__tx_begin(h, 0);
    if (rc != 0)
        return rc;
    rc = count_filtered(h, f, &all);
    if (rc == 0) {
        s = hd__stmt(h, ST_QUERY);
        hd__bind_filter(s, f);
        sqlite3_bind_int64(s, 7, (sqlite3_int64)limit);
        sqlite3_bind_int64(s, 8, (sqlite3_int64)offset);
        rc = read_page(h, s, limit, out, n);
    }
    rc = hd__tx_end(h, rc);
    if (rc != 0) {
        free(*out);
        *out = NULL;
        *n = 0;
        return rc;
    }
    if (total != NULL)
        *total = all;
    return 0;
}

static int read_steps(struct hd_history *h, const char *id,
                      struct hd_step **steps, size_t *n)
{
    struct hd_step *list = NULL;
    size_t count = 0;
    size_t cap = 0;
    sqlite3_stmt *s = hd__stmt(h, ST_GET_STEPS);
    int rc;

    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        struct hd_step *st;
        sqlite3_int64 pid;

        if (count == cap) {
            size_t ncap = cap != 0 ? cap * 2 : 16;
            struct hd_step *p = realloc(list, ncap * sizeof(*list));

            if (p == NULL) {
                rc = -ENOMEM;
                break;
            }
            list = p;
            cap = ncap;
        }
        st = &list[count];
        memset(st, 0, sizeof(*st));
        hd__copy_text(st->phase, HD_PHASE_MAX, s, 0);
        pid = sqlite3_column_int64(s, 1);
        if (sqlite3_column_type(s, 1) != SQLITE_NULL) {
            if (pid <= 0 || pid > UINT32_MAX) {
                CRN_ERROR("history %s: migration %s has a corrupt step",
                         h->path, id);
                rc = -EIO;
                break;
            }
            st->pid = (uint32_t)pid;
            hd__copy_text(st->program, HD_PROGRAM_MAX, s, 2);
        }
        st->start_offset = sqlite3_column_double(s, 3);
        st->duration = sqlite3_column_double(s, 4);
        count++;
    }
    if (rc == SQLITE_DONE)
        rc = 0;
    else if (rc > 0)
        rc = hd__log_sqlite(h, rc, "reading steps");
    sqlite3_reset(s);
    if (rc != 0) {
        free(list);
        return rc;
    }
    *steps = list;
    *n = count;
    return 0;
}

int hd_history_get(struct hd_history *h, const char *id,
                   struct hd_migration *m, struct hd_step **steps,
                   size_t *n)
{
    sqlite3_stmt *s;
    int rc;

    if (h == NULL || !hd__id_ok(id) || m == NULL || steps == NULL || n == NULL)
        return -EINVAL;
    *steps = NULL;
    *n = 0;
    /* One read transaction: the row and its steps from the same snapshot. */
    rc = hd__tx_begin(h, 0);
    if (rc != 0)
        return rc;
    s = hd__stmt(h, ST_GET);
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        rc = hd__read_migration(h, s, m);
    else if (rc == SQLITE_DONE)
        rc = -ENOENT;
    else
        rc = hd__log_sqlite(h, rc, "fetching a migration");
    sqlite3_reset(s);
    if (rc == 0)
        rc = read_steps(h, id, steps, n);
    return hd__tx_end(h, rc);
}

