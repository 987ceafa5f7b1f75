/* A worker: one tenant's process, fed connections by the supervisor. */
#include "supervisor.h"

#include "conn.h"
#include "proto/log.h"
#include "validate.h"
#include "watchdog.h"

#include "proto/frame.h"
#include "proto/worker.pb-c.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

/* The supervisor's end of the socketpair is our fd 3. */
#define CTL_FD 3
/* A Handoff carries at most a frame's worth of early input. */
#define MAX_CTL_FRAME (PX_MAX_FRAME + (1u << 20))

struct px_worker {
    uv_pipe_t ctl;
    /* The loop and the watchdog's thread both write to CTL_FD: a frame
     * at a time under LOCK (each small, written whole). */
    pthread_mutex_t lock;
    bool open;
    bool had_tenant;
    uint8_t *ibuf;
    size_t ilen, icap;
};

/* Sends M to the supervisor; a lost supervisor shows as EOF on reading. */
/* The role's hooks (server_state.h), at the end of this file. */
static const struct px_role_ops worker_ops;

static void send_up(struct px_server *srv, Crane__Worker__ToSupervisor *m)
{
    struct px_worker *w = srv->worker;
    size_t len = crane__worker__to_supervisor__get_packed_size(m);
    uint8_t buf[256];
    uv_buf_t b;

    if (!w->open || len + CRN_FRAME_HEADER_LEN > sizeof(buf))
        return;
    crn_frame_header(buf, len);
    crane__worker__to_supervisor__pack(m, buf + CRN_FRAME_HEADER_LEN);
    b = uv_buf_init((char *)buf, (unsigned)(len + CRN_FRAME_HEADER_LEN));
    /* Small frames on a socket the supervisor drains: they leave at once. */
    pthread_mutex_lock(&w->lock);
    int n = uv_try_write((uv_stream_t *)&w->ctl, &b, 1);
    pthread_mutex_unlock(&w->lock);
    if (n != (int)(len + CRN_FRAME_HEADER_LEN))
        CRN_WARN("cannot tell the supervisor (message %d)",
                (int)m->msg_case);
}

static void px_worker_tell_ending(struct px_server *srv, const char *reason,
                           uint64_t after_ms)
{
    struct px_worker *w = srv->worker;
    Crane__Worker__ToSupervisor m = CRANE__WORKER__TO_SUPERVISOR__INIT;
    Crane__Worker__Ending e = CRANE__WORKER__ENDING__INIT;
    uint8_t buf[512];
    size_t len;
    ssize_t n = -1;

    if (!w)
        return;
    e.reason = (char *)reason;
    e.after_ms = after_ms;
    m.msg_case = CRANE__WORKER__TO_SUPERVISOR__MSG_ENDING;
    m.ending = &e;
    len = crane__worker__to_supervisor__get_packed_size(&m);
    if (len + CRN_FRAME_HEADER_LEN > sizeof(buf))
        return;
    crn_frame_header(buf, len);
    crane__worker__to_supervisor__pack(&m, buf + CRN_FRAME_HEADER_LEN);
    pthread_mutex_lock(&w->lock);
    if (w->open)
        n = write(CTL_FD, buf, len + CRN_FRAME_HEADER_LEN);
    pthread_mutex_unlock(&w->lock);
    if (n != (ssize_t)(len + CRN_FRAME_HEADER_LEN))
        CRN_WARN("cannot tell the supervisor that the tenant ends");
}

/* The watchdog's word (its thread): the tenant must end. */
static void watch_end(void *arg, const char *reason, bool now)
{
    struct px_server *srv = arg;

    px_worker_tell_ending(srv, reason,
                          now ? 0 : srv->grace_ms + srv->limits.release_ms);
}

static void px_worker_watch(struct px_conn *c)
{
    uv_os_fd_t fd;

    if (c->lane || !c->tenant || uv_fileno(&c->tr.h.handle, &fd) < 0)
        return;
    px_watch_client(fd, c->tenant->num, c->tenant->program, c->tenant->pid);
}

static void px_worker_unwatch(struct px_conn *c, const char *why)
{
    struct px_server *srv = c->srv;
    struct px_tenant *t = c->tenant;
    uv_os_fd_t fd;
    char reason[256];

    if (c->lane || !t)
        return;
    if (uv_fileno(&c->tr.h.handle, &fd) == 0)
        px_watch_forget(fd);
    /* Kept for --grace: its bound starts when the teardown does. */
    if (srv->grace_ms && !srv->stopping)
        return;
    snprintf(reason, sizeof(reason), "tenant %llu (%s pid %u): %s",
             (unsigned long long)t->num, t->program, t->pid,
             why ? why : "disconnected");
    px_worker_tell_ending(srv, reason, srv->limits.release_ms);
}

