/* HTTPS and authentication of the HTTP server: libmicrohttpd's GnuTLS
 * options from the web config, each request's client certificate and
 * credentials checked, plain HTTP kept to loopback. */
#ifndef HD_HTTP_TLS_H
#define HD_HTTP_TLS_H

#include "http_webconf.h"

#include <microhttpd.h>
#include <stdbool.h>
#include <sys/socket.h>

/* MHD_OPTION_ARRAY items for W (N at most, MHD_OPTION_END last) and the
 * flag (MHD_USE_TLS) into *FLAGS when W serves TLS; 0 or -EINVAL. */
int hd_http_tls_options(const struct hd_web_config *w,
                        struct MHD_OptionItem *ops, size_t n,
                        unsigned *flags);

/*
 * Refuses plain HTTP on SA (ADDR as given, for the message) unless it is
 * a loopback address or ALLOW_PLAIN: -EPERM, logged.  W serving TLS
 * always passes.
 */
int hd_http_plain_check(const struct hd_web_config *w, const char *addr,
                        const struct sockaddr_storage *sa, bool allow_plain);

/*
 * Whether request C may be answered under W (NULL: every request): 0, or
 * the HTTP status to refuse it with (401: missing or wrong credentials,
 * *CHALLENGE the WWW-Authenticate value to send; 403: no valid client
 * certificate) and *WHY for the body.
 */
unsigned hd_http_authorize(const struct hd_web_config *w,
                           struct MHD_Connection *c, const char **challenge,
                           const char **why);

#endif /* HD_HTTP_TLS_H */
