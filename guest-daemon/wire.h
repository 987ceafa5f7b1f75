/* Framed control messages over libuv streams: buffering, decoding, sending. */
#ifndef GD_WIRE_H
#define GD_WIRE_H

#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "proto/listen.h"

/* docs/guest.md: a control frame holds at most 64 KiB on either hop. */
#define GD_MAX_FRAME (64u << 10)
/* Replies a slow peer has not read yet; past this it is cut off. */
#define GD_MAX_QUEUED (1u << 20)

/* Bytes read but not yet decoded: room for one whole frame. */
struct gd_inbuf {
    uint8_t *data;
    size_t len, cap;
};

int gd_inbuf_init(struct gd_inbuf *b);
void gd_inbuf_free(struct gd_inbuf *b);
/* Where the next read may put bytes (never empty while a frame is
 * incomplete, since the buffer holds a whole frame). */
uv_buf_t gd_inbuf_space(struct gd_inbuf *b);
/*
 * Hands every whole frame in B to FN, in order, and drops it; stops early
 * when FN returns false (the connection is closing).  Returns 0, or
 * -EMSGSIZE when a frame is announced longer than GD_MAX_FRAME (the stream
 * is then out of step).
 */
int gd_inbuf_drain(struct gd_inbuf *b,
                   bool (*fn)(void *arg, const uint8_t *msg, size_t len),
                   void *arg);
void gd_inbuf_reset(struct gd_inbuf *b);

/* Packs MSG as one frame into a malloc()ed buffer of *LEN bytes. */
uint8_t *gd_frame_pack(const ProtobufCMessage *msg, size_t *len);

struct gd_conn;
/* A whole frame arrived; return false once the connection was closed. */
typedef bool (*gd_conn_frame_fn)(struct gd_conn *c, const uint8_t *msg,
                                 size_t len);
/* The connection is closed and its handle released: free C now. */
typedef void (*gd_conn_closed_fn)(struct gd_conn *c);

/* One accepted stream (unix or tcp).  The owner allocates it (it may be
 * the first member of a larger struct) and frees it in `closed`. */
struct gd_conn {
    union {
        uv_handle_t handle;
        uv_stream_t stream;
        uv_pipe_t pipe;
        uv_tcp_t tcp;
    } h;
    struct gd_inbuf in;
    gd_conn_frame_fn frame;
    gd_conn_closed_fn closed;
    /* Optional: a frame over the limit was announced; a last word before
     * the connection is closed. */
    void (*too_big)(struct gd_conn *c);
    void *owner;
    bool closing;
    char name[96];               /* for logs */
};

/* Starts C on FD, a connected stream socket (a TLS relay's plaintext
 * end, proto/tls_uv.h), and starts reading; as gd_conn_accept otherwise
 * (FD is C's from then on, even on failure). */
int gd_conn_open(uv_loop_t *loop, int fd, struct gd_conn *c,
                 gd_conn_frame_fn frame, gd_conn_closed_fn closed,
                 void *owner);
/* Accepts a connection on SERVER into C and starts reading.  On failure C
 * is closed and `closed` is called later.  Returns 0 or a negative errno. */
int gd_conn_accept(uv_stream_t *server, struct gd_conn *c,
                   gd_conn_frame_fn frame, gd_conn_closed_fn closed,
                   void *owner);
/* Queues MSG as one frame.  Returns 0, or a negative errno (the
 * connection is then being closed). */
int gd_conn_send(struct gd_conn *c, const ProtobufCMessage *msg);
/* Closes C (once); `closed` runs when libuv is done with it. */
void gd_conn_close(struct gd_conn *c, const char *why);

/* Listens on ENDPOINT (unix:PATH with MODE set on the file, tcp:HOST:PORT
 * or vsock:CID:PORT) through the one listener, proto/listen.c; *PATH_OUT
 * gets the path to unlink at the end ("" unless unix).  WHY gets one line
 * on failure. */
int gd_listen(uv_loop_t *loop, union crn_listener *l, const char *endpoint,
              unsigned mode, uv_connection_cb cb, char *path_out,
              size_t path_len, char *why, size_t why_len);

#endif /* GD_WIRE_H */
