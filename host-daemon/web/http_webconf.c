/* The HTTP server's web config file (Prometheus exporter-toolkit's
 * format): TLS, client certificates, basic auth users, a bearer token. */
/*
 * Operators keep one web config file for every exporter of a host
 * (node_exporter --web.config.file), so crane-hostd reads the same format
 * (https://prometheus.io/docs/prometheus/latest/configuration/https/),
 * the subset of YAML it is written in: two levels of `key: value`, the
 * second indented under a map key.  Anything else is refused rather than
 * guessed at: a security setting misread must not serve in clear.
 */
#include "http_webconf.h"

#include "proto/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LINE_MAX_LEN 1024
#define LINES_MAX 4096

enum section { SEC_NONE, SEC_TLS, SEC_USERS };

struct parse {
    const char *path;
    unsigned line;
    enum section sec;
    char cert[HD_WEB_PATH_MAX + 1], key[HD_WEB_PATH_MAX + 1];
    char ca[HD_WEB_PATH_MAX + 1], token[HD_WEB_PATH_MAX + 1];
    char auth[64];
    char *why;
    size_t why_len;
};

static int bad(struct parse *p, const char *what, const char *arg)
{
    snprintf(p->why, p->why_len, "%s line %u: %s%s%s", p->path, p->line,
             what, arg ? ": " : "", arg ? arg : "");
    return -EINVAL;
}

/* Reads the whole of PATH (at most HD_WEB_FILE_MAX bytes) into *OUT. */
static int read_all(const char *path, char **out, char *why, size_t why_len)
{
    FILE *f = fopen(path, "re");
    char *buf;
    size_t n;
    int rc = 0;

    if (f == NULL) {
        rc = -errno;
        snprintf(why, why_len, "cannot read %s: %s", path, strerror(-rc));
        return rc;
    }
    buf = malloc(HD_WEB_FILE_MAX + 1);
    if (buf == NULL) {
        fclose(f);
        snprintf(why, why_len, "out of memory reading %s", path);
        return -ENOMEM;
    }
    n = fread(buf, 1, HD_WEB_FILE_MAX + 1, f);
    if (ferror(f) || n > HD_WEB_FILE_MAX || n == 0) {
        rc = ferror(f) ? -EIO : n == 0 ? -ENODATA : -EFBIG;
        snprintf(why, why_len, "cannot read %s: %s", path,
                 n == 0 ? "empty" : n > HD_WEB_FILE_MAX ? "too large"
                                                         : strerror(EIO));
        free(buf);
    } else {
        buf[n] = '\0';
        *out = buf;
    }
    fclose(f);
    return rc;
}

/* V without its quotes and trailing comment and blanks, in place; NULL
 * for an unterminated quote. */
static char *scalar(char *v)
{
    char *end;

    while (*v == ' ' || *v == '\t')
        v++;
    if (*v == '"' || *v == '\'') {
        end = strchr(v + 1, *v);
        if (end == NULL)
            return NULL;
        *end = '\0';
        return v + 1;
    }
    for (end = v; *end; end++)
        if (*end == '#' && (end == v || end[-1] == ' ' || end[-1] == '\t'))
            break;
    *end = '\0';
    while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
        *--end = '\0';
    return v;
}

static int copy(struct parse *p, char *dst, size_t len, const char *v,
                const char *key)
{
    if (!*v || strlen(v) >= len)
        return bad(p, *v ? "value too long" : "empty value", key);
    memcpy(dst, v, strlen(v) + 1);
    return 0;
}

static int set_tls(struct parse *p, const char *key, const char *v)
{
    if (!strcmp(key, "cert_file"))
        return copy(p, p->cert, sizeof(p->cert), v, key);
    if (!strcmp(key, "key_file"))
        return copy(p, p->key, sizeof(p->key), v, key);
    if (!strcmp(key, "client_ca_file"))
        return copy(p, p->ca, sizeof(p->ca), v, key);
    if (!strcmp(key, "client_auth_type"))
        return copy(p, p->auth, sizeof(p->auth), v, key);
    return bad(p, "unknown tls_server_config setting (crane takes "
               "cert_file, key_file, client_ca_file, client_auth_type)", key);
}

static int set_user(struct parse *p, struct hd_web_config *w, const char *key,
                    const char *v)
{
    if (w->n_users == HD_WEB_USERS_MAX)
        return bad(p, "too many basic_auth_users", NULL);
    if (strlen(key) >= sizeof(w->users[0].name) || strchr(key, ':'))
        return bad(p, "bad user name", key);
    if (copy(p, w->users[w->n_users].hash, sizeof(w->users[0].hash), v,
             key) < 0)
        return -EINVAL;
    snprintf(w->users[w->n_users].name, sizeof(w->users[0].name), "%s", key);
    w->n_users++;
    return 0;
}

