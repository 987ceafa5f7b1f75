/* The host-to-host protocol: the source's client, the destination's server. */
#include "peer.h"

#include "arrive.h"
#include "host-daemon/history/history.h"
#include "io.h"
#include "proto/log.h"
#include "pool.h"
#include "want.h"
#include "proto/auth.h"
#include "proto/endpoint.h"
#include "proto/frame.h"

#ifdef HD_HAVE_LIBXL
#include "host-daemon/hv/hv_libxl.h"
#endif

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define PEER_NONCE_LEN 32
#define PEER_HANDSHAKE_MS 10000
/* A connection with no request for this long is closed. */
#define PEER_IDLE_S 600
/* How long the source waits for a XenStream to be accepted. */
#define PEER_STREAM_ACCEPT_MS 10000
/* libxl's stream has no deadline of its own: a source that vanishes
 * mid-stream is noticed by TCP keepalive, after about two minutes. */
#define PEER_STREAM_KEEPIDLE_S 60
#define PEER_STREAM_KEEPINTVL_S 10
#define PEER_STREAM_KEEPCNT 6

static const char server_label[] = "crane-hostd server";
static const char client_label[] = "crane-hostd client";

struct hd_peer {
    int fd;
    uint64_t next_id;
    char host[256];
};

/* HMAC(key, LABEL || NONCE) */
static int proof(const uint8_t *key, size_t key_len, const char *label,
                 const uint8_t *nonce, size_t nonce_len, uint8_t out[32])
{
    uint8_t msg[64 + PEER_NONCE_LEN];
    size_t l = strlen(label);

    if (nonce_len != PEER_NONCE_LEN || l > 64)
        return -EINVAL;
    memcpy(msg, label, l);
    memcpy(msg + l, nonce, nonce_len);
    return crn_hmac_sha256(key, key_len, msg, l + nonce_len, out);
}

static int same_mac(const uint8_t *a, const ProtobufCBinaryData *b)
{
    return b->len == CRN_SHA256_LEN && crn_auth_equal(a, b->data, b->len);
}

static void copy_host(char *dst, size_t len, const char *src)
{
    size_t i = 0;

    /* A peer's name goes to logs and history: printable ASCII only. */
    for (; src && src[i] && i + 1 < len; i++)
        dst[i] = src[i] > 32 && src[i] < 127 ? src[i] : '?';
    dst[i] = '\0';
}

/* Text from a peer for logs and history: printable ASCII and spaces. */
static void copy_text(char *dst, size_t len, const char *src)
{
    size_t i = 0;

    for (; src && src[i] && i + 1 < len; i++)
        dst[i] = src[i] >= 32 && src[i] < 127 ? src[i] : '?';
    dst[i] = '\0';
}

/* A migration id as the history stores it: [A-Za-z0-9._-], 1..HD_ID_MAX. */
static bool valid_id(const char *s)
{
    size_t n = s ? strlen(s) : 0;

    return n > 0 && n <= HD_ID_MAX &&
           strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                     "0123456789._-") == n;
}

/* A domain name: 1..HV_NAME_MAX bytes, no control characters. */
static bool valid_domain(const char *s)
{
    size_t n = s ? strlen(s) : 0;

    if (n == 0 || n > HV_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 32 || s[i] == 127)
            return false;
    return true;
}

/* --- client -------------------------------------------------------------- */

