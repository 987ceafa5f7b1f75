/* The host daemon's HTTP server (libmicrohttpd): dashboard, JSON, metrics. */
#include "http.h"

#include "http_query.h"
#include "http_tls.h"

#include "buf.h"
#include "json.h"
#include "proto/log.h"
#include "metrics.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Limits on what one client may hold of the server. */
#define HTTP_CONN_LIMIT 64          /* connections at once */
#define HTTP_CONN_TIMEOUT_S 30      /* idle seconds before a close */
#define HTTP_CONN_MEMORY (32 << 10) /* request line and headers, bytes */

#define CT_JSON "application/json"
#define CT_METRICS "text/plain; version=0.0.4; charset=utf-8"
#define CT_HTML "text/html; charset=utf-8"

/*
 * The dashboard's policy: nothing may load but the page's own inline script
 * and style, which may only fetch from this server.  Trusted Types make the
 * browser refuse any HTML built from strings (innerHTML and the like), so
 * data from the API can only ever become text.
 */
#define DASHBOARD_CSP                                                        \
    "default-src 'none'; script-src 'unsafe-inline'; "                       \
    "style-src 'unsafe-inline'; connect-src 'self'; base-uri 'none'; "       \
    "form-action 'none'; frame-ancestors 'none'; "                           \
    "require-trusted-types-for 'script'; trusted-types 'none'"

/* host-daemon/web/dashboard.html, embedded by the build (hostd.mk). */
extern const unsigned char hd_dashboard_html[];
extern const unsigned long hd_dashboard_html_len;

struct hd_http {
    struct MHD_Daemon *daemon;
    struct hd_history *history; /* used by the server thread; borrowed, or
                                   OWN once opened afresh */
    struct hd_history *own;
    unsigned history_gen;       /* the health generation HISTORY is of */
    struct hd_http_sources src; /* the pool, when the daemon has one */
    uint16_t port;
};

/* A response header: NAME and VALUE. */
struct header {
    const char *name;
    const char *value;
};

/*
 * Queues STATUS with BODY (LEN bytes, copied unless MODE says it is
 * static) of type CTYPE, with the headers every answer has and the N in
 * EXTRA.
 */
static enum MHD_Result reply_with(struct MHD_Connection *c, unsigned status,
                                  const char *ctype, const void *body,
                                  size_t len, enum MHD_ResponseMemoryMode mode,
                                  const struct header *extra, size_t n)
{
    struct MHD_Response *r;
    enum MHD_Result ret;
    int ok;

    r = MHD_create_response_from_buffer(len, (void *)body, mode);
    if (r == NULL) {
        CRN_ERROR("http: cannot create a response of %zu bytes", len);
        return MHD_NO;
    }
    ok = MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype) ==
             MHD_YES &&
         MHD_add_response_header(r, MHD_HTTP_HEADER_X_CONTENT_TYPE_OPTIONS,
                                 "nosniff") == MHD_YES;
    for (size_t i = 0; ok && i < n; i++)
        ok = MHD_add_response_header(r, extra[i].name, extra[i].value) ==
             MHD_YES;
    if (!ok) {
        CRN_ERROR("http: cannot add a response header");
        MHD_destroy_response(r);
        return MHD_NO;
    }
    ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

/* Queues STATUS with BODY (LEN bytes, copied) of type CTYPE. */
static enum MHD_Result reply(struct MHD_Connection *c, unsigned status,
                             const char *ctype, const char *body, size_t len)
{
    static const struct header allow = {MHD_HTTP_HEADER_ALLOW, "GET, HEAD"};

    return reply_with(c, status, ctype, body, len, MHD_RESPMEM_MUST_COPY,
                      &allow, status == MHD_HTTP_METHOD_NOT_ALLOWED ? 1 : 0);
}

/* An error answer: {"error":MSG}. */
static enum MHD_Result reply_error(struct MHD_Connection *c, unsigned status,
                                   const char *msg)
{
    struct hd_buf body = {0};
    enum MHD_Result ret;

    hd_buf_puts(&body, "{\"error\":");
    hd_json_put_string(&body, msg);
    hd_buf_puts(&body, "}\n");
    if (body.err || !body.data) {
        /* Out of memory: a fixed body, which needs no escaping. */
        static const char oom[] = "{\"error\":\"out of memory\"}\n";
        ret = reply(c, status, CT_JSON, oom, sizeof(oom) - 1);
    } else {
        ret = reply(c, status, CT_JSON, body.data, body.len);
    }
    hd_buf_free(&body);
    return ret;
}

