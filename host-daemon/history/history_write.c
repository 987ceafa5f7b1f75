/* The migration history's writes: every record checked, each change in one
 * transaction (statements: history_db.c; the file: history_schema.c). */
#include "history_counters.h"
#include "history_db.h"

#include "proto/log.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_migration(const struct hd_migration *m)
{
    if (m == NULL || !hd__id_ok(m->id) || !hd__text_ok(m->domain, HD_NAME_MAX, 0) ||
        !hd__text_ok(m->src_host, HD_NAME_MAX, 0) ||
        !hd__text_ok(m->dst_host, HD_NAME_MAX, 0) ||
        !hd__text_ok(m->error, HD_ERROR_MAX, 1) || hd_mode_name(m->mode) == NULL ||
        hd_result_name(m->result) == NULL || !hd__seconds_ok(m->start_time) ||
        !hd__seconds_ok(m->end_time) || m->bytes_moved > INT64_MAX)
        goto bad;
    if (m->result == HD_RESULT_RUNNING ? m->end_time != 0
                                       : m->end_time < m->start_time)
        goto bad;
    return 0;
bad:
    CRN_ERROR("history: refusing an invalid migration record%s%.*s",
             m != NULL && hd__id_ok(m->id) ? " " : "", HD_ID_MAX,
             m != NULL && hd__id_ok(m->id) ? m->id : "");
    return -EINVAL;
}

static int check_step(const struct hd_step *s)
{
    if (s == NULL || !hd__text_ok(s->phase, HD_PHASE_MAX, 0) ||
        !hd__text_ok(s->program, HD_PROGRAM_MAX, 1) ||
        (s->pid == 0) != (s->program[0] == '\0') ||
        !hd__seconds_ok(s->start_offset) || !hd__seconds_ok(s->duration)) {
        CRN_ERROR("history: refusing an invalid step");
        return -EINVAL;
    }
    return 0;
}

/* A migration record M and its N STEPS, each checked. */
static int check_record(const struct hd_migration *m,
                        const struct hd_step *steps, size_t n)
{
    int rc = check_migration(m);

    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = check_step(&steps[i]);
    return rc;
}

/* --- writing -------------------------------------------------------------- */

static int insert_migration(struct hd_history *h, const struct hd_migration *m)
{
    sqlite3_stmt *s = hd__stmt(h, ST_INSERT_MIGRATION);
    int rc;

    sqlite3_bind_text(s, 1, m->id, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, m->domain, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 3, m->src_host, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 4, m->dst_host, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 5, hd_mode_name(m->mode), -1, SQLITE_STATIC);
    sqlite3_bind_double(s, 6, m->start_time);
    sqlite3_bind_double(s, 7, m->end_time);
    sqlite3_bind_text(s, 8, hd_result_name(m->result), -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 9, m->error, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 10, (sqlite3_int64)m->bytes_moved);
    rc = sqlite3_step(s);
    sqlite3_reset(s);
    if (rc == SQLITE_DONE)
        return 0;
    if (sqlite3_extended_errcode(h->db) == SQLITE_CONSTRAINT_PRIMARYKEY) {
        CRN_ERROR("history %s: migration %s is already recorded", h->path,
                 m->id);
        return -EEXIST;
    }
    return hd__log_sqlite(h, rc, "recording a migration");
}

static int insert_step(struct hd_history *h, const char *id, int64_t seq,
                       const struct hd_step *st)
{
    sqlite3_stmt *s = hd__stmt(h, ST_INSERT_STEP);

    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, seq);
    sqlite3_bind_text(s, 3, st->phase, -1, SQLITE_STATIC);
    if (st->pid != 0) {
        sqlite3_bind_int64(s, 4, st->pid);
        sqlite3_bind_text(s, 5, st->program, -1, SQLITE_STATIC);
    }
    sqlite3_bind_double(s, 6, st->start_offset);
    sqlite3_bind_double(s, 7, st->duration);
    return hd__stmt_run(h, s);
}

