/* The shim's control thread: registers the program with crane-guestd and
 * carries out its prepare, resume and abort commands (docs/guest.md).
 *
 * The thread is the only place that switches a program for the daemon, so
 * commands run one at a time, in the order they arrive.  A switch refused
 * with -EBUSY (a buffer mapped, a user event pending) is retried until the
 * command's deadline, or until the daemon sends something newer (an abort
 * after its own deadline passed): the program is never left half-switched,
 * each attempt either happens whole or not at all.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "control.h"
#include "ctl_link.h"
#include "proto/log.h"
#include "shim.h"

#include "proto/auth.h"
#include "proto/control.pb-c.h"
#include "proto/endpoint.h"
#include "proto/frame.h"

#define CONTROL_VERSION 1
#define CONTROL_MAX_FRAME (64u << 10)  /* docs/guest.md: 64 KiB per frame */
#define CONTROL_RETRY_MS 1000          /* reconnect period without daemon */
#define CONTROL_BUSY_RETRY_MS 20       /* between -EBUSY attempts */
#define CONTROL_DEFAULT_DEADLINE_MS 30000

/* Short names for the generated enum values. */
#define MODE_PASSTHROUGH CRANE__CONTROL__PROGRAM_MODE__PROGRAM_PASSTHROUGH
#define MODE_REMOTING CRANE__CONTROL__PROGRAM_MODE__PROGRAM_REMOTING
#define MODE_PARKED CRANE__CONTROL__PROGRAM_MODE__PROGRAM_PARKED
#define MODE_REMOTE_ONLY CRANE__CONTROL__PROGRAM_MODE__PROGRAM_REMOTE_ONLY

static struct control {
    atomic_int fd;               /* the daemon connection, -1 when none */
    char proxy[512];             /* what shim_config.remote points at once
                                    the daemon named a proxy */
    char key_path[64];           /* what shim_config.auth_key points at
                                    once the daemon sent the proxy's key:
                                    /proc/self/fd/N of a memfd */
    uint64_t cmd_id;             /* the command being carried out */
} ctl = {.fd = -1};

/* Set on the control thread only: the thread that writes to ctl.fd. */
static SHIM_TLS bool on_control_thread;

/* What one command did, for its ack. */
struct outcome {
    char error[256];
    struct shim_rehome_times t;
};

typedef int (*control_cmd_fn)(const Crane__Control__DaemonMessage *m, int fd,
                              struct outcome *out);

/* --- the program as the daemon sees it ----------------------------------- */

static Crane__Control__ProgramMode current_mode(void)
{
    Crane__Control__ProgramMode mode = MODE_PASSTHROUGH;

    pthread_mutex_lock(&shim.rehome_lock);
    if (shim.parked)
        mode = MODE_PARKED;
    else if (shim_is_proxy(shim.backend))
        mode = shim_config.start_remote ? MODE_REMOTE_ONLY : MODE_REMOTING;
    pthread_mutex_unlock(&shim.rehome_lock);
    return mode;
}

/* Bytes of every buffer and image that holds its own storage. */
static uint64_t state_bytes(void)
{
    uint64_t n = 0;

    shim_store_lock();
    for (struct shim_obj *o = shim_store_first(); o; o = o->next)
        if (o->kind == SHIM_MEM && !((struct shim_mem *)o)->parent)
            n += ((struct shim_mem *)o)->size;
    shim_store_unlock();
    return n;
}

/* --- commands ------------------------------------------------------------ */

/* What the command being carried out waits for, told to crane-guestd
 * (rehome_wait.c calls it through shim_wait_shown); only from the control
 * thread, whose command it is (a switch of the test hook has none). */
