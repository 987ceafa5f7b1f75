/* TLS on crane's TCP links (GnuTLS): credentials, handshakes, the relay
 * (records on a session: tls_io.c). */
#include "proto/tls.h"
#include "proto/tls_int.h"

#include "proto/auth.h"
#include "proto/conffile.h"
#include "proto/frame.h"

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* The user name a PSK client gives; the key is what authenticates. */
#define PSK_USER "crane"
/* Bytes each relay thread moves at once (a TLS record holds 16 KiB). */
#define RELAY_CHUNK (64 * 1024)
/* How long a relay whose local side closed waits for the peer's close. */
#define RELAY_LINGER_S 10

/* TLS 1.2 and 1.3 only; psk adds the PSK key exchanges (TLS 1.3 takes
 * them from the credentials). */
static const char PRIO_X509[] = "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2";
static const char PRIO_PSK[] = "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:"
                               "+ECDHE-PSK:+DHE-PSK:+PSK";

int crn_tls_mode_parse(const char *text, enum crn_tls_mode *mode)
{
    static const struct { const char *name; enum crn_tls_mode mode; } m[] = {
        {"x509", CRN_TLS_X509}, {"psk", CRN_TLS_PSK},
        {"none", CRN_TLS_NONE}, {"auto", CRN_TLS_AUTO}};

    for (size_t i = 0; text && i < sizeof(m) / sizeof(m[0]); i++)
        if (strcmp(text, m[i].name) == 0) {
            *mode = m[i].mode;
            return 0;
        }
    return -EINVAL;
}

const char *crn_tls_mode_name(enum crn_tls_mode mode)
{
    switch (mode) {
    case CRN_TLS_X509: return "x509";
    case CRN_TLS_PSK: return "psk";
    case CRN_TLS_AUTO: return "auto";
    default: return "none";
    }
}

enum crn_tls_mode crn_tls_config_mode(const struct crn_tls_config *cfg)
{
    return cfg ? cfg->mode : CRN_TLS_NONE;
}

static void pki_path(char *out, size_t len, const char *dir, const char *rel)
{
    snprintf(out, len, "%s/%s", dir ? dir : CRN_TLS_PKI_DEFAULT, rel);
}

static bool readable(const char *path)
{
    return access(path, R_OK) == 0;
}

/* Whether DIR holds the CA and the pairs ROLE needs. */
static bool pki_complete(const char *dir, enum crn_tls_role role)
{
    char p[3][600];

    pki_path(p[0], sizeof(p[0]), dir, "CA/cacert.pem");
    if (!readable(p[0]))
        return false;
    if (role & CRN_TLS_SERVER) {
        pki_path(p[1], sizeof(p[1]), dir, "libvirt/servercert.pem");
        pki_path(p[2], sizeof(p[2]), dir, "libvirt/private/serverkey.pem");
        if (!readable(p[1]) || !readable(p[2]))
            return false;
    }
    if (role & CRN_TLS_CLIENT) {
        pki_path(p[1], sizeof(p[1]), dir, "libvirt/clientcert.pem");
        pki_path(p[2], sizeof(p[2]), dir, "libvirt/private/clientkey.pem");
        if (!readable(p[1]) || !readable(p[2]))
            return false;
    }
    return true;
}

static int x509_pair(gnutls_certificate_credentials_t *out, const char *dir,
                     const char *cert_rel, const char *key_rel, char *why,
                     size_t why_len)
{
    char ca[600], cert[600], key[600];
    int rc;

    pki_path(ca, sizeof(ca), dir, "CA/cacert.pem");
    pki_path(cert, sizeof(cert), dir, cert_rel);
    pki_path(key, sizeof(key), dir, key_rel);
    if ((rc = gnutls_certificate_allocate_credentials(out)) < 0)
        goto fail_alloc;
    rc = gnutls_certificate_set_x509_trust_file(*out, ca, GNUTLS_X509_FMT_PEM);
    if (rc <= 0) {
        snprintf(why, why_len, "no CA certificate in %s: %s", ca,
                 rc == 0 ? "empty" : gnutls_strerror(rc));
        goto fail;
    }
    rc = gnutls_certificate_set_x509_key_file(*out, cert, key,
                                              GNUTLS_X509_FMT_PEM);
    if (rc < 0) {
        snprintf(why, why_len, "cannot use %s with %s: %s", cert, key,
                 gnutls_strerror(rc));
        goto fail;
    }
    return 0;
fail_alloc:
    snprintf(why, why_len, "TLS credentials: %s", gnutls_strerror(rc));
    return -ENOMEM;
fail:
    gnutls_certificate_free_credentials(*out);
    *out = NULL;
    return -EINVAL;
}

