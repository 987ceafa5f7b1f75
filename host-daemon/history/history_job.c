/* The hypervisor's figures of each migration's job (virsh domjobinfo) in
 * the history: table job_stats, one row per migration. */
#include "history_db.h"

#include "proto/log.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/*
 * A table of its own, created at open when missing, rather than columns
 * of migrations: adding it needs no rebuild of a table and no new schema
 * version (a file written by an older crane-hostd gets it the first time
 * a newer one opens it; an older one ignores it), and a row is deleted
 * with its migration (ON DELETE CASCADE, the prune included).
 */
#define J(name, kind) {#name, offsetof(struct hd_job_stats, name), kind}
enum { J_U64, J_REAL };
static const struct {
    const char *name;
    size_t off;
    int kind;
} cols[] = {
    J(elapsed, J_REAL),           J(data_total, J_U64),
    J(data_processed, J_U64),     J(data_remaining, J_U64),
    J(memory_total, J_U64),       J(memory_processed, J_U64),
    J(memory_remaining, J_U64),   J(memory_bps, J_U64),
    J(dirty_rate, J_U64),         J(page_size, J_U64),
    J(iterations, J_U64),         J(disk_total, J_U64),
    J(disk_processed, J_U64),     J(disk_remaining, J_U64),
    J(disk_bps, J_U64),           J(expected_downtime, J_REAL),
    J(downtime, J_REAL),          J(setup_time, J_REAL),
};
#define N_COLS (sizeof(cols) / sizeof(cols[0]))

int hd__history_job_schema(struct hd_history *h)
{
    char sql[2048];
    size_t l;
    int rc;

    l = (size_t)snprintf(sql, sizeof(sql),
                         "CREATE TABLE IF NOT EXISTS job_stats ("
                         " migration_id TEXT PRIMARY KEY REFERENCES"
                         " migrations (id) ON DELETE CASCADE");
    for (size_t i = 0; i < N_COLS; i++)
        l += (size_t)snprintf(sql + l, sizeof(sql) - l,
                              ", %s %s NOT NULL DEFAULT 0 CHECK (%s >= 0)",
                              cols[i].name,
                              cols[i].kind == J_REAL ? "REAL" : "INTEGER",
                              cols[i].name);
    snprintf(sql + l, sizeof(sql) - l, ");");
    rc = sqlite3_exec(h->db, sql, NULL, NULL, NULL);
    return rc == SQLITE_OK ? 0
                           : hd__log_sqlite(h, rc, "creating table job_stats");
}

/* SQL with the column list: "INSERT OR REPLACE ... VALUES (?1, ...)" or
 * "SELECT ... WHERE migration_id = ?1". */
static void job_sql(char *sql, size_t len, bool insert)
{
    size_t l = (size_t)snprintf(sql, len, insert
                                    ? "INSERT OR REPLACE INTO job_stats"
                                      " (migration_id"
                                    : "SELECT 0");
    for (size_t i = 0; i < N_COLS; i++)
        l += (size_t)snprintf(sql + l, len - l, ", %s", cols[i].name);
    if (!insert) {
        snprintf(sql + l, len - l,
                 " FROM job_stats WHERE migration_id = ?1");
        return;
    }
    l += (size_t)snprintf(sql + l, len - l, ") VALUES (?1");
    for (size_t i = 0; i < N_COLS; i++)
        l += (size_t)snprintf(sql + l, len - l, ", ?%zu", i + 2);
    snprintf(sql + l, len - l, ")");
}

int hd_history_set_job(struct hd_history *h, const char *id,
                       const struct hd_job_stats *j)
{
    sqlite3_stmt *s = NULL;
    char sql[1024];
    int rc;

    if (h == NULL || id == NULL || j == NULL || strlen(id) > HD_ID_MAX)
        return -EINVAL;
    job_sql(sql, sizeof(sql), true);
    rc = sqlite3_prepare_v2(h->db, sql, -1, &s, NULL);
    if (rc != SQLITE_OK)
        return hd__log_sqlite(h, rc, "preparing the job's figures");
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    for (size_t i = 0; i < N_COLS; i++) {
        const char *p = (const char *)j + cols[i].off;
        if (cols[i].kind == J_REAL) {
            double v;
            memcpy(&v, p, sizeof(v));
            sqlite3_bind_double(s, (int)i + 2, v > 0 ? v : 0);
        } else {
            uint64_t v;
            memcpy(&v, p, sizeof(v));
            /* SQLite's integers are signed 64 bits. */
            sqlite3_bind_int64(s, (int)i + 2,
                               v > INT64_MAX ? INT64_MAX : (int64_t)v);
        }
    }
    rc = sqlite3_step(s);
    sqlite3_finalize(s);
    return rc == SQLITE_DONE ? 0
                             : hd__log_sqlite(h, rc, "recording the job");
}

int hd_history_get_job(struct hd_history *h, const char *id,
                       struct hd_job_stats *out)
{
    sqlite3_stmt *s = NULL;
    char sql[1024];
    int rc;

    if (h == NULL || id == NULL || out == NULL)
        return -EINVAL;
    memset(out, 0, sizeof(*out));
    job_sql(sql, sizeof(sql), false);
    rc = sqlite3_prepare_v2(h->db, sql, -1, &s, NULL);
    if (rc != SQLITE_OK)
        return hd__log_sqlite(h, rc, "preparing the job's read");
    sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        for (size_t i = 0; i < N_COLS; i++) {
            char *p = (char *)out + cols[i].off;
            if (cols[i].kind == J_REAL) {
                double v = sqlite3_column_double(s, (int)i + 1);
                v = v > 0 ? v : 0;    /* the file may be edited by hand */
                memcpy(p, &v, sizeof(v));
            } else {
                sqlite3_int64 v = sqlite3_column_int64(s, (int)i + 1);
                uint64_t u = v > 0 ? (uint64_t)v : 0;
                memcpy(p, &u, sizeof(u));
            }
        }
        rc = 0;
    } else {
        rc = rc == SQLITE_DONE ? -ENOENT
                               : hd__log_sqlite(h, rc, "reading the job");
    }
    sqlite3_finalize(s);
    return rc;
}
