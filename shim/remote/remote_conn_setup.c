/* The remote backend's connection made and ended: the socket (TLS,
 * keepalive), the handshake, the attach, the shared area, the platforms
 * of the Welcome. */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proto/auth.h"
#include "proto/endpoint.h"
#include "proto/frame.h"
#include "proto/shm.h"
#include "hostmem.h"
#include "proto/tls.h"
#include "remote_conn_int.h"
#include "remote_lanes.h"

void shim_remote_maps_clear(void);

/* The socket's own liveness where the kernel can help: TCP keepalive
 * notices a peer host that is gone even when nothing is outstanding. */
static void socket_keepalive(int fd)
{
    int on = 1;
    int idle = (int)(shim_config.proxy_keepalive_ms / 1000);
    int cnt = 3;
    int intvl;

    if (shim_config.proxy_keepalive_ms <= 0)
        return;
    if (idle < 1)
        idle = 1;
    intvl = idle;
    if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on)) < 0)
        return;  /* not a TCP socket: the watchdog alone */
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
}

/* --- handshake ------------------------------------------------------------- */

static Crane__ServerMessage *read_server_message(void)
{
    uint8_t *buf;
    size_t len;

    if (crn_frame_read_on(&shim_conn.io, &buf, &len, MAX_REPLY_FRAME) < 0)
        return NULL;
    Crane__ServerMessage *m = crane__server_message__unpack(NULL, len, buf);
    free(buf);
    return m;
}

static int answer_challenge(const Crane__Challenge *ch)
{
    uint8_t mac[32];
    int rc = shim_conn_auth_mac(ch, mac);

    if (rc < 0)
        return rc;
    Crane__Auth auth = CRANE__AUTH__INIT;
    auth.mac.data = mac;
    auth.mac.len = sizeof(mac);
    RC_MSG(m, auth, AUTH, &auth);
    m.seq = ++shim_conn.seq;
    return crn_frame_write_on(&shim_conn.io, &m.base);
}

static int take_welcome(const Crane__Welcome *w)
{
    shim_conn.shm_ok = w->shm_ok;
    shim_lanes_welcome(w);
    shim_conn.platforms = calloc(w->n_platforms ? w->n_platforms : 1,
                                 sizeof(*shim_conn.platforms));
    shim_conn.platform_handles = calloc(w->n_platforms ? w->n_platforms : 1,
                                        sizeof(*shim_conn.platform_handles));
    if (!shim_conn.platforms || !shim_conn.platform_handles)
        return -ENOMEM;
    for (size_t i = 0; i < w->n_platforms; i++) {
        const Crane__PlatformDesc *pd = w->platforms[i];
        struct rc_platform *p = calloc(1, sizeof(*p));
        if (!p)
            return -ENOMEM;
        shim_conn.platforms[shim_conn.n_platforms++] = p;
        p->obj =
            (struct rc_obj){shim_proxy_table, pd->id, SHIM_PLATFORM, false};
        shim_conn.platform_handles[i] = (cl_platform_id)p;
        p->devices = calloc(pd->n_devices ? pd->n_devices : 1,
                            sizeof(*p->devices));
        if (!p->devices)
            return -ENOMEM;
        for (size_t d = 0; d < pd->n_devices; d++) {
            struct rc_device *dev = calloc(1, sizeof(*dev));
            if (!dev)
                return -ENOMEM;
            dev->obj = (struct rc_obj){shim_proxy_table, pd->devices[d]->id,
                                       SHIM_DEVICE, false};
            dev->type = pd->devices[d]->type;
            p->devices[p->n_devices++] = dev;
            shim_remote_track(&dev->obj);
        }
        shim_remote_track(&p->obj);
    }
    return 0;
}