/* Answers with OUT's text, or 500 when rendering failed with ERR. */
static enum MHD_Result reply_buf(struct MHD_Connection *c, int err,
                                 struct hd_buf *out, const char *ctype)
{
    enum MHD_Result ret;

    if (err == 0)
        err = out->err;
    if (err != 0 || out->data == NULL) {
        CRN_ERROR("http: rendering an answer failed: %s", strerror(-err));
        ret = reply_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal error");
    } else {
        ret = reply(c, MHD_HTTP_OK, ctype, out->data, out->len);
    }
    hd_buf_free(out);
    return ret;
}

/* The dashboard page, straight from the library's read-only data. */
static enum MHD_Result serve_dashboard(struct MHD_Connection *c)
{
    static const struct header headers[] = {
        {MHD_HTTP_HEADER_CONTENT_SECURITY_POLICY, DASHBOARD_CSP},
        {MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache"},
        {"Referrer-Policy", "no-referrer"},
    };

    return reply_with(c, MHD_HTTP_OK, CT_HTML, hd_dashboard_html,
                      (size_t)hd_dashboard_html_len, MHD_RESPMEM_PERSISTENT,
                      headers, sizeof(headers) / sizeof(*headers));
}

/* hd_pool_use_fn: the pool's counts into the metrics (ARG); a pool whose
 * hypervisor did not answer leaves the gauges out. */
static int pool_counts(void *arg, const struct hd_pool_state *s)
{
    struct hd_metrics *m = arg;

    if (s->error != NULL && s->error[0] != '\0')
        return -EIO;
    hd_pool_count(s, &m->pool.held, &m->pool.reserved, &m->pool.free);
    m->pool.waiting = s->n_waiting;
    m->pool.known = true;
    return 0;
}

/* The history to read now: opened afresh when there was none (it could
 * not be opened at start) or it became writable again (a read-only or
 * immutable connection does not see the daemon's new writes).  NULL when
 * it cannot be read at all; *HEALTH gets its health. */
static struct hd_history *history_now(struct hd_http *s,
                                      struct hd_history_health *health)
{
    struct hd_history *h = NULL;

    memset(health, 0, sizeof(*health));
    if (s->src.health == NULL)
        return s->history;
    s->src.health(s->src.arg, health);
    if ((s->history != NULL && health->generation == s->history_gen) ||
        s->src.history_path == NULL)
        return s->history;
    if (hd_history_open(s->src.history_path, &h) != 0 &&
        hd_history_open_read_only(s->src.history_path, &h) != 0)
        return s->history;
    hd_history_close(s->own);
    s->own = s->history = h;
    s->history_gen = health->generation;
    return h;
}

static enum MHD_Result reply_no_history(struct MHD_Connection *c)
{
    return reply_error(c, MHD_HTTP_SERVICE_UNAVAILABLE,
                       "the migration history cannot be read");
}

static enum MHD_Result serve_metrics(struct hd_http *s,
                                     struct MHD_Connection *c)
{
    struct hd_metrics m = {0};
    struct hd_buf out = {0};
    struct hd_history_health health;
    struct hd_history *h = history_now(s, &health);
    int err = 0;

    /* An unreadable history leaves its counters out (a scrape of zeros
     * would look like a reset) but its health in. */
    if (h != NULL)
        err = hd_metrics_collect(h, &m);
    else
        m.history.unreadable = true;
    m.history.known = s->src.health != NULL;
    m.history.health = health;
    /* A hypervisor that does not answer leaves the gauges out rather than
     * failing the scrape. */
    if (err == 0 && s->src.pool != NULL) {
        m.gauges.hv_known = true;
        m.gauges.hv_connected =
            s->src.pool(s->src.arg, pool_counts, &m) == 0;
    }
    if (err == 0 && s->src.gauges != NULL)
        s->src.gauges(s->src.arg, &m.gauges);
    if (err == 0)
        err = hd_metrics_render(&m, &out);
    return reply_buf(c, err, &out, CT_METRICS);
}

/* The query parameters each route takes; any other is refused (a typo
 * must not silently widen a filter). */
static const char *const list_params[] = {
    "limit", "offset", "domain", "host", "mode", "result", "since", "until",
    NULL,
};
static const char *const stats_params[] = {
    "buckets", "domain", "host", "mode", "result", "since", "until", NULL,
};

static enum MHD_Result serve_list(struct hd_http *s, struct MHD_Connection *c)
{
    struct hd_history_health health;
    struct hd_history *h;
    struct hd_migration *list = NULL;
    struct hd_buf out = {0};
    struct hd_filter f;
    uint64_t limit, offset, total = 0;
    size_t n = 0;
    int err;

