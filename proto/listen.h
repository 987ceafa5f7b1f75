/* The one listener: a listening socket on unix:PATH, tcp:HOST:PORT or
 * vsock:CID:PORT, as a plain descriptor or on a libuv loop. */
#ifndef CRANE_PROTO_LISTEN_H
#define CRANE_PROTO_LISTEN_H

#include "proto/endpoint.h"

#include <stddef.h>
#include <uv.h>

/*
 * Listens on EP with BACKLOG; returns a non-blocking, close-on-exec
 * descriptor, or a negative errno with one line in WHY.
 *   unix   the folder is made (0755) if missing; a socket file left by a
 *          process that died (nobody accepts on it) is replaced, a live
 *          one is -EADDRINUSE; MODE is set on the file (0: left as the
 *          umask made it);
 *   tcp    SO_REUSEADDR; port 0 takes a free port, written back into
 *          EP->port;
 *   vsock  AF_VSOCK (the host is CID 2, any local CID is -1 or 4294967295
 *          written as "any"); -EAFNOSUPPORT where the kernel has no vsock
 *          transport loaded.
 */
int crn_listen(struct crn_endpoint *ep, unsigned mode, int backlog, char *why,
               size_t why_len);

/* A listener on a libuv loop: a pipe handle for unix and vsock (libuv's
 * stream code serves any stream socket), a tcp handle for tcp.  Accept
 * with a client handle of the same type (crn_listener_accept_type). */
union crn_listener {
    uv_handle_t handle;
    uv_stream_t stream;
    uv_pipe_t pipe;
    uv_tcp_t tcp;
};

/* crn_listen, then the descriptor on LOOP as L, CB called for each
 * connection.  0, or a negative errno (L not initialised) with WHY set. */
int crn_listen_uv(uv_loop_t *loop, union crn_listener *l,
                  struct crn_endpoint *ep, unsigned mode, int backlog,
                  uv_connection_cb cb, char *why, size_t why_len);

#endif /* CRANE_PROTO_LISTEN_H */
