/* The supervisor: a worker process per tenant, connections handed to them. */
#include "supervisor.h"

#include "conn.h"
#include "proto/log.h"

#include "proto/frame.h"
#include "proto/worker.pb-c.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * Each worker is `crane-proxy ARGS... --worker`, its fd 3 one end of a unix
 * socketpair (an IPC pipe to libuv) whose other end is w->ctl here.  A
 * worker is spare until a new tenant's connection is handed to it; it then
 * holds that tenant (and its resumes) until the tenant is gone, and exits.
 * Its exit, however it comes, ends only its own tenant: the supervisor logs
 * how it ended and keeps serving.  The supervisor never loads OpenCL, so
 * nothing of a vendor runs in it.
 */

/* Largest frame a worker sends. */
#define MAX_WORKER_FRAME 4096

struct px_wrk {
    struct px_wrk *next;
    struct px_server *srv;
    uv_process_t proc;
    uv_pipe_t ctl;
    /* Armed by an Ending: the worker is killed when it fires (its
     * tenant's client left, or a call ran too long). */
    uv_timer_t end_timer;
    uint64_t end_at;             /* loop time it fires, 0: not armed */
    char end_reason[256];
    bool killed;                 /* by the supervisor, for END_REASON */
    int open_handles;
    uint64_t num;
    int pid;
    bool ready;                  /* said Ready */
    bool assigned;               /* holds a tenant: no spare any more */
    bool exited;
    bool gone;                   /* its tenant is released */
    bool stats_due;              /* a StatsRequest it has not answered */
    char program[64];            /* its tenant's, for logs */
    uint32_t client_pid;
    char peer[64];
    uint8_t token[PX_TOKEN_LEN];
    bool has_token;
    uint64_t tenant_num;
    uint8_t *ibuf;
    size_t ilen, icap;
};

struct px_super {
    struct px_wrk *workers;
    uint64_t next_worker;
    char **argv;                 /* the worker's: ours plus --worker */
    char exe[4096];
    bool listening_logged;
    int status;
    /* Stats being summed: replies still due and the sums so far. */
    size_t stats_due;
    Crane__Worker__Stats sum;
};

/* A handoff write in flight: the connection closes once it is sent. */
struct handoff_write {
    uv_write_t req;
    struct px_conn *c;
    uint8_t *buf;
};

/* The role's hooks (server_state.h), at the end of this file. */
static const struct px_role_ops super_ops;

static int spawn(struct px_server *srv);

static void wrk_closed(uv_handle_t *h)
{
    struct px_wrk *w = h->data;

    if (--w->open_handles > 0)
        return;
    for (struct px_wrk **p = &w->srv->super->workers; *p; p = &(*p)->next) {
        if (*p == w) {
            *p = w->next;
            break;
        }
    }
    free(w->ibuf);
    free(w);
}

static struct px_wrk *spare(struct px_super *s, bool ready)
{
    for (struct px_wrk *w = s->workers; w; w = w->next)
        if (!w->exited && !w->assigned && (!ready || w->ready))
            return w;
    return NULL;
}

/* Spare workers, ready or starting. */
static unsigned spares(struct px_super *s)
{
    unsigned n = 0;

    for (struct px_wrk *w = s->workers; w; w = w->next)
        n += !w->exited && !w->assigned;
    return n;
}

/* Starts spares, one at a time (the next once the last said Ready), until
 * --spares of them are ready or starting: a worker loads the vendor before
 * it can welcome anyone (seconds; under QEMU TCG tens of seconds), so
 * programs that connect together, as they do at a migration's resume,
 * each find one ready.  One at a time, so that a vendor that cannot start
 * says so once (the first worker's one line), not once per spare.  0, or
 * the spawn's error. */
static int top_up(struct px_server *srv)
{
    struct px_super *s = srv->super;

    if (srv->stopping || spares(s) >= srv->spares)
        return 0;
    for (struct px_wrk *w = s->workers; w; w = w->next)
        if (!w->exited && !w->assigned && !w->ready)
            return 0;
    return spawn(srv);
}

static void log_stats(struct px_server *srv)
{
    struct px_super *s = srv->super;
    size_t conns = 0;

    for (struct px_conn *c = srv->conns; c; c = c->next)
        conns++;
    CRN_INFO("stats: connections=%llu tenants=%llu detached=%llu "
            "objects=%llu bytes=%llu releasing=%llu",
            (unsigned long long)(s->sum.connections + conns),
            (unsigned long long)s->sum.tenants,
            (unsigned long long)s->sum.detached,
            (unsigned long long)s->sum.objects,
            (unsigned long long)s->sum.bytes,
            (unsigned long long)s->sum.releasing);
}