static void px_worker_tenant(struct px_server *srv, struct px_tenant *t)
{
    Crane__Worker__ToSupervisor m = CRANE__WORKER__TO_SUPERVISOR__INIT;
    Crane__Worker__Tenant tm = CRANE__WORKER__TENANT__INIT;

    srv->worker->had_tenant = true;
    tm.token.data = t->token;
    tm.token.len = sizeof(t->token);
    tm.num = t->num;
    m.msg_case = CRANE__WORKER__TO_SUPERVISOR__MSG_TENANT;
    m.tenant = &tm;
    send_up(srv, &m);
}

static void px_worker_gone(struct px_server *srv, struct px_tenant *t)
{
    Crane__Worker__ToSupervisor m = CRANE__WORKER__TO_SUPERVISOR__INIT;
    Crane__Worker__Gone g = CRANE__WORKER__GONE__INIT;

    (void)t;
    m.msg_case = CRANE__WORKER__TO_SUPERVISOR__MSG_GONE;
    m.gone = &g;
    send_up(srv, &m);
}

static void send_stats(struct px_server *srv)
{
    Crane__Worker__ToSupervisor m = CRANE__WORKER__TO_SUPERVISOR__INIT;
    Crane__Worker__Stats st = CRANE__WORKER__STATS__INIT;

    for (struct px_conn *c = srv->conns; c; c = c->next)
        st.connections++;
    for (struct px_tenant *t = srv->tenants; t; t = t->next) {
        st.tenants++;
        st.detached += t->conn == NULL;
        st.objects += atomic_load(&t->stat_objects);
        st.bytes += atomic_load(&t->stat_bytes);
    }
    st.releasing = srv->tearing_down;
    m.msg_case = CRANE__WORKER__TO_SUPERVISOR__MSG_STATS;
    m.stats = &st;
    send_up(srv, &m);
}

/* A connection handed over: its stream is the next pending handle. */
static void take_handoff(struct px_server *srv, const Crane__Worker__Handoff *h)
{
    struct px_worker *w = srv->worker;
    uv_handle_type type;
    struct px_conn *c;

    if (uv_pipe_pending_count(&w->ctl) < 1) {
        CRN_ERROR("a handoff without its connection");
        return;
    }
    type = uv_pipe_pending_type(&w->ctl);
    c = px_conn_new(srv, type == UV_TCP ? UV_TCP : UV_NAMED_PIPE);
    if (!c)
        return;
    if (uv_accept((uv_stream_t *)&w->ctl, &c->tr.h.stream) < 0) {
        CRN_ERROR("cannot take a handed connection");
        px_conn_close(c, "not taken");
        return;
    }
    snprintf(c->program, sizeof(c->program), "%s", h->program);
    c->pid = h->pid;
    snprintf(c->peer, sizeof(c->peer), "%s", h->peer);
    c->token_len = h->resume_token.len <= sizeof(c->token)
                       ? h->resume_token.len
                       : 0;
    memcpy(c->token, h->resume_token.data, c->token_len);
    if (h->lane && h->lane_mac.len == sizeof(c->lane_mac)) {
        c->lane = true;
        c->lane_index = h->lane_index;
        c->lane_generation = h->lane_generation;
        memcpy(c->lane_mac, h->lane_mac.data, sizeof(c->lane_mac));
    }
    if (h->tenant_num)
        srv->next_tenant = h->tenant_num - 1;
    px_conn_start_handed(c, h->input.data, h->input.len);
}

static void on_message(struct px_server *srv, const Crane__Worker__ToWorker *m)
{
    switch (m->msg_case) {
    case CRANE__WORKER__TO_WORKER__MSG_HANDOFF:
        take_handoff(srv, m->handoff);
        break;
    case CRANE__WORKER__TO_WORKER__MSG_STATS_REQUEST:
        send_stats(srv);
        break;
    default:
        CRN_WARN("supervisor: unknown message %d", (int)m->msg_case);
        break;
    }
}