static int handshake(void)
{
    char name[64] = "";
    FILE *f = fopen("/proc/self/comm", "re");
    if (f) {
        if (fgets(name, sizeof(name), f))
            name[strcspn(name, "\n")] = '\0';
        fclose(f);
    }
    Crane__Hello hello = CRANE__HELLO__INIT;
    hello.version = RPC_VERSION;
    hello.program = name;
    hello.pid = (uint32_t)getpid();
    RC_MSG(m, hello, HELLO, &hello);
    m.seq = ++shim_conn.seq;
    int rc = crn_frame_write_on(&shim_conn.io, &m.base);
    if (rc < 0)
        return rc;
    for (;;) {
        Crane__ServerMessage *s = read_server_message();
        if (!s) {
            CRN_ERROR("remote: the proxy closed the connection during the "
                      "handshake");
            return -ECONNRESET;
        }
        switch (s->msg_case) {
        case CRANE__SERVER_MESSAGE__MSG_CHALLENGE:
            rc = answer_challenge(s->challenge);
            crane__server_message__free_unpacked(s, NULL);
            if (rc < 0)
                return rc;
            continue;
        case CRANE__SERVER_MESSAGE__MSG_WELCOME:
            if (s->welcome->version != RPC_VERSION) {
                CRN_ERROR("remote: the proxy speaks version %u, not %u",
                          s->welcome->version, RPC_VERSION);
                rc = -EPROTO;
            } else {
                rc = take_welcome(s->welcome);
            }
            crane__server_message__free_unpacked(s, NULL);
            return rc;
        case CRANE__SERVER_MESSAGE__MSG_REFUSED:
            CRN_ERROR("remote: the proxy refused us: %s",
                      s->refused->reason);
            crane__server_message__free_unpacked(s, NULL);
            return -EACCES;
        default:
            crane__server_message__free_unpacked(s, NULL);
            return -EPROTO;
        }
    }
}

/* Sends M (seq and want_reply set here) with FD riding on its first byte
 * (SCM_RIGHTS); FD < 0: plainly. */
static int send_with_fd(Crane__ClientMessage *m, int fd)
{
    union {
        struct cmsghdr h;
        char room[CMSG_SPACE(sizeof(int))];
    } ctl;
    struct msghdr mh = {0};
    struct iovec iov;
    uint8_t buf[256];
    size_t len;

    m->seq = ++shim_conn.seq;
    m->want_reply = true;
    len = crane__client_message__get_packed_size(m);
    if (len + CRN_FRAME_HEADER_LEN > sizeof(buf))
        return -EMSGSIZE;
    crn_frame_header(buf, len);
    crane__client_message__pack(m, buf + CRN_FRAME_HEADER_LEN);
    len += CRN_FRAME_HEADER_LEN;
    if (fd < 0)
        return crn_bulk_write_on(&shim_conn.io, buf, len);
    /* The descriptor goes with the first byte; the rest follows plainly. */
    iov.iov_base = buf;
    iov.iov_len = len;
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    memset(&ctl, 0, sizeof(ctl));
    mh.msg_control = ctl.room;
    mh.msg_controllen = sizeof(ctl.room);
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof(int));
    ssize_t n;
    do
        n = sendmsg(shim_conn.io.fd, &mh, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return -errno;
    if ((size_t)n < len)
        return crn_bulk_write(shim_conn.io.fd, buf + n, len - (size_t)n);
    return 0;
}

/* Sends ShmAttach; a memfd rides on it. */
static int send_attach(const char *name)
{
    Crane__ShmAttach a = CRANE__SHM_ATTACH__INIT;
    uint8_t token[CRN_SHM_TOKEN_LEN];

    a.size = shim_conn.shm.size;
    a.ring_len = shim_conn.shm.ring_len;
    a.name = (char *)(name ? name : "");
    if (name) {
        /* A file both sides map: the proxy checks the token in it (and
         * finds an ivshmem BAR by it). */
        if (crn_shm_token_new(&shim_conn.shm, token) < 0)
            return -EIO;
        a.token.data = token;
        a.token.len = sizeof(token);
    }
    RC_MSG(m, shm_attach, SHM_ATTACH, &a);
    return send_with_fd(&m, name ? -1 : shim_conn.shm.fd);
}

