/* HTTPS and authentication of the HTTP server: libmicrohttpd's GnuTLS
 * options from the web config, each request's client certificate and
 * credentials checked, plain HTTP kept to loopback. */
/*
 * libmicrohttpd runs the TLS handshake with GnuTLS (the library
 * proto/tls.c uses for crane's own links) from the PEM bytes the web
 * config read.  With a client CA it asks for a client certificate in the
 * handshake; whether one came and chains to that CA is checked here, on
 * the session libmicrohttpd hands over, before any route answers.
 * Credentials are the exporter-toolkit's: HTTP basic auth against
 * crypt(3) hashes (bcrypt as htpasswd -B writes them), or crane's bearer
 * token; compared in constant time.
 */
#include "http_tls.h"

#include "proto/log.h"

#include <arpa/inet.h>
#include <crypt.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

int hd_http_tls_options(const struct hd_web_config *w,
                        struct MHD_OptionItem *ops, size_t n,
                        unsigned *flags)
{
    size_t i = 0;

    if (ops == NULL || n < 4 || flags == NULL)
        return -EINVAL;
    if (w != NULL && w->cert_pem != NULL) {
        *flags |= MHD_USE_TLS;
        ops[i++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0,
                                           w->key_pem};
        ops[i++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0,
                                           w->cert_pem};
        if (w->client_ca_pem != NULL)
            ops[i++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_TRUST, 0,
                                               w->client_ca_pem};
    }
    ops[i] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    return 0;
}

static bool loopback(const struct sockaddr_storage *sa)
{
    if (sa->ss_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >>
                24) == 127;
    if (sa->ss_family == AF_INET6)
        return IN6_IS_ADDR_LOOPBACK(
            &((const struct sockaddr_in6 *)sa)->sin6_addr);
    return false;
}

int hd_http_plain_check(const struct hd_web_config *w, const char *addr,
                        const struct sockaddr_storage *sa, bool allow_plain)
{
    if ((w != NULL && w->cert_pem != NULL) || loopback(sa) || allow_plain)
        return 0;
    CRN_ERROR("http: refusing to serve plain HTTP on %s, which is not a "
             "loopback address: give a web config with tls_server_config "
             "(web_config, --web-config), or set http_allow_plain = yes to "
             "serve in clear on purpose", addr ? addr : "127.0.0.1");
    return -EPERM;
}

/* A and B equal, in time that depends on their lengths only. */
static bool same(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    unsigned char d = la != lb;

    for (size_t i = 0; i < la; i++)
        d |= (unsigned char)(a[i] ^ b[i % (lb ? lb : 1)]);
    return d == 0;
}

/* 0, or 403 with *WHY, for C's client certificate under W. */
static unsigned check_cert(const struct hd_web_config *w,
                           struct MHD_Connection *c, const char **why)
{
    const union MHD_ConnectionInfo *ci;
    gnutls_session_t session;
    unsigned status = 0, n = 0;

    if (w->client_auth == HD_WEB_NO_CLIENT_CERT)
        return 0;
    ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    if (ci == NULL || ci->tls_session == NULL) {
        *why = "no TLS session";
        return MHD_HTTP_FORBIDDEN;
    }
    session = (gnutls_session_t)ci->tls_session;
    if (gnutls_certificate_get_peers(session, &n) == NULL || n == 0) {
        if (w->client_auth == HD_WEB_VERIFY_IF_GIVEN)
            return 0;
        *why = "a client certificate is required";
        return MHD_HTTP_FORBIDDEN;
    }
    if (gnutls_certificate_verify_peers2(session, &status) < 0 ||
        status != 0) {
        *why = "the client certificate is not signed by the client CA";
        return MHD_HTTP_FORBIDDEN;
    }
    return 0;
}

/* Whether PASS is USER's password under W. */
static bool user_ok(const struct hd_web_config *w, const char *user,
                    const char *pass)
{
    struct crypt_data *cd;
    bool ok = false;

    for (size_t i = 0; i < w->n_users; i++) {
        const char *h;

        if (strcmp(w->users[i].name, user) != 0)
            continue;
        cd = calloc(1, sizeof(*cd));
        if (cd == NULL)
            return false;
        h = crypt_r(pass, w->users[i].hash, cd);
        ok = h != NULL && h[0] != '*' && same(h, w->users[i].hash);
        free(cd);
        break;
    }
    return ok;
}

unsigned hd_http_authorize(const struct hd_web_config *w,
                           struct MHD_Connection *c, const char **challenge,
                           const char **why)
{
    const char *auth;
    unsigned st;

    *challenge = NULL;
    *why = NULL;
    if (w == NULL)
        return 0;
    if ((st = check_cert(w, c, why)) != 0)
        return st;
    if (!hd_web_config_auth(w))
        return 0;
    *challenge = w->n_users ? "Basic realm=\"crane\", charset=\"UTF-8\""
                            : "Bearer realm=\"crane\"";
    auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                       MHD_HTTP_HEADER_AUTHORIZATION);
    if (auth == NULL) {
        *why = "credentials required";
        return MHD_HTTP_UNAUTHORIZED;
    }
    if (*w->token && strncmp(auth, "Bearer ", 7) == 0 &&
        same(auth + 7, w->token))
        return 0;
    if (w->n_users && strncmp(auth, "Basic ", 6) == 0) {
        char *pass = NULL;
        char *user = MHD_basic_auth_get_username_password(c, &pass);
        bool ok = user != NULL && pass != NULL && user_ok(w, user, pass);

        if (pass != NULL)
            memset(pass, 0, strlen(pass));
        MHD_free(user);
        MHD_free(pass);
        if (ok)
            return 0;
    }
    *why = "wrong credentials";
    return MHD_HTTP_UNAUTHORIZED;
}
