/* The host channel on a virtio-serial port: one fd kept, host may be away. */
#include "port.h"

#include "proto/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#define PORT_REOPEN_MS 1000
#define PORT_REPOLL_MS 250

struct gd_port {
    struct gd_peer peer;         /* first: replies go through it */
    uv_loop_t *loop;
    char path[GD_TEXT];
    int fd;
    uv_poll_t poll;
    bool poll_init, polling;
    uv_timer_t timer;
    struct gd_inbuf in;
    uint8_t *out;                /* replies not yet written */
    size_t out_len;
    bool host_seen;              /* for logging transitions only */
    int open_err;
    gd_port_frame_fn fn;
    void *arg;
    bool closing;
    int open_handles;
};

static void on_repoll(uv_timer_t *t);

static bool deliver(void *arg, const uint8_t *msg, size_t len)
{
    struct gd_port *p = arg;

    p->fn(p->arg, &p->peer, msg, len);
    return !p->closing;
}

/* End of file or EIO: nobody on the host side.  Drop what was half read
 * and not yet written, and look again later. */
static void host_gone(struct gd_port *p)
{
    if (p->host_seen)
        CRN_INFO("%s: host side disconnected", p->path);
    p->host_seen = false;
    gd_inbuf_reset(&p->in);
    p->out_len = 0;
    if (p->polling) {
        uv_poll_stop(&p->poll);
        p->polling = false;
    }
    uv_timer_start(&p->timer, on_repoll, PORT_REPOLL_MS, 0);
}

static void flush_out(struct gd_port *p)
{
    size_t off = 0;

    while (off < p->out_len) {
        ssize_t n = write(p->fd, p->out + off, p->out_len - off);
        if (n > 0) {
            off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno != EAGAIN) {
            CRN_WARN("%s: write: %s; reply dropped", p->path,
                    strerror(errno));
            off = p->out_len;
        }
        break;
    }
    memmove(p->out, p->out + off, p->out_len - off);
    p->out_len -= off;
}

static void on_poll(uv_poll_t *h, int status, int events)
{
    struct gd_port *p = h->data;

    if (status < 0) {
        CRN_WARN("%s: poll: %s", p->path, uv_strerror(status));
        host_gone(p);
        return;
    }
    if (events & UV_READABLE) {
        for (;;) {
            uv_buf_t space = gd_inbuf_space(&p->in);
            ssize_t n = read(p->fd, space.base, space.len);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0 && errno == EAGAIN)
                break;
            if (n <= 0) {
                host_gone(p);
                return;
            }
            if (!p->host_seen)
                CRN_INFO("%s: host side connected", p->path);
            p->host_seen = true;
            p->in.len += (size_t)n;
            if (gd_inbuf_drain(&p->in, deliver, p) == -EMSGSIZE) {
                /* Out of step with the host: drop what is buffered. */
                CRN_WARN("%s: frame over the 64 KiB limit; input dropped",
                        p->path);
                gd_inbuf_reset(&p->in);
                p->fn(p->arg, &p->peer, NULL, 0);
            }
            if (p->closing)
                return;
        }
    }
    if (p->out_len)
        flush_out(p);
    if (p->polling)
        uv_poll_start(&p->poll, UV_READABLE | (p->out_len ? UV_WRITABLE : 0),
                      on_poll);
}

static void port_poll_start(struct gd_port *p)
{
    if (p->closing || p->fd < 0)
        return;
    p->polling = uv_poll_start(&p->poll, UV_READABLE, on_poll) == 0;
}

static void on_repoll(uv_timer_t *t)
{
    port_poll_start(t->data);
}

static void try_open(uv_timer_t *t)
{
    struct gd_port *p = t->data;
    struct termios tio;

    if (p->closing)
        return;
    p->fd = open(p->path, O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (p->fd < 0) {
        if (errno != p->open_err)
            CRN_WARN("%s: cannot open (%s); retrying every %d ms", p->path,
                    strerror(errno), PORT_REOPEN_MS);
        p->open_err = errno;
        uv_timer_start(&p->timer, try_open, PORT_REOPEN_MS, 0);
        return;
    }
    /* A tty (tests use a pty) must pass bytes through untouched. */
    if (isatty(p->fd) && tcgetattr(p->fd, &tio) == 0) {
        cfmakeraw(&tio);
        tcsetattr(p->fd, TCSANOW, &tio);
    }
    if (uv_poll_init(p->loop, &p->poll, p->fd) < 0) {
        CRN_ERROR("%s: cannot poll this file", p->path);
        close(p->fd);
        p->fd = -1;
        return;
    }
    p->poll.data = p;
    p->poll_init = true;
    p->open_handles++;
    CRN_INFO("host channel: %s", p->path);
    port_poll_start(p);
}

static int port_send(struct gd_peer *peer, const ProtobufCMessage *msg)
{
    struct gd_port *p = (struct gd_port *)peer;
    size_t len;
    uint8_t *frame;

    if (p->closing || p->fd < 0)
        return -ENOTCONN;
    if (!(frame = gd_frame_pack(msg, &len)))
        return -ENOMEM;
    if (p->out_len + len > GD_MAX_QUEUED) {
        CRN_WARN("%s: the host does not read; reply dropped", p->path);
        free(frame);
        return -ENOBUFS;
    }
    uint8_t *grown = realloc(p->out, p->out_len + len);
    if (!grown) {
        free(frame);
        return -ENOMEM;
    }
    p->out = grown;
    memcpy(p->out + p->out_len, frame, len);
    p->out_len += len;
    free(frame);
    flush_out(p);
    if (p->out_len && p->polling)
        uv_poll_start(&p->poll, UV_READABLE | UV_WRITABLE, on_poll);
    return 0;
}

int gd_port_open(uv_loop_t *loop, const char *path, gd_port_frame_fn fn,
                 void *arg, struct gd_port **out)
{
    struct gd_port *p = calloc(1, sizeof(*p));

    if (!p || gd_inbuf_init(&p->in) < 0) {
        free(p);
        return -ENOMEM;
    }
    p->peer.send = port_send;
    p->peer.push = port_send;
    snprintf(p->peer.name, sizeof(p->peer.name), "host");
    p->loop = loop;
    snprintf(p->path, sizeof(p->path), "%s", path);
    p->fd = -1;
    p->fn = fn;
    p->arg = arg;
    uv_timer_init(loop, &p->timer);
    p->timer.data = p;
    p->open_handles = 1;
    try_open(&p->timer);
    *out = p;
    return 0;
}

static void on_closed(uv_handle_t *h)
{
    struct gd_port *p = h->data;

    if (--p->open_handles > 0)
        return;
    if (p->fd >= 0)
        close(p->fd);
    gd_inbuf_free(&p->in);
    free(p->out);
    free(p);
}

void gd_port_close(struct gd_port *p)
{
    if (p->closing)
        return;
    p->closing = true;
    if (p->poll_init)
        uv_close((uv_handle_t *)&p->poll, on_closed);
    uv_close((uv_handle_t *)&p->timer, on_closed);
}