/* The server's PSK for any user name: the key file's bytes. */
static int psk_lookup(gnutls_session_t s, const char *user,
                      gnutls_datum_t *key)
{
    const struct crn_tls_config *cfg = gnutls_session_get_ptr(s);

    (void)user;
    key->data = gnutls_malloc(cfg->key_len);
    if (!key->data)
        return -1;
    memcpy(key->data, cfg->key, cfg->key_len);
    key->size = (unsigned)cfg->key_len;
    return 0;
}

static int psk_creds(struct crn_tls_config *cfg, const char *key_file,
                     char *why, size_t why_len)
{
    gnutls_datum_t k;
    int rc = crn_auth_key_load(key_file, &cfg->key, &cfg->key_len);

    if (rc < 0) {
        snprintf(why, why_len, "cannot use key file %s: %s", key_file,
                 rc == -EINVAL ? "empty"
                 : rc == -EFBIG ? "larger than 4096 bytes"
                                : strerror(-rc));
        return rc;
    }
    k.data = cfg->key;
    k.size = (unsigned)cfg->key_len;
    if (gnutls_psk_allocate_client_credentials(&cfg->psk_client) < 0 ||
        gnutls_psk_allocate_server_credentials(&cfg->psk_server) < 0)
        goto nomem;
    rc = gnutls_psk_set_client_credentials(cfg->psk_client, PSK_USER, &k,
                                           GNUTLS_PSK_KEY_RAW);
    if (rc < 0) {
        snprintf(why, why_len, "key file %s: %s", key_file,
                 gnutls_strerror(rc));
        return -EINVAL;
    }
    gnutls_psk_set_server_credentials_function(cfg->psk_server, psk_lookup);
    return 0;
nomem:
    snprintf(why, why_len, "out of memory for TLS credentials");
    return -ENOMEM;
}

int crn_tls_config_new(enum crn_tls_mode mode, enum crn_tls_role role,
                       const char *pki_dir, const char *key_file,
                       struct crn_tls_config **out, char *why,
                       size_t why_len)
{
    struct crn_tls_config *cfg;
    int rc = 0;

    *out = NULL;
    if (mode == CRN_TLS_AUTO)
        mode = pki_complete(pki_dir, role) ? CRN_TLS_X509
               : key_file                  ? CRN_TLS_PSK
                                           : CRN_TLS_NONE;
    if (mode == CRN_TLS_NONE)
        return 0;
    if (mode == CRN_TLS_PSK && !key_file) {
        snprintf(why, why_len, "tls = psk needs a key file");
        return -EINVAL;
    }
    cfg = calloc(1, sizeof(*cfg));
    if (!cfg) {
        snprintf(why, why_len, "out of memory for TLS credentials");
        return -ENOMEM;
    }
    atomic_init(&cfg->refs, 1);
    cfg->mode = mode;
    cfg->role = role;
    if (mode == CRN_TLS_PSK) {
        rc = psk_creds(cfg, key_file, why, why_len);
    } else {
        if (role & CRN_TLS_SERVER)
            rc = x509_pair(&cfg->x509_server, pki_dir,
                           "libvirt/servercert.pem",
                           "libvirt/private/serverkey.pem", why, why_len);
        if (rc == 0 && (role & CRN_TLS_CLIENT))
            rc = x509_pair(&cfg->x509_client, pki_dir,
                           "libvirt/clientcert.pem",
                           "libvirt/private/clientkey.pem", why, why_len);
    }
    if (rc == 0) {
        const char *err = NULL;
        rc = gnutls_priority_init(&cfg->prio,
                                  mode == CRN_TLS_PSK ? PRIO_PSK : PRIO_X509,
                                  &err);
        if (rc < 0) {
            snprintf(why, why_len, "TLS priorities at '%s': %s",
                     err ? err : "?", gnutls_strerror(rc));
            rc = -EINVAL;
        }
    }
    if (rc < 0) {
        crn_tls_config_free(cfg);
        return rc;
    }
    *out = cfg;
    return 0;
}