static void stats_answered(struct px_server *srv, struct px_wrk *w)
{
    struct px_super *s = srv->super;

    if (!w->stats_due)
        return;
    w->stats_due = false;
    if (--s->stats_due == 0)
        log_stats(srv);
}

/* --- handing connections -------------------------------------------------- */

static void handoff_written(uv_write_t *req, int status)
{
    struct handoff_write *hw = req->data;

    if (status < 0)
        CRN_ERROR("connection %llu: cannot hand it to a worker: %s",
                 (unsigned long long)hw->c->num, uv_strerror(status));
    px_conn_handed_over(hw->c);
    free(hw->buf);
    free(hw);
}

static void send_to(struct px_wrk *w, struct px_conn *c)
{
    Crane__Worker__ToWorker m = CRANE__WORKER__TO_WORKER__INIT;
    Crane__Worker__Handoff h = CRANE__WORKER__HANDOFF__INIT;
    struct handoff_write *hw = calloc(1, sizeof(*hw));
    size_t len, in_len;
    const uint8_t *in = px_conn_pending_input(c, &in_len);
    uv_buf_t buf;
    int rc;

    h.program = c->program;
    h.pid = c->pid;
    h.resume_token.data = c->token;
    h.resume_token.len = c->token_len;
    h.peer = c->peer;
    h.input.data = (uint8_t *)in;
    h.input.len = in_len;
    if (!c->token_len)
        h.tenant_num = ++w->srv->next_tenant;
    h.lane = c->lane;
    h.lane_index = c->lane_index;
    h.lane_generation = c->lane_generation;
    if (c->lane) {
        h.lane_mac.data = c->lane_mac;
        h.lane_mac.len = sizeof(c->lane_mac);
    }
    m.msg_case = CRANE__WORKER__TO_WORKER__MSG_HANDOFF;
    m.handoff = &h;
    len = crane__worker__to_worker__get_packed_size(&m);
    if (hw)
        hw->buf = malloc(CRN_FRAME_HEADER_LEN + len);
    if (!hw || !hw->buf) {
        free(hw);
        px_conn_refuse(c, "out of memory");
        return;
    }
    crn_frame_header(hw->buf, len);
    crane__worker__to_worker__pack(&m, hw->buf + CRN_FRAME_HEADER_LEN);
    hw->c = c;
    hw->req.data = hw;
    c->handing = true;
    buf = uv_buf_init((char *)hw->buf, (unsigned)(CRN_FRAME_HEADER_LEN + len));
    rc = uv_write2(&hw->req, (uv_stream_t *)&w->ctl, &buf, 1, &c->tr.h.stream,
                   handoff_written);
    if (rc < 0) {
        CRN_ERROR("connection %llu: cannot hand it to worker %d: %s",
                 (unsigned long long)c->num, w->pid, uv_strerror(rc));
        free(hw->buf);
        free(hw);
        px_conn_refuse(c, "no worker for the tenant");
        return;
    }
    CRN_DEBUG("connection %llu (%s pid %u) handed to worker %d",
             (unsigned long long)c->num, c->program, c->pid, w->pid);
}

/* Refuses every connection waiting for a new worker, with WHY. */
static void refuse_waiting(struct px_server *srv, const char *why)
{
    for (struct px_conn *c = srv->conns; c; c = c->next)
        if (c->state == PX_CONN_HANDOFF && !c->handing && !c->token_len)
            px_conn_refuse(c, "%s", why);
}

/* Gives each connection waiting for a spare worker one, while there are
 * spares; starts another spare whenever one is taken. */
static void serve_waiting(struct px_server *srv)
{
    struct px_super *s = srv->super;

    for (struct px_conn *c = srv->conns; c; c = c->next) {
        struct px_wrk *w;
        if (c->state != PX_CONN_HANDOFF || c->handing || c->token_len)
            continue;
        w = spare(s, true);
        if (!w)
            break;
        w->assigned = true;
        snprintf(w->program, sizeof(w->program), "%s", c->program);
        w->client_pid = c->pid;
        snprintf(w->peer, sizeof(w->peer), "%s", c->peer);
        send_to(w, c);
    }
    if (top_up(srv) < 0 && !spare(s, false))
        refuse_waiting(srv, "no worker could start (see the proxy's log)");
}

