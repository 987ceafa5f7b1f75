/* crane-guestd's shim side: socket, registrations, commands, acks.
 *
 * Each connection is one program.  Its first frame must be a Register; the
 * daemon takes the pid and uid from the socket's credentials, not from the
 * message.  After that it sends only acks, each naming the command it
 * answers.  A connection that sends anything else is closed: a shim speaks
 * the protocol or it is not a shim.
 */
#include "programs.h"

#include "log.h"
#include "migrate.h"
#include "status.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define GD_PROTO_VERSION 1

static void copy_clean(char *dst, size_t len, const char *src)
{
    size_t i = 0;

    for (; src && src[i] && i + 1 < len; i++)
        dst[i] = src[i] >= 0x20 && src[i] < 0x7f ? src[i] : '?';
    dst[i] = '\0';
}

static Crane__Control__ProgramMode valid_mode(int m)
{
    return m >= GD_PMODE(PASSTHROUGH) && m <= GD_PMODE(REMOTE_ONLY)
               ? (Crane__Control__ProgramMode)m
               : GD_PMODE(UNKNOWN);
}

static double clean_seconds(double s)
{
    return isfinite(s) && s >= 0 && s < 1e6 ? s : 0;
}

static void take_times(Crane__Control__StepTimes *dst,
                       const Crane__Control__StepTimes *src)
{
    Crane__Control__StepTimes init = CRANE__CONTROL__STEP_TIMES__INIT;

    *dst = init;
    if (!src)
        return;
    dst->block = clean_seconds(src->block);
    dst->finish = clean_seconds(src->finish);
    dst->extract = clean_seconds(src->extract);
    dst->release = clean_seconds(src->release);
    dst->unload = clean_seconds(src->unload);
    dst->load = clean_seconds(src->load);
    dst->rebuild = clean_seconds(src->rebuild);
    dst->reinject = clean_seconds(src->reinject);
    dst->total = clean_seconds(src->total);
    dst->bytes_extracted = src->bytes_extracted;
    dst->bytes_reinjected = src->bytes_reinjected;
    dst->objects = src->objects;
}

static struct gd_program *find_pid(struct gd_daemon *d, pid_t pid,
                                   const struct gd_program *except)
{
    for (struct gd_program *p = d->programs; p; p = p->next)
        if (p != except && p->registered && p->pid == pid &&
            !p->conn.closing)
            return p;
    return NULL;
}

static bool on_register(struct gd_program *p,
                        const Crane__Control__Register *r)
{
    struct gd_daemon *d = p->d;
    struct gd_program *old;

    if (r->version != GD_PROTO_VERSION) {
        GD_WARN("%s: protocol version %u, expected %u", p->conn.name,
                r->version, GD_PROTO_VERSION);
        gd_conn_close(&p->conn, "unsupported version");
        return false;
    }
    if ((pid_t)r->pid != p->pid)
        GD_DEBUG("%s: says pid %u (another pid namespace?)", p->conn.name,
                 r->pid);
    copy_clean(p->name, sizeof(p->name), r->program);
    copy_clean(p->proxy, sizeof(p->proxy), r->proxy);
    p->mode = valid_mode(r->mode);
    p->state_bytes = r->state_bytes;
    p->registered = true;
    p->registered_at = gd_now();
    snprintf(p->conn.name, sizeof(p->conn.name), "program %s[%d]", p->name,
             (int)p->pid);
    /* The same process again: its shim reconnected before we saw the old
     * connection end. */
    if ((old = find_pid(d, p->pid, p)))
        gd_conn_close(&old->conn, "replaced by a new connection");
    GD_INFO("%s: registered (%s, %llu bytes of state)", p->conn.name,
            gd_pmode_name(p->mode), (unsigned long long)p->state_bytes);
    gd_save_state(d);
    gd_migrate_on_registered(d, p);
    return !p->conn.closing;
}