    if (hd_http_only_known(c, list_params) != 0)
        return reply_error(c, MHD_HTTP_BAD_REQUEST, "unknown parameter");
    if (hd_http_parse_uint(c, "limit", HD_HTTP_LIST_DEFAULT, 1, HD_HTTP_LIST_MAX,
                   &limit) != 0)
        return reply_error(c, MHD_HTTP_BAD_REQUEST, "bad limit");
    if (hd_http_parse_uint(c, "offset", 0, 0, HD_HTTP_OFFSET_MAX, &offset) != 0)
        return reply_error(c, MHD_HTTP_BAD_REQUEST, "bad offset");
    if (hd_http_parse_filter(c, &f) != 0)
        return reply_error(c, MHD_HTTP_BAD_REQUEST, "bad filter");
    if ((h = history_now(s, &health)) == NULL)
        return reply_no_history(c);
    err = hd_history_query(h, &f, offset, (size_t)limit, &list, &n,
                           &total);
    if (err == 0)
        err = hd_json_page(&out, list, n, total, offset, (size_t)limit);
    free(list);
    return reply_buf(c, err, &out, CT_JSON);
}

static enum MHD_Result serve_stats(struct hd_http *s, struct MHD_Connection *c)
{
    struct hd_history_health health;
    struct hd_history *h;
    struct hd_summary *list = NULL;
    struct hd_stats *st;
    struct hd_buf out = {0};
    struct hd_filter f;
    uint64_t buckets, total = 0;
    size_t n = 0;
    int err;

    if (hd_http_only_known(c, stats_params) != 0)
        return reply_error(c, MHD_HTTP_BAD_REQUEST, "unknown parameter");
    if (hd_http_parse_uint(c, "buckets", HD_TREND_DEFAULT, 1, HD_TREND_MAX,
                   &buckets) != 0)
        return reply_error(c, MHD_HTTP_BAD_REQUEST, "bad buckets");
    if (hd_http_parse_filter(c, &f) != 0)
        return reply_error(c, MHD_HTTP_BAD_REQUEST, "bad filter");
    if ((h = history_now(s, &health)) == NULL)
        return reply_no_history(c);
    st = calloc(1, sizeof(*st));
    if (st == NULL)
        return reply_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
    err = hd_history_summaries(h, &f, HD_SUMMARY_MAX, &list, &n,
                               &total);
    if (err == 0)
        err = hd_stats_compute(list, n, (unsigned)buckets, f.since, f.until,
                               st);
    if (err == 0)
        err = hd_json_stats(&out, st, total);
    hd_stats_free(st);
    free(st);
    free(list);
    return reply_buf(c, err, &out, CT_JSON);
}

/* hd_pool_use_fn: the pool as crane's JSON into the buffer ARG; -EIO
 * when the hypervisor did not answer. */
static int pool_json(void *arg, const struct hd_pool_state *s)
{
    if (s->error != NULL && s->error[0] != '\0') {
        CRN_ERROR("http: reading the GPU pool: %s", s->error);
        return -EIO;
    }
    return hd_pool_render(arg, s, HD_POOL_JSON);
}

static enum MHD_Result serve_pool(struct hd_http *s, struct MHD_Connection *c)
{
    static const char *const none[] = {NULL};
    struct hd_buf out = {0};
    int err;