static void show_wait(const char *text)
{
    Crane__Control__ShimMessage m = CRANE__CONTROL__SHIM_MESSAGE__INIT;
    Crane__Control__Progress pr = CRANE__CONTROL__PROGRESS__INIT;
    int fd = atomic_load(&ctl.fd);

    if (!on_control_thread || fd < 0)
        return;
    pr.waiting = (char *)text;
    m.id = ctl.cmd_id;
    m.msg_case = CRANE__CONTROL__SHIM_MESSAGE__MSG_PROGRESS;
    m.progress = &pr;
    if (crn_frame_write(fd, &m.base) < 0)
        CRN_DEBUG("control: could not tell crane-guestd what the command "
                  "waits for");
}

static double deadline_of(uint32_t ms)
{
    return shim_now() + (ms ? ms : CONTROL_DEFAULT_DEADLINE_MS) / 1e3;
}

/* A prepare: the GPU leaves once every program is off it. */
static int to_remote(struct shim_rehome_times *t)
{
    return shim_switch_gpu_leaves(shim_proxy_backend(), t);
}

static int to_native(struct shim_rehome_times *t)
{
    return shim_switch(shim_vendor_backend(), t);
}

/* Runs STEP until it is no longer refused with -EBUSY, the deadline has
 * passed, or a newer command (or the daemon's hang-up) is waiting on FD. */
static int until_not_busy(int (*step)(struct shim_rehome_times *),
                          struct shim_rehome_times *t, int fd,
                          double deadline)
{
    for (;;) {
        int rc = step(t);
        if (rc != -EBUSY || shim_now() >= deadline)
            return rc;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, CONTROL_BUSY_RETRY_MS) != 0)
            return rc;
    }
}

static void add_times(struct shim_rehome_times *sum,
                      const struct shim_rehome_times *t)
{
    sum->block += t->block;
    sum->finish += t->finish;
    sum->extract += t->extract;
    sum->release += t->release;
    sum->unload += t->unload;
    sum->load += t->load;
    sum->rebuild += t->rebuild;
    sum->reinject += t->reinject;
    sum->total += t->total;
    sum->bytes_extracted += t->bytes_extracted;
    sum->bytes_reinjected += t->bytes_reinjected;
    sum->objects = t->objects;
}

int shim_control_set_proxy(const char *endpoint,
                           const ProtobufCBinaryData *key, char *error,
                           size_t error_len)
{
    struct crn_endpoint ep;

    if (key->len > CRN_AUTH_KEY_MAX) {
        snprintf(error, error_len, "proxy key over %d bytes",
                 CRN_AUTH_KEY_MAX);
        return -EINVAL;
    }
    if (key->len) {
        /* The key as a file only this process can name (a memfd), so that
         * everything that takes CRANE_AUTH_KEY (the challenge's answer,
         * TLS-PSK) takes it; kept for the program's life, replaced by the
         * next prepare's. */
        static int key_fd = -1;
        int fd = memfd_create("crane-proxy-key", MFD_CLOEXEC);

        if (fd < 0 || write(fd, key->data, key->len) != (ssize_t)key->len) {
            int rc = fd < 0 ? -errno : -EIO;
            if (fd >= 0)
                close(fd);
            snprintf(error, error_len,
                     "cannot keep the proxy's key: %s", strerror(-rc));
            return rc;
        }
        pthread_mutex_lock(&shim.rehome_lock);
        if (key_fd >= 0)
            close(key_fd);
        key_fd = fd;
        snprintf(ctl.key_path, sizeof(ctl.key_path), "/proc/self/fd/%d", fd);
        shim_config.auth_key = ctl.key_path;
        pthread_mutex_unlock(&shim.rehome_lock);
    }

    if (!*endpoint) {
        if (shim_config.remote)
            return 0;    /* CRANE_PROXY */
        snprintf(error, error_len,
                 "no proxy endpoint (neither the command nor CRANE_PROXY)");
        return -EINVAL;
    }
    if (strlen(endpoint) >= sizeof(ctl.proxy) ||
        crn_endpoint_parse(endpoint, &ep) < 0) {
        snprintf(error, error_len,
                 "bad proxy endpoint (unix:PATH or tcp:HOST:PORT)");
        return -EINVAL;
    }
    pthread_mutex_lock(&shim.rehome_lock);
    snprintf(ctl.proxy, sizeof(ctl.proxy), "%s", endpoint);
    shim_config.remote = ctl.proxy;
    pthread_mutex_unlock(&shim.rehome_lock);
    return 0;
}

