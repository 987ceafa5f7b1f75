/* Durable migration history: migrations and their steps in SQLite. */
#ifndef HD_HISTORY_H
#define HD_HISTORY_H

#include <stddef.h>
#include <stdint.h>

/* Bounds on what is stored; longer input is refused with -EINVAL. */
#define HD_ID_MAX 64          /* [A-Za-z0-9._-], not empty */
#define HD_NAME_MAX 255       /* domain and host names, not empty */
#define HD_ERROR_MAX 1023     /* error text, may be empty */
#define HD_PHASE_MAX 63       /* step phase names, not empty */
#define HD_PROGRAM_MAX 255    /* a program's name, empty when pid is 0 */
#define HD_STEPS_MAX 4096     /* steps of one migration */
#define HD_LIST_MAX 1000      /* migrations one list call returns */
#define HD_SUMMARY_MAX 5000   /* migrations one summaries call returns */

enum hd_mode { HD_MODE_LIVE = 1, HD_MODE_OFFLINE = 2 };

enum hd_result {
    HD_RESULT_RUNNING = 0,     /* not finished yet */
    HD_RESULT_OK = 1,
    HD_RESULT_FAILED = 2,      /* failed, and the VM could not be restored */
    HD_RESULT_ROLLED_BACK = 3, /* failed, the VM runs on where it was */
    HD_RESULT_REMOTING = 4     /* moved, but the destination had no free GPU:
                                  its programs run remotely until that host
                                  attaches one */
};
#define HD_RESULT_COUNT 5      /* values of enum hd_result: 0 .. 4 */

/* Times are seconds since the Unix epoch; end_time is 0 while running. */
struct hd_migration {
    char id[HD_ID_MAX + 1];
    char domain[HD_NAME_MAX + 1];
    char src_host[HD_NAME_MAX + 1];
    char dst_host[HD_NAME_MAX + 1];
    enum hd_mode mode;
    double start_time;
    double end_time;
    enum hd_result result;
    char error[HD_ERROR_MAX + 1];
    uint64_t bytes_moved;
};

/*
 * One step of a migration: a host step (pid 0, program "": "detach",
 * "migrate", "attach", ...) or one program's switch (its pid and name).
 * A program's steps in phase "pre" and "post" are its stoppage times: how
 * long its OpenCL calls were held before and after the move.
 */
struct hd_step {
    char phase[HD_PHASE_MAX + 1];
    uint32_t pid;
    char program[HD_PROGRAM_MAX + 1];
    double start_offset;      /* seconds from the migration's start */
    double duration;          /* seconds */
};

/*
 * Which migrations a query takes; a field left as hd_filter_init sets it
 * takes all.  Times bound start_time: since <= start_time < until.
 */
struct hd_filter {
    char domain[HD_NAME_MAX + 1];   /* "": any domain */
    char host[HD_NAME_MAX + 1];     /* "": any; else as source or dest. */
    enum hd_mode mode;              /* 0: either mode */
    int result;                     /* -1: any; else an enum hd_result */
    double since;                   /* 0: no lower bound */
    double until;                   /* 0: no upper bound */
};

/* What the stats need of one migration (hd_history_summaries). */
struct hd_summary {
    char domain[HD_NAME_MAX + 1];
    char src_host[HD_NAME_MAX + 1];
    char dst_host[HD_NAME_MAX + 1];
    enum hd_mode mode;
    enum hd_result result;
    double start_time;
    double end_time;          /* 0 while running */
    uint64_t bytes_moved;
    /* The longest stoppage of any of its programs before ("pre") and after
     * ("post") the move, and the VM's own downtime; NAN when none was
     * recorded (no program ran, or the hypervisor did not say). */
    double pre;
    double post;
    double downtime;
};

/* Sums over every migration stored, running ones included. */
struct hd_totals {
    uint64_t by_result[HD_RESULT_COUNT]; /* indexed by enum hd_result */
    uint64_t bytes_moved;
};

struct hd_history;

/*
 * Opens (creating it if needed) the database at PATH in WAL mode; *OUT owns
 * the connection until hd_history_close.  One struct hd_history per thread:
 * other threads and processes open their own, and WAL lets readers go on
 * while one writes.  A file of an older schema version is upgraded in place,
 * in one transaction, keeping every row.  -EPROTO: the file has a newer
 * schema than this code; -EIO: SQLite failed, or an older file cannot be
 * upgraded (logged; the file is left as it was).
 */
int hd_history_open(const char *path, struct hd_history **out);
void hd_history_close(struct hd_history *h);

/* Opens PATH for reading only (a read-only file or disk): queries work,
 * every write fails.  The file must have this code's schema version:
 * -EPROTO otherwise; -EIO or -ENOENT when SQLite cannot read it. */
int hd_history_open_read_only(const char *path, struct hd_history **out);

/* Stores a whole migration and its N steps in one transaction.  -EEXIST:
 * the id is taken. */
int hd_history_record(struct hd_history *h, const struct hd_migration *m,
                      const struct hd_step *steps, size_t n);