static int exchange(struct hd_peer *p, Crane__Hostd__PeerRequest *req,
                    double deadline, Crane__Hostd__PeerReply **out)
{
    uint8_t *buf;
    size_t len;
    int rc;

    req->id = ++p->next_id;
    if ((rc = crn_frame_write(p->fd, &req->base)) < 0)
        return rc;
    for (;;) {
        Crane__Hostd__PeerReply *r;

        if ((rc = hd_frame_read_by(p->fd, HD_PEER_MAX_FRAME, deadline, &buf,
                                   &len)) < 0)
            return rc;
        r = crane__hostd__peer_reply__unpack(NULL, len, buf);
        free(buf);
        if (!r || r->msg_case == CRANE__HOSTD__PEER_REPLY__MSG__NOT_SET) {
            if (r)
                crane__hostd__peer_reply__free_unpacked(r, NULL);
            return -EPROTO;
        }
        if (r->id == req->id) {
            *out = r;
            return 0;
        }
        crane__hostd__peer_reply__free_unpacked(r, NULL);
    }
}

static int handshake(struct hd_peer *p, const uint8_t *key, size_t key_len,
                     const char *my_host, char *why, size_t why_len)
{
    Crane__Hostd__PeerRequest req = CRANE__HOSTD__PEER_REQUEST__INIT;
    Crane__Hostd__Hello hello = CRANE__HOSTD__HELLO__INIT;
    Crane__Auth auth = CRANE__AUTH__INIT;
    Crane__Hostd__PeerReply *r = NULL;
    double deadline = hd_now() + PEER_HANDSHAKE_MS / 1000.0;
    uint8_t nonce[PEER_NONCE_LEN], mac[CRN_SHA256_LEN];
    int rc;

    if ((rc = crn_random_bytes(nonce, sizeof(nonce))) < 0)
        return rc;
    hello.version = 1;
    hello.nonce.data = nonce;
    hello.nonce.len = sizeof(nonce);
    hello.host = (char *)my_host;
    req.msg_case = CRANE__HOSTD__PEER_REQUEST__MSG_HELLO;
    req.hello = &hello;
    if ((rc = exchange(p, &req, deadline, &r)) < 0) {
        snprintf(why, why_len, "no answer to hello: %s", strerror(-rc));
        return rc;
    }
    if (r->msg_case == CRANE__HOSTD__PEER_REPLY__MSG_REFUSED) {
        snprintf(why, why_len, "refused: %.200s", r->refused->error);
        rc = -EACCES;
    } else if (r->msg_case == CRANE__HOSTD__PEER_REPLY__MSG_WELCOME) {
        copy_host(p->host, sizeof(p->host), r->welcome->host);
        if (key) {
            snprintf(why, why_len, "%s does not authenticate (no peer_key "
                     "there) but we have a key", p->host);
            rc = -EACCES;
        }
    } else if (r->msg_case == CRANE__HOSTD__PEER_REPLY__MSG_CHALLENGE) {
        Crane__Hostd__Challenge *c = r->challenge;

        copy_host(p->host, sizeof(p->host), c->host);
        if (!key) {
            snprintf(why, why_len, "%s asks for a key and we have none "
                     "(peer_key)", p->host);
            rc = -EACCES;
        } else if (proof(key, key_len, server_label, nonce, sizeof(nonce),
                         mac) < 0 || !same_mac(mac, &c->mac)) {
            snprintf(why, why_len, "%s does not hold our key", p->host);
            rc = -EACCES;
        } else if ((rc = proof(key, key_len, client_label, c->nonce.data,
                               c->nonce.len, mac)) < 0) {
            snprintf(why, why_len, "bad challenge from %s", p->host);
            rc = -EPROTO;
        } else {
            crane__hostd__peer_reply__free_unpacked(r, NULL);
            r = NULL;
            auth.mac.data = mac;
            auth.mac.len = sizeof(mac);
            req.msg_case = CRANE__HOSTD__PEER_REQUEST__MSG_AUTH;
            req.auth = &auth;
            if ((rc = exchange(p, &req, deadline, &r)) < 0) {
                snprintf(why, why_len, "no answer to auth: %s",
                         strerror(-rc));
                return rc;
            }
            if (r->msg_case != CRANE__HOSTD__PEER_REPLY__MSG_WELCOME) {
                snprintf(why, why_len, "%s refused our key", p->host);
                rc = -EACCES;
            }
        }
    } else {
        snprintf(why, why_len, "unexpected answer to hello");
        rc = -EPROTO;
    }
    crane__hostd__peer_reply__free_unpacked(r, NULL);
    return rc;
}

