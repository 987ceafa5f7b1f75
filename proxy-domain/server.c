/* crane-proxy's server: the loop, listening, signals, the start and the
 * stop (what connections use of it: server_state.c). */
#include "server.h"

#include "conn.h"
#include "dispatch.h"
#include "proto/log.h"

#include "proto/auth.h"
#include "proto/listen.h"
#include "proto/notify.h"
#include "proto/spin.h"

#include <errno.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static void on_connection(uv_stream_t *s, int status)
{
    struct px_server *srv = s->data;

    if (status < 0) {
        CRN_WARN("accept: %s", uv_strerror(status));
        return;
    }
    if (srv->stopping)
        return;
    /* TLS's handshake runs off the loop first (conn_tls.c). */
    if (srv->tls)
        px_conn_accept_tls(srv);
    else
        px_conn_accept(srv);
}

/* Listens through the one listener (proto/listen.c); port 0 of a tcp:
 * endpoint becomes the port the kernel chose, which logs and workers say. */
static int listen_on(struct px_server *srv, char *why, size_t why_len)
{
    int rc = crn_listen_uv(srv->loop, &srv->lis,
                           &srv->ep, 0, 128, on_connection, why, why_len);

    if (rc < 0)
        return rc;
    srv->listening = true;
    srv->created_socket = srv->ep.kind == CRN_EP_UNIX;
    return 0;
}

static void on_signal(uv_signal_t *s, int signum)
{
    struct px_server *srv = s->data;

    if (signum == SIGUSR1) {
        px_server_stats(srv);
        return;
    }
    CRN_INFO("signal %d: stopping", signum);
    px_server_stop(srv);
}

int px_server_init(struct px_server *srv, uv_loop_t *loop,
                   const struct px_options *opts,
                   const struct px_devices *devs, char *why, size_t why_len)
{
    int rc;

    memset(srv, 0, sizeof(*srv));
    srv->loop = loop;
    loop->data = srv;
    srv->devs = devs;
    srv->quota = opts->quota;
    srv->grace_ms = opts->grace_ms;
    srv->no_shm = opts->no_shm;
    /* CRANE_PROXY_INLINE_WAITS=0 sends every device wait to the thread
     * pool (to compare; docs/remoting.md). */
    const char *iw = getenv("CRANE_PROXY_INLINE_WAITS");
    srv->inline_waits = !iw || strcmp(iw, "0") != 0;
    /* The supervisor hands connections on: only whoever serves them
     * spins. */
    if (opts->role != PX_ROLE_SUPERVISOR)
        srv->spin_ns =
            (uint64_t)crn_spin_us_from_env("CRANE_PROXY_SPIN_US") * 1000;
    uv_idle_init(loop, &srv->spin);
    srv->spin.data = srv;
    srv->shm_dir = opts->shm_dir;
    srv->shm_pci = opts->shm_pci;
    srv->spares = opts->spares ? opts->spares : 1;
    srv->max_lanes = opts->max_lanes;
    srv->limits = opts->limits;
    srv->role = opts->role;
    srv->welcome = px_handshake_welcome;
    if (crn_endpoint_parse(opts->listen, &srv->ep) < 0) {
        snprintf(why, why_len,
                 "bad endpoint '%s' (unix:PATH, tcp:HOST:PORT or "
                 "vsock:CID:PORT)",
                 opts->listen);
        return -EINVAL;
    }
    if (opts->auth_key) {
        rc = crn_auth_key_load(opts->auth_key, &srv->key, &srv->key_len);
        if (rc < 0) {
            snprintf(why, why_len, "cannot use key file %s: %s",
                     opts->auth_key,
                     rc == -EINVAL ? "empty"
                     : rc == -EFBIG ? "larger than 4096 bytes"
                                    : strerror(-rc));
            return rc;
        }
    }
    /* TLS on a tcp: endpoint (proto/tls.h); a worker gets its
     * connections in plaintext from its supervisor's relays. */
    if (srv->role != PX_ROLE_WORKER && srv->ep.kind == CRN_EP_TCP) {
        rc = crn_tls_config_new(opts->tls_mode, CRN_TLS_SERVER, opts->pki_dir,
                                opts->auth_key, &srv->tls, why, why_len);
        if (rc < 0)
            return rc;
        if (!srv->tls)
            CRN_WARN("tcp:%s:%s without TLS (--tls %s%s): everything, "
                    "buffers included, crosses the network in clear",
                    srv->ep.host, srv->ep.port,
                    crn_tls_mode_name(opts->tls_mode),
                    opts->tls_mode == CRN_TLS_AUTO
                        ? ", and neither a PKI nor --auth-key"
                        : "");
    }
    /* A worker takes connections from its supervisor, not a listener. */
    if (srv->role != PX_ROLE_WORKER) {
        rc = listen_on(srv, why, why_len);
        if (rc < 0)
            return rc;
        srv->lis.handle.data = srv;
    }
    uv_signal_init(loop, &srv->sig_int);
    uv_signal_init(loop, &srv->sig_term);
    uv_signal_init(loop, &srv->sig_usr1);
    srv->sig_int.data = srv->sig_term.data = srv->sig_usr1.data = srv;
    uv_signal_start(&srv->sig_int, on_signal, SIGINT);
    uv_signal_start(&srv->sig_term, on_signal, SIGTERM);
    uv_signal_start(&srv->sig_usr1, on_signal, SIGUSR1);
    return 0;
}