static int cmd_prepare(const Crane__Control__DaemonMessage *m, int fd,
                       struct outcome *out)
{
    const Crane__Control__Prepare *p = m->prepare;
    double deadline = deadline_of(p->deadline_ms);
    Crane__Control__ProgramMode mode = current_mode();
    int rc;

    if (mode == MODE_REMOTE_ONLY)
        return 0;        /* never touches this VM's GPU */
    if (p->mode == CRANE__CONTROL__MIGRATION_MODE__MIGRATION_OFFLINE) {
        if (mode == MODE_PARKED)
            return 0;
        return until_not_busy(shim_park, &out->t, fd, deadline);
    }
    if (mode == MODE_PARKED) {
        snprintf(out->error, sizeof(out->error),
                 "parked by an offline prepare: resume or abort first");
        return shim_switch_refuse(-EINVAL, "%s", out->error);
    }
    if (mode == MODE_REMOTING)
        return 0;
    if ((rc = shim_control_set_proxy(p->proxy, &p->auth_key, out->error,
                                     sizeof(out->error))) < 0)
        return rc;
    atomic_store(&shim_cmd_deadline, deadline);
    rc = until_not_busy(to_remote, &out->t, fd, deadline);
    if (rc < 0 && rc != -EBUSY && rc != -ENOTSUP && rc != -ETIMEDOUT)
        snprintf(out->error, sizeof(out->error),
                 "switching to the proxy %s failed: %s (still in "
                 "passthrough)",
                 shim_config.remote,
                 shim_devices_refusal()[0] ? shim_devices_refusal()
                 : shim_rehome_reason()[0] ? shim_rehome_reason()
                                           : strerror(-rc));
    return rc;
}

/* Resume and abort: back to passthrough, from wherever the program is. */
static int cmd_passthrough(const Crane__Control__DaemonMessage *m, int fd,
                           struct outcome *out)
{
    uint32_t ms = m->msg_case == CRANE__CONTROL__DAEMON_MESSAGE__MSG_RESUME
                      ? m->resume->deadline_ms
                      : m->abort->deadline_ms;
    double deadline = deadline_of(ms);
    Crane__Control__ProgramMode mode = current_mode();
    struct shim_rehome_times t;
    int rc;

    if (mode == MODE_REMOTE_ONLY)
        return 0;
    if (mode == MODE_PARKED) {
        rc = shim_unpark(&t);
        add_times(&out->t, &t);
        if (rc < 0)
            return rc;
        mode = current_mode();    /* parked from the proxy: on it again */
    }
    if (mode == MODE_REMOTING) {
        atomic_store(&shim_cmd_deadline, deadline);
        rc = until_not_busy(to_native, &t, fd, deadline);
        add_times(&out->t, &t);
        return rc;
    }
    return 0;
}

static int cmd_query(const Crane__Control__DaemonMessage *m, int fd,
                     struct outcome *out)
{
    (void)m;
    (void)fd;
    (void)out;
    return 0;
}

/* The shared area's hooks of the proxy side's backend, or NULL. */
static const struct shim_shm_ops *shm_ops(void)
{
    const struct shim_backend_ops *b = shim_proxy_backend();

    return b ? b->shm : NULL;
}

/* A shared area to use, or to give up (docs/remoting.md, "Shared
 * memory"): only a program that remotes takes one; any program gives its
 * up, even one back in passthrough that kept its connection. */