int hd_peer_open(const char *endpoint, const struct crn_tls_config *tls,
                 const uint8_t *key, size_t key_len,
                 const char *my_host, struct hd_peer **out, char *why,
                 size_t why_len)
{
    struct crn_endpoint ep;
    struct hd_peer *p;
    int rc;

    if (crn_endpoint_parse(endpoint, &ep) < 0) {
        snprintf(why, why_len, "bad peer endpoint '%s'", endpoint);
        return -EINVAL;
    }
    if (!(p = calloc(1, sizeof(*p))))
        return -ENOMEM;
    if ((p->fd = crn_endpoint_connect(&ep)) < 0) {
        rc = p->fd;
        snprintf(why, why_len, "cannot connect to %s: %s", endpoint,
                 strerror(-rc));
        free(p);
        return rc;
    }
    if (tls) {
        char tls_why[400];
        p->fd = crn_tls_wrap_client(tls, p->fd, ep.host, PEER_HANDSHAKE_MS,
                                    tls_why, sizeof(tls_why));
        if (p->fd < 0) {
            rc = p->fd;
            snprintf(why, why_len, "%s: %s", endpoint, tls_why);
            free(p);
            return rc;
        }
    }
    hd_send_timeout(p->fd, 30);
    if ((rc = handshake(p, key, key_len, my_host, why, why_len)) < 0) {
        hd_peer_close(p);
        return rc;
    }
    *out = p;
    return 0;
}

const char *hd_peer_host(const struct hd_peer *p)
{
    return p->host;
}

int hd_peer_call(struct hd_peer *p, Crane__Hostd__PeerRequest *req,
                 uint32_t timeout_ms, Crane__Hostd__PeerReply **out)
{
    return exchange(p, req, hd_now() + timeout_ms / 1000.0, out);
}

void hd_peer_close(struct hd_peer *p)
{
    if (!p)
        return;
    if (p->fd >= 0)
        close(p->fd);
    free(p);
}

int hd_peer_open_xen_stream(const char *endpoint,
                            const struct crn_tls_config *tls,
                            const uint8_t *key, size_t key_len, const char *my_host,
                            const char *migration_id, const char *domain,
                            int *fd, char *why, size_t why_len)
{
    Crane__Hostd__PeerRequest req = CRANE__HOSTD__PEER_REQUEST__INIT;
    Crane__Hostd__XenStream x = CRANE__HOSTD__XEN_STREAM__INIT;
    Crane__Hostd__PeerReply *r = NULL;
    struct hd_peer *p = NULL;
    char text[256];
    int rc;

    if (!fd || !valid_id(migration_id) || !valid_domain(domain)) {
        snprintf(why, why_len, "bad migration id or domain name");
        return -EINVAL;
    }
    if ((rc = hd_peer_open(endpoint, tls, key, key_len, my_host, &p, why,
                           why_len)) < 0)
        return rc;
    x.migration_id = (char *)migration_id;
    x.domain = (char *)domain;
    req.msg_case = CRANE__HOSTD__PEER_REQUEST__MSG_XEN_STREAM;
    req.xen_stream = &x;
    if ((rc = hd_peer_call(p, &req, PEER_STREAM_ACCEPT_MS, &r)) < 0) {
        snprintf(why, why_len, "%s did not answer the stream request: %s",
                 p->host, strerror(-rc));
    } else if (r->msg_case == CRANE__HOSTD__PEER_REPLY__MSG_REFUSED) {
        /* Its own errno when it is one, for the caller's rollback. */
        rc = r->refused->err < 0 && r->refused->err > -4096
                 ? r->refused->err
                 : -EPROTO;
        copy_text(text, sizeof(text), r->refused->error);
        snprintf(why, why_len, "%s refused the stream: %s", p->host, text);
    } else if (r->msg_case != CRANE__HOSTD__PEER_REPLY__MSG_XEN_STREAM) {
        rc = -EPROTO;
        snprintf(why, why_len, "unexpected answer from %s to the stream "
                 "request", p->host);
    }
    if (r)
        crane__hostd__peer_reply__free_unpacked(r, NULL);
    if (rc == 0) {
        *fd = p->fd;
        p->fd = -1;
    }
    hd_peer_close(p);
    return rc;
}

