/* The bucket bounds of the metrics' histograms, shared by the exposition
 * (metrics.c) and the persisted counters (history_counters.c). */
#ifndef HD_METRICS_LE_H
#define HD_METRICS_LE_H

/* Upper bounds (seconds) of crane_migration_stoppage_seconds' buckets. */
#define HD_STOPPAGE_BUCKETS 13

/* Upper bounds (seconds) of crane_migration_downtime_seconds' buckets: the
 * stoppage's, then on to 100 s (an offline VM pauses for the whole copy). */
#define HD_DOWNTIME_BUCKETS 16

/* Upper bounds (seconds) of crane_migration_duration_seconds' buckets. */
#define HD_DURATION_BUCKETS 12

/*
 * A stoppage is a few milliseconds for a small program and seconds for one
 * with GiB of GPU state: 1-2.5-5 steps over 0.001..10 s.  A migration takes
 * from under a second (a small VM, offline) to many minutes.  The bounds
 * are written as text too, so that the exposition shows exactly these.
 */
#define HD_STOPPAGE_LE                                                       \
    {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
#define HD_STOPPAGE_LE_TEXT                                                  \
    {"0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1",             \
     "0.25",  "0.5",    "1",     "2.5",  "5",     "10"}
#define HD_DOWNTIME_LE                                                       \
    {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,                     \
     0.5,   1,      2.5,   5,    10,   25,    50,   100}
#define HD_DOWNTIME_LE_TEXT                                                  \
    {"0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25",     \
     "0.5",   "1",      "2.5",   "5",    "10",    "25",   "50",  "100"}
#define HD_DURATION_LE                                                       \
    {0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500}
#define HD_DURATION_LE_TEXT                                                  \
    {"0.5", "1", "2.5", "5", "10", "25", "50", "100", "250", "500", "1000",  \
     "2500"}

#endif /* HD_METRICS_LE_H */
