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

/* Starts the first spare worker; SRV listens already.  ARGV: main's. */
int px_super_init(struct px_server *srv, char **argv, char *why,
                  size_t why_len);
/* C finished its handshake (state PX_CONN_HANDOFF): gives its stream, and
 * the input read past the handshake, to a worker. */
void px_super_handoff(struct px_conn *c);
/* Workers that hold a tenant of PEER. */
size_t px_super_peer_tenants(struct px_server *srv, const char *peer);
/* SIGUSR1: asks every worker for its counts, logs their sum. */
void px_super_stats(struct px_server *srv);
/* SIGINT/SIGTERM: stops every worker (each releases its tenant). */
void px_super_stop(struct px_server *srv);
/* The exit status main returns: 1 if no worker ever started. */
int px_super_status(struct px_server *srv);

/*
 * worker.c.  A worker reads its supervisor on fd 3 (a unix socketpair):
 * handed connections (their descriptors beside Handoff frames) and stats
 * requests; it says Ready once its devices are open, names each tenant it
 * makes (for resumes), and ends once its tenant is gone.
 */
int px_worker_init(struct px_server *srv, char *why, size_t why_len);
/* Tells the supervisor that tenant T lives here. */
void px_worker_tenant(struct px_server *srv, struct px_tenant *t);
/* Tells the supervisor that tenant T is being released (before the log
 * line saying so): resumes and per-peer counts no longer see it. */
void px_worker_gone(struct px_server *srv, struct px_tenant *t);
/* The tenant must end (REASON for the log): the supervisor kills this
 * worker if it is still there AFTER_MS from now.  Any thread. */
void px_worker_tell_ending(struct px_server *srv, const char *reason,
                           uint64_t after_ms);
/* C now carries its tenant's calls: the watchdog watches its stream for
 * the client's hang-up (watchdog.c). */
void px_worker_watch(struct px_conn *c);
/* C, its tenant's connection, closes (WHY): no longer watched, and unless
 * the tenant is kept for --grace, the supervisor's bound on its release
 * starts. */
void px_worker_unwatch(struct px_conn *c, const char *why);
/* The worker's last tenant is gone: it stops. */
void px_worker_idle(struct px_server *srv);
/* Closes the channel to the supervisor (at stop). */
void px_worker_fini(struct px_server *srv);
/* Frees what init allocated (after the loop ended). */
void px_worker_free(struct px_server *srv);

#endif /* PX_SUPERVISOR_H */
