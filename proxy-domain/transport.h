/* What carries one connection's bytes: a libuv stream (TCP, or a unix
 * socket: a client's, a TLS relay's, a worker's handed one). */
#ifndef PX_TRANSPORT_H
#define PX_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

/*
 * The connection files above (conn*.c) read, write and close through
 * these calls and never ask what carries the bytes; the reader's
 * callbacks (conn_input.c's) are set once, when the connection is made,
 * so the layers above restart reading without naming the reader.  Only
 * the hand-overs between processes (supervisor.c, worker.c) and a lane's
 * join (conn_lanes.c) reach the stream or its descriptor themselves.
 */
struct px_transport {
    union {
        uv_handle_t handle;
        uv_stream_t stream;
        uv_tcp_t tcp;
        uv_pipe_t pipe;
    } h;
    uv_alloc_cb on_alloc;        /* the reader's, from px_transport_init */
    uv_read_cb on_read;
};

/* Sets TR up on LOOP as TYPE (UV_TCP, or UV_NAMED_PIPE, which may carry
 * descriptors), its handle's data OWNER, read through ON_ALLOC and
 * ON_READ.  0 or a negative errno (libuv's). */
int px_transport_init(struct px_transport *tr, uv_loop_t *loop,
                      uv_handle_type type, void *owner, uv_alloc_cb on_alloc,
                      uv_read_cb on_read);
/* A TCP stream's options: no delay, keepalive probes after IDLE_S. */
void px_transport_tune(struct px_transport *tr, unsigned idle_s);
/* Reading on or off (uv_read_start's result). */
int px_transport_read_start(struct px_transport *tr);
void px_transport_read_stop(struct px_transport *tr);
/* Writes what it can of BUFS now, without a request: bytes written or a
 * negative errno (UV_EAGAIN: nothing, or earlier writes wait). */
int px_transport_try_write(struct px_transport *tr, const uv_buf_t *bufs,
                           unsigned nbufs);
/* Queues BUFS behind earlier writes; CB runs once they are written. */
int px_transport_write(struct px_transport *tr, uv_write_t *req,
                       const uv_buf_t *bufs, unsigned nbufs, uv_write_cb cb);
/* Bytes queued and not yet written. */
size_t px_transport_queued(const struct px_transport *tr);
/* Ends the sending direction once the queued writes are out. */
int px_transport_shutdown(struct px_transport *tr, uv_shutdown_t *req,
                          uv_shutdown_cb cb);
/* The descriptor (for a hang-up check or a hand-over), or -1. */
int px_transport_fd(const struct px_transport *tr);
/* Closes TR; CB as uv_close's. */
void px_transport_close(struct px_transport *tr, uv_close_cb cb);

#endif /* PX_TRANSPORT_H */
