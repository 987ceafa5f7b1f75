/* The proxy domain: started through the hypervisor, probed over the network before a live migration. */
#include "proxy.h"

#include "arrive.h"
#include "host-daemon/hv/hv.h"
#include "io.h"
#include "proto/log.h"
#include "proto/auth.h"
#include "proto/endpoint.h"
#include "proto/frame.h"
#include "proto/remote.pb-c.h"
#include "proto/tls.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* A Welcome lists platforms and devices: small.  Anything bigger is not a
 * crane-proxy. */
#define PROBE_MAX_FRAME (64u << 10)
/* Between probes of a proxy domain that is still booting. */
#define PROBE_RETRY_MS 500
/* The RPC version the probe speaks (proto/remote.proto, Hello.version). */
#define PROBE_RPC_VERSION 1
/* After the proxy domain stopped: how often, and how many times, to look
 * for it shut off before booting it again. */
#define RESTART_WAIT_MS 200
#define RESTART_TRIES 50

int hd_proxy_ensure_running(struct hd_daemon *d, bool *started, char *why,
                            size_t why_len)
{
    const char *name = d->cfg.proxy_domain;
    struct hv_domain dom;
    int rc;

    *started = false;
    if (!*name)
        return 0;
    if ((rc = d->hv_ops->domain(d->hv, name, &dom)) < 0) {
        snprintf(why, why_len, "proxy domain %s: %s", name,
                 rc == -ENOENT ? "not defined on this host"
                               : strerror(-rc));
        return rc;
    }
    if (dom.running)
        return 0;
    if (!d->hv_ops->start) {
        snprintf(why, why_len, "proxy domain %s is shut off and the %s "
                 "backend cannot start it", name, d->hv_ops->name);
        return -ENOTSUP;
    }
    CRN_INFO("proxy domain %s is shut off: starting it", name);
    if ((rc = d->hv_ops->start(d->hv, name)) < 0) {
        snprintf(why, why_len, "proxy domain %s would not start: %s", name,
                 *hv_last_error() ? hv_last_error() : strerror(-rc));
        return rc;
    }
    *started = true;
    return 0;
}

/* Reads one ServerMessage by DEADLINE; NULL with *RC set on failure. */
static Crane__ServerMessage *read_server(int fd, double deadline, int *rc)
{
    Crane__ServerMessage *m;
    uint8_t *buf;
    size_t len;

    if ((*rc = hd_frame_read_by(fd, PROBE_MAX_FRAME, deadline, &buf,
                                &len)) < 0)
        return NULL;
    m = crane__server_message__unpack(NULL, len, buf);
    free(buf);
    if (!m)
        *rc = -EPROTO;
    return m;
}

static int send_client(int fd, Crane__ClientMessage *m, uint64_t seq)
{
    m->seq = seq;
    return crn_frame_write(fd, &m->base);
}

/* Answers the proxy's challenge with D's key. */
static int answer(const struct hd_daemon *d, int fd,
                  const Crane__Challenge *ch, char *why, size_t why_len)
{
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__Auth auth = CRANE__AUTH__INIT;
    uint8_t mac[CRN_SHA256_LEN];
    int rc;

    if (!d->proxy_key) {
        snprintf(why, why_len, "it asks for a key and crane-hostd has none "
                 "(proxy_key)");
        return -EACCES;
    }
    if ((rc = crn_hmac_sha256(d->proxy_key, d->proxy_key_len,
                              ch->nonce.data, ch->nonce.len, mac)) < 0)
        return rc;
    auth.mac.data = mac;
    auth.mac.len = sizeof(mac);
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_AUTH;
    m.auth = &auth;
    return send_client(fd, &m, 2);
}