/* --- server -------------------------------------------------------------- */

static int reply(int fd, Crane__Hostd__PeerReply *r)
{
    return crn_frame_write(fd, &r->base);
}

static int refuse(int fd, uint64_t id, int err, const char *why)
{
    Crane__Hostd__PeerReply r = CRANE__HOSTD__PEER_REPLY__INIT;
    Crane__Hostd__Refused f = CRANE__HOSTD__REFUSED__INIT;

    f.err = err;
    f.error = (char *)why;
    r.id = id;
    r.msg_case = CRANE__HOSTD__PEER_REPLY__MSG_REFUSED;
    r.refused = &f;
    return reply(fd, &r);
}

/* Reads one request by DEADLINE; NULL on close, error or garbage. */
static Crane__Hostd__PeerRequest *read_request(int fd, double deadline,
                                               const char *who)
{
    Crane__Hostd__PeerRequest *q;
    uint8_t *buf;
    size_t len;
    int rc;

    if ((rc = hd_frame_read_by(fd, HD_PEER_MAX_FRAME, deadline, &buf,
                               &len)) < 0) {
        if (rc != -ENODATA)
            CRN_WARN("peer %s: %s", who, strerror(-rc));
        return NULL;
    }
    q = crane__hostd__peer_request__unpack(NULL, len, buf);
    free(buf);
    if (!q || q->msg_case == CRANE__HOSTD__PEER_REQUEST__MSG__NOT_SET) {
        CRN_WARN("peer %s: malformed request", who);
        if (q)
            crane__hostd__peer_request__free_unpacked(q, NULL);
        return NULL;
    }
    return q;
}

/* Hello -> Challenge -> Auth -> Welcome, or Hello -> Welcome without a
 * key.  0 when the peer may go on; WHO gets its name. */
