/* Runs helper programs (modprobe, the GPU probe) with a time limit. */
#include "spawn.h"

#include "proto/log.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct gd_child {
    uv_process_t proc;
    uv_pipe_t err;
    uv_timer_t timer;
    int open_handles;
    int status;
    bool exited;
    bool failed;                 /* never started: no DONE call */
    char output[512];
    size_t out_len;
    gd_child_done_fn done;
    void *arg;
};

static void on_handle_closed(uv_handle_t *h)
{
    struct gd_child *c = h->data;

    if (--c->open_handles > 0)
        return;
    if (c->failed) {
        free(c);
        return;
    }
    /* First line only, without trailing blanks. */
    c->output[c->out_len] = '\0';
    c->output[strcspn(c->output, "\n")] = '\0';
    for (size_t n = strlen(c->output);
         n > 0 && (c->output[n - 1] == ' ' || c->output[n - 1] == '\r');)
        c->output[--n] = '\0';
    c->done(c->arg, c->status, c->output);
    free(c);
}

static void close_if(uv_handle_t *h)
{
    if (!uv_is_closing(h))
        uv_close(h, on_handle_closed);
}

static void on_exit_cb(uv_process_t *p, int64_t code, int sig)
{
    struct gd_child *c = p->data;

    c->exited = true;
    if (c->status != -ETIMEDOUT)
        c->status = sig ? 128 + sig : (int)code;
    uv_timer_stop(&c->timer);
    close_if((uv_handle_t *)&c->timer);
    close_if((uv_handle_t *)&c->proc);
}

static void on_timeout(uv_timer_t *t)
{
    struct gd_child *c = t->data;

    c->status = -ETIMEDOUT;
    uv_process_kill(&c->proc, SIGKILL);
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    static char sink[512];
    struct gd_child *c = h->data;
    size_t room = sizeof(c->output) - 1 - c->out_len;

    (void)hint;
    /* Past the first 511 bytes the output is read and dropped. */
    if (room == 0)
        *buf = uv_buf_init(sink, sizeof(sink));
    else
        *buf = uv_buf_init(c->output + c->out_len, (unsigned)room);
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    struct gd_child *c = s->data;

    if (n > 0 && buf->base == c->output + c->out_len)
        c->out_len += (size_t)n;
    if (n < 0)
        close_if((uv_handle_t *)&c->err);
}

int gd_child_run(uv_loop_t *loop, char *const argv[], uint64_t timeout_ms,
                 gd_child_done_fn done, void *arg)
{
    struct gd_child *c = calloc(1, sizeof(*c));
    uv_stdio_container_t stdio[3];
    uv_process_options_t opt;
    int rc;

    if (!c)
        return -ENOMEM;
    c->done = done;
    c->arg = arg;
    uv_pipe_init(loop, &c->err, 0);
    uv_timer_init(loop, &c->timer);
    c->err.data = c->timer.data = c->proc.data = c;
    memset(&opt, 0, sizeof(opt));
    stdio[0].flags = UV_IGNORE;
    stdio[1].flags = UV_IGNORE;
    stdio[2].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
    stdio[2].data.stream = (uv_stream_t *)&c->err;
    opt.file = argv[0];
    opt.args = (char **)argv;
    opt.exit_cb = on_exit_cb;
    opt.stdio = stdio;
    opt.stdio_count = 3;
    rc = uv_spawn(loop, &c->proc, &opt);
    if (rc < 0) {
        /* Nothing started: the handles still need closing (libuv's rule
         * for a failed uv_spawn too); C goes with the last. */
        c->failed = true;
        c->open_handles = 3;
        uv_close((uv_handle_t *)&c->proc, on_handle_closed);
        uv_close((uv_handle_t *)&c->err, on_handle_closed);
        uv_close((uv_handle_t *)&c->timer, on_handle_closed);
        CRN_WARN("cannot run %s: %s", argv[0], uv_strerror(rc));
        return rc;
    }
    c->open_handles = 3;
    uv_read_start((uv_stream_t *)&c->err, on_alloc, on_read);
    uv_timer_start(&c->timer, on_timeout, timeout_ms, 0);
    return 0;
}
