/* Stand-ins for the peer protocol's tests: a destination crane-hostd serving
 * one connection, a scripted destination (the double), raw frames. */
#include "peer_standins.h"

#include "harness.h"

#include "host-daemon/arrive.h"
#include "host-daemon/config.h"
#include "host-daemon/pool.h"
#include "proto/auth.h"
#include "proto/frame.h"
#include "proto/tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void *serve_one(void *p)
{
    struct server *s = p;
    int fd = accept(s->lfd, NULL, NULL);

    if (fd >= 0)
        hd_peer_serve(&s->d, fd);
    return NULL;
}

/* A destination with KEY (NULL: none), backend OPS (NULL: none, and no
 * hypervisor handle either way) and an empty GPU pool, serving one
 * connection on a loopback port. */
void server_start_ops(struct server *s, const char *key,
                      const struct hv_ops *ops)
{
    struct sockaddr_in sa = { .sin_family = AF_INET };
    socklen_t len = sizeof(sa);
    char why[200];

    memset(s, 0, sizeof(*s));
    hd_config_defaults(&s->d.cfg);
    snprintf(s->d.cfg.host_name, sizeof(s->d.cfg.host_name), "dst");
    s->d.hv_ops = ops;
    if (key) {
        s->d.key = (uint8_t *)strdup(key);
        s->d.key_len = strlen(key);
    }
    CHECK_INT(hd_pool_new(&s->d.cfg, &s->d.pool, why, sizeof(why)), ==, 0);
    CHECK_INT(hd_waiting_new(&s->d.waiting), ==, 0);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    s->lfd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(s->lfd >= 0);
    CHECK_INT(bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
    CHECK_INT(listen(s->lfd, 4), ==, 0);
    CHECK_INT(getsockname(s->lfd, (struct sockaddr *)&sa, &len), ==, 0);
    s->port = ntohs(sa.sin_port);
    CHECK_INT(pthread_create(&s->thread, NULL, serve_one, s), ==, 0);
}

void server_start(struct server *s, const char *key)
{
    server_start_ops(s, key, NULL);
}

void server_stop(struct server *s)
{
    shutdown(s->lfd, SHUT_RDWR);
    pthread_join(s->thread, NULL);
    close(s->lfd);
    hd_pool_free(s->d.pool);
    hd_waiting_free(s->d.waiting);
    free(s->d.key);
}

/* The source's TLS in the tests that set it (NULL: in clear). */
struct crn_tls_config *client_tls;

int open_peer(struct server *s, const char *key, struct hd_peer **p,
              char *why, size_t why_len)
{
    char ep[64];

    snprintf(ep, sizeof(ep), "tcp:127.0.0.1:%u", s->port);
    return hd_peer_open(ep, client_tls, (const uint8_t *)key,
                        key ? strlen(key) : 0, "src", p, why, why_len);
}

/* The backend that accepts a XenStream, or NULL in a build without it.
 * The test daemon's hypervisor handle stays NULL: a real receiver then
 * gives up at once (hv_libxl_receive's -EINVAL), reading nothing. */
const struct hv_ops *libxl_ops(void)
{
#ifdef HD_HAVE_LIBXL
    return &hv_libxl_ops;
#else
    return NULL;
#endif
}

int raw_connect(uint16_t port)
{
    struct sockaddr_in sa = { .sin_family = AF_INET };
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    CHECK(fd >= 0);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = htons(port);
    CHECK_INT(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
    return fd;
}

/* One PeerReply frame from FD; NULL at the end of the stream or on
 * garbage. */
Crane__Hostd__PeerReply *read_reply(int fd)
{
    Crane__Hostd__PeerReply *r;
    uint8_t *buf;
    size_t len;

    if (crn_frame_read(fd, &buf, &len, HD_PEER_MAX_FRAME) < 0)
        return NULL;
    r = crane__hostd__peer_reply__unpack(NULL, len, buf);
    free(buf);
    return r;
}

/* Sends a XenStream for vm1 on FD, raw. */
void send_xen_stream(int fd, uint64_t id)
{
    Crane__Hostd__PeerRequest req = CRANE__HOSTD__PEER_REQUEST__INIT;
    Crane__Hostd__XenStream x = CRANE__HOSTD__XEN_STREAM__INIT;

    x.migration_id = "m-1";
    x.domain = "vm1";
    req.id = id;
    req.msg_case = CRANE__HOSTD__PEER_REQUEST__MSG_XEN_STREAM;
    req.xen_stream = &x;
    CHECK_INT(crn_frame_write(fd, &req.base), ==, 0);
}

int open_stream(uint16_t port, const char *key, const char *id,
                const char *domain, int *fd, char *why, size_t len)
{
    char ep[64];

    snprintf(ep, sizeof(ep), "tcp:127.0.0.1:%u", port);
    return hd_peer_open_xen_stream(ep, client_tls, (const uint8_t *)key,
                                   key ? strlen(key) : 0, "src", id, domain,
                                   fd, why, len);
}

static Crane__Hostd__PeerRequest *double_read(int fd)
{
    Crane__Hostd__PeerRequest *q;
    uint8_t *buf;
    size_t len;

    if (crn_frame_read(fd, &buf, &len, HD_PEER_MAX_FRAME) < 0)
        return NULL;
    q = crane__hostd__peer_request__unpack(NULL, len, buf);
    free(buf);
    return q;
}

/* HMAC(key, LABEL || NONCE), as peer.c proves a key. */
static void double_proof(const char *key, const char *label,
                         const uint8_t *nonce, uint8_t mac[32])
{
    uint8_t msg[64 + 32];
    size_t l = strlen(label);

    memcpy(msg, label, l);
    memcpy(msg + l, nonce, 32);
    crn_hmac_sha256(key, strlen(key), msg, l + 32, mac);
}

/* The reply frame R followed by EXTRA raw bytes, in one write. */
static int double_send(int fd, Crane__Hostd__PeerReply *r,
                       const uint8_t *extra, size_t extra_len)
{
    uint8_t buf[512];
    size_t n = crane__hostd__peer_reply__get_packed_size(r);

    if (4 + n + extra_len > sizeof(buf))
        return -EMSGSIZE;
    buf[0] = (uint8_t)(n >> 24);
    buf[1] = (uint8_t)(n >> 16);
    buf[2] = (uint8_t)(n >> 8);
    buf[3] = (uint8_t)n;
    crane__hostd__peer_reply__pack(r, buf + 4);
    if (extra_len)
        memcpy(buf + 4 + n, extra, extra_len);
    n += 4 + extra_len;
    return write(fd, buf, n) == (ssize_t)n ? 0 : -EIO;
}

static void double_conversation(struct double_server *ds, int fd)
{
    Crane__Hostd__PeerReply r = CRANE__HOSTD__PEER_REPLY__INIT;
    Crane__Hostd__Challenge c = CRANE__HOSTD__CHALLENGE__INIT;
    Crane__Hostd__Welcome w = CRANE__HOSTD__WELCOME__INIT;
    Crane__Hostd__Refused f = CRANE__HOSTD__REFUSED__INIT;
    Crane__Hostd__CheckReply cr = CRANE__HOSTD__CHECK_REPLY__INIT;
    Crane__Hostd__XenStreamReply x = CRANE__HOSTD__XEN_STREAM_REPLY__INIT;
    Crane__Hostd__PeerRequest *q;
    uint8_t nonce[32], mac[32], extra = 0x5a, verdict = 0;

    /* Hello -> Challenge */
    if (!(q = double_read(fd)) ||
        q->msg_case != CRANE__HOSTD__PEER_REQUEST__MSG_HELLO ||
        q->hello->nonce.len != 32) {
        snprintf(ds->failed, sizeof(ds->failed), "no hello");
        goto out;
    }
    double_proof(ds->key, "crane-hostd server", q->hello->nonce.data, mac);
    crn_random_bytes(nonce, sizeof(nonce));
    c.nonce.data = nonce;
    c.nonce.len = sizeof(nonce);
    c.mac.data = mac;
    c.mac.len = sizeof(mac);
    c.host = "double";
    r.id = q->id;
    r.msg_case = CRANE__HOSTD__PEER_REPLY__MSG_CHALLENGE;
    r.challenge = &c;
    crane__hostd__peer_request__free_unpacked(q, NULL);
    if (double_send(fd, &r, NULL, 0) < 0) {
        snprintf(ds->failed, sizeof(ds->failed), "cannot send challenge");
        return;
    }
    /* Auth -> Welcome */
    double_proof(ds->key, "crane-hostd client", nonce, mac);
    if (!(q = double_read(fd)) ||
        q->msg_case != CRANE__HOSTD__PEER_REQUEST__MSG_AUTH ||
        q->auth->mac.len != 32 || memcmp(q->auth->mac.data, mac, 32) != 0) {
        snprintf(ds->failed, sizeof(ds->failed), "bad auth");
        goto out;
    }
    w.host = "double";
    r.id = q->id;
    r.msg_case = CRANE__HOSTD__PEER_REPLY__MSG_WELCOME;
    r.welcome = &w;
    crane__hostd__peer_request__free_unpacked(q, NULL);
    if (double_send(fd, &r, NULL, 0) < 0) {
        snprintf(ds->failed, sizeof(ds->failed), "cannot send welcome");
        return;
    }
    /* XenStream -> the answer of this mode */
    if (!(q = double_read(fd)) ||
        q->msg_case != CRANE__HOSTD__PEER_REQUEST__MSG_XEN_STREAM) {
        snprintf(ds->failed, sizeof(ds->failed), "no xen stream request");
        goto out;
    }
    snprintf(ds->migration_id, sizeof(ds->migration_id), "%s",
             q->xen_stream->migration_id);
    snprintf(ds->domain, sizeof(ds->domain), "%s", q->xen_stream->domain);
    r.id = q->id;
    switch (ds->mode) {
    case DOUBLE_ACCEPT:
        x.host = "double";
        r.msg_case = CRANE__HOSTD__PEER_REPLY__MSG_XEN_STREAM;
        r.xen_stream = &x;
        break;
    case DOUBLE_REFUSE:
    case DOUBLE_REFUSE_ODD:
        f.err = ds->mode == DOUBLE_REFUSE ? -EBUSY : 7;
        f.error = "busy\x01now";
        r.msg_case = CRANE__HOSTD__PEER_REPLY__MSG_REFUSED;
        r.refused = &f;
        break;
    case DOUBLE_WRONG_REPLY:
        r.msg_case = CRANE__HOSTD__PEER_REPLY__MSG_CHECK;
        r.check = &cr;
        break;
    }
    crane__hostd__peer_request__free_unpacked(q, NULL);
    q = NULL;
    if (double_send(fd, &r, &extra, ds->mode == DOUBLE_ACCEPT) < 0) {
        snprintf(ds->failed, sizeof(ds->failed), "cannot answer");
        return;
    }
    if (ds->mode != DOUBLE_ACCEPT)
        return;
    /* The stream, raw. */
    if (crn_bulk_read(fd, ds->header, sizeof(ds->header)) < 0 ||
        crn_bulk_write(fd, &verdict, 1) < 0)
        snprintf(ds->failed, sizeof(ds->failed), "no raw stream");
out:
    if (q)
        crane__hostd__peer_request__free_unpacked(q, NULL);
}

static void *double_serve(void *arg)
{
    struct double_server *ds = arg;
    uint8_t b;
    int fd = accept(ds->lfd, NULL, NULL);

    if (fd < 0) {
        snprintf(ds->failed, sizeof(ds->failed), "no connection");
        return NULL;
    }
    if (ds->tls) {
        char why[300];
        fd = crn_tls_wrap_server(ds->tls, fd, 5000, why, sizeof(why));
        if (fd < 0) {
            snprintf(ds->failed, sizeof(ds->failed), "%.150s", why);
            return NULL;
        }
    }
    double_conversation(ds, fd);
    /* Until the client lets go. */
    while (read(fd, &b, 1) > 0)
        ;
    close(fd);
    return NULL;
}

/* TLS (NULL: none) is what the stand-in speaks under the protocol. */
void double_start_tls(struct double_server *ds,
                      struct crn_tls_config *tls, const char *key,
                      enum double_mode mode)
{
    struct sockaddr_in sa = { .sin_family = AF_INET };
    socklen_t len = sizeof(sa);

    memset(ds, 0, sizeof(*ds));
    ds->tls = tls;
    ds->key = key;
    ds->mode = mode;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ds->lfd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(ds->lfd >= 0);
    CHECK_INT(bind(ds->lfd, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
    CHECK_INT(listen(ds->lfd, 1), ==, 0);
    CHECK_INT(getsockname(ds->lfd, (struct sockaddr *)&sa, &len), ==, 0);
    ds->port = ntohs(sa.sin_port);
    CHECK_INT(pthread_create(&ds->thread, NULL, double_serve, ds), ==, 0);
}

void double_start(struct double_server *ds, const char *key,
                  enum double_mode mode)
{
    double_start_tls(ds, NULL, key, mode);
}

void double_stop(struct double_server *ds)
{
    shutdown(ds->lfd, SHUT_RDWR);
    pthread_join(ds->thread, NULL);
    close(ds->lfd);
}