static int serve_handshake(struct hd_daemon *d, int fd, char *who,
                           size_t who_len)
{
    Crane__Hostd__PeerReply r = CRANE__HOSTD__PEER_REPLY__INIT;
    Crane__Hostd__Challenge c = CRANE__HOSTD__CHALLENGE__INIT;
    Crane__Hostd__Welcome w = CRANE__HOSTD__WELCOME__INIT;
    Crane__Hostd__PeerRequest *q;
    double deadline = hd_now() + PEER_HANDSHAKE_MS / 1000.0;
    uint8_t nonce[PEER_NONCE_LEN], mac[CRN_SHA256_LEN];
    int rc = -EACCES;

    if (!(q = read_request(fd, deadline, who)))
        return -EPROTO;
    if (q->msg_case != CRANE__HOSTD__PEER_REQUEST__MSG_HELLO ||
        q->hello->version != 1) {
        refuse(fd, q->id, -EPROTO, "expected hello, version 1");
        crane__hostd__peer_request__free_unpacked(q, NULL);
        return -EPROTO;
    }
    copy_host(who, who_len, q->hello->host);
    w.host = d->cfg.host_name;
    r.id = q->id;
    if (!d->key) {
        r.msg_case = CRANE__HOSTD__PEER_REPLY__MSG_WELCOME;
        r.welcome = &w;
        crane__hostd__peer_request__free_unpacked(q, NULL);
        return reply(fd, &r);
    }
    if (proof(d->key, d->key_len, server_label, q->hello->nonce.data,
              q->hello->nonce.len, mac) < 0 ||
        crn_random_bytes(nonce, sizeof(nonce)) < 0) {
        refuse(fd, q->id, -EPROTO, "bad hello");
        crane__hostd__peer_request__free_unpacked(q, NULL);
        return -EPROTO;
    }
    crane__hostd__peer_request__free_unpacked(q, NULL);
    c.nonce.data = nonce;
    c.nonce.len = sizeof(nonce);
    c.mac.data = mac;
    c.mac.len = sizeof(mac);
    c.host = d->cfg.host_name;
    r.msg_case = CRANE__HOSTD__PEER_REPLY__MSG_CHALLENGE;
    r.challenge = &c;
    if ((rc = reply(fd, &r)) < 0)
        return rc;
    if (!(q = read_request(fd, deadline, who)))
        return -EPROTO;
    if (q->msg_case != CRANE__HOSTD__PEER_REQUEST__MSG_AUTH ||
        proof(d->key, d->key_len, client_label, nonce, sizeof(nonce),
              mac) < 0 ||
        !same_mac(mac, &q->auth->mac)) {
        CRN_WARN("peer %s: authentication failed", who);
        refuse(fd, q->id, -EACCES, "authentication failed");
        crane__hostd__peer_request__free_unpacked(q, NULL);
        return -EACCES;
    }
    r.id = q->id;
    r.msg_case = CRANE__HOSTD__PEER_REPLY__MSG_WELCOME;
    r.welcome = &w;
    crane__hostd__peer_request__free_unpacked(q, NULL);
    return reply(fd, &r);
}

static int serve_check(struct hd_daemon *d, int fd, uint64_t id,
                       const Crane__Hostd__Check *q)
{
    Crane__Hostd__PeerReply r = CRANE__HOSTD__PEER_REPLY__INIT;
    Crane__Hostd__CheckReply c = CRANE__HOSTD__CHECK_REPLY__INIT;
    struct hd_gpu_want want = { .n = 0 };
    unsigned free_count = 0, matching = 0;
    int rc;

    if (hd_want_parse(0, q->gpu_models, q->n_gpu_models, &want) < 0 ||
        hd_want_set_mem(&want, q->gpu_mem_gib, q->n_gpu_mem_gib) < 0)
        return refuse(fd, id, -EINVAL, "check: more GPUs than a pool "
                      "holds, or a bad model or memory size");
    if ((rc = hd_pool_free_count(d->pool, d->hv_ops, d->hv, &free_count)) < 0 ||
        (rc = hd_pool_free_matching(d->pool, d->hv_ops, d->hv, &want,
                                    &matching)) < 0)
        return refuse(fd, id, rc, "cannot read the GPU pool");
    c.gpus_matching = matching;
    c.gpus_total = (uint32_t)hd_pool_size(d->pool);
    c.gpus_free = free_count;
    c.host = d->cfg.host_name;
    r.id = id;
    r.msg_case = CRANE__HOSTD__PEER_REPLY__MSG_CHECK;
    r.check = &c;
    return reply(fd, &r);
}

/* Whether this daemon's backend is libxl, which alone takes XenStream. */
static bool backend_is_libxl(const struct hd_daemon *d)
{
#ifdef HD_HAVE_LIBXL
    return d->hv_ops == &hv_libxl_ops;
#else
    (void)d;
    return false;
#endif
}

/* Makes a source that disappears mid-stream end the connection. */
static void keepalive(int fd)
{
    int on = 1, idle = PEER_STREAM_KEEPIDLE_S,
        intvl = PEER_STREAM_KEEPINTVL_S, cnt = PEER_STREAM_KEEPCNT;

    /* Best effort: without it the stream still works. */
    if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on)) == 0) {
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
    }
}

/* XenStream: once accepted, the rest of the connection is a libxl
 * migration for hv_libxl_receive, on this (job) thread.  The connection
 * ends after it, whatever the outcome. */