int hd_history_record(struct hd_history *h, const struct hd_migration *m,
                      const struct hd_step *steps, size_t n)
{
    int rc;

    if (h == NULL || (steps == NULL && n != 0) || n > HD_STEPS_MAX)
        return -EINVAL;
    rc = check_record(m, steps, n);
    if (rc != 0)
        return rc;
    rc = hd__tx_begin(h, 1);
    if (rc != 0)
        return rc;
    rc = insert_migration(h, m);
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = insert_step(h, m->id, (int64_t)i, &steps[i]);
    if (rc == 0 && m->result != HD_RESULT_RUNNING)
        rc = hd__counters_add(h, m->id);
    return hd__tx_end(h, rc);
}

int hd_history_begin(struct hd_history *h, const struct hd_migration *m)
{
    if (h == NULL || m == NULL || m->result != HD_RESULT_RUNNING)
        return -EINVAL;
    return hd_history_record(h, m, NULL, 0);
}

/* Inside a write transaction: -ENOENT unless ID is recorded and running. */
static int expect_running(struct hd_history *h, const char *id)
{
    sqlite3_stmt *s = hd__stmt(h, ST_RESULT_OF);
    int rc;

    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        const char *r = (const char *)sqlite3_column_text(s, 0);

        rc = r != NULL && strcmp(r, "running") == 0 ? 0 : -EALREADY;
    } else if (rc == SQLITE_DONE) {
        rc = -ENOENT;
    } else {
        rc = hd__log_sqlite(h, rc, "looking up a migration");
    }
    sqlite3_reset(s);
    if (rc == -ENOENT || rc == -EALREADY)
        CRN_ERROR("history %s: migration %s is %s", h->path, id,
                 rc == -ENOENT ? "not recorded" : "already finished");
    return rc;
}

/* Opens a write transaction on migration ID, which must be recorded and
 * running: 0 with the transaction open, else an error with it closed. */
static int begin_on_running(struct hd_history *h, const char *id)
{
    int rc = hd__tx_begin(h, 1);

    if (rc != 0)
        return rc;
    rc = expect_running(h, id);
    return rc == 0 ? 0 : hd__tx_end(h, rc);
}

/* Inside a write transaction: how many steps migration ID has, into *SEQ
 * (0 on an error). */
static int count_steps(struct hd_history *h, const char *id, int64_t *seq)
{
    sqlite3_stmt *s = hd__stmt(h, ST_COUNT_STEPS);
    int rc;

    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    rc = sqlite3_step(s);
    *seq = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) : 0;
    sqlite3_reset(s);
    return rc == SQLITE_ROW ? 0 : hd__log_sqlite(h, rc, "counting steps");
}

int hd_history_add_step(struct hd_history *h, const char *id,
                        const struct hd_step *step)
{
    int64_t seq = 0;
    int rc;

    if (h == NULL || !hd__id_ok(id))
        return -EINVAL;
    rc = check_step(step);
    if (rc != 0)
        return rc;
    rc = begin_on_running(h, id);
    if (rc != 0)
        return rc;
    rc = count_steps(h, id, &seq);
    if (rc == 0 && seq >= HD_STEPS_MAX) {
        CRN_ERROR("history %s: migration %s has %d steps already", h->path,
                 id, HD_STEPS_MAX);
        rc = -ENOSPC;
    }
    if (rc == 0)
        rc = insert_step(h, id, seq, step);
    return hd__tx_end(h, rc);
}

int hd_history_progress(struct hd_history *h, const char *id,
                        uint64_t bytes_moved)
{
    sqlite3_stmt *s;
    int rc;

    if (h == NULL || !hd__id_ok(id) || bytes_moved > INT64_MAX)
        return -EINVAL;
    rc = begin_on_running(h, id);
    if (rc != 0)
        return rc;
    s = hd__stmt(h, ST_SET_PROGRESS);
    sqlite3_bind_int64(s, 1, (sqlite3_int64)bytes_moved);
    sqlite3_bind_text(s, 2, id, -1, SQLITE_STATIC);
    rc = hd__stmt_run(h, s);
    return hd__tx_end(h, rc);
}

