/* TLS for libuv servers: a TCP connection's handshake off the loop. */
#ifndef CRANE_PROTO_TLS_UV_H
#define CRANE_PROTO_TLS_UV_H

#include "proto/tls.h"

#include <uv.h>

/*
 * Called on the loop once the handshake of a connection ended: FD is the
 * relay's plaintext unix socket (blocking; the callee owns it, e.g.
 * uv_pipe_open), or a negative errno with WHY saying why the peer was
 * refused.  PEER is its address, for logs and per-peer bounds.
 */
typedef void (*crn_tls_accepted_fn)(void *arg, int fd, const char *peer,
                                    const char *why);

/*
 * Accepts the connection waiting on LISTENER (a libuv TCP listener, from
 * its connection callback) and runs the TLS server handshake with CFG on a
 * thread of its own, so that neither the loop nor libuv's pool (the
 * daemon's work) waits on a slow or hostile peer; at most TIMEOUT_MS.
 * DONE(ARG, ...) then runs exactly once on the loop.  Returns 0 when the
 * handshake started, or a negative errno (the connection, if accepted,
 * closed; DONE never runs).
 */
int crn_tls_uv_accept(uv_stream_t *listener, const struct crn_tls_config *cfg,
                      unsigned timeout_ms, crn_tls_accepted_fn done,
                      void *arg);

/* A handshake crn_tls_uv_accept_handle started, until its DONE runs. */
struct crn_tls_accept;

/*
 * As crn_tls_uv_accept, and *OUT (when not NULL) names the handshake until
 * DONE has run, for crn_tls_uv_cancel and crn_tls_uv_peer.
 */
int crn_tls_uv_accept_handle(uv_stream_t *listener,
                             const struct crn_tls_config *cfg,
                             unsigned timeout_ms, crn_tls_accepted_fn done,
                             void *arg, struct crn_tls_accept **out);
/*
 * Ends H's handshake if it still runs (its socket shut down): DONE then
 * comes with a negative errno and "closed in its handshake".  A handshake
 * that has just succeeded goes on: DONE brings its socket (the caller
 * closes it if it no longer wants it).  On the loop, before DONE only.
 */
void crn_tls_uv_cancel(struct crn_tls_accept *h);
/* The peer's address (no port), known from the accept on. */
const char *crn_tls_uv_peer(const struct crn_tls_accept *h);

#endif /* CRANE_PROTO_TLS_UV_H */