static int serve_xen_stream(struct hd_daemon *d, int fd, uint64_t id,
                            const Crane__Hostd__XenStream *x,
                            const char *who)
{
    Crane__Hostd__PeerReply r = CRANE__HOSTD__PEER_REPLY__INIT;
    Crane__Hostd__XenStreamReply a = CRANE__HOSTD__XEN_STREAM_REPLY__INIT;
    char dom[HV_NAME_MAX + 1];
    int rc;

    if (!valid_id(x->migration_id) || !valid_domain(x->domain)) {
        CRN_WARN("peer %s: bad xen stream request", who);
        refuse(fd, id, -EINVAL, "bad xen stream: migration id or domain "
               "name");
        return -EINVAL;
    }
    if (!backend_is_libxl(d)) {
        CRN_WARN("peer %s: refused the libxl stream of migration %s: this "
                "host's backend is %s", who, x->migration_id,
                d->hv_ops ? d->hv_ops->name : "none");
        refuse(fd, id, -EOPNOTSUPP, "this host's backend is not libxl");
        return -EOPNOTSUPP;
    }
    copy_text(dom, sizeof(dom), x->domain);
    keepalive(fd);
    a.host = d->cfg.host_name;
    r.id = id;
    r.msg_case = CRANE__HOSTD__PEER_REPLY__MSG_XEN_STREAM;
    r.xen_stream = &a;
    if ((rc = reply(fd, &r)) < 0)
        return rc;
    CRN_INFO("peer %s: receiving %s (migration %s) with libxl", who, dom,
            x->migration_id);
#ifdef HD_HAVE_LIBXL
    rc = hv_libxl_receive(d->hv, fd);
#else
    rc = -EOPNOTSUPP;                  /* not reached: backend_is_libxl */
#endif
    if (rc < 0)
        CRN_WARN("peer %s: %s (migration %s) not received: %s", who, dom,
                x->migration_id, strerror(-rc));
    else
        CRN_INFO("peer %s: %s (migration %s) received", who, dom,
                x->migration_id);
    return rc;
}

void hd_peer_serve(struct hd_daemon *d, int fd)
{
    char who[256] = "?";
    bool last = false;
    int rc;

    if (d->tls) {
        char addr[64], why[400];
        crn_endpoint_peer_name(fd, addr, sizeof(addr));
        fd = crn_tls_wrap_server(d->tls, fd, PEER_HANDSHAKE_MS, why,
                                 sizeof(why));
        if (fd < 0) {
            CRN_WARN("peer connection from %s refused: %s", addr, why);
            return;
        }
    }
    hd_send_timeout(fd, 30);
    if (serve_handshake(d, fd, who, sizeof(who)) < 0) {
        close(fd);
        return;
    }
    CRN_INFO("peer %s: connected", who);
    for (;;) {
        Crane__Hostd__PeerRequest *q =
            read_request(fd, hd_now() + PEER_IDLE_S, who);

        if (!q)
            break;
        switch (q->msg_case) {
        case CRANE__HOSTD__PEER_REQUEST__MSG_CHECK:
            rc = serve_check(d, fd, q->id, q->check);
            break;
        case CRANE__HOSTD__PEER_REQUEST__MSG_ARRIVE:
            rc = hd_arrive_serve(d, fd, q->id, q->arrive, who);
            break;
        case CRANE__HOSTD__PEER_REQUEST__MSG_XEN_STREAM:
            rc = serve_xen_stream(d, fd, q->id, q->xen_stream, who);
            last = true;
            break;
        default:
            rc = refuse(fd, q->id, -EPROTO, "unexpected request");
            break;
        }
        crane__hostd__peer_request__free_unpacked(q, NULL);
        if (rc < 0 || last)
            break;
    }
    CRN_INFO("peer %s: closed", who);
    close(fd);
}