void crn_tls_config_free(struct crn_tls_config *cfg)
{
    if (!cfg || atomic_fetch_sub(&cfg->refs, 1) != 1)
        return;
    if (cfg->x509_server)
        gnutls_certificate_free_credentials(cfg->x509_server);
    if (cfg->x509_client)
        gnutls_certificate_free_credentials(cfg->x509_client);
    if (cfg->psk_client)
        gnutls_psk_free_client_credentials(cfg->psk_client);
    if (cfg->psk_server)
        gnutls_psk_free_server_credentials(cfg->psk_server);
    if (cfg->prio)
        gnutls_priority_deinit(cfg->prio);
    if (cfg->key) {
        explicit_bzero(cfg->key, cfg->key_len);
        free(cfg->key);
    }
    free(cfg);
}

static void set_timeouts(int fd, unsigned ms)
{
    struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};

    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static void describe_peer(struct crn_tls *t, enum crn_tls_mode mode)
{
    const gnutls_datum_t *certs;
    unsigned n = 0;
    gnutls_x509_crt_t crt;
    gnutls_datum_t dn = {0};

    snprintf(t->peer, sizeof(t->peer), "%s", crn_tls_mode_name(mode));
    if (mode != CRN_TLS_X509)
        return;
    certs = gnutls_certificate_get_peers(t->s, &n);
    if (!certs || n == 0 || gnutls_x509_crt_init(&crt) < 0)
        return;
    if (gnutls_x509_crt_import(crt, &certs[0], GNUTLS_X509_FMT_DER) == 0 &&
        gnutls_x509_crt_get_dn3(crt, &dn, 0) == 0) {
        snprintf(t->peer, sizeof(t->peer), "x509 %s", (char *)dn.data);
        gnutls_free(dn.data);
    }
    gnutls_x509_crt_deinit(crt);
}

/* One line saying why the handshake failed, and the errno for it. */
static int handshake_error(struct crn_tls *t, const struct crn_tls_config *cfg,
                           int rc, char *why, size_t why_len)
{
    unsigned status = gnutls_session_get_verify_cert_status(t->s);
    gnutls_datum_t text = {0};

    if (rc == GNUTLS_E_TIMEDOUT || rc == GNUTLS_E_AGAIN) {
        snprintf(why, why_len, "TLS handshake: no answer in time");
        return -ETIMEDOUT;
    }
    if (rc == GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR && status &&
        gnutls_certificate_verification_status_print(
            status, GNUTLS_CRT_X509, &text, 0) == 0) {
        snprintf(why, why_len, "TLS: the peer's certificate is refused: %s",
                 (char *)text.data);
        gnutls_free(text.data);
        return -EACCES;
    }
    switch (rc) {
    case GNUTLS_E_UNEXPECTED_PACKET_LENGTH:
    case GNUTLS_E_UNSUPPORTED_VERSION_PACKET:
    case GNUTLS_E_UNEXPECTED_PACKET:
    case GNUTLS_E_PREMATURE_TERMINATION:
        snprintf(why, why_len,
                 "TLS handshake failed: %s (a peer without TLS, or one "
                 "that refused this side's credentials?)",
                 gnutls_strerror(rc));
        return -EPROTO;
    case GNUTLS_E_DECRYPTION_FAILED:
    case GNUTLS_E_CERTIFICATE_ERROR:
    case GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR:
    case GNUTLS_E_NO_CERTIFICATE_FOUND:
    case GNUTLS_E_CERTIFICATE_REQUIRED:
    case GNUTLS_E_INSUFFICIENT_CREDENTIALS:
    case GNUTLS_E_FATAL_ALERT_RECEIVED:
        snprintf(why, why_len, "TLS handshake refused (%s): %s%s",
                 crn_tls_mode_name(cfg->mode), gnutls_strerror(rc),
                 rc == GNUTLS_E_FATAL_ALERT_RECEIVED
                     ? gnutls_alert_get_name(gnutls_alert_get(t->s))
                     : "");
        return -EACCES;
    default:
        snprintf(why, why_len, "TLS handshake failed (%s): %s",
                 crn_tls_mode_name(cfg->mode), gnutls_strerror(rc));
        return rc == GNUTLS_E_PUSH_ERROR || rc == GNUTLS_E_PULL_ERROR
                   ? -ECONNRESET
                   : -EPROTO;
    }
}

static int handshake(const struct crn_tls_config *cfg, int fd, bool server,
                     const char *peer_name, unsigned timeout_ms,
                     struct crn_tls **out, char *why, size_t why_len)
{
    struct crn_tls *t = calloc(1, sizeof(*t));
    int rc;

