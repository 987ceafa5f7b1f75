/* Framed control messages over libuv streams: buffering, decoding, sending. */
#include "wire.h"

#include "proto/log.h"

#include "proto/endpoint.h"
#include "proto/listen.h"
#include "proto/frame.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

int gd_inbuf_init(struct gd_inbuf *b)
{
    b->len = 0;
    b->cap = GD_MAX_FRAME + CRN_FRAME_HEADER_LEN;
    b->data = malloc(b->cap);
    return b->data ? 0 : -ENOMEM;
}

void gd_inbuf_free(struct gd_inbuf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

void gd_inbuf_reset(struct gd_inbuf *b)
{
    b->len = 0;
}

uv_buf_t gd_inbuf_space(struct gd_inbuf *b)
{
    return uv_buf_init((char *)b->data + b->len,
                       (unsigned)(b->cap - b->len));
}

int gd_inbuf_drain(struct gd_inbuf *b,
                   bool (*fn)(void *arg, const uint8_t *msg, size_t len),
                   void *arg)
{
    size_t off = 0;
    int rc = 0;

    for (;;) {
        const uint8_t *msg;
        size_t msg_len, used;

        rc = crn_frame_decode(b->data + off, b->len - off, GD_MAX_FRAME, &msg,
                              &msg_len, &used);
        if (rc == -EAGAIN) {
            rc = 0;
            break;
        }
        if (rc < 0)
            break;
        off += used;
        if (!fn(arg, msg, msg_len))
            break;
    }
    if (off) {
        memmove(b->data, b->data + off, b->len - off);
        b->len -= off;
    }
    return rc;
}

uint8_t *gd_frame_pack(const ProtobufCMessage *msg, size_t *len)
{
    size_t n = protobuf_c_message_get_packed_size(msg);
    uint8_t *buf;

    if (n > GD_MAX_FRAME * 16u)
        return NULL;
    buf = malloc(CRN_FRAME_HEADER_LEN + n);
    if (!buf)
        return NULL;
    buf[0] = (uint8_t)(n >> 24);
    buf[1] = (uint8_t)(n >> 16);
    buf[2] = (uint8_t)(n >> 8);
    buf[3] = (uint8_t)n;
    protobuf_c_message_pack(msg, buf + CRN_FRAME_HEADER_LEN);
    *len = CRN_FRAME_HEADER_LEN + n;
    return buf;
}

/* --- connections ------------------------------------------------------- */

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    struct gd_conn *c = h->data;

    (void)hint;
    *buf = gd_inbuf_space(&c->in);
}

static bool deliver(void *arg, const uint8_t *msg, size_t len)
{
    struct gd_conn *c = arg;

    return !c->closing && c->frame(c, msg, len) && !c->closing;
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    struct gd_conn *c = s->data;

    (void)buf;
    if (n == UV_EOF) {
        gd_conn_close(c, NULL);
        return;
    }
    if (n < 0) {
        gd_conn_close(c, uv_strerror((int)n));
        return;
    }
    c->in.len += (size_t)n;
    if (gd_inbuf_drain(&c->in, deliver, c) == -EMSGSIZE && !c->closing) {
        if (c->too_big)
            c->too_big(c);
        gd_conn_close(c, "frame over the 64 KiB limit");
    }
}

static void on_closed(uv_handle_t *h)
{
    struct gd_conn *c = h->data;

    gd_inbuf_free(&c->in);
    c->closed(c);
}

void gd_conn_close(struct gd_conn *c, const char *why)
{
    if (c->closing)
        return;
    c->closing = true;
    if (why)
        CRN_INFO("%s: closing: %s", c->name, why);
    uv_close(&c->h.handle, on_closed);
}

/* C's callbacks and owner; not yet open, named "connection" until its
 * owner names it. */
static void conn_init(struct gd_conn *c, gd_conn_frame_fn frame,
                      gd_conn_closed_fn closed, void *owner)
{
    c->frame = frame;
    c->closed = closed;
    c->owner = owner;
    c->closing = false;
    c->too_big = NULL;
    c->in.data = NULL;
    snprintf(c->name, sizeof(c->name), "connection");
}

