/* Tenant isolation: the supervisor's workers, and a worker's supervisor. */
#ifndef PX_SUPERVISOR_H
#define PX_SUPERVISOR_H

#include "server.h"

#include <stddef.h>

struct px_conn;

/*
 * supervisor.c.  With isolation (the default) crane-proxy listens and runs
 * the handshake itself, and each tenant lives in a worker process of its
 * own (crane-proxy run again with --worker): a call that crashes the
 * vendor library ends that worker and its tenant only.  A spare worker is
 * kept started (devices opened, a context made ahead) so that a new tenant
 * waits for none.
 */

/* Starts the first spare worker; SRV listens already.  ARGV: main's.
 * Sets SRV's role hooks (server_state.h): handoffs, per-peer counts,
 * stats summed over the workers, every worker stopped at the stop. */
int px_super_init(struct px_server *srv, char **argv, char *why,
                  size_t why_len);
/* The exit status main returns: 1 if no worker ever started. */
int px_super_status(struct px_server *srv);

/*
 * worker.c.  A worker reads its supervisor on fd 3 (a unix socketpair):
 * handed connections (their descriptors beside Handoff frames) and stats
 * requests; it says Ready once its devices are open, names each tenant it
 * makes (for resumes), and ends once its tenant is gone.
 */
int px_worker_init(struct px_server *srv, char *why, size_t why_len);
/* px_worker_init sets SRV's role hooks: each tenant made or released told
 * to the supervisor (for resumes and per-peer counts), the end of a
 * tenant told with the supervisor's bound on it, the tenant's stream
 * watched for the client's hang-up (watchdog.c), the worker stopped once
 * its last tenant is gone, the channel closed at the stop. */
/* Frees what init allocated (after the loop ended). */
void px_worker_free(struct px_server *srv);

#endif /* PX_SUPERVISOR_H */