    *out = NULL;
    if (!t || gnutls_init(&t->s, (server ? GNUTLS_SERVER : GNUTLS_CLIENT) |
                                     GNUTLS_NO_SIGNAL) < 0) {
        free(t);
        snprintf(why, why_len, "out of memory for a TLS session");
        return -ENOMEM;
    }
    t->fd = fd;
    crn_tls_io_init(t);
    gnutls_session_set_ptr(t->s, (void *)cfg);
    gnutls_priority_set(t->s, cfg->prio);
    if (cfg->mode == CRN_TLS_PSK) {
        rc = server ? gnutls_credentials_set(t->s, GNUTLS_CRD_PSK,
                                             cfg->psk_server)
                    : gnutls_credentials_set(t->s, GNUTLS_CRD_PSK,
                                             cfg->psk_client);
    } else {
        gnutls_certificate_credentials_t c =
            server ? cfg->x509_server : cfg->x509_client;
        if (!c) {
            snprintf(why, why_len, "TLS: no %s certificate loaded",
                     server ? "server" : "client");
            rc = -EINVAL;
            goto fail;
        }
        rc = gnutls_credentials_set(t->s, GNUTLS_CRD_CERTIFICATE, c);
        if (server)
            gnutls_certificate_server_set_request(t->s, GNUTLS_CERT_REQUIRE);
        else if (peer_name)
            gnutls_server_name_set(t->s, GNUTLS_NAME_DNS, peer_name,
                                   strlen(peer_name));
        /* Mutual: each side checks the other against the CA; a client
         * also the name it dialled. */
        gnutls_session_set_verify_cert(t->s, server ? NULL : peer_name, 0);
    }
    if (rc < 0) {
        snprintf(why, why_len, "TLS credentials: %s", gnutls_strerror(rc));
        rc = -EINVAL;
        goto fail;
    }
    gnutls_handshake_set_timeout(t->s, timeout_ms);
    set_timeouts(fd, timeout_ms);
    do {
        rc = gnutls_handshake(t->s);
    } while (rc == GNUTLS_E_INTERRUPTED);
    set_timeouts(fd, 0);
    if (rc < 0) {
        rc = handshake_error(t, cfg, rc, why, why_len);
        goto fail;
    }
    describe_peer(t, cfg->mode);
    t->cfg = (struct crn_tls_config *)cfg;
    atomic_fetch_add(&t->cfg->refs, 1);
    *out = t;
    return 0;
fail:
    gnutls_deinit(t->s);
    crn_tls_io_fini(t);
    free(t);
    return rc;
}

int crn_tls_client(const struct crn_tls_config *cfg, int fd,
                   const char *peer_name, unsigned timeout_ms,
                   struct crn_tls **out, char *why, size_t why_len)
{
    return handshake(cfg, fd, false, peer_name, timeout_ms, out, why,
                     why_len);
}

int crn_tls_server(const struct crn_tls_config *cfg, int fd,
                   unsigned timeout_ms, struct crn_tls **out, char *why,
                   size_t why_len)
{
    return handshake(cfg, fd, true, NULL, timeout_ms, out, why, why_len);
}

static void tls_free(struct crn_tls *t)
{
    close(t->fd);
    gnutls_deinit(t->s);
    crn_tls_io_fini(t);
    crn_tls_config_free(t->cfg);
    free(t);
}

void crn_tls_close(struct crn_tls *t)
{
    if (!t)
        return;
    set_timeouts(t->fd, 1000);
    gnutls_bye(t->s, GNUTLS_SHUT_WR);
    tls_free(t);
}

const char *crn_tls_peer(const struct crn_tls *t)
{
    return t ? t->peer : "none";
}

/* --- the relay: a plaintext socket in front of a session --- */

struct relay {
    struct crn_tls *t;
    int plain;                   /* the relay's end of the pair */
    atomic_int refs;             /* one per thread */
    pthread_mutex_t lock;
    pthread_cond_t down_ended;
    bool down_done;
};

static void relay_unref(struct relay *r)
{
    if (atomic_fetch_sub(&r->refs, 1) != 1)
        return;
    close(r->plain);
    tls_free(r->t);
    pthread_mutex_destroy(&r->lock);
    pthread_cond_destroy(&r->down_ended);
    free(r);
}

/* Local writer -> peer.  Its end (the local side closed) sends close_notify
 * and gives the peer RELAY_LINGER_S to close its side. */
