/* crane-proxy's server: the loop, listening, signals, the start and the
 * stop (server_state.h: what its connections use). */
#ifndef PX_SERVER_H
#define PX_SERVER_H

#include "server_state.h"

#include <stddef.h>
#include <uv.h>

/*
 * Sets up SRV from OPTS and DEVS: parses and binds the endpoint, loads the
 * key, installs signal handlers.  Returns 0, or a negative errno with WHY
 * saying what failed (one line, for the user).
 */
int px_server_init(struct px_server *srv, uv_loop_t *loop,
                   const struct px_options *opts,
                   const struct px_devices *devs, char *why, size_t why_len);
/* Logs the "listening on" line (the supervisor: once a worker is ready). */
void px_server_log_listening(struct px_server *srv);
/* Runs until SIGINT or SIGTERM has stopped everything. */
int px_server_run(struct px_server *srv);
/* Frees what init allocated, after run. */
void px_server_fini(struct px_server *srv);

/* Begins a clean stop: no more connections, every tenant released. */
void px_server_stop(struct px_server *srv);
/* Logs one status line: connections, tenants, objects, bytes. */
void px_server_stats(struct px_server *srv);

#endif /* PX_SERVER_H */
