/* crane-guestd's shim side: socket, registrations, commands, acks.
 *
 * Each connection is one program.  Its first frame must be a Register; the
 * daemon takes the pid and uid from the socket's credentials, not from the
 * message.  After that it sends only acks, each naming the command it
 * answers.  A connection that sends anything else is closed: a shim speaks
 * the protocol or it is not a shim.
 */
#include "programs.h"

#include "proto/log.h"

#include <errno.h>
#include <grp.h>
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

/* Silent on a status query while nothing else is asked of it. */
static bool query_late(const struct gd_program *p)
{
    return p->query_id && !p->cmd_id &&
           gd_now() - p->query_sent >= GD_QUERY_LATE_S;
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
        CRN_WARN("%s: protocol version %u, expected %u", p->conn.name,
                r->version, GD_PROTO_VERSION);
        gd_conn_close(&p->conn, "unsupported version");
        return false;
    }
    if ((pid_t)r->pid != p->pid)
        CRN_DEBUG("%s: says pid %u (another pid namespace?)", p->conn.name,
                 r->pid);
    copy_clean(p->name, sizeof(p->name), r->program);
    copy_clean(p->proxy, sizeof(p->proxy), r->proxy);
    p->mode = valid_mode(r->mode);
    p->state_bytes = r->state_bytes;
    p->starting = r->starting;
    p->registered = true;
    p->registered_at = gd_now();
    snprintf(p->conn.name, sizeof(p->conn.name), "program %s[%d]", p->name,
             (int)p->pid);
    /* The same process again: its shim reconnected before we saw the old
     * connection end. */
    if ((old = find_pid(d, p->pid, p)))
        gd_conn_close(&old->conn, "replaced by a new connection");
    CRN_INFO("%s: registered (%s, %llu bytes of state)", p->conn.name,
            p->starting ? "starting" : gd_pmode_name(p->mode),
            (unsigned long long)p->state_bytes);
    gd_adopt_program_phase(d, p);
    gd_save_state(d);
    d->program_events->registered(d, p);
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
    p->shm_bytes = a->shm_bytes;
    p->stream_bytes = a->stream_bytes;
    p->host_bytes = a->host_bytes;
    p->shm_attached = a->shm_attached;
    p->unresponsive = false;
    /* After its Start: where the program's first call went. */
    p->starting = false;
    if (query || a->op == GD_OP(QUERY)) {
        /* A size refresh, perhaps for a status round already answered. */
        if (query)
            d->program_events->answered(d, p);
        return !p->conn.closing;
    }
    p->last_op = a->op >= GD_OP(STATUS) && a->op <= GD_OP(SHM) &&
                         a->op != GD_OP(QUERY)
                     ? a->op
                     : GD_OP(NONE);
    p->last_err = a->err <= 0 && a->err > -4096 ? a->err : -EPROTO;
    copy_clean(p->last_error, sizeof(p->last_error), a->error);
    take_times(&p->last_times, a->times);
    if (cmd) {
        p->waiting[0] = '\0';
        p->last_elapsed = gd_now() - p->cmd_sent;
        p->cmd_id = 0;
        CRN_INFO("%s: %s %s in %.1f ms (calls held %.1f ms): now %s",
                p->conn.name, gd_op_name(p->last_op),
                p->last_err ? "FAILED" : "done", p->last_elapsed * 1e3,
                p->last_times.total * 1e3, gd_pmode_name(p->mode));
        if (p->last_err)
            CRN_WARN("%s: %s", p->conn.name, p->last_error);
        gd_save_state(d);
        d->program_events->acked(d, p);
    } else {
        /* An answer to a command whose deadline passed. */
        CRN_WARN("%s: late answer to %s (%s): now %s", p->conn.name,
                gd_op_name(p->last_op), p->last_err ? "failed" : "done",
                gd_pmode_name(p->mode));
        gd_save_state(d);
    }
    return !p->conn.closing;
}

/* What the command in flight waits for (a switch behind a long kernel),
 * for status; a word about another command is dropped. */
static bool on_progress(struct gd_program *p, uint64_t id,
                        const Crane__Control__Progress *pr)
{
    if (!id || id != p->cmd_id)
        return !p->conn.closing;
    if (strcmp(p->waiting, pr->waiting ? pr->waiting : "") != 0 &&
        pr->waiting && *pr->waiting)
        CRN_DEBUG("%s: %s", p->conn.name, pr->waiting);
    copy_clean(p->waiting, sizeof(p->waiting), pr->waiting);
    return !p->conn.closing;
}

/* The shim says its program is about to fail of a fault (its proxy
 * lost): kept, so that its end is reported as a loss with this reason. */