/* The answer to the setup call just sent (Notifies meanwhile are routed):
 * 0, 1 when the proxy refused it (its reason in WHY), or a negative errno
 * (the stream is out of step). */
static int await_setup_reply(char *why, size_t why_len)
{
    for (;;) {
        Crane__ServerMessage *s = read_server_message();
        if (!s)
            return -ECONNRESET;
        if (s->msg_case == CRANE__SERVER_MESSAGE__MSG_NOTIFY) {
            shim_conn_notify(s->notify);
            crane__server_message__free_unpacked(s, NULL);
            continue;
        }
        if (s->msg_case != CRANE__SERVER_MESSAGE__MSG_REPLY ||
            s->reply->seq != shim_conn.seq) {
            crane__server_message__free_unpacked(s, NULL);
            return -EPROTO;
        }
        int rc = s->reply->err != 0;
        if (rc)
            snprintf(why, why_len, "%s",
                     s->reply->error ? s->reply->error : "?");
        crane__server_message__free_unpacked(s, NULL);
        return rc;
    }
}

/* At the program's end: where its bulk bytes went (tests and benchmarks
 * read it to see the in-place path taken). */
static void log_bulk_counts(void)
{
    CRN_INFO("remote: bulk bytes: %llu through the shared area's rings, "
             "%llu on the stream, %llu in place in host memory (copied by "
             "nobody)",
             (unsigned long long)atomic_load(&shim_conn.shm_bytes),
             (unsigned long long)atomic_load(&shim_conn.stream_bytes),
             (unsigned long long)atomic_load(&shim_conn.host_bytes));
}

/* Offers the process's host-memory region (hostmem.h) beside a memfd
 * area: mapped pointers then live there and their bytes are not copied.
 * A refusal leaves them in the heap; a broken stream ends the
 * connection. */
static void host_attach(void)
{
    Crane__HostAttach h = CRANE__HOST_ATTACH__INIT;
    char why[200];
    size_t size;
    int fd, rc;

    if (shim_hostmem_region(&fd, &size) < 0)
        return;
    h.size = size;
    RC_MSG(m, host_attach, HOST_ATTACH, &h);
    if ((rc = send_with_fd(&m, fd)) == 0 &&
        (rc = await_setup_reply(why, sizeof(why))) == 0) {
        static bool counted;
        shim_conn.host_on = true;
        CRN_INFO("remote: mapped pointers live in %zu MiB of host memory "
                 "in the shared area (no copies)", size >> 20);
        if (!counted)
            counted = atexit(log_bulk_counts) == 0;
        return;
    }
    if (rc == 1) {
        CRN_WARN("remote: the proxy refused the host-memory region (%s): "
                 "mapped pointers live in the heap", why);
        return;
    }
    CRN_WARN("remote: offering the host-memory region failed: %s",
             strerror(-rc));
    atomic_store(&shim_conn.dead, true);
}

/* Offers a shared area for bulk bytes (unix: endpoints get a memfd;
 * CRANE_SHM_FILE names a file both sides map, e.g. an ivshmem BAR) and
 * waits for the answer.  Any failure leaves bulk bytes on the stream. */