/* Writes a migration the history could not take when it happened
 * (backlog.c): one not recorded is inserted whole with its N steps; one
 * recorded gets M's result, end, error, bytes and destination, and the
 * steps after those it has (up to HD_STEPS_MAX).  One transaction. */
int hd_history_store(struct hd_history *h, const struct hd_migration *m,
                     const struct hd_step *steps, size_t n);

/* A migration as it happens: begin (result must be RUNNING), add steps and
 * progress, finish.  -ENOENT: no such id; -EALREADY: it already finished;
 * -ENOSPC: HD_STEPS_MAX steps already. */
int hd_history_begin(struct hd_history *h, const struct hd_migration *m);
int hd_history_add_step(struct hd_history *h, const char *id,
                        const struct hd_step *step);
int hd_history_progress(struct hd_history *h, const char *id,
                        uint64_t bytes_moved);
int hd_history_finish(struct hd_history *h, const char *id,
                      enum hd_result result, double end_time,
                      const char *error);

/* The destination as it named itself (its host name) once it answered, in
 * place of the address the migration began with.  -ENOENT, -EALREADY as
 * above. */
int hd_history_set_destination(struct hd_history *h, const char *id,
                               const char *dst_host);

/* Removes the finished migrations that ended before BEFORE (seconds since
 * the epoch), with their steps, in one transaction; running ones stay.
 * *REMOVED (may be NULL) gets how many went. */
int hd_history_prune(struct hd_history *h, double before, unsigned *removed);

/* The newest LIMIT (1..HD_LIST_MAX) migrations, newest first, into a
 * malloc'ed array the caller frees (NULL when *N is 0). */
int hd_history_list(struct hd_history *h, size_t limit,
                    struct hd_migration **out, size_t *n);

/* A filter that takes every migration. */
void hd_filter_init(struct hd_filter *f);

/* -EINVAL unless F is well formed (names within bounds, a known mode and
 * result, finite non-negative times). */
int hd_filter_check(const struct hd_filter *f);

/* One page of the migrations F takes, newest first: OFFSET skipped, at
 * most LIMIT (1..HD_LIST_MAX) into a malloc'ed array the caller frees
 * (NULL when *N is 0); *TOTAL (may be NULL) gets how many F takes in all,
 * from the same snapshot. */
int hd_history_query(struct hd_history *h, const struct hd_filter *f,
                     uint64_t offset, size_t limit, struct hd_migration **out,
                     size_t *n, uint64_t *total);

/* Migration ID into *M and its steps, in order, into a malloc'ed array
 * *STEPS the caller frees (NULL when *N is 0).  -ENOENT: no such id. */
int hd_history_get(struct hd_history *h, const char *id,
                   struct hd_migration *m, struct hd_step **steps,
                   size_t *n);

int hd_history_totals(struct hd_history *h, struct hd_totals *t);

/* The newest LIMIT (1..HD_SUMMARY_MAX) migrations F takes, newest first,
 * as summaries into a malloc'ed array the caller frees (NULL when *N is
 * 0); *TOTAL (may be NULL) gets how many F takes in all. */
int hd_history_summaries(struct hd_history *h, const struct hd_filter *f,
                         size_t limit, struct hd_summary **out, size_t *n,
                         uint64_t *total);

/* Calls FN with the mode and duration (end - start, seconds) of each
 * finished migration; FN's first error ends the walk and is returned. */
typedef int hd_duration_fn(void *arg, enum hd_mode mode, double seconds);
int hd_history_each_duration(struct hd_history *h, hd_duration_fn *fn,
                             void *arg);

/* Calls FN for each program step in phase "pre" or "post", and each host
 * step "downtime" (the VM's own pause, from the hypervisor), with its
 * migration's mode, its phase and duration; FN returns 0 or -errno, and
 * its first error ends the walk and is returned. */
typedef int hd_stoppage_fn(void *arg, enum hd_mode mode, const char *phase,
                           double seconds);
int hd_history_each_stoppage(struct hd_history *h, hd_stoppage_fn *fn,
                             void *arg);

/* Names as stored and shown: "live", "offline"; "running", "ok",
 * "failed", "rolled-back", "remoting".  NULL for values out of range. */
const char *hd_mode_name(enum hd_mode mode);
const char *hd_result_name(enum hd_result result);

/* The hypervisor's figures of a migration's job (virsh domjobinfo), 0
 * where it reported nothing; seconds and bytes (history_job.c). */
struct hd_job_stats {
    double elapsed;
    uint64_t data_total, data_processed, data_remaining;
    uint64_t memory_total, memory_processed, memory_remaining;
    uint64_t memory_bps, dirty_rate, page_size, iterations;
    uint64_t disk_total, disk_processed, disk_remaining, disk_bps;
    double expected_downtime, downtime, setup_time;
};

/* Records J for migration ID (replacing what it had); reads it back
 * (-ENOENT: none recorded). */
int hd_history_set_job(struct hd_history *h, const char *id,
                       const struct hd_job_stats *j);
int hd_history_get_job(struct hd_history *h, const char *id,
                       struct hd_job_stats *out);

#endif /* HD_HISTORY_H */