static bool on_ack(struct gd_program *p, uint64_t id,
                   const Crane__Control__ProgramAck *a)
{
    struct gd_daemon *d = p->d;
    bool query = id && id == p->query_id;
    bool cmd = id && id == p->cmd_id;

    p->mode = valid_mode(a->mode);
    p->state_bytes = a->state_bytes;
    p->unresponsive = false;
    if (query || a->op == GD_OP(QUERY)) {
        /* A size refresh, perhaps for a status round already answered. */
        if (query)
            gd_status_on_answer(d, p);
        return !p->conn.closing;
    }
    p->last_op = a->op >= GD_OP(STATUS) && a->op <= GD_OP(QUERY)
                     ? a->op
                     : GD_OP(NONE);
    p->last_err = a->err <= 0 && a->err > -4096 ? a->err : -EPROTO;
    copy_clean(p->last_error, sizeof(p->last_error), a->error);
    take_times(&p->last_times, a->times);
    if (cmd) {
        p->last_elapsed = gd_now() - p->cmd_sent;
        p->cmd_id = 0;
        GD_INFO("%s: %s %s in %.1f ms (calls held %.1f ms): now %s",
                p->conn.name, gd_op_name(p->last_op),
                p->last_err ? "FAILED" : "done", p->last_elapsed * 1e3,
                p->last_times.total * 1e3, gd_pmode_name(p->mode));
        if (p->last_err)
            GD_WARN("%s: %s", p->conn.name, p->last_error);
        gd_save_state(d);
        gd_migrate_on_ack(d, p);
    } else {
        /* An answer to a command whose deadline passed. */
        GD_WARN("%s: late answer to %s (%s): now %s", p->conn.name,
                gd_op_name(p->last_op), p->last_err ? "failed" : "done",
                gd_pmode_name(p->mode));
        gd_save_state(d);
    }
    return !p->conn.closing;
}

static bool on_frame(struct gd_conn *c, const uint8_t *buf, size_t len)
{
    struct gd_program *p = (struct gd_program *)c;
    Crane__Control__ShimMessage *m =
        crane__control__shim_message__unpack(NULL, len, buf);
    bool go_on = false;

    if (!m) {
        gd_conn_close(c, "undecodable message");
        return false;
    }
    if (!p->registered &&
        m->msg_case != CRANE__CONTROL__SHIM_MESSAGE__MSG_REGISTER)
        gd_conn_close(c, "first message is not a Register");
    else if (m->msg_case == CRANE__CONTROL__SHIM_MESSAGE__MSG_REGISTER &&
             p->registered)
        gd_conn_close(c, "registered twice");
    else if (m->msg_case == CRANE__CONTROL__SHIM_MESSAGE__MSG_REGISTER)
        go_on = on_register(p, m->register_);
    else if (m->msg_case == CRANE__CONTROL__SHIM_MESSAGE__MSG_ACK)
        go_on = on_ack(p, m->id, m->ack);
    else
        gd_conn_close(c, "unknown message");
    crane__control__shim_message__free_unpacked(m, NULL);
    return go_on;
}

static void on_closed(struct gd_conn *c)
{
    struct gd_program *p = (struct gd_program *)c;
    struct gd_daemon *d = p->d;

    for (struct gd_program **pp = &d->programs; *pp; pp = &(*pp)->next) {
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    }
    if (p->registered) {
        GD_INFO("%s: gone (%s)", c->name, gd_pmode_name(p->mode));
        if (p->query_id)
            gd_status_on_answer(d, p);
        gd_migrate_on_gone(d, p);
        gd_save_state(d);
    }
    free(p);
}

static size_t count_connections(const struct gd_daemon *d)
{
    size_t n = 0;

    for (const struct gd_program *p = d->programs; p; p = p->next)
        n++;
    return n;
}