static void *relay_up(void *arg)
{
    struct relay *r = arg;
    char *buf = malloc(RELAY_CHUNK);
    bool failed = !buf;

    while (!failed) {
        ssize_t n = read(r->plain, buf, RELAY_CHUNK);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        failed = crn_tls_write_all(r->t, buf, (size_t)n) < 0;
    }
    free(buf);
    if (!failed) {
        struct timeval tv = {.tv_sec = RELAY_LINGER_S};
        setsockopt(r->t->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        gnutls_bye(r->t->s, GNUTLS_SHUT_WR);
    }
    /* The peer answers close_notify with its own close; one that does not
     * (frozen, or its side still busy) is cut after RELAY_LINGER_S, and at
     * once when sending failed. */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += failed ? 0 : RELAY_LINGER_S;
    pthread_mutex_lock(&r->lock);
    while (!r->down_done &&
           pthread_cond_timedwait(&r->down_ended, &r->lock, &until) == 0)
        ;
    if (!r->down_done) {
        shutdown(r->t->fd, SHUT_RDWR);
        shutdown(r->plain, SHUT_RDWR);
    }
    pthread_mutex_unlock(&r->lock);
    relay_unref(r);
    return NULL;
}

/* Peer -> local reader; the peer's close is end of file locally. */
static void *relay_down(void *arg)
{
    struct relay *r = arg;
    char *buf = malloc(RELAY_CHUNK);

    while (buf) {
        long n = crn_tls_read(r->t, buf, RELAY_CHUNK);
        if (n <= 0 || crn_bulk_write(r->plain, buf, (size_t)n) < 0)
            break;
    }
    free(buf);
    shutdown(r->plain, SHUT_WR);
    pthread_mutex_lock(&r->lock);
    r->down_done = true;
    pthread_cond_signal(&r->down_ended);
    pthread_mutex_unlock(&r->lock);
    relay_unref(r);
    return NULL;
}

int crn_tls_relay(struct crn_tls *t)
{
    struct relay *r = calloc(1, sizeof(*r));
    pthread_attr_t attr;
    pthread_t th;
    int sv[2], rc;

    if (!r) {
        tls_free(t);
        return -ENOMEM;
    }
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
        rc = -errno;
        free(r);
        tls_free(t);
        return rc;
    }
    r->t = t;
    r->plain = sv[1];
    atomic_init(&r->refs, 2);
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->down_ended, NULL);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    rc = pthread_create(&th, &attr, relay_up, r);
    if (rc != 0) {
        pthread_attr_destroy(&attr);
        close(sv[0]);
        close(sv[1]);
        tls_free(t);
        pthread_mutex_destroy(&r->lock);
        pthread_cond_destroy(&r->down_ended);
        free(r);
        return -rc;
    }
    rc = pthread_create(&th, &attr, relay_down, r);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        /* The up thread ends when it reads end of file on its end. */
        shutdown(sv[0], SHUT_RDWR);
        close(sv[0]);
        relay_unref(r);
        return -rc;
    }
    return sv[0];
}

int crn_tls_wrap_client(const struct crn_tls_config *cfg, int fd,
                        const char *peer_name, unsigned timeout_ms,
                        char *why, size_t why_len)
{
    struct crn_tls *t;
    int rc = crn_tls_client(cfg, fd, peer_name, timeout_ms, &t, why,
                            why_len);

    if (rc < 0) {
        close(fd);
        return rc;
    }
    rc = crn_tls_relay(t);
    if (rc < 0)
        snprintf(why, why_len, "TLS relay: %s", strerror(-rc));
    return rc;
}

int crn_tls_wrap_server(const struct crn_tls_config *cfg, int fd,
                        unsigned timeout_ms, char *why, size_t why_len)
{
    struct crn_tls *t;
    int rc = crn_tls_server(cfg, fd, timeout_ms, &t, why, why_len);

    if (rc < 0) {
        close(fd);
        return rc;
    }
    rc = crn_tls_relay(t);
    if (rc < 0)
        snprintf(why, why_len, "TLS relay: %s", strerror(-rc));
    return rc;
}

int crn_tls_conf_setting(const char *key, const char *v, char *tls,
                         size_t tls_len, char *pki, size_t pki_len,
                         const char **hint)
{
    enum crn_tls_mode m;

    if (strcmp(key, "tls") == 0) {
        *hint = "auto, x509, psk or none";
        return crn_tls_mode_parse(v, &m) == 0 ? crn_conf_text(tls, tls_len, v)
                                              : -EINVAL;
    }
    if (strcmp(key, "pki_dir") == 0) {
        *hint = "an absolute path";
        return v[0] == '/' ? crn_conf_text(pki, pki_len, v) : -EINVAL;
    }
    return 1;
}