static void ctl_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct px_server *srv = h->data;
    struct px_worker *w = srv->worker;

    (void)suggested;
    if (w->icap - w->ilen < 64 * 1024) {
        size_t cap = w->icap ? w->icap * 2 : 128 * 1024;
        uint8_t *p = cap <= 2 * MAX_CTL_FRAME ? realloc(w->ibuf, cap) : NULL;
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
    struct px_server *srv = st->data;
    struct px_worker *w = srv->worker;
    size_t pos = 0;

    (void)buf;
    if (nread < 0) {
        /* The supervisor is gone: nobody hands us anything any more, and
         * nobody would learn how we end.  Stop cleanly. */
        CRN_INFO("supervisor gone: stopping");
        px_server_stop(srv);
        return;
    }
    w->ilen += (size_t)nread;
    for (;;) {
        const uint8_t *msg;
        size_t len, used;
        Crane__Worker__ToWorker *m;
        int rc = crn_frame_decode(w->ibuf + pos, w->ilen - pos, MAX_CTL_FRAME,
                                  &msg, &len, &used);
        if (rc == -EAGAIN)
            break;
        if (rc < 0) {
            CRN_ERROR("supervisor: bad frame; stopping");
            px_server_stop(srv);
            return;
        }
        pos += used;
        m = crane__worker__to_worker__unpack(NULL, len, msg);
        if (m) {
            on_message(srv, m);
            crane__worker__to_worker__free_unpacked(m, NULL);
        }
    }
    memmove(w->ibuf, w->ibuf + pos, w->ilen - pos);
    w->ilen -= pos;
}

int px_worker_init(struct px_server *srv, char *why, size_t why_len)
{
    struct px_worker *w = calloc(1, sizeof(*w));
    Crane__Worker__ToSupervisor m = CRANE__WORKER__TO_SUPERVISOR__INIT;
    Crane__Worker__Ready r = CRANE__WORKER__READY__INIT;
    int rc;

    if (!w) {
        snprintf(why, why_len, "out of memory");
        return -ENOMEM;
    }
    /* A supervisor killed outright takes its workers with it. */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    pthread_mutex_init(&w->lock, NULL);
    srv->worker = w;
    srv->role_ops = &worker_ops;
    uv_pipe_init(srv->loop, &w->ctl, 1);
    w->ctl.data = srv;
    rc = uv_pipe_open(&w->ctl, CTL_FD);
    if (rc == 0)
        rc = uv_read_start((uv_stream_t *)&w->ctl, ctl_alloc, ctl_read);
    if (rc < 0) {
        snprintf(why, why_len, "--worker needs its supervisor on fd %d: %s",
                 CTL_FD, uv_strerror(rc));
        uv_close((uv_handle_t *)&w->ctl, NULL);
        return rc;
    }
    w->open = true;
    rc = px_watch_start(srv->limits.max_call_ms, watch_end, srv);
    if (rc < 0) {
        snprintf(why, why_len, "cannot start the watchdog: %s",
                 strerror(-rc));
        return rc;
    }
    m.msg_case = CRANE__WORKER__TO_SUPERVISOR__MSG_READY;
    m.ready = &r;
    send_up(srv, &m);
    return 0;
}

static void px_worker_idle(struct px_server *srv)
{
    struct px_worker *w = srv->worker;

    if (w && w->had_tenant && !srv->stopping && !srv->conns &&
        !srv->tenants && !srv->tearing_down) {
        CRN_DEBUG("worker: its tenant is gone: stopping");
        px_server_stop(srv);
    }
}

/* The stop: stopping already, the supervisor's SIGTERM must not cut the
 * release of the tenant's objects short; the channel closes. */
static void px_worker_fini(struct px_server *srv)
{
    struct px_worker *w = srv->worker;

    signal(SIGTERM, SIG_IGN);
    signal(SIGINT, SIG_IGN);

    if (!w || !w->open)
        return;
    pthread_mutex_lock(&w->lock);
    w->open = false;
    pthread_mutex_unlock(&w->lock);
    uv_close((uv_handle_t *)&w->ctl, NULL);
}

static const struct px_role_ops worker_ops = {
    .tenant = px_worker_tenant,
    .gone = px_worker_gone,
    .ending = px_worker_tell_ending,
    .watch = px_worker_watch,
    .unwatch = px_worker_unwatch,
    .idle = px_worker_idle,
    .stop = px_worker_fini,
};

void px_worker_free(struct px_server *srv)
{
    if (srv->worker) {
        pthread_mutex_destroy(&srv->worker->lock);
        free(srv->worker->ibuf);
        free(srv->worker);
        srv->worker = NULL;
    }
}