static void on_connection(uv_stream_t *s, int status)
{
    struct gd_daemon *d = s->data;
    struct gd_program *p;
    struct ucred cred;
    socklen_t cred_len = sizeof(cred);
    uv_os_fd_t fd;

    if (status < 0) {
        GD_WARN("shim socket: %s", uv_strerror(status));
        return;
    }
    if (d->stopping || !(p = calloc(1, sizeof(*p))))
        return;
    if (count_connections(d) >= GD_MAX_PROGRAMS) {
        /* Accepted only to be closed at once. */
        GD_WARN("shim socket: %d connections already; refusing one",
                GD_MAX_PROGRAMS);
        p->refused = true;
    }
    p->d = d;
    p->pid = -1;
    p->mode = GD_PMODE(UNKNOWN);
    p->next = d->programs;
    d->programs = p;
    if (gd_conn_accept(s, &p->conn, on_frame, on_closed, p) < 0)
        return;
    if (p->refused) {
        gd_conn_close(&p->conn, NULL);
        return;
    }
    if (uv_fileno(&p->conn.h.handle, &fd) == 0 &&
        getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) == 0) {
        p->pid = cred.pid;
        p->uid = cred.uid;
    }
    snprintf(p->conn.name, sizeof(p->conn.name), "shim pid %d", (int)p->pid);
    GD_DEBUG("%s: connected", p->conn.name);
}

int gd_programs_listen(struct gd_daemon *d, char *why, size_t why_len)
{
    char endpoint[GD_TEXT + 8];
    int rc;

    snprintf(endpoint, sizeof(endpoint), "unix:%s", d->cfg.listen);
    rc = gd_listen(d->loop, &d->shim_lis, endpoint, d->cfg.listen_mode,
                   on_connection, d->shim_path, sizeof(d->shim_path), why,
                   why_len);
    if (rc < 0)
        return rc;
    d->shim_lis.handle.data = d;
    d->shim_listening = true;
    return 0;
}

void gd_programs_close(struct gd_daemon *d)
{
    if (d->shim_listening) {
        uv_close(&d->shim_lis.handle, NULL);
        d->shim_listening = false;
        if (d->shim_path[0])
            unlink(d->shim_path);
    }
    for (struct gd_program *p = d->programs; p; p = p->next)
        gd_conn_close(&p->conn, NULL);
}

int gd_program_command(struct gd_program *p, Crane__Control__Op op,
                       Crane__Control__DaemonMessage *m)
{
    m->id = ++p->d->next_id;
    p->cmd_id = m->id;
    p->cmd_op = op;
    p->cmd_sent = gd_now();
    return gd_conn_send(&p->conn, &m->base);
}

int gd_program_query(struct gd_program *p)
{
    Crane__Control__DaemonMessage m = CRANE__CONTROL__DAEMON_MESSAGE__INIT;
    Crane__Control__Query q = CRANE__CONTROL__QUERY__INIT;

    m.id = ++p->d->next_id;
    m.msg_case = CRANE__CONTROL__DAEMON_MESSAGE__MSG_QUERY;
    m.query = &q;
    p->query_id = m.id;
    return gd_conn_send(&p->conn, &m.base);
}

void gd_program_report(const struct gd_program *p,
                       Crane__Control__ProgramReport *r,
                       Crane__Control__StepTimes *t)
{
    Crane__Control__ProgramReport init = CRANE__CONTROL__PROGRAM_REPORT__INIT;
    Crane__Control__StepTimes tinit = CRANE__CONTROL__STEP_TIMES__INIT;

    *r = init;
    *t = p->last_times;
    t->base = tinit.base;    /* a program that never answered has none */
    r->pid = (uint32_t)p->pid;
    r->program = (char *)p->name;
    r->mode = p->mode;
    r->state_bytes = p->state_bytes;
    r->last_op = p->last_op;
    r->err = p->last_err;
    r->error = (char *)p->last_error;
    r->times = t;
    r->elapsed = p->last_elapsed;
    r->age = gd_now() - p->registered_at;
}

size_t gd_programs_count(const struct gd_daemon *d)
{
    size_t n = 0;

    for (const struct gd_program *p = d->programs; p; p = p->next)
        n += p->registered && !p->conn.closing;
    return n;
}