static void px_super_handoff(struct px_conn *c)
{
    struct px_server *srv = c->srv;

    if (c->handing)
        return;
    if (c->token_len) {
        for (struct px_wrk *w = srv->super->workers; w; w = w->next) {
            if (!w->exited && w->has_token &&
                c->token_len == sizeof(w->token) &&
                memcmp(w->token, c->token, sizeof(w->token)) == 0) {
                /* Its client is back: what it left does not end it. */
                if (w->end_at && !c->lane && !w->killed) {
                    uv_timer_stop(&w->end_timer);
                    w->end_at = 0;
                }
                send_to(w, c);
                return;
            }
        }
        px_conn_refuse(c, c->lane ? "a lane for no connected tenant"
                                       : "unknown resume token (grace "
                                         "period over?)");
        return;
    }
    serve_waiting(srv);
}

static size_t px_super_peer_tenants(struct px_server *srv, const char *peer)
{
    size_t n = 0;

    for (struct px_wrk *w = srv->super->workers; w; w = w->next)
        if (!w->exited && w->assigned && !w->gone &&
            strcmp(w->peer, peer) == 0)
            n++;
    return n;
}

/* --- what workers say ------------------------------------------------------ */

static void end_now(uv_timer_t *timer)
{
    struct px_wrk *w = timer->data;

    w->end_at = 0;
    if (w->exited || w->killed)
        return;
    w->killed = true;
    CRN_ERROR("worker %d (tenant %llu, %s pid %u) killed: %s", w->pid,
             (unsigned long long)w->tenant_num,
             w->program[0] ? w->program : "-", w->client_pid, w->end_reason);
    uv_process_kill(&w->proc, SIGKILL);
}

/* The worker says its tenant must end: it is killed AFTER_MS from now
 * unless it ended first (an earlier deadline stands). */
static void on_ending(struct px_wrk *w, const Crane__Worker__Ending *e)
{
    uint64_t now = uv_now(w->srv->loop);
    uint64_t after = e->after_ms;
    bool now_too = after == 0;

    if (!now_too && !w->srv->limits.release_ms)
        return;                  /* --release-timeout 0: never killed */
    if (w->end_at && w->end_at <= now + after)
        return;
    if (now_too)
        snprintf(w->end_reason, sizeof(w->end_reason), "%s", e->reason);
    else
        snprintf(w->end_reason, sizeof(w->end_reason),
                 "%s, and its worker had not ended %llu ms later "
                 "(--release-timeout: a call still running on the device?)",
                 e->reason, (unsigned long long)after);
    CRN_DEBUG("worker %d: %s: ends within %llu ms", w->pid, e->reason,
             (unsigned long long)after);
    w->end_at = now + after;
    uv_timer_start(&w->end_timer, end_now, after, 0);
}

static void on_worker_message(struct px_wrk *w,
                              const Crane__Worker__ToSupervisor *m)
{
    struct px_server *srv = w->srv;
    struct px_super *s = srv->super;

    switch (m->msg_case) {
    case CRANE__WORKER__TO_SUPERVISOR__MSG_READY:
        w->ready = true;
        if (!s->listening_logged) {
            s->listening_logged = true;
            px_server_log_listening(srv);
        }
        serve_waiting(srv);
        break;
    case CRANE__WORKER__TO_SUPERVISOR__MSG_TENANT:
        if (m->tenant->token.len == sizeof(w->token)) {
            memcpy(w->token, m->tenant->token.data, sizeof(w->token));
            w->has_token = true;
        }
        w->tenant_num = m->tenant->num;
        break;
    case CRANE__WORKER__TO_SUPERVISOR__MSG_ENDING:
        on_ending(w, m->ending);
        break;
    case CRANE__WORKER__TO_SUPERVISOR__MSG_GONE:
        w->gone = true;
        w->has_token = false;
        break;
    case CRANE__WORKER__TO_SUPERVISOR__MSG_STATS:
        s->sum.connections += m->stats->connections;
        s->sum.tenants += m->stats->tenants;
        s->sum.detached += m->stats->detached;
        s->sum.objects += m->stats->objects;
        s->sum.bytes += m->stats->bytes;
        s->sum.releasing += m->stats->releasing;
        stats_answered(srv, w);
        break;
    default:
        CRN_WARN("worker %d: unknown message %d", w->pid, (int)m->msg_case);
        break;
    }
}

static void ctl_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct px_wrk *w = h->data;

    (void)suggested;
    if (w->icap - w->ilen < 1024) {
        size_t cap = w->icap ? w->icap * 2 : 8192;
        uint8_t *p = realloc(w->ibuf, cap);
        if (p) {
            w->ibuf = p;
            w->icap = cap;
        }
    }
    *buf = uv_buf_init((char *)w->ibuf + w->ilen,
                       (unsigned)(w->icap - w->ilen));
}