static void shm_attach(const struct crn_endpoint *ep)
{
    size_t ring = (size_t)shim_config.shm_mb << 19;  /* half each way */
    const char *name = NULL;
    char why[200];
    int rc;

    if (!shim_conn.shm_ok || shim_config.shm_mb <= 0)
        return;
    if (shim_config.shm_file) {
        const char *slash = strrchr(shim_config.shm_file, '/');
        name = getenv("CRANE_SHM_NAME");
        if (!name || !*name)
            name = slash ? slash + 1 : shim_config.shm_file;
        rc = crn_shm_map_file(shim_config.shm_file, ring, &shim_conn.shm);
    } else if (ep->kind == CRN_EP_UNIX) {
        rc = crn_shm_create(ring, &shim_conn.shm);
    } else {
        return;
    }
    if (rc < 0) {
        CRN_WARN("remote: no shared-memory area (%s): bulk bytes take the "
                 "stream", strerror(-rc));
        return;
    }
    if ((rc = send_attach(name)) == 0)
        rc = await_setup_reply(why, sizeof(why));
    if (rc == 1) {
        CRN_WARN("remote: the proxy refused the shared-memory area "
                 "(%s): bulk bytes take the stream", why);
        crn_shm_close(&shim_conn.shm);
        return;
    }
    if (rc == 0) {
        /* The proxy holds its own mapping: ours is enough here. */
        if (shim_conn.shm.fd >= 0)
            close(shim_conn.shm.fd);
        shim_conn.shm.fd = -1;
        shim_conn.shm_on = true;
        /* Our own memory: a native device may copy in and out of it
         * (remote_ring.c); a file may be a BAR no device can reach. */
        shim_conn.shm_memfd = !shim_config.shm_file;
        shim_conn.shm_gen++;
        atomic_store(&shim_conn.shm_in, true);
        CRN_INFO("remote: bulk bytes go through %zu MiB of shared memory%s%s",
                 shim_conn.shm.size >> 20, name ? " in " : "",
                 name ? name : "");
        /* Program pointers never live in a file area: an ivshmem BAR is
         * unplugged before its VM migrates. */
        if (!name)
            host_attach();
        return;
    }
    CRN_WARN("remote: offering the shared-memory area failed: %s",
             strerror(-rc));
    crn_shm_close(&shim_conn.shm);
    atomic_store(&shim_conn.dead, true);
}

static void free_platforms(void)
{
    for (cl_uint i = 0; i < shim_conn.n_platforms; i++) {
        for (cl_uint d = 0; d < shim_conn.platforms[i]->n_devices; d++)
            free(shim_conn.platforms[i]->devices[d]);
        free(shim_conn.platforms[i]->devices);
        free(shim_conn.platforms[i]);
    }
    free(shim_conn.platforms);
    free(shim_conn.platform_handles);
    shim_conn.platforms = NULL;
    shim_conn.platform_handles = NULL;
    shim_conn.n_platforms = 0;
}

/* Whether a kept connection still reaches a live proxy: one round trip
 * (its death may not have been seen yet). */
static bool still_there(void)
{
    Crane__Sync sy = CRANE__SYNC__INIT;
    struct rc_reply r;

    sy.op = CRANE__SYNC_OP__SYNC_PING;
    RC_MSG(m, sync, SYNC, &sy);
    cl_int err = shim_remote_call(&m, NULL, 0, NULL, 0, &r);
    shim_remote_reply_free(&r);
    if (err != CL_SUCCESS)
        CRN_INFO("remote: the kept connection is gone (%d); connecting "
                 "again", err);
    return err == CL_SUCCESS;
}

/* The socket to EP, TLS-wrapped on tcp:, or a negative errno.  A proxy
 * under a pre-authentication flood closes the oldest handshakes first
 * (docs/remoting.md), so a key holder slowed by a loaded machine can have
 * its handshake cut: a cut (-ECONNRESET, or -EPROTO: the stream ended
 * mid-handshake) is tried again with a growing pause, up to
 * CONNECT_TRIES times within CRANE_PROXY_TIMEOUT_MS (a peer without TLS
 * looks the same, so the tries stay few: 1.5 s of pauses in all).  A
 * refusal (-EACCES) or no listener is final. */
#define CONNECT_TRIES 6

static int open_stream(const struct crn_endpoint *ep, const char *text,
                       struct crn_stream *out)
{
    double give_up = shim_now() + shim_config.proxy_timeout_ms / 1000.0;
    unsigned pause_ms = 50, tries = 0;
    int fd;

