/* What carries one connection's bytes: a libuv stream (transport.h). */
#include "transport.h"

int px_transport_init(struct px_transport *tr, uv_loop_t *loop,
                      uv_handle_type type, void *owner, uv_alloc_cb on_alloc,
                      uv_read_cb on_read)
{
    int rc;

    if (type == UV_TCP)
        rc = uv_tcp_init(loop, &tr->h.tcp);
    else
        /* ipc: a client may hand over a descriptor (its shared area). */
        rc = uv_pipe_init(loop, &tr->h.pipe, 1);
    if (rc < 0)
        return rc;
    tr->h.handle.data = owner;
    tr->on_alloc = on_alloc;
    tr->on_read = on_read;
    return 0;
}

void px_transport_tune(struct px_transport *tr, unsigned idle_s)
{
    if (tr->h.handle.type != UV_TCP)
        return;
    uv_tcp_nodelay(&tr->h.tcp, 1);
    uv_tcp_keepalive(&tr->h.tcp, 1, idle_s);
}

int px_transport_read_start(struct px_transport *tr)
{
    return uv_read_start(&tr->h.stream, tr->on_alloc, tr->on_read);
}

void px_transport_read_stop(struct px_transport *tr)
{
    uv_read_stop(&tr->h.stream);
}

int px_transport_try_write(struct px_transport *tr, const uv_buf_t *bufs,
                           unsigned nbufs)
{
    return uv_try_write(&tr->h.stream, bufs, nbufs);
}

int px_transport_write(struct px_transport *tr, uv_write_t *req,
                       const uv_buf_t *bufs, unsigned nbufs, uv_write_cb cb)
{
    return uv_write(req, &tr->h.stream, bufs, nbufs, cb);
}

size_t px_transport_queued(const struct px_transport *tr)
{
    return tr->h.stream.write_queue_size;
}

int px_transport_shutdown(struct px_transport *tr, uv_shutdown_t *req,
                          uv_shutdown_cb cb)
{
    return uv_shutdown(req, &tr->h.stream, cb);
}

int px_transport_fd(const struct px_transport *tr)
{
    uv_os_fd_t fd;

    return uv_fileno(&tr->h.handle, &fd) == 0 ? fd : -1;
}

void px_transport_close(struct px_transport *tr, uv_close_cb cb)
{
    uv_close(&tr->h.handle, cb);
}