static int cmd_shm(const Crane__Control__DaemonMessage *m, int fd,
                   struct outcome *out)
{
    const Crane__Control__Shm *s = m->shm;
    const struct shim_shm_ops *ops = shm_ops();
    int rc;

    (void)fd;
    if (s->release)
        return ops ? ops->release(out->error, sizeof(out->error)) : 0;
    if (current_mode() == MODE_PASSTHROUGH || current_mode() == MODE_PARKED)
        return 0;        /* on its GPU: nothing to carry */
    /* Half the command's deadline for the proxy domain to see the device
     * too (the answer must come before the deadline). */
    if (!ops)
        return -ENOTCONN;
    rc = ops->use(
        s->path, NULL, s->offset, s->limit,
        (long)(s->deadline_ms ? s->deadline_ms : CONTROL_DEFAULT_DEADLINE_MS) /
            2,
        out->error, sizeof(out->error));
    if (rc == -EBUSY)
        return 0;        /* one attached already: kept */
    return rc;
}

/* The commands of the shim hop, from the rows of proto/control_ops.def. */
static const struct control_cmd {
    Crane__Control__DaemonMessage__MsgCase which;
    Crane__Control__Op op;
    const char *name;
    control_cmd_fn run;
} control_cmds[] = {
#define CONTROL_CMD_NONE(OP, name, exec)
#define CONTROL_CMD_SHIM(OP, name, exec)                                    \
    {CRANE__CONTROL__DAEMON_MESSAGE__MSG_##OP, CRANE__CONTROL__OP__OP_##OP, \
     #name, cmd_##exec},
#define CRN_CONTROL_OP(OP, name, host, host_exec, shim, shim_exec)         \
    CONTROL_CMD_##shim(OP, name, shim_exec)
#include "proto/control_ops.def"
#undef CRN_CONTROL_OP
};

static const char *why(int rc)
{
    /* A refusal says its own reason (shim_switch_refuse). */
    if ((rc == -EBUSY || rc == -ENOTSUP || rc == -ETIMEDOUT) &&
        shim_rehome_reason()[0])
        return shim_rehome_reason();
    switch (rc) {
    case -EBUSY:
        return "still refused at the deadline: a buffer mapped into the "
               "vendor's memory was never unmapped, or a user event is "
               "pending";
    case -ENOTSUP: return "the program uses SVM or pipes, which cannot move";
    case -ETIMEDOUT:
        return "OpenCL calls still running at the timeout "
               "(CRANE_REHOME_TIMEOUT_MS)";
    case -ETIME:
        return "a kernel of the program ran past CRANE_SWITCH_KERNEL_WAIT_MS "
               "(or the command's deadline): refused, nothing changed";
    case -ENOTCONN:
        return "the connection to the proxy is lost: the program's data "
               "there cannot be brought back";
    case -EIO:
        return "a transfer or rebuild failed (the program's log says "
               "which); the program stays where its data is whole";
    default:
        /* A move refused for its devices says which and why. */
        return shim_devices_refusal()[0] ? shim_devices_refusal()
                                         : strerror(-rc);
    }
}

/* Carries out one command and answers it on FD. */
static int serve(int fd, const Crane__Control__DaemonMessage *m)
{
    Crane__Control__ShimMessage reply = CRANE__CONTROL__SHIM_MESSAGE__INIT;
    Crane__Control__ProgramAck ack = CRANE__CONTROL__PROGRAM_ACK__INIT;
    Crane__Control__StepTimes times = CRANE__CONTROL__STEP_TIMES__INIT;
    const struct control_cmd *cmd = NULL;
    struct outcome out;
    int rc;

    memset(&out, 0, sizeof(out));
    for (size_t i = 0; i < sizeof(control_cmds) / sizeof(*control_cmds); i++)
        if (control_cmds[i].which == m->msg_case)
            cmd = &control_cmds[i];
    if (!cmd) {
        CRN_WARN("control: unknown command %d from crane-guestd",
                 (int)m->msg_case);
        rc = -EOPNOTSUPP;
        snprintf(out.error, sizeof(out.error), "unknown command");
    } else {
        if (cmd->op == CRANE__CONTROL__OP__OP_QUERY)
            CRN_DEBUG("control: query (command %llu)",
                      (unsigned long long)m->id);
        else
            CRN_INFO("control: %s (command %llu)", cmd->name,
                     (unsigned long long)m->id);
        ctl.cmd_id = m->id;
        rc = cmd->run(m, fd, &out);
        atomic_store(&shim_cmd_deadline, 0);
        /* The switch's own first reason says more than the errno. */
        if (rc < 0 && !out.error[0] && shim_rehome_reason()[0])
            snprintf(out.error, sizeof(out.error), "%s",
                     shim_rehome_reason());
        else if (rc < 0 && !out.error[0])
            snprintf(out.error, sizeof(out.error), "%s", why(rc));
        if (rc < 0)
            CRN_WARN("control: %s failed: %s", cmd->name, out.error);
    }
    ack.op = cmd ? cmd->op : CRANE__CONTROL__OP__OP_NONE;
    ack.err = rc;
    ack.error = out.error;
    ack.mode = current_mode();
    ack.state_bytes = state_bytes();
    times.block = out.t.block;
    times.finish = out.t.finish;
    times.extract = out.t.extract;
    times.release = out.t.release;
    times.unload = out.t.unload;
    times.load = out.t.load;
    times.rebuild = out.t.rebuild;
    times.reinject = out.t.reinject;
    times.total = out.t.total;
    times.bytes_extracted = out.t.bytes_extracted;
    times.bytes_reinjected = out.t.bytes_reinjected;
    times.objects = out.t.objects;
    ack.times = &times;
    struct shim_shm_counts counts = {0};
    const struct shim_shm_ops *shm = shm_ops();
    if (shm)
        shm->counts(&counts);
    ack.shm_bytes = counts.shm_bytes;
    ack.stream_bytes = counts.stream_bytes;
    ack.host_bytes = counts.host_bytes;
    ack.shm_attached = shm && shm->attached();
    reply.id = m->id;
    reply.msg_case = CRANE__CONTROL__SHIM_MESSAGE__MSG_ACK;
    reply.ack = &ack;
    return shim_ctl_link_write(&reply.base);
}

/* --- the connection ------------------------------------------------------ */

int shim_control_connect(void)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return -errno;
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s",
             shim_config.control_socket);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        int rc = -errno;
        close(fd);
        return rc;
    }
    return fd;
}