static void ctl_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
    struct px_wrk *w = st->data;
    size_t pos = 0;

    (void)buf;
    if (nread < 0) {
        /* Its exit is logged by worker_exited. */
        uv_read_stop(st);
        return;
    }
    w->ilen += (size_t)nread;
    for (;;) {
        const uint8_t *msg;
        size_t len, used;
        Crane__Worker__ToSupervisor *m;
        int rc = crn_frame_decode(w->ibuf + pos, w->ilen - pos,
                                  MAX_WORKER_FRAME, &msg, &len, &used);
        if (rc == -EAGAIN)
            break;
        if (rc < 0) {
            CRN_ERROR("worker %d: bad frame; stopping it", w->pid);
            uv_process_kill(&w->proc, SIGKILL);
            uv_read_stop(st);
            w->ilen = 0;
            return;
        }
        pos += used;
        m = crane__worker__to_supervisor__unpack(NULL, len, msg);
        if (m) {
            on_worker_message(w, m);
            crane__worker__to_supervisor__free_unpacked(m, NULL);
        }
    }
    memmove(w->ibuf, w->ibuf + pos, w->ilen - pos);
    w->ilen -= pos;
}

static void worker_exited(uv_process_t *proc, int64_t status, int term_signal)
{
    struct px_wrk *w = proc->data;
    struct px_server *srv = w->srv;
    struct px_super *s = srv->super;
    const char *what = w->assigned ? "tenant" : "spare";

    w->exited = true;
    uv_close((uv_handle_t *)&w->end_timer, wrk_closed);
    if (!w->ready && !s->listening_logged) {
        /* The first worker could not start: its one line said why. */
        s->status = status ? (int)status : 1;
        uv_close((uv_handle_t *)&w->proc, wrk_closed);
        uv_close((uv_handle_t *)&w->ctl, wrk_closed);
        px_server_stop(srv);
        return;
    }
    if (w->killed)
        CRN_INFO("worker %d (tenant %llu) ended: its tenant is gone, its "
                "device released, the others are served", w->pid,
                (unsigned long long)w->tenant_num);
    else if (term_signal && srv->stopping)
        CRN_INFO("worker %d (%s %llu) stopped by signal %d", w->pid, what,
                (unsigned long long)w->tenant_num, term_signal);
    else if (term_signal)
        CRN_ERROR("worker %d (%s %llu, %s pid %u) killed by signal %d (%s): "
                 "its tenant is gone, the others are served",
                 w->pid, what, (unsigned long long)w->tenant_num,
                 w->program[0] ? w->program : "-", w->client_pid,
                 term_signal, strsignal(term_signal));
    else if (status != 0)
        CRN_ERROR("worker %d (%s %llu, %s pid %u) exited with status %lld: "
                 "its tenant is gone, the others are served",
                 w->pid, what, (unsigned long long)w->tenant_num,
                 w->program[0] ? w->program : "-", w->client_pid,
                 (long long)status);
    else
        CRN_DEBUG("worker %d (%s %llu) ended", w->pid, what,
                 (unsigned long long)w->tenant_num);
    stats_answered(srv, w);
    if (!w->ready && !srv->stopping) {
        /* A spare that could not start: the connections waiting for one
         * are told so rather than left waiting (the next new connection
         * starts another). */
        refuse_waiting(srv, "no worker could start (see the proxy's log)");
        w->assigned = true;      /* not counted as a spare any more */
    }
    uv_close((uv_handle_t *)&w->proc, wrk_closed);
    uv_close((uv_handle_t *)&w->ctl, wrk_closed);
    if (!srv->stopping && w->ready && !w->assigned)
        serve_waiting(srv);      /* a spare died: start the next */
}