void px_server_log_listening(struct px_server *srv)
{
    char ep[400];

    crn_endpoint_format(&srv->ep, ep, sizeof(ep));
    CRN_INFO("listening on %s (quota %llu bytes, grace %llu ms, %s, TLS %s, "
            "%s)", ep,
            (unsigned long long)srv->quota,
            (unsigned long long)srv->grace_ms,
            srv->key ? "authentication required" : "no authentication",
            crn_tls_mode_name(crn_tls_config_mode(srv->tls)),
            srv->role == PX_ROLE_SUPERVISOR ? "a worker process per tenant"
                                            : "tenants in one process");
    crn_notify("READY=1");      /* systemd's Type=notify */
}


int px_server_run(struct px_server *srv)
{
    if (srv->role == PX_ROLE_SINGLE)
        px_server_log_listening(srv);
    return uv_run(srv->loop, UV_RUN_DEFAULT);
}

void px_server_fini(struct px_server *srv)
{
    crn_tls_config_free(srv->tls);
    srv->tls = NULL;
    if (srv->key) {
        explicit_bzero(srv->key, srv->key_len);
        free(srv->key);
        srv->key = NULL;
    }
}

void px_server_stop(struct px_server *srv)
{
    if (srv->stopping)
        return;
    srv->stopping = true;
    crn_notify("STOPPING=1");
    if (srv->listening) {
        uv_close(&srv->lis.handle, NULL);
        srv->listening = false;
        if (srv->created_socket)
            unlink(srv->ep.path);
    }
    uv_close((uv_handle_t *)&srv->sig_int, NULL);
    uv_close((uv_handle_t *)&srv->sig_term, NULL);
    uv_close((uv_handle_t *)&srv->sig_usr1, NULL);
    uv_close((uv_handle_t *)&srv->spin, NULL);
    for (struct px_conn *c = srv->conns; c; c = c->next)
        px_conn_close(c, "proxy stopping");
    PX_ROLE_CALL(srv, stop, srv);
    /* Tenants kept for --grace go now; those of connections whose work
     * is still running go when it ends. */
    px_server_release_detached(srv);
}

void px_server_stats(struct px_server *srv)
{
    size_t conns = 0, tenants = 0, detached = 0;
    uint64_t objects = 0, bytes = 0;

    if (srv->role_ops && srv->role_ops->stats) {
        srv->role_ops->stats(srv);
        return;
    }
    for (struct px_conn *c = srv->conns; c; c = c->next)
        conns++;
    for (struct px_tenant *t = srv->tenants; t; t = t->next) {
        tenants++;
        detached += t->conn == NULL;
        objects += atomic_load(&t->stat_objects);
        bytes += atomic_load(&t->stat_bytes);
    }
    CRN_INFO("stats: connections=%zu tenants=%zu detached=%zu objects=%llu "
            "bytes=%llu releasing=%zu",
            conns, tenants, detached, (unsigned long long)objects,
            (unsigned long long)bytes, srv->tearing_down);
}


