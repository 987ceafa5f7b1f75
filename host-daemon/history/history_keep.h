/* crane-hostd's history across disk faults: opened read-only when it must
 * be, migrations it could not take kept and retried (backlog.c). */
#ifndef HD_HISTORY_KEEP_H
#define HD_HISTORY_KEEP_H

#include "backlog.h"
#include "host-daemon/daemon.h"

/* Seconds between retries of what the history did not take. */
#define HD_HISTORY_RETRY_S 10

/* Makes D's backlog and opens the history for the HTTP server into
 * *HTTP_HISTORY: read-write, else read-only (said loudly: the daemon runs
 * on, keeping its migrations in memory), else none (the same, and the
 * server opens it once it can).  -EPROTO: the file is of a newer crane
 * (the daemon must not start); -ENOMEM. */
int hd_history_start(struct hd_daemon *d, struct hd_history **http_history);

/* Writes what the backlog keeps, on a job thread, when there is any or the
 * file was read-only.  Called every HD_HISTORY_RETRY_S from the loop. */
void hd_history_retry(struct hd_daemon *d);

/* hd_http_sources' health: D's backlog's (ARG is D). */
void hd_daemon_history_health(void *arg, struct hd_history_health *out);

#endif /* HD_HISTORY_KEEP_H */