/* After the setup (RC): C's reading started; on failure C is closed. */
static int conn_start(struct gd_conn *c, const char *what, int rc)
{
    if (rc == 0)
        rc = uv_read_start(&c->h.stream, on_alloc, on_read);
    if (rc < 0) {
        CRN_WARN("%s: %s", what, uv_strerror(rc));
        gd_conn_close(c, NULL);
    }
    return rc;
}

int gd_conn_accept(uv_stream_t *server, struct gd_conn *c,
                   gd_conn_frame_fn frame, gd_conn_closed_fn closed,
                   void *owner)
{
    int rc;

    conn_init(c, frame, closed, owner);
    if (server->type == UV_TCP)
        rc = uv_tcp_init(server->loop, &c->h.tcp);
    else
        rc = uv_pipe_init(server->loop, &c->h.pipe, 0);
    if (rc < 0)
        return rc;
    c->h.handle.data = c;
    rc = gd_inbuf_init(&c->in);
    if (rc == 0)
        rc = uv_accept(server, &c->h.stream);
    return conn_start(c, "accept", rc);
}

int gd_conn_open(uv_loop_t *loop, int fd, struct gd_conn *c,
                 gd_conn_frame_fn frame, gd_conn_closed_fn closed,
                 void *owner)
{
    int rc;

    conn_init(c, frame, closed, owner);
    rc = uv_pipe_init(loop, &c->h.pipe, 0);
    if (rc < 0) {
        close(fd);
        return rc;
    }
    c->h.handle.data = c;
    rc = gd_inbuf_init(&c->in);
    if (rc == 0 && (rc = uv_pipe_open(&c->h.pipe, fd)) < 0)
        close(fd);
    return conn_start(c, "connection", rc);
}

struct gd_write {
    uv_write_t req;
    uint8_t *data;
};

static void on_written(uv_write_t *req, int status)
{
    struct gd_write *w = req->data;

    if (status < 0 && status != UV_ECANCELED)
        CRN_DEBUG("write: %s", uv_strerror(status));
    free(w->data);
    free(w);
}

int gd_conn_send(struct gd_conn *c, const ProtobufCMessage *msg)
{
    struct gd_write *w;
    uv_buf_t buf;
    size_t len;
    int rc;

    if (c->closing)
        return -ENOTCONN;
    if (uv_stream_get_write_queue_size(&c->h.stream) > GD_MAX_QUEUED) {
        gd_conn_close(c, "peer does not read its replies");
        return -ENOBUFS;
    }
    w = malloc(sizeof(*w));
    if (!w || !(w->data = gd_frame_pack(msg, &len))) {
        free(w);
        gd_conn_close(c, "out of memory");
        return -ENOMEM;
    }
    w->req.data = w;
    buf = uv_buf_init((char *)w->data, (unsigned)len);
    rc = uv_write(&w->req, &c->h.stream, &buf, 1, on_written);
    if (rc < 0) {
        free(w->data);
        free(w);
        gd_conn_close(c, uv_strerror(rc));
    }
    return rc;
}

/* --- listening ----------------------------------------------------------- */

int gd_listen(uv_loop_t *loop, union crn_listener *l, const char *endpoint,
              unsigned mode, uv_connection_cb cb, char *path_out,
              size_t path_len, char *why, size_t why_len)
{
    struct crn_endpoint ep;
    int rc;

    path_out[0] = '\0';
    if (crn_endpoint_parse(endpoint, &ep) < 0) {
        snprintf(why, why_len,
                 "bad endpoint '%s' (unix:PATH, tcp:HOST:PORT or "
                 "vsock:CID:PORT)", endpoint);
        return -EINVAL;
    }
    rc = crn_listen_uv(loop, l, &ep, ep.kind == CRN_EP_UNIX ? mode : 0, 64,
                       cb, why, why_len);
    if (rc == 0 && ep.kind == CRN_EP_UNIX)
        snprintf(path_out, path_len, "%s", ep.path);
    return rc;
}