int shim_control_register(int fd, bool starting)
{
    Crane__Control__ShimMessage m = CRANE__CONTROL__SHIM_MESSAGE__INIT;
    Crane__Control__Register reg = CRANE__CONTROL__REGISTER__INIT;

    reg.version = CONTROL_VERSION;
    reg.pid = (uint32_t)getpid();
    reg.program = program_invocation_short_name;
    reg.starting = starting;
    /* Starting: no backend yet, so no mode and no state. */
    reg.state_bytes = starting ? 0 : state_bytes();
    reg.mode = starting ? CRANE__CONTROL__PROGRAM_MODE__PROGRAM_UNKNOWN
                        : current_mode();
    reg.proxy = (char *)"";
    if (reg.mode != MODE_PASSTHROUGH && !starting && shim_config.remote)
        reg.proxy = (char *)shim_config.remote;
    m.msg_case = CRANE__CONTROL__SHIM_MESSAGE__MSG_REGISTER;
    m.register_ = &reg;
    return crn_frame_write(fd, &m.base);
}

/* After a start the daemon answered (control_start.c): where the program
 * went, as an unasked size refresh (a Query's ack). */
static int send_started(void)
{
    Crane__Control__ShimMessage m = CRANE__CONTROL__SHIM_MESSAGE__INIT;
    Crane__Control__ProgramAck ack = CRANE__CONTROL__PROGRAM_ACK__INIT;

    ack.op = CRANE__CONTROL__OP__OP_QUERY;
    ack.mode = current_mode();
    ack.state_bytes = state_bytes();
    ack.error = (char *)"";
    m.msg_case = CRANE__CONTROL__SHIM_MESSAGE__MSG_ACK;
    m.ack = &ack;
    return shim_ctl_link_write(&m.base);
}

