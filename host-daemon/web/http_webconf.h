/* The HTTP server's web config file (Prometheus exporter-toolkit's
 * format): TLS, client certificates, basic auth users, a bearer token. */
#ifndef HD_HTTP_WEBCONF_H
#define HD_HTTP_WEBCONF_H

#include <stdbool.h>
#include <stddef.h>

#define HD_WEB_USERS_MAX 32
#define HD_WEB_PATH_MAX 4095
#define HD_WEB_FILE_MAX (256u << 10) /* a PEM file or the token file */

/* exporter-toolkit's client_auth_type values crane takes. */
enum hd_web_client_auth {
    HD_WEB_NO_CLIENT_CERT,          /* NoClientCert */
    HD_WEB_VERIFY_IF_GIVEN,         /* VerifyClientCertIfGiven */
    HD_WEB_REQUIRE_AND_VERIFY,      /* RequireAndVerifyClientCert */
};

struct hd_web_config {
    /* tls_server_config: the files' contents, NUL-terminated (NULL: no
     * TLS; client_ca NULL: no client certificates). */
    char *cert_pem, *key_pem, *client_ca_pem;
    enum hd_web_client_auth client_auth;
    /* basic_auth_users: NAME -> crypt(3) hash (bcrypt "$2y$..." as
     * htpasswd -B writes it, or any scheme libcrypt knows). */
    struct {
        char name[128];
        char hash[256];
    } users[HD_WEB_USERS_MAX];
    size_t n_users;
    /* bearer_token_file (crane's own key): its first line. */
    char token[256];
};

/*
 * Reads the web config file PATH into a new *OUT (freed with
 * hd_web_config_free), the files it names read at once.  The YAML it
 * takes is the subset those files use: top-level keys `tls_server_config`
 * (cert_file, key_file, client_ca_file, client_auth_type) and
 * `basic_auth_users` (NAME: HASH) as maps indented under them, and
 * `bearer_token_file: PATH`; values plain or quoted, `#` comments.  An
 * unknown key, a TLS setting without its pair, a client CA with
 * NoClientCert or a key it cannot read is refused: 0 or -errno, with one
 * line in WHY.
 */
int hd_web_config_load(const char *path, struct hd_web_config **out,
                       char *why, size_t why_len);
void hd_web_config_free(struct hd_web_config *w);

/* Whether W asks for credentials (users or a token). */
bool hd_web_config_auth(const struct hd_web_config *w);

#endif /* HD_HTTP_WEBCONF_H */
