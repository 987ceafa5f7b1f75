/* Migrations the history could not store (full or read-only disk), kept in
 * memory and written again once the disk takes them. */
#ifndef HD_BACKLOG_H
#define HD_BACKLOG_H

#include "history.h"

#include <stdbool.h>
#include <stddef.h>

/* The most migrations kept; past it the oldest finished one is dropped
 * (counted in dropped, logged). */
#define HD_BACKLOG_MAX 10000

/* What the history's health looks like to operators (hostctl, /metrics,
 * dashboard). */
struct hd_history_health {
    bool degraded;                /* something is not on disk */
    bool read_only;               /* the file could not be opened for writes */
    size_t unsaved;               /* migrations kept in memory only */
    unsigned long long dropped;   /* migrations lost past HD_BACKLOG_MAX
                                     since this daemon started */
    unsigned long long dropped_total; /* the same across restarts: the
                                     history's count and this run's not yet
                                     in it (never goes down) */
    double since;                 /* epoch seconds degraded began, 0: not */
    char reason[256];             /* the last failure, "" when healthy */
    unsigned generation;          /* grows each time the file is writable
                                     again (readers open it afresh) */
};

struct hd_backlog;

int hd_backlog_new(struct hd_backlog **out);
void hd_backlog_free(struct hd_backlog *b);

/* Keeps migration M and its N steps (copied; the steps beyond
 * HD_STEPS_MAX are cut).  An entry of the same id takes M's result, end,
 * error, bytes and destination, and the steps after its own.  WHY says
 * what failed (logged once per new degradation).  0 or -ENOMEM. */
int hd_backlog_keep(struct hd_backlog *b, const struct hd_migration *m,
                    const struct hd_step *steps, size_t n, const char *why);

/* Writes what is kept into the history at PATH (opened for this call):
 * each migration written goes; the first failure stops the walk.  Once
 * all is written, the drops not yet counted there are added to the
 * history's counter (so dropped_total survives a restart).  Returns
 * how many are still kept, or -errno when the history cannot be opened.
 * Thread-safe; one writer at a time (another caller returns -EBUSY). */
int hd_backlog_flush(struct hd_backlog *b, const char *path);

/* Keeps at most MAX from now on instead of HD_BACKLOG_MAX (tests). */
void hd_backlog_set_max(struct hd_backlog *b, size_t max);

/* The history's own count of dropped migrations (hd_history_dropped),
 * read at start: dropped_total begins there. */
void hd_backlog_set_dropped_base(struct hd_backlog *b, uint64_t n);

/* The history could be opened only read-only (READ_ONLY true, WHY) or is
 * writable again (false). */
void hd_backlog_set_read_only(struct hd_backlog *b, bool read_only,
                              const char *why);

/* The health as it is now. */
void hd_backlog_health(struct hd_backlog *b, struct hd_history_health *out);

#endif /* HD_BACKLOG_H */