/* One line: "key:" opening a map, "key: value", or "  key: value" in it. */
static int parse_line(struct parse *p, struct hd_web_config *w, char *line)
{
    bool indented = *line == ' ' || *line == '\t';
    char *key = line, *colon, *v;

    while (*key == ' ' || *key == '\t')
        key++;
    if (*key == '\0' || *key == '#')
        return 0;
    if (!strcmp(key, "---"))
        return 0;
    colon = strstr(key, ": ");
    if (colon == NULL && key[strlen(key) - 1] == ':')
        colon = key + strlen(key) - 1;
    if (colon == NULL)
        return bad(p, "not `key: value`", NULL);
    *colon = '\0';
    if ((*key == '"' || *key == '\'') && (key = scalar(key)) == NULL)
        return bad(p, "unterminated quote", NULL);
    v = scalar(colon + 1);
    if (v == NULL)
        return bad(p, "unterminated quote", key);
    if (indented) {
        if (p->sec == SEC_TLS)
            return set_tls(p, key, v);
        if (p->sec == SEC_USERS)
            return set_user(p, w, key, v);
        return bad(p, "indented line outside a map", key);
    }
    p->sec = SEC_NONE;
    if (!strcmp(key, "tls_server_config") || !strcmp(key, "basic_auth_users")) {
        if (*v)
            return bad(p, "a map is written on the lines below", key);
        p->sec = key[0] == 't' ? SEC_TLS : SEC_USERS;
        return 0;
    }
    if (!strcmp(key, "bearer_token_file"))
        return copy(p, p->token, sizeof(p->token), v, key);
    return bad(p, "unknown setting (crane takes tls_server_config, "
               "basic_auth_users, bearer_token_file)", key);
}

static int parse_text(struct parse *p, struct hd_web_config *w, char *text)
{
    char *save = NULL;
    int rc = 0;

    for (char *line = strtok_r(text, "\n", &save); line && rc == 0;
         line = strtok_r(NULL, "\n", &save)) {
        size_t n = strlen(line);

        p->line++;
        if (p->line > LINES_MAX || n > LINE_MAX_LEN)
            return bad(p, "line too long or too many lines", NULL);
        if (n && line[n - 1] == '\r')
            line[n - 1] = '\0';
        rc = parse_line(p, w, line);
    }
    return rc;
}

/* The files the settings name, read; the settings checked together. */
static int finish(struct parse *p, struct hd_web_config *w)
{
    char *tok = NULL;
    int rc;

    p->line = 0;
    if (!*p->cert != !*p->key)
        return bad(p, "tls_server_config needs cert_file and key_file", NULL);
    if (*p->ca && !*p->cert)
        return bad(p, "client_ca_file without cert_file", NULL);
    if (!*p->auth)
        w->client_auth = *p->ca ? HD_WEB_REQUIRE_AND_VERIFY
                                : HD_WEB_NO_CLIENT_CERT;
    else if (!strcmp(p->auth, "NoClientCert"))
        w->client_auth = HD_WEB_NO_CLIENT_CERT;
    else if (!strcmp(p->auth, "VerifyClientCertIfGiven"))
        w->client_auth = HD_WEB_VERIFY_IF_GIVEN;
    else if (!strcmp(p->auth, "RequireAndVerifyClientCert"))
        w->client_auth = HD_WEB_REQUIRE_AND_VERIFY;
    else
        return bad(p, "client_auth_type crane takes: NoClientCert, "
                   "VerifyClientCertIfGiven, RequireAndVerifyClientCert",
                   p->auth);
    if (w->client_auth != HD_WEB_NO_CLIENT_CERT && !*p->ca)
        return bad(p, "client_auth_type verifies with client_ca_file", NULL);
    if (w->client_auth == HD_WEB_NO_CLIENT_CERT && *p->ca)
        return bad(p, "client_ca_file with NoClientCert", NULL);
    if (*p->cert && ((rc = read_all(p->cert, &w->cert_pem, p->why,
                                    p->why_len)) < 0 ||
                     (rc = read_all(p->key, &w->key_pem, p->why,
                                    p->why_len)) < 0))
        return rc;
    if (*p->ca &&
        (rc = read_all(p->ca, &w->client_ca_pem, p->why, p->why_len)) < 0)
        return rc;
    if (*p->token) {
        if ((rc = read_all(p->token, &tok, p->why, p->why_len)) < 0)
            return rc;
        tok[strcspn(tok, "\r\n")] = '\0';
        rc = strlen(tok) >= 16 && strlen(tok) < sizeof(w->token) ? 0 : -EINVAL;
        if (rc == 0)
            memcpy(w->token, tok, strlen(tok) + 1);
        else
            snprintf(p->why, p->why_len, "%s: the token's first line must "
                     "be 16 to 255 bytes", p->token);
        free(tok);
    }
    return rc;
}

int hd_web_config_load(const char *path, struct hd_web_config **out,
                       char *why, size_t why_len)
{
    struct parse p = {.path = path, .why = why, .why_len = why_len};
    struct hd_web_config *w;
    char *text = NULL;
    int rc;

    if (path == NULL || out == NULL || why == NULL || why_len == 0)
        return -EINVAL;
    *out = NULL;
    w = calloc(1, sizeof(*w));
    if (w == NULL) {
        snprintf(why, why_len, "out of memory");
        return -ENOMEM;
    }
    rc = read_all(path, &text, why, why_len);
    if (rc == 0)
        rc = parse_text(&p, w, text);
    if (rc == 0)
        rc = finish(&p, w);
    free(text);
    if (rc < 0) {
        hd_web_config_free(w);
        return rc;
    }
    *out = w;
    return 0;
}

void hd_web_config_free(struct hd_web_config *w)
{
    if (w == NULL)
        return;
    free(w->cert_pem);
    if (w->key_pem)
        memset(w->key_pem, 0, strlen(w->key_pem));
    free(w->key_pem);
    free(w->client_ca_pem);
    memset(w->token, 0, sizeof(w->token));
    free(w);
}

bool hd_web_config_auth(const struct hd_web_config *w)
{
    return w != NULL && (w->n_users > 0 || *w->token);
}