/* Starts a spare worker. */
static int spawn(struct px_server *srv)
{
    struct px_super *s = srv->super;
    struct px_wrk *w = calloc(1, sizeof(*w));
    uv_stdio_container_t stdio[4];
    uv_process_options_t o;
    int rc;

    if (!w)
        return -ENOMEM;
    w->srv = srv;
    w->num = ++s->next_worker;
    uv_pipe_init(srv->loop, &w->ctl, 1);
    uv_timer_init(srv->loop, &w->end_timer);
    w->end_timer.data = w;
    w->ctl.data = w;
    w->proc.data = w;
    memset(stdio, 0, sizeof(stdio));
    stdio[0].flags = UV_IGNORE;
    stdio[1].flags = UV_INHERIT_FD;
    stdio[1].data.fd = 1;
    stdio[2].flags = UV_INHERIT_FD;
    stdio[2].data.fd = 2;
    stdio[3].flags = UV_CREATE_PIPE | UV_READABLE_PIPE | UV_WRITABLE_PIPE;
    stdio[3].data.stream = (uv_stream_t *)&w->ctl;
    memset(&o, 0, sizeof(o));
    o.exit_cb = worker_exited;
    o.file = s->exe;
    o.args = s->argv;
    o.stdio_count = 4;
    o.stdio = stdio;
    rc = uv_spawn(srv->loop, &w->proc, &o);
    if (rc < 0) {
        CRN_ERROR("cannot start a worker (%s): %s", s->exe, uv_strerror(rc));
        w->open_handles = 3;
        uv_close((uv_handle_t *)&w->end_timer, wrk_closed);
        uv_close((uv_handle_t *)&w->ctl, wrk_closed);
        uv_close((uv_handle_t *)&w->proc, wrk_closed);
        w->next = s->workers;
        s->workers = w;
        w->exited = true;
        return rc;
    }
    w->pid = w->proc.pid;
    w->open_handles = 3;
    w->next = s->workers;
    s->workers = w;
    uv_read_start((uv_stream_t *)&w->ctl, ctl_alloc, ctl_read);
    CRN_DEBUG("worker %d started", w->pid);
    return 0;
}

int px_super_init(struct px_server *srv, char **argv, char *why,
                  size_t why_len)
{
    struct px_super *s = calloc(1, sizeof(*s));
    size_t n = 0, len;
    int rc;

    if (!s) {
        snprintf(why, why_len, "out of memory");
        return -ENOMEM;
    }
    srv->super = s;
    srv->role_ops = &super_ops;
    while (argv[n])
        n++;
    s->argv = calloc(n + 2, sizeof(*s->argv));
    /* This very binary, even once a rebuild or an upgrade replaced the
     * file: supervisor and workers always speak the same worker.proto. */
    len = sizeof(s->exe);
    rc = s->argv ? uv_exepath(s->exe, &len) : UV_ENOMEM;
    if (rc == 0 && access("/proc/self/exe", X_OK) == 0)
        snprintf(s->exe, sizeof(s->exe), "/proc/self/exe");
    if (rc < 0) {
        snprintf(why, why_len, "cannot find crane-proxy's executable: %s",
                 uv_strerror(rc));
        return rc;
    }
    for (size_t i = 0; i < n; i++)
        s->argv[i] = argv[i];
    s->argv[n] = "--worker";
    crane__worker__stats__init(&s->sum);
    rc = top_up(srv);
    if (rc < 0)
        snprintf(why, why_len, "cannot start a worker: %s", uv_strerror(rc));
    return rc;
}

static void px_super_stats(struct px_server *srv)
{
    struct px_super *s = srv->super;
    Crane__Worker__ToWorker m = CRANE__WORKER__TO_WORKER__INIT;
    Crane__Worker__StatsRequest r = CRANE__WORKER__STATS_REQUEST__INIT;
    uint8_t buf[64];
    size_t len;

    if (s->stats_due)
        return;                  /* the last request is still answered */
    crane__worker__stats__init(&s->sum);
    m.msg_case = CRANE__WORKER__TO_WORKER__MSG_STATS_REQUEST;
    m.stats_request = &r;
    len = crane__worker__to_worker__pack(&m, buf + CRN_FRAME_HEADER_LEN);
    crn_frame_header(buf, len);
    for (struct px_wrk *w = s->workers; w; w = w->next) {
        uv_buf_t b = uv_buf_init((char *)buf, (unsigned)(len + 4));
        if (w->exited || !w->ready || !w->assigned)
            continue;
        /* A small frame: it leaves at once or not at all. */
        if (uv_try_write((uv_stream_t *)&w->ctl, &b, 1) ==
            (int)(len + CRN_FRAME_HEADER_LEN)) {
            w->stats_due = true;
            s->stats_due++;
        }
    }
    if (s->stats_due == 0)
        log_stats(srv);
}

static void px_super_stop(struct px_server *srv)
{
    for (struct px_wrk *w = srv->super->workers; w; w = w->next)
        if (!w->exited)
            uv_process_kill(&w->proc, SIGTERM);
}

int px_super_status(struct px_server *srv)
{
    int status = srv->super ? srv->super->status : 0;

    if (srv->super) {
        free(srv->super->argv);
        free(srv->super);
        srv->super = NULL;
    }
    return status;
}

static const struct px_role_ops super_ops = {
    .handoff = px_super_handoff,
    .peer_tenants = px_super_peer_tenants,
    .stats = px_super_stats,
    .stop = px_super_stop,
};