/* Serves one connection until the daemon goes away (or misbehaves);
 * REGISTERED: the start registered it already. */
static void session(int fd, bool registered)
{
    int rc = registered ? send_started() : shim_control_register(fd, false);

    while (rc == 0) {
        uint8_t *buf;
        size_t len;
        Crane__Control__DaemonMessage *m;

        if ((rc = crn_frame_read(fd, &buf, &len, CONTROL_MAX_FRAME)) < 0)
            break;
        m = crane__control__daemon_message__unpack(NULL, len, buf);
        free(buf);
        if (!m) {
            CRN_WARN("control: undecodable message from crane-guestd; "
                     "reconnecting");
            break;
        }
        rc = serve(fd, m);
        crane__control__daemon_message__free_unpacked(m, NULL);
    }
    if (rc < 0 && rc != -ENODATA)
        CRN_INFO("control: connection to crane-guestd lost: %s",
                 strerror(-rc));
}

static void sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000,
                          .tv_nsec = (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static void *control_main(void *arg)
{
    int last_err = 0;
    int started_fd = (int)(intptr_t)arg;

    on_control_thread = true;
    shim_wait_shown = show_wait;
    for (;;) {
        int fd = started_fd >= 0 ? started_fd : shim_control_connect();
        bool registered = started_fd >= 0;

        started_fd = -1;
        if (fd < 0) {
            /* Quiet: most programs run where no daemon is. */
            if (fd != last_err)
                CRN_DEBUG("control: no crane-guestd at %s (%s); retrying "
                          "every %d ms",
                          shim_config.control_socket, strerror(-fd),
                          CONTROL_RETRY_MS);
            last_err = fd;
            sleep_ms(CONTROL_RETRY_MS);
            continue;
        }
        last_err = 0;
        atomic_store(&ctl.fd, fd);
        shim_ctl_link_set(fd);
        if (!registered)
            CRN_INFO("control: connected to crane-guestd at %s",
                     shim_config.control_socket);
        session(fd, registered);
        /* A forked child may have closed its copy; ours is still ours. */
        shim_ctl_link_set(-1);
        atomic_store(&ctl.fd, -1);
        close(fd);
        sleep_ms(CONTROL_RETRY_MS / 4);
    }
    return NULL;
}

/* A child made by fork() has no control thread: it must not hold the
 * parent's connection open, or the daemon would not see the parent go. */
static void control_atfork_child(void)
{
    int fd = atomic_exchange(&ctl.fd, -1);
    shim_ctl_link_atfork_child();
    if (fd >= 0)
        close(fd);
}

int shim_control_start(int fd)
{
    pthread_attr_t attr;
    sigset_t all, old;
    pthread_t thread;
    int rc;

    if (!shim_config.control_socket) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    if (strlen(shim_config.control_socket) >=
        sizeof(((struct sockaddr_un *)0)->sun_path)) {
        CRN_WARN("control: CRANE_SOCKET path too long; no guest daemon "
                 "control");
        return -ENAMETOOLONG;
    }
    pthread_atfork(NULL, NULL, control_atfork_child);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    /* The thread takes no signal of the program's: created with all
     * blocked, it inherits that mask. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = -pthread_create(&thread, &attr, control_main, (void *)(intptr_t)fd);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (rc < 0 && fd >= 0)
        close(fd);
    if (rc < 0)
        CRN_WARN("control: cannot start the control thread: %s",
                 strerror(-rc));
    return rc;
}