static bool on_fault(struct gd_program *p, const Crane__Control__Fault *f)
{
    p->fault_err = f->err < 0 && f->err > -4096 ? f->err : -EPROTO;
    copy_clean(p->fault, sizeof(p->fault), f->reason);
    if (!p->fault[0])
        snprintf(p->fault, sizeof(p->fault), "%s", strerror(-p->fault_err));
    p->fault_at = gd_now();
    CRN_WARN("%s: fault: %s", p->conn.name, p->fault);
    return true;
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
    p->last_heard = gd_now();
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
    else if (m->msg_case == CRANE__CONTROL__SHIM_MESSAGE__MSG_PROGRESS)
        go_on = on_progress(p, m->id, m->progress);
    else if (m->msg_case == CRANE__CONTROL__SHIM_MESSAGE__MSG_FAULT)
        go_on = on_fault(p, m->fault);
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
        CRN_INFO("%s: gone (%s)", c->name, gd_pmode_name(p->mode));
        if (p->query_id)
            d->program_events->answered(d, p);
        d->program_events->gone(d, p);
        gd_save_state(d);
    }
    free(p);
}

/* --- the bound on connections, and the registration timeout -------------- */

/*
 * Which connection goes when a new one would pass max_programs: the one
 * that has waited longest without registering; else the registered
 * program silent longest among those that missed a deadline or a status
 * query (its shim, if alive, connects again); else none, and the newcomer
 * is refused.  A
 * program that is refused or evicted while it holds the GPU is still
 * found by the prepare's check of the GPU device nodes (gpu_users.c), so a
 * full socket can delay a migration but never unload the driver under it.
 */
static struct gd_program *eviction_victim(struct gd_daemon *d)
{
    struct gd_program *oldest = NULL, *silent = NULL;

    for (struct gd_program *p = d->programs; p; p = p->next) {
        if (p->conn.closing)
            continue;
        if (!p->registered) {
            if (!oldest || p->accepted_at < oldest->accepted_at)
                oldest = p;
        } else if ((p->unresponsive || query_late(p)) &&
                   (!silent || p->last_heard < silent->last_heard)) {
            silent = p;
        }
    }
    return oldest ? oldest : silent;
}

static size_t count_connections(const struct gd_daemon *d)
{
    size_t n = 0;

    for (const struct gd_program *p = d->programs; p; p = p->next)
        n += !p->conn.closing;
    return n;
}

static void arm_register_sweep(struct gd_daemon *d);

/* Closes every connection that did not register within
 * register_timeout_ms of its accept. */
static void on_register_sweep(uv_timer_t *t)
{
    struct gd_daemon *d = t->data;
    double now = gd_now(), limit = d->cfg.register_timeout_ms / 1e3;

    for (struct gd_program *p = d->programs; p; p = p->next)
        if (!p->registered && !p->conn.closing &&
            now - p->accepted_at >= limit)
            gd_conn_close(&p->conn, "no Register within register_timeout_ms");
    arm_register_sweep(d);
}

/* Runs the sweep when the oldest unregistered connection is due (no timer
 * while every connection is registered). */
static void arm_register_sweep(struct gd_daemon *d)
{
    double first = 0, due;
    bool any = false;

    for (const struct gd_program *p = d->programs; p; p = p->next) {
        if (p->registered || p->conn.closing)
            continue;
        if (!any || p->accepted_at < first)
            first = p->accepted_at;
        any = true;
    }
    if (!any || d->stopping) {
        uv_timer_stop(&d->reg_timer);
        return;
    }
    due = (first + d->cfg.register_timeout_ms / 1e3 - gd_now()) * 1e3;
    uv_timer_start(&d->reg_timer, on_register_sweep,
                   due < 1 ? 1 : (uint64_t)due + 1, 0);
}

static void on_connection(uv_stream_t *s, int status)
{
    struct gd_daemon *d = s->data;
    struct gd_program *p, *victim = NULL;
    struct ucred cred;
    socklen_t cred_len = sizeof(cred);
    uv_os_fd_t fd;

    if (status < 0) {
        CRN_WARN("shim socket: %s", uv_strerror(status));
        return;
    }
    if (d->stopping || !(p = calloc(1, sizeof(*p))))
        return;
    if (count_connections(d) >= d->cfg.max_programs &&
        !(victim = eviction_victim(d))) {
        /* Accepted only to be closed at once: every connection is a
         * registered program that answers. */
        if (d->n_refused++ % 1000 == 0)
            CRN_WARN("shim socket: %u registered programs already "
                    "(max_programs); refusing a connection (%llu so far)",
                    d->cfg.max_programs, (unsigned long long)d->n_refused);
        p->refused = true;
    }
    if (victim) {
        if (d->n_evicted++ % 1000 == 0)
            CRN_WARN("shim socket: %u connections (max_programs): evicting "
                    "%s to make room (%llu so far)",
                    d->cfg.max_programs, victim->conn.name,
                    (unsigned long long)d->n_evicted);
        gd_conn_close(&victim->conn, NULL);
    }
    p->d = d;
    p->pid = -1;
    p->mode = GD_PMODE(UNKNOWN);
    p->accepted_at = p->last_heard = gd_now();
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
    CRN_DEBUG("%s: connected", p->conn.name);
    if (!uv_is_active((uv_handle_t *)&d->reg_timer))
        arm_register_sweep(d);
}

