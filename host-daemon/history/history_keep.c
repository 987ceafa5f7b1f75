/* crane-hostd's history across disk faults: a read-only or missing file
 * does not stop the daemon, and what the disk refused is written later. */
#include "history_keep.h"

#include "history_counters.h"
#include "proto/log.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* The dropped migrations' count goes on from the file's (never down). */
static void dropped_base(struct hd_daemon *d, struct hd_history *h)
{
    uint64_t n = 0;

    if (hd_history_dropped(h, &n) == 0)
        hd_backlog_set_dropped_base(d->backlog, n);
}

int hd_history_start(struct hd_daemon *d, struct hd_history **http_history)
{
    char why[300];
    int rc;

    *http_history = NULL;
    if ((rc = hd_backlog_new(&d->backlog)) < 0)
        return rc;
    rc = hd_history_open(d->cfg.history, http_history);
    if (rc == 0)
        dropped_base(d, *http_history);
    if (rc == 0 || rc == -EPROTO || rc == -ENOMEM)
        return rc;
    snprintf(why, sizeof(why), "%s cannot be written: %s", d->cfg.history,
             strerror(-rc));
    hd_backlog_set_read_only(d->backlog, true, why);
    rc = hd_history_open_read_only(d->cfg.history, http_history);
    if (rc == -EPROTO)
        return rc;
    CRN_ERROR("history degraded: %s; crane-hostd runs on %s, keeping its "
             "migrations in memory and retrying every %d s (they are lost "
             "if it stops first)", why,
             rc == 0 ? "with the history read-only" : "without a history",
             HD_HISTORY_RETRY_S);
    if (rc < 0)
        *http_history = NULL;
    else
        dropped_base(d, *http_history);
    return 0;
}

static void flush_job(void *arg)
{
    struct hd_daemon *d = arg;

    hd_backlog_flush(d->backlog, d->cfg.history);
}

void hd_history_retry(struct hd_daemon *d)
{
    struct hd_history_health h;

    hd_backlog_health(d->backlog, &h);
    /* Degraded with nothing kept: drops not yet counted in the file. */
    if ((h.unsaved || h.read_only || h.degraded) && hd_job_start(d, flush_job, d) < 0)
        CRN_WARN("history: cannot start a retry now");
}

void hd_daemon_history_health(void *arg, struct hd_history_health *out)
{
    struct hd_daemon *d = arg;

    hd_backlog_health(d->backlog, out);
}
