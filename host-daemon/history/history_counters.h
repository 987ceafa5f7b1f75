/* The history's counters that never go down: persisted beside the rows,
 * bumped in the transaction that ends a migration, never pruned. */
#ifndef HD_HISTORY_COUNTERS_H
#define HD_HISTORY_COUNTERS_H

#include "history.h"

/* A counter's bucket index past the histogram's buckets (0 .. n-1, each
 * cumulative as exposed): the observations' count and their sum. */
#define HD_COUNTER_COUNT (-1)
#define HD_COUNTER_SUM (-2)

/*
 * Calls FN for every counter of the file: METRIC "migrations" (LABEL the
 * result, BUCKET HD_COUNTER_COUNT), "bytes" (LABEL "", the bytes the
 * finished migrations moved), "stoppage" (LABEL "pre" or "post"),
 * "downtime" and "duration" (LABEL "live" or "offline"), the last three
 * with a BUCKET per bound of metrics_le.h, HD_COUNTER_COUNT and
 * HD_COUNTER_SUM; "dropped" (LABEL "", HD_COUNTER_COUNT: the migrations
 * the backlog dropped, hd_history_count_dropped).  FN's first error ends the walk and is returned.
 * -ENOENT: the file has no counters (an older file opened read-only).
 */
typedef int hd_counter_fn(void *arg, const char *metric, const char *label,
                          int bucket, double value);
int hd_history_each_counter(struct hd_history *h, hd_counter_fn *fn,
                            void *arg);

/* The bytes running migrations have moved so far (not yet counted). */
int hd_history_running_bytes(struct hd_history *h, uint64_t *bytes);

/* Calls FN as hd_history_each_stoppage does, for the steps of running
 * migrations only (not yet counted). */
int hd_history_each_running_stoppage(struct hd_history *h,
                                     hd_stoppage_fn *fn, void *arg);

/* The migrations crane-hostd's memory had to drop (backlog.h), as the
 * file counts them across restarts: *N (0 in a file without counters). */
int hd_history_dropped(struct hd_history *h, uint64_t *n);
/* Adds N to them, in a transaction of its own. */
int hd_history_count_dropped(struct hd_history *h, uint64_t n);

/* --- internal to history*.c ---------------------------------------------- */

/* At open: makes the counters table when the file has none, counting
 * every migration already finished in it, in one transaction. */
int hd__counters_ensure(struct hd_history *h);

/* Inside a write transaction, once migration ID has ended (its result and
 * every step stored): adds it to the counters.  A running one adds
 * nothing. */
int hd__counters_add(struct hd_history *h, const char *id);

#endif /* HD_HISTORY_COUNTERS_H */