int hd_proxy_probe(const struct hd_daemon *d, const char *endpoint,
                   uint32_t timeout_ms, unsigned *devices, char *why,
                   size_t why_len)
{
    double deadline = hd_now() + timeout_ms / 1000.0;
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__Hello hello = CRANE__HELLO__INIT;
    Crane__ServerMessage *s = NULL;
    struct crn_endpoint ep;
    unsigned n = 0;
    bool challenged = false;
    int fd, rc;

    if (devices)
        *devices = 0;
    if (crn_endpoint_parse(endpoint, &ep) < 0) {
        snprintf(why, why_len, "bad proxy endpoint %s", endpoint);
        return -EINVAL;
    }
    if ((fd = crn_endpoint_connect_within(&ep, timeout_ms)) < 0) {
        snprintf(why, why_len, "cannot connect: %s",
                 fd == -EINPROGRESS ? "timed out" : strerror(-fd));
        return fd == -EINPROGRESS ? -ETIMEDOUT : fd;
    }
    if (ep.kind == CRN_EP_TCP && d->proxy_tls) {
        char tls_why[300] = "";

        if ((fd = crn_tls_wrap_client(d->proxy_tls, fd, ep.host, timeout_ms,
                                      tls_why, sizeof(tls_why))) < 0) {
            snprintf(why, why_len, "TLS: %s", tls_why);
            return fd;
        }
    }
    hd_send_timeout(fd, (timeout_ms + 999) / 1000);
    hello.version = PROBE_RPC_VERSION;
    hello.program = (char *)"crane-hostd probe";
    hello.pid = (uint32_t)getpid();
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_HELLO;
    m.hello = &hello;
    if ((rc = send_client(fd, &m, 1)) < 0) {
        snprintf(why, why_len, "cannot send hello: %s", strerror(-rc));
        goto out;
    }
    for (;;) {
        if (!(s = read_server(fd, deadline, &rc))) {
            snprintf(why, why_len, "no answer to the handshake: %s",
                     rc == -ENODATA ? "closed" : strerror(-rc));
            goto out;
        }
        if (s->msg_case == CRANE__SERVER_MESSAGE__MSG_CHALLENGE &&
            !challenged) {
            challenged = true;
            if ((rc = answer(d, fd, s->challenge, why, why_len)) < 0) {
                if (!*why)
                    snprintf(why, why_len, "cannot answer its challenge: %s",
                             strerror(-rc));
                goto out;
            }
            crane__server_message__free_unpacked(s, NULL);
            s = NULL;
            continue;
        }
        break;
    }
    if (s->msg_case == CRANE__SERVER_MESSAGE__MSG_REFUSED) {
        snprintf(why, why_len, "refused: %.200s",
                 s->refused->reason ? s->refused->reason : "");
        rc = -EACCES;
        goto out;
    }
    if (s->msg_case != CRANE__SERVER_MESSAGE__MSG_WELCOME) {
        snprintf(why, why_len, "not a crane-proxy (unexpected answer %d)",
                 (int)s->msg_case);
        rc = -EPROTO;
        goto out;
    }
    for (size_t i = 0; i < s->welcome->n_platforms; i++)
        n += (unsigned)s->welcome->platforms[i]->n_devices;
    if (n == 0) {
        snprintf(why, why_len, "it has no OpenCL device");
        rc = -ENODEV;
        goto out;
    }
    if (!challenged && d->proxy_key)
        CRN_WARN("proxy %s does not authenticate its clients: anyone on its "
                "network can use its GPU (start crane-proxy --auth-key)",
                endpoint);
    if (devices)
        *devices = n;
    rc = 0;
out:
    if (s)
        crane__server_message__free_unpacked(s, NULL);
    close(fd);
    return rc;
}

/* One restart job at a time: libvirt may report one stop twice
 * (stopped, then shut down). */
static atomic_bool restarting;

static void proxy_lost_job(void *arg)
{
    struct hd_daemon *d = arg;
    bool started = false;
    char why[600];
    int rc = 0;

    /* The stop event may come while libvirt still has the domain active
     * (its teardown not finished): look again for a while. */
    for (int i = 0; i < RESTART_TRIES && !started; i++) {
        if (i)
            nanosleep(&(struct timespec){0, RESTART_WAIT_MS * 1000000L},
                      NULL);
        if ((rc = hd_proxy_ensure_running(d, &started, why,
                                          sizeof(why))) < 0)
            break;
    }
    if (rc < 0)
        CRN_ERROR("%s", why);
    else if (started)
        CRN_INFO("proxy domain %s started again", d->cfg.proxy_domain);
    else
        CRN_WARN("proxy domain %s runs again (not started by crane-hostd)",
                d->cfg.proxy_domain);
    atomic_store(&restarting, false);
}

void hd_proxy_lost(struct hd_daemon *d)
{
    CRN_ERROR("proxy domain %s stopped: programs of VMs remoting through it "
             "get OpenCL errors", d->cfg.proxy_domain);
    hd_waiting_proxy_lost(d);
    hd_waiting_kick(d);
    if (atomic_exchange(&restarting, true))
        return;
    if (hd_job_start(d, proxy_lost_job, d) < 0) {
        atomic_store(&restarting, false);
        CRN_WARN("proxy domain %s stopped; not started again (shutting "
                "down)", d->cfg.proxy_domain);
    }
}

int hd_proxy_ready(struct hd_daemon *d, const char *endpoint, char *why,
                   size_t why_len)
{
    bool started;
    double until;
    unsigned devices;
    int rc;

    if ((rc = hd_proxy_ensure_running(d, &started, why, why_len)) < 0)
        return rc;
    /* A domain just booted needs its boot time to answer; one that was
     * already running answers now or is broken. */
    until = hd_now() + (started ? d->cfg.proxy_start_ms / 1000.0 : 0);
    for (;;) {
        char probe_why[300] = "";

        rc = hd_proxy_probe(d, endpoint, d->cfg.proxy_timeout_ms, &devices,
                            probe_why, sizeof(probe_why));
        if (rc == 0) {
            CRN_INFO("proxy %s answers: %u OpenCL device%s", endpoint,
                    devices, devices == 1 ? "" : "s");
            return 0;
        }
        if (hd_now() >= until || rc == -EACCES) {
            snprintf(why, why_len, "the proxy %s%s%s%s does not answer: %s",
                     *d->cfg.proxy_domain ? "domain " : "",
                     d->cfg.proxy_domain, *d->cfg.proxy_domain ? " at " : "",
                     endpoint, probe_why);
            return rc;
        }
        nanosleep(&(struct timespec){0, PROBE_RETRY_MS * 1000000L}, NULL);
    }
}