    out->fd = -1;
    out->tls = NULL;
    for (;;) {
        fd = crn_endpoint_connect(ep);
        if (fd < 0) {
            CRN_ERROR("remote: cannot connect to %s: %s", text,
                      strerror(-fd));
            return fd;
        }
        socket_keepalive(fd);
        if (ep->kind != CRN_EP_TCP) {
            out->fd = fd;
            return 0;
        }
        fd = shim_conn_tls_wrap(fd, ep, text, out);
        tries++;
        if (fd >= 0 || (fd != -ECONNRESET && fd != -EPROTO) ||
            tries >= CONNECT_TRIES || shim_now() + pause_ms / 1000.0 >= give_up)
            break;
        CRN_WARN("remote: TLS handshake with %s cut (try %u): trying again "
                 "in %u ms", text, tries, pause_ms);
        usleep(pause_ms * 1000u);
        if (pause_ms < 1000)
            pause_ms *= 2;
    }
    if (fd >= 0 && tries > 1)
        CRN_INFO("remote: TLS to %s made at try %u", text, tries);
    return fd < 0 ? fd : 0;
}

/* A new connection's state, before its watchdog starts (it bounds the
 * handshake too). */
static void conn_state_reset(void)
{
    atomic_store(&shim_conn.dead, false);
    atomic_store(&shim_conn.deferred_err, 0);
    shim_conn.reads_lost = 0;
    atomic_store(&shim_conn.next_id, 1);
    shim_conn.seq = 0;
    shim_conn.chunk = shim_config.remote_chunk;
    shim_conn.spin_ns = shim_config.remote_spin_us * 1000;
    shim_conn.reading = READ_FREE;
    shim_conn_alive();
    atomic_store(&shim_conn.last_request, shim_now());
    shim_conn.last_ping = 0;
    atomic_store(&shim_conn.beat_at, 0);
    shim_conn.beat_ms = shim_conn_beat_interval();
    shim_conn.watchdog_stop = false;
    atomic_store(&shim_conn.sending, 0);
    atomic_store(&shim_conn.handshaking, true);
}

/* No shared area yet: the handshake may offer one. */
static void conn_shm_reset(void)
{
    shim_conn.shm_ok = false;
    shim_conn.shm_on = false;
    shim_conn.shm_stuck = false;
    shim_conn.host_on = false;
    shim_conn.shm_memfd = false;
    shim_conn.ring_held = 0;
    atomic_store(&shim_conn.shm_in, false);
}

/* The handshake with the proxy at EP (TEXT) and its shared area: 0, or
 * -errno (-ETIMEDOUT, noted for the report, where it never answered). */
static int conn_handshake(const struct crn_endpoint *ep, const char *text)
{
    int rc = handshake();

    if (rc == 0) {
        shm_attach(ep);
        if (atomic_load(&shim_conn.dead))
            rc = -ECONNRESET;
    }
    atomic_store(&shim_conn.handshaking, false);
    if (rc < 0 && atomic_load(&shim_conn.dead)) {
        /* The watchdog ended a handshake that got no answer. */
        rc = -ETIMEDOUT;
        shim_rehome_note("the proxy at %s accepted the connection but "
                         "never answered its handshake within %ld ms "
                         "(CRANE_PROXY_TIMEOUT_MS): frozen, or not a "
                         "crane-proxy", text, shim_config.proxy_timeout_ms);
    }
    return rc;
}

/* The reader and callback threads of an answered connection. */
static int conn_threads(void)
{
    int rc;

    shim_conn.cb_stop = false;
    if ((rc = -pthread_create(&shim_conn.reader, NULL, shim_conn_reader_main,
                              NULL)) < 0)
        return rc;
    if ((rc = -pthread_create(&shim_conn.cb_thread, NULL,
                              shim_conn_callbacks_main, NULL)) < 0) {
        shutdown(shim_conn.io.fd, SHUT_RDWR);
        pthread_join(shim_conn.reader, NULL);
    }
    return rc;
}