    if (hd_http_only_known(c, none) != 0)
        return reply_error(c, MHD_HTTP_BAD_REQUEST, "unknown parameter");
    if (s->src.pool == NULL)
        return reply_error(c, MHD_HTTP_NOT_FOUND, "no GPU pool here");
    err = s->src.pool(s->src.arg, pool_json, &out);
    if (err == -EIO) {
        hd_buf_free(&out);
        return reply_error(c, MHD_HTTP_SERVICE_UNAVAILABLE,
                           "the hypervisor did not answer");
    }
    return reply_buf(c, err, &out, CT_JSON);
}

/* Whether ID is a well-formed migration id: [A-Za-z0-9._-]{1,HD_ID_MAX}. */
static int id_is_valid(const char *id)
{
    size_t i;

    for (i = 0; id[i] != '\0'; i++) {
        char ch = id[i];

        if (i >= HD_ID_MAX ||
            !((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
              (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' ||
              ch == '-'))
            return 0;
    }
    return i > 0;
}

static enum MHD_Result serve_one(struct hd_http *s, struct MHD_Connection *c,
                                 const char *id)
{
    struct hd_history_health health;
    struct hd_history *h;
    struct hd_migration m;
    struct hd_step *steps = NULL;
    struct hd_buf out = {0};
    size_t n = 0;
    int err;

    if (!id_is_valid(id))
        return reply_error(c, MHD_HTTP_BAD_REQUEST, "bad migration id");
    if ((h = history_now(s, &health)) == NULL)
        return reply_no_history(c);
    err = hd_history_get(h, id, &m, &steps, &n);
    if (err == -ENOENT)
        return reply_error(c, MHD_HTTP_NOT_FOUND, "no such migration");
    if (err == 0) {
        struct hd_job_stats job;
        bool has_job = hd_history_get_job(h, id, &job) == 0;
        err = hd_json_migration_job(&out, &m, steps, n,
                                    has_job ? &job : NULL);
    }
    free(steps);
    return reply_buf(c, err, &out, CT_JSON);
}

/* A request refused by hd_http_authorize: STATUS, {"error":WHY} and the
 * CHALLENGE to answer a 401 with. */
static enum MHD_Result reply_refused(struct MHD_Connection *c,
                                     unsigned status, const char *challenge,
                                     const char *why)
{
    struct header h = {MHD_HTTP_HEADER_WWW_AUTHENTICATE, challenge};
    struct hd_buf body = {0};
    enum MHD_Result ret;

    hd_buf_puts(&body, "{\"error\":");
    hd_json_put_string(&body, why ? why : "refused");
    hd_buf_puts(&body, "}\n");
    ret = body.err ? MHD_NO
                   : reply_with(c, status, CT_JSON, body.data, body.len,
                                MHD_RESPMEM_MUST_COPY, &h,
                                challenge != NULL ? 1 : 0);
    hd_buf_free(&body);
    return ret;
}

/* libmicrohttpd's request handler: called once the headers are in (and
 * again for each piece of a body, which no route takes). */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
                                  const char *url, const char *method,
                                  const char *version, const char *upload,
                                  size_t *upload_size, void **req)
{
    static const char prefix[] = "/api/migrations/";
    struct hd_http *s = cls;

    (void)version;
    (void)upload;
    (void)upload_size;
    (void)req;
    if (s->src.web != NULL) {
        const char *challenge, *why;
        unsigned st = hd_http_authorize(s->src.web, c, &challenge, &why);

        if (st != 0)
            return reply_refused(c, st, challenge, why);
    }
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 &&
        strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
        return reply_error(c, MHD_HTTP_METHOD_NOT_ALLOWED,
                           "method not allowed");
    if (strcmp(url, "/") == 0 || strcmp(url, "/dashboard") == 0)
        return serve_dashboard(c);
    if (strcmp(url, "/metrics") == 0)
        return serve_metrics(s, c);
    if (strcmp(url, "/api/migrations") == 0)
        return serve_list(s, c);
    if (strcmp(url, "/api/stats") == 0)
        return serve_stats(s, c);
    if (strcmp(url, "/api/pool") == 0)
        return serve_pool(s, c);
    if (strncmp(url, prefix, sizeof(prefix) - 1) == 0)
        return serve_one(s, c, url + sizeof(prefix) - 1);
    return reply_error(c, MHD_HTTP_NOT_FOUND, "not found");
}

/* libmicrohttpd's own messages go to our log. */
static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    char line[256];
    size_t n;

    (void)cls;
    vsnprintf(line, sizeof(line), fmt, ap);
    n = strlen(line);
    while (n > 0 && line[n - 1] == '\n')
        line[--n] = '\0';
    CRN_WARN("http: libmicrohttpd: %s", line);
}

/*
 * libmicrohttpd percent-decodes the path and query values in place, so
 * "%00" would cut a string short ("/api/migrations/m-1%00x" would name
 * m-1).  Ids, numbers and modes need no escaping, so values are taken as
 * sent (a '%' left in an id or a number makes it invalid); the names of
 * filters are decoded by parse_name, which refuses a NUL.
 */
static size_t keep_escapes(void *cls, struct MHD_Connection *c, char *s)
{
    (void)cls;
    (void)c;
    return strlen(s);
}

/* Fills *SA (and *FLAGS with MHD_USE_IPv6 for v6) from ADDR and PORT. */
static int parse_addr(const char *addr, uint16_t port,
                      struct sockaddr_storage *sa, unsigned *flags)
{
    struct sockaddr_in *v4 = (struct sockaddr_in *)sa;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)sa;