int hd_history_finish(struct hd_history *h, const char *id,
                      enum hd_result result, double end_time,
                      const char *error)
{
    sqlite3_stmt *s;
    int rc;

    if (h == NULL || !hd__id_ok(id) || result == HD_RESULT_RUNNING ||
        hd_result_name(result) == NULL || !hd__seconds_ok(end_time) ||
        !hd__text_ok(error, HD_ERROR_MAX, 1))
        return -EINVAL;
    rc = begin_on_running(h, id);
    if (rc != 0)
        return rc;
    s = hd__stmt(h, ST_SET_FINISH);
    sqlite3_bind_text(s, 1, hd_result_name(result), -1, SQLITE_STATIC);
    sqlite3_bind_double(s, 2, end_time);
    sqlite3_bind_text(s, 3, error, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 4, id, -1, SQLITE_STATIC);
    rc = hd__stmt_run(h, s);
    if (rc == 0)
        rc = hd__counters_add(h, id);
    return hd__tx_end(h, rc);
}

int hd_history_set_destination(struct hd_history *h, const char *id,
                               const char *dst_host)
{
    sqlite3_stmt *s;
    int rc;

    if (h == NULL || !hd__id_ok(id) || !hd__text_ok(dst_host, HD_NAME_MAX, 0))
        return -EINVAL;
    rc = begin_on_running(h, id);
    if (rc != 0)
        return rc;
    s = hd__stmt(h, ST_SET_DESTINATION);
    sqlite3_bind_text(s, 1, dst_host, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, id, -1, SQLITE_STATIC);
    rc = hd__stmt_run(h, s);
    return hd__tx_end(h, rc);
}

int hd_history_prune(struct hd_history *h, double before, unsigned *removed)
{
    sqlite3_stmt *s;
    int rc;

    if (h == NULL || !hd__seconds_ok(before))
        return -EINVAL;
    rc = hd__tx_begin(h, 1);
    if (rc != 0)
        return rc;
    s = hd__stmt(h, ST_PRUNE);
    sqlite3_bind_double(s, 1, before);
    rc = hd__stmt_run(h, s);
    if (rc == 0 && removed != NULL)
        *removed = (unsigned)sqlite3_changes(h->db);
    return hd__tx_end(h, rc);
}


/* Inside a write transaction: how many steps migration ID has into *SEQ,
 * whether it is recorded at all into *FOUND, and whether it has ended
 * (so is counted already) into *ENDED. */
static int stored_state(struct hd_history *h, const char *id, int *found,
                        int *ended, int64_t *seq)
{
    sqlite3_stmt *s = hd__stmt(h, ST_RESULT_OF);
    const char *r;
    int rc;

    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    rc = sqlite3_step(s);
    *found = rc == SQLITE_ROW;
    r = *found ? (const char *)sqlite3_column_text(s, 0) : NULL;
    *ended = r != NULL && strcmp(r, "running") != 0;
    sqlite3_reset(s);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return hd__log_sqlite(h, rc, "looking up a migration");
    return count_steps(h, id, seq);
}

int hd_history_store(struct hd_history *h, const struct hd_migration *m,
                     const struct hd_step *steps, size_t n)
{
    sqlite3_stmt *s;
    int64_t seq = 0;
    int found = 0, ended = 0, rc;

    if (h == NULL || (steps == NULL && n != 0))
        return -EINVAL;
    rc = check_record(m, steps, n);
    if (rc != 0)
        return rc;
    rc = hd__tx_begin(h, 1);
    if (rc == 0)
        rc = stored_state(h, m->id, &found, &ended, &seq);
    if (rc == 0 && !found) {
        rc = insert_migration(h, m);
    } else if (rc == 0) {
        s = hd__stmt(h, ST_SET_STORED);
        sqlite3_bind_text(s, 1, hd_result_name(m->result), -1, SQLITE_STATIC);
        sqlite3_bind_double(s, 2, m->end_time);
        sqlite3_bind_text(s, 3, m->error, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 4, (sqlite3_int64)m->bytes_moved);
        sqlite3_bind_text(s, 5, m->dst_host, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 6, m->id, -1, SQLITE_STATIC);
        rc = hd__stmt_run(h, s);
    }
    for (size_t i = 0; rc == 0 && i < n && seq < HD_STEPS_MAX; i++)
        rc = insert_step(h, m->id, seq++, &steps[i]);
    if (rc == 0 && !ended && m->result != HD_RESULT_RUNNING)
        rc = hd__counters_add(h, m->id);
    return hd__tx_end(h, rc);
}