/* Gives the socket file to cfg.program_group: programs of its members
 * may register, nobody else's (with the default mode 0660).  A group that
 * does not exist leaves the daemon's own group: only its user's programs
 * (root's) register, and a warning says so. */
static int give_socket_to_group(struct gd_daemon *d, char *why,
                                size_t why_len)
{
    const char *name = d->cfg.program_group;
    struct group gr, *found = NULL;
    char buf[4096];
    int rc;

    if (!*name)
        return 0;
    rc = getgrnam_r(name, &gr, buf, sizeof(buf), &found);
    if (!found) {
        CRN_WARN("program_group %s: %s; the shims' socket %s keeps the "
                "daemon's group, so only the daemon's user's programs can "
                "register (create the group: groupadd --system %s)",
                name, rc ? strerror(rc) : "no such group", d->shim_path,
                name);
        return 0;
    }
    if (chown(d->shim_path, (uid_t)-1, gr.gr_gid) < 0) {
        rc = -errno;
        snprintf(why, why_len, "cannot give %s to group %s: %s",
                 d->shim_path, name, strerror(-rc));
        return rc;
    }
    return 0;
}

int gd_programs_listen(struct gd_daemon *d,
                       const struct gd_program_events *events, char *why,
                       size_t why_len)
{
    char endpoint[GD_TEXT + 8];
    int rc;

    d->program_events = events;
    snprintf(endpoint, sizeof(endpoint), "unix:%s", d->cfg.listen);
    uv_timer_init(d->loop, &d->reg_timer);
    d->reg_timer.data = d;
    rc = gd_listen(d->loop, &d->shim_lis, endpoint, d->cfg.listen_mode,
                   on_connection, d->shim_path, sizeof(d->shim_path), why,
                   why_len);
    if (rc < 0)
        return rc;
    d->shim_lis.handle.data = d;
    d->shim_listening = true;
    return give_socket_to_group(d, why, why_len);
}

void gd_programs_close(struct gd_daemon *d)
{
    uv_timer_stop(&d->reg_timer);
    if (!uv_is_closing((uv_handle_t *)&d->reg_timer))
        uv_close((uv_handle_t *)&d->reg_timer, NULL);
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
    if (!p->cmd_id)
        p->silent_since = gd_now();
    p->cmd_id = m->id;
    p->cmd_op = op;
    p->cmd_sent = gd_now();
    return gd_conn_send(&p->conn, &m->base);
}

int gd_program_start(struct gd_program *p, Crane__Control__Start *s)
{
    Crane__Control__DaemonMessage m = CRANE__CONTROL__DAEMON_MESSAGE__INIT;

    m.id = ++p->d->next_id;
    m.msg_case = CRANE__CONTROL__DAEMON_MESSAGE__MSG_START;
    m.start = s;
    p->held = s->wait;
    return gd_conn_send(&p->conn, &m.base);
}

int gd_program_query(struct gd_program *p)
{
    Crane__Control__DaemonMessage m = CRANE__CONTROL__DAEMON_MESSAGE__INIT;
    Crane__Control__Query q = CRANE__CONTROL__QUERY__INIT;

    m.id = ++p->d->next_id;
    m.msg_case = CRANE__CONTROL__DAEMON_MESSAGE__MSG_QUERY;
    m.query = &q;
    p->query_id = m.id;
    p->query_sent = gd_now();
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
    r->shm_bytes = p->shm_bytes;
    r->stream_bytes = p->stream_bytes;
    r->host_bytes = p->host_bytes;
    r->shm_attached = p->shm_attached;
    r->fault = (char *)p->fault;
    /* The truth as far as the daemon knows it: a program with a command
     * in flight is switching (whatever mode it last reported), one that
     * let a deadline or a status query pass is unresponsive. */
    if (p->held)
        r->state = GD_PSTATE(STARTING);
    else if (p->unresponsive || query_late(p))
        r->state = GD_PSTATE(UNRESPONSIVE);
    else if (p->cmd_id)
        r->state = GD_PSTATE(SWITCHING);
    else
        r->state = GD_PSTATE(IDLE);
    if (p->cmd_id) {
        r->pending_op = p->cmd_op;
        r->pending_for = gd_now() - p->silent_since;
        r->waiting = (char *)p->waiting;
    } else if (query_late(p)) {
        r->pending_op = GD_OP(QUERY);
        r->pending_for = gd_now() - p->query_sent;
    }
}

size_t gd_programs_count(const struct gd_daemon *d)
{
    size_t n = 0;

    for (const struct gd_program *p = d->programs; p; p = p->next)
        n += p->registered && !p->conn.closing;
    return n;
}