    memset(sa, 0, sizeof(*sa));
    if (addr == NULL)
        addr = "127.0.0.1";
    if (inet_pton(AF_INET, addr, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(port);
        return 0;
    }
    if (inet_pton(AF_INET6, addr, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(port);
        *flags |= MHD_USE_IPv6;
        return 0;
    }
    CRN_ERROR("http: \"%.64s\" is not a numeric IPv4 or IPv6 address", addr);
    return -EINVAL;
}

int hd_http_start(struct hd_http **out, const char *addr, uint16_t port,
                  struct hd_history *h)
{
    return hd_http_start_with(out, addr, port, h, NULL);
}

int hd_http_start_with(struct hd_http **out, const char *addr, uint16_t port,
                       struct hd_history *h,
                       const struct hd_http_sources *src)
{
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO |
                     MHD_USE_ERROR_LOG;
    struct sockaddr_storage sa;
    struct MHD_OptionItem tls[4];
    const union MHD_DaemonInfo *info;
    struct hd_http *s;
    int err;

    /* Without a history only a daemon that says its health may serve
     * (it opens the file once it can be read). */
    if (out == NULL ||
        (h == NULL && (src == NULL || src->health == NULL))) {
        CRN_ERROR("http: start without %s", out == NULL ? "out" : "history");
        return -EINVAL;
    }
    *out = NULL;
    err = parse_addr(addr, port, &sa, &flags);
    if (err == 0)
        err = hd_http_plain_check(src ? src->web : NULL, addr, &sa,
                                  src && src->allow_plain);
    if (err == 0)
        err = hd_http_tls_options(src ? src->web : NULL, tls, 4, &flags);
    if (err != 0)
        return err;
    s = calloc(1, sizeof(*s));
    if (s == NULL) {
        CRN_ERROR("http: out of memory");
        return -ENOMEM;
    }
    s->history = h;
    if (src != NULL)
        s->src = *src;
    s->daemon = MHD_start_daemon(
        flags, port, NULL, NULL, on_request, s,
        MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL,
        MHD_OPTION_UNESCAPE_CALLBACK, keep_escapes, NULL,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)HTTP_CONN_LIMIT,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_CONN_TIMEOUT_S,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_CONN_MEMORY,
        MHD_OPTION_ARRAY, tls,
        MHD_OPTION_END);
    if (s->daemon == NULL) {
        CRN_ERROR("http: cannot serve on %s port %u",
                 addr != NULL ? addr : "127.0.0.1", (unsigned)port);
        free(s);
        return -EIO;
    }
    info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    if (info == NULL || info->port == 0) {
        CRN_ERROR("http: cannot learn the port bound");
        hd_http_stop(s);
        return -EIO;
    }
    s->port = info->port;
    CRN_INFO("http: serving on %s port %u (%s%s)",
            addr != NULL ? addr : "127.0.0.1", (unsigned)s->port,
            flags & MHD_USE_TLS ? "HTTPS" : "plain HTTP",
            hd_web_config_auth(s->src.web) ? ", credentials required" : "");
    *out = s;
    return 0;
}

uint16_t hd_http_port(const struct hd_http *s)
{
    return s->port;
}

void hd_http_stop(struct hd_http *s)
{
    if (s == NULL)
        return;
    MHD_stop_daemon(s->daemon);
    hd_history_close(s->own);
    free(s);
}