int shim_remote_connect(void)
{
    struct crn_endpoint ep;
    char text[400];
    int rc;

    /* A connection kept across a switch back (its objects kept as twins,
     * rehome.c) is reused while it lives; a dead one is replaced. */
    if (shim_conn.up && !atomic_load(&shim_conn.dead) && still_there())
        return 0;
    if (shim_conn.up)
        shim_remote_disconnect();
    if (!shim_config.remote ||
        crn_endpoint_parse(shim_config.remote, &ep) < 0) {
        CRN_ERROR("remote: no usable proxy endpoint (CRANE_PROXY or "
                  "CRANE_BACKEND=remote:ENDPOINT): %s",
                  shim_config.remote ? shim_config.remote : "(unset)");
        return -EINVAL;
    }
    crn_endpoint_format(&ep, text, sizeof(text));
    if ((rc = open_stream(&ep, text, &shim_conn.io)) < 0)
        return rc;
    conn_state_reset();
    if ((rc = -pthread_create(&shim_conn.watchdog, NULL,
                              shim_conn_watchdog_main, NULL)) < 0)
        goto fail_early;
    conn_shm_reset();
    if ((rc = conn_handshake(&ep, text)) < 0 || (rc = conn_threads()) < 0)
        goto fail;
    shim_conn.up = true;
    shim_conn.generation++;
    shim_conn_ask_beats();
    shim_lanes_connect(&ep, text);
    CRN_INFO("remote: connected to %s, %u platform(s)", text,
             shim_conn.n_platforms);
    return 0;
fail:
    shim_conn_watchdog_stop();
fail_early:
    atomic_store(&shim_conn.handshaking, false);
    CRN_ERROR("remote: no connection to the proxy at %s: %s", text,
              strerror(-rc));
    free_platforms();
    shim_remote_maps_clear();
    crn_shm_close(&shim_conn.shm);
    shim_conn.shm_on = false;
    atomic_store(&shim_conn.shm_in, false);
    crn_stream_close(&shim_conn.io);
    return rc;
}

void shim_remote_disconnect(void)
{
    if (!shim_conn.up)
        return;
    pthread_mutex_lock(&shim_conn.send_lock);
    shim_conn_flush_locked();
    atomic_store(&shim_conn.dead, true);
    shutdown(shim_conn.io.fd, SHUT_RDWR);
    pthread_mutex_unlock(&shim_conn.send_lock);
    shim_lanes_disconnect();
    pthread_join(shim_conn.reader, NULL);
    pthread_mutex_lock(&shim_conn.lock);
    /* A caller reading its own answer sees the stream end: the descriptor
     * stays open until it has let go. */
    while (shim_conn.reading == READ_CALLER)
        pthread_cond_wait(&shim_conn.read_cond, &shim_conn.lock);
    shim_conn.cb_stop = true;
    pthread_cond_signal(&shim_conn.cb_cond);
    pthread_mutex_unlock(&shim_conn.lock);
    pthread_join(shim_conn.cb_thread, NULL);
    shim_conn_watchdog_stop();
    crn_stream_close(&shim_conn.io);
    free(shim_conn.batch);
    shim_conn.batch = NULL;
    shim_conn.batch_len = shim_conn.batch_cap = 0;
    free_platforms();
    shim_remote_maps_clear();
    shim_conn.shm_on = false;
    shim_conn.host_on = false;
    atomic_store(&shim_conn.shm_in, false);
    crn_shm_close(&shim_conn.shm);
    shim_conn.up = false;
}

int shim_remote_platforms(cl_platform_id **out, cl_uint *n)
{
    *out = shim_conn.platform_handles;
    *n = shim_conn.n_platforms;
    return shim_conn.up ? 0 : -ENOTCONN;
}
