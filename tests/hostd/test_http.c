/* Tests of host-daemon/web/http.c: each route over a real socket, bad input. */
#ifdef HD_HAVE_HTTP

#include "runner.h"

#include "fixture.h"
#include "host-daemon/web/http.h"
#include "host-daemon/web/json.h"
#include "host-daemon/web/metrics.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define CT_JSON "application/json"
#define CT_METRICS "text/plain; version=0.0.4; charset=utf-8"
#define CT_HTML "text/html; charset=utf-8"
#define DASHBOARD_CSP                                                        \
    "default-src 'none'; script-src 'unsafe-inline'; "                       \
    "style-src 'unsafe-inline'; connect-src 'self'; base-uri 'none'; "       \
    "form-action 'none'; frame-ancestors 'none'; "                           \
    "require-trusted-types-for 'script'; trusted-types 'none'"

/* The page the library embeds (host-daemon/web/dashboard.html). */
extern const unsigned char hd_dashboard_html[];
extern const unsigned long hd_dashboard_html_len;

/* One answer as the tiny client below read it. */
struct answer {
    int status;
    char ctype[128];
    char allow[64];
    char csp[512];
    char nosniff[32];
    char *body;      /* owned, NUL-terminated */
    size_t body_len;
};

static void answer_free(struct answer *a)
{
    free(a->body);
    a->body = NULL;
}

/* Copies header NAME's value from the header block HEAD into DST. */
static void find_header(const char *head, const char *name, char *dst,
                        size_t cap)
{
    size_t nlen = strlen(name);
    const char *p = strstr(head, "\r\n");

    dst[0] = '\0';
    while (p != NULL && p[2] != '\r') {
        p += 2;
        if (strncasecmp(p, name, nlen) == 0 && p[nlen] == ':') {
            const char *v = p + nlen + 1, *end = strstr(v, "\r\n");

            while (*v == ' ')
                v++;
            ASSERT(end != NULL && (size_t)(end - v) < cap);
            memcpy(dst, v, (size_t)(end - v));
            dst[end - v] = '\0';
            return;
        }
        p = strstr(p, "\r\n");
    }
}

/*
 * Sends REQ (LEN bytes, a whole request) to 127.0.0.1:PORT and reads the
 * answer until the server closes (requests say "Connection: close").
 */
static void exchange(uint16_t port, const char *req, size_t len,
                     struct answer *a)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
    struct timeval tv = {.tv_sec = 10};
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap), *sep;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    ASSERT(buf != NULL && fd >= 0);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
    ASSERT_EQ(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    for (size_t off = 0; off < len;) {
        ssize_t w = send(fd, req + off, len - off, MSG_NOSIGNAL);

        if (w < 0)
            break; /* the server may answer and close before reading all */
        off += (size_t)w;
    }
    for (;;) {
        ssize_t r;

        if (n + 1 == cap) {
            ASSERT(cap < (64u << 20));
            cap *= 2;
            ASSERT((buf = realloc(buf, cap)) != NULL);
        }
        r = recv(fd, buf + n, cap - n - 1, 0);
        if (r < 0 && errno == ECONNRESET)
            break;
        ASSERT(r >= 0);
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = '\0';
    ASSERT_EQ(sscanf(buf, "HTTP/1.%*c %d", &a->status), 1);
    sep = strstr(buf, "\r\n\r\n");
    ASSERT(sep != NULL);
    sep[2] = '\0';
    find_header(buf, "Content-Type", a->ctype, sizeof(a->ctype));
    find_header(buf, "Allow", a->allow, sizeof(a->allow));
    find_header(buf, "Content-Security-Policy", a->csp, sizeof(a->csp));
    find_header(buf, "X-Content-Type-Options", a->nosniff,
                sizeof(a->nosniff));
    a->body_len = n - (size_t)(sep + 4 - buf);
    a->body = malloc(a->body_len + 1);
    ASSERT(a->body != NULL);
    memcpy(a->body, sep + 4, a->body_len + 1);
    free(buf);
}

/* METHOD TARGET over HTTP/1.1 with "Connection: close". */
static void request(uint16_t port, const char *method, const char *target,
                    struct answer *a)
{
    size_t len = strlen(method) + strlen(target) + 64;
    char *req = malloc(len);

    ASSERT(req != NULL);
    snprintf(req, len,
             "%s %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
             method, target);
    exchange(port, req, strlen(req), a);
    free(req);
}

/* Fails unless METHOD TARGET answers STATUS with type CTYPE and, when BODY
 * is not NULL, exactly BODY. */
static void expect(uint16_t port, const char *method, const char *target,
                   int status, const char *ctype, const char *body)
{
    struct answer a = {0};

    request(port, method, target, &a);
    ASSERT_EQ(a.status, status);
    ASSERT_STR_EQ(a.ctype, ctype);
    ASSERT_STR_EQ(a.nosniff, "nosniff");
    if (body != NULL)
        ASSERT_STR_EQ(a.body, body);
    answer_free(&a);
}

/* A history with three migrations: m-1 (ok, three steps), the newer m-r
 * (remoting, one step) and the newest m-2 (rolled back). */
struct world {
    struct fixture_db db;
    struct hd_history *h;
    struct hd_http *http;
    uint16_t port;
};

static void world_make(struct world *w)
{
    struct hd_migration m1 = fixture_migration("m-1", "vm \"one\"", 1000);
    struct hd_migration m2 = fixture_migration("m-2", "vm-two", 2000);
    struct hd_migration mr = fixture_migration("m-r", "vm-r", 1500);
    struct hd_step arrive = fixture_step("arrive", 0, NULL, 1, 0.5);
    struct hd_step steps[] = {
        fixture_step("pre", 42, "matmul", 0, 0.125),
        fixture_step("migrate", 0, NULL, 0.125, 2),
        fixture_step("post", 42, "matmul", 2.125, 0.25),
    };

    m2.result = HD_RESULT_ROLLED_BACK;
    snprintf(m2.error, sizeof(m2.error), "no free GPU");
    mr.result = HD_RESULT_REMOTING;
    snprintf(mr.error, sizeof(mr.error), "on host-b: no free GPU");
    fixture_db_make(&w->db);
    ASSERT_EQ(hd_history_open(w->db.path, &w->h), 0);
    ASSERT_EQ(hd_history_record(w->h, &m1, steps, 3), 0);
    ASSERT_EQ(hd_history_record(w->h, &m2, NULL, 0), 0);
    ASSERT_EQ(hd_history_record(w->h, &mr, &arrive, 1), 0);
}

static void world_serve(struct world *w)
{
    ASSERT_EQ(hd_http_start(&w->http, "127.0.0.1", 0, w->h), 0);
    w->port = hd_http_port(w->http);
    ASSERT(w->port != 0);
}

/* Fails unless METHOD TARGET answers the dashboard page with its headers
 * (and its bytes, for GET). */
static void expect_dashboard(uint16_t port, const char *method,
                             const char *target)
{
    struct answer a = {0};

    request(port, method, target, &a);
    ASSERT_EQ(a.status, 200);
    ASSERT_STR_EQ(a.ctype, CT_HTML);
    ASSERT_STR_EQ(a.csp, DASHBOARD_CSP);
    ASSERT_STR_EQ(a.nosniff, "nosniff");
    if (strcmp(method, "HEAD") == 0) {
        ASSERT_EQ(a.body_len, 0);
    } else {
        ASSERT_EQ(a.body_len, hd_dashboard_html_len);
        ASSERT_MEM_EQ(a.body, hd_dashboard_html, a.body_len);
    }
    answer_free(&a);
}

static void world_free(struct world *w)
{
    hd_http_stop(w->http);
    hd_history_close(w->h);
    fixture_db_remove(&w->db);
}

TEST(http_routes)
{
    struct world w = {0};
    struct hd_metrics m = {0};
    struct hd_buf metrics = {0}, all = {0}, newest = {0}, one = {0};
    struct hd_buf most = {0};
    struct hd_migration *list, m1;
    struct hd_step *steps;
    struct answer a = {0};
    size_t n, n_steps;

    /* What each route should answer, rendered before the server owns H. */
    world_make(&w);
    ASSERT_EQ(hd_metrics_collect(w.h, &m), 0);
    ASSERT_EQ(hd_metrics_render(&m, &metrics), 0);
    ASSERT_EQ(hd_history_list(w.h, 100, &list, &n), 0);
    ASSERT_EQ(n, 3);
    ASSERT_STR_EQ(list[0].id, "m-2");
    ASSERT_STR_EQ(list[1].id, "m-r");
    ASSERT_EQ(hd_json_page(&all, list, 3, 3, 0, 100), 0);
    ASSERT_EQ(hd_json_page(&newest, list, 1, 3, 0, 1), 0);
    ASSERT_EQ(hd_json_page(&most, list, 3, 3, 0, 1000), 0);
    free(list);
    ASSERT_EQ(hd_history_get(w.h, "m-1", &m1, &steps, &n_steps), 0);
    ASSERT_EQ(hd_json_migration(&one, &m1, steps, n_steps), 0);
    free(steps);
    ASSERT(strstr(metrics.data, "crane_migrations_total{result=\"ok\"} 1") !=
           NULL);
    ASSERT(strstr(metrics.data,
                  "crane_migrations_total{result=\"remoting\"} 1") != NULL);
    ASSERT(strstr(all.data, "{\"id\":\"m-r\",\"domain\":\"vm-r\",") !=
           NULL);
    ASSERT(strstr(all.data, "\"result\":\"remoting\",\"error\":\"on "
                            "host-b: no free GPU\"") != NULL);
    ASSERT(strstr(one.data, "\"steps\":[{\"phase\":\"pre\"") != NULL);

    world_serve(&w);
    expect(w.port, "GET", "/metrics", 200, CT_METRICS, metrics.data);
    expect(w.port, "GET", "/api/migrations", 200, CT_JSON, all.data);
    expect(w.port, "GET", "/api/migrations?limit=1", 200, CT_JSON,
           newest.data);
    expect(w.port, "GET", "/api/migrations?limit=1000", 200, CT_JSON,
           most.data);
    expect(w.port, "GET", "/api/migrations/m-1", 200, CT_JSON, one.data);
    /* A remoting migration is shown as such, whole and exactly. */
    expect(w.port, "GET", "/api/migrations/m-r", 200, CT_JSON,
           "{\"id\":\"m-r\",\"domain\":\"vm-r\",\"source\":\"host-a\","
           "\"destination\":\"host-b\",\"mode\":\"live\","
           "\"start_time\":1500,\"end_time\":1502.5,\"result\":\"remoting\","
           "\"error\":\"on host-b: no free GPU\",\"bytes_moved\":1048576,"
           "\"steps\":[{\"phase\":\"arrive\",\"pid\":null,\"program\":null,"
           "\"start_offset\":1,\"duration\":0.5}]}");
    /* The dashboard: the embedded page, whole, at both paths; a query
     * (the page's own links use the fragment) changes nothing. */
    ASSERT(hd_dashboard_html_len > 1000);
    ASSERT(memmem(hd_dashboard_html, hd_dashboard_html_len,
                  "id=\"timeline\"", 13) != NULL);
    /* The build put each piece in place of its include line (hostd.mk):
     * none is left, the style's first rule and the last script's end are
     * in the one page. */
    ASSERT(memmem(hd_dashboard_html, hd_dashboard_html_len, "<!-- include:",
                  13) == NULL);
    ASSERT(memmem(hd_dashboard_html, hd_dashboard_html_len, ":root {", 7) !=
           NULL);
    ASSERT(memmem(hd_dashboard_html, hd_dashboard_html_len,
                  "refresh();\n</script>", 20) != NULL);
    expect_dashboard(w.port, "GET", "/");
    expect_dashboard(w.port, "GET", "/dashboard");
    expect_dashboard(w.port, "GET", "/?id=m-1");
    expect_dashboard(w.port, "HEAD", "/");
    /* Only the page has a policy. */
    request(w.port, "GET", "/metrics", &a);
    ASSERT_STR_EQ(a.csp, "");
    answer_free(&a);
    /* HEAD: the same status and type, no body. */
    request(w.port, "HEAD", "/api/migrations/m-1", &a);
    ASSERT_EQ(a.status, 200);
    ASSERT_STR_EQ(a.ctype, CT_JSON);
    ASSERT_EQ(a.body_len, 0);
    answer_free(&a);

    hd_buf_free(&metrics);
    hd_buf_free(&all);
    hd_buf_free(&most);
    hd_buf_free(&newest);
    hd_buf_free(&one);
    world_free(&w);
}

TEST(http_errors)
{
    static const char *const not_found[] = {
        "/index.html", "/api", "/api/", "/metrics/", "/api/migrationsx",
        "/METRICS", "/api/../metrics", "/dashboard/", "/dashboard.html",
        "/Dashboard", "//", "/dashboard%00", "/favicon.ico",
    };
    static const char *const bad_limit[] = {
        "0", "1001", "-1", "abc", "1x", "", "99999999999999999999999",
    };
    struct world w = {0};
    char id65[128];
    struct answer a = {0};

    world_make(&w);
    world_serve(&w);
    expect(w.port, "GET", "/api/migrations/m-3", 404, CT_JSON,
           "{\"error\":\"no such migration\"}\n");
    expect(w.port, "GET", "/api/migrations/a;b", 400, CT_JSON,
           "{\"error\":\"bad migration id\"}\n");
    expect(w.port, "GET", "/api/migrations/m%201", 400, CT_JSON, NULL);
    expect(w.port, "GET", "/api/migrations/", 400, CT_JSON, NULL);
    expect(w.port, "GET", "/api/migrations/m-1/x", 400, CT_JSON, NULL);
    expect(w.port, "GET", "/api/migrations/m-1%00x", 400, CT_JSON, NULL);
    expect(w.port, "GET", "/api/migrations/%C3%A9", 400, CT_JSON, NULL);
    expect(w.port, "GET", "/api/migrations/..%2Fmetrics", 400, CT_JSON,
           NULL);
    memset(id65, 'a', 65);
    id65[65] = '\0';
    {
        char target[160];

        snprintf(target, sizeof(target), "/api/migrations/%s", id65);
        expect(w.port, "GET", target, 400, CT_JSON, NULL);
        target[strlen(target) - 1] = '\0'; /* 64: valid, unknown */
        expect(w.port, "GET", target, 404, CT_JSON, NULL);
    }
    for (size_t i = 0; i < sizeof(not_found) / sizeof(*not_found); i++)
        expect(w.port, "GET", not_found[i], 404, CT_JSON,
               "{\"error\":\"not found\"}\n");
    for (size_t i = 0; i < sizeof(bad_limit) / sizeof(*bad_limit); i++) {
        char target[96];

        snprintf(target, sizeof(target), "/api/migrations?limit=%s",
                 bad_limit[i]);
        expect(w.port, "GET", target, 400, CT_JSON,
               "{\"error\":\"bad limit\"}\n");
    }
    /* Not percent-decoded: "%31" is not a number, "%00" cuts nothing. */
    expect(w.port, "GET", "/api/migrations?limit=%31", 400, CT_JSON, NULL);
    expect(w.port, "GET", "/api/migrations?limit=1%00", 400, CT_JSON, NULL);
    request(w.port, "POST", "/metrics", &a);
    ASSERT_EQ(a.status, 405);
    ASSERT_STR_EQ(a.ctype, CT_JSON);
    ASSERT_STR_EQ(a.allow, "GET, HEAD");
    ASSERT_STR_EQ(a.body, "{\"error\":\"method not allowed\"}\n");
    answer_free(&a);
    expect(w.port, "DELETE", "/api/migrations/m-1", 405, CT_JSON, NULL);
    expect(w.port, "PUT", "/nowhere", 405, CT_JSON, NULL);
    expect(w.port, "POST", "/", 405, CT_JSON, NULL);
    expect(w.port, "POST", "/dashboard", 405, CT_JSON, NULL);
    world_free(&w);
}

TEST(http_odd_requests)
{
    static const char garbage[] = "\x01\x02 nonsense\r\n\r\n";
    static const char body[] =
        "POST /api/migrations HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
        "Content-Length: 5\r\n\r\nhello";
    size_t long_len = 256 << 10;
    char *target = malloc(long_len + 1);
    struct world w = {0};
    struct hd_http *again = NULL;
    struct answer a = {0};

    ASSERT(target != NULL);
    world_make(&w);
    /* Bad arguments and a taken port fail cleanly. */
    ASSERT_EQ(hd_http_start(&again, "localhost", 0, w.h), -EINVAL);
    ASSERT_EQ(hd_http_start(&again, "127.0.0.1", 0, NULL), -EINVAL);
    ASSERT(again == NULL);
    world_serve(&w);
    ASSERT_EQ(hd_http_start(&again, "127.0.0.1", w.port, w.h), -EIO);
    ASSERT(again == NULL);

    /* A very long URL is refused before it reaches a route. */
    memcpy(target, "/api/migrations/", 16);
    memset(target + 16, 'a', long_len - 16);
    target[long_len] = '\0';
    request(w.port, "GET", target, &a);
    ASSERT_EQ(a.status, 414);
    answer_free(&a);
    /* An id of a few kilobytes fits the request buffer: 400. */
    target[4096] = '\0';
    expect(w.port, "GET", target, 400, CT_JSON, NULL);
    free(target);

    exchange(w.port, garbage, sizeof(garbage) - 1, &a);
    ASSERT_EQ(a.status, 400);
    answer_free(&a);
    exchange(w.port, body, sizeof(body) - 1, &a);
    ASSERT_EQ(a.status, 405);
    answer_free(&a);
    /* A repeated parameter: the first counts; an unknown one is refused
     * (a misspelt filter must not widen the answer). */
    expect(w.port, "GET", "/api/migrations?limit=1&limit=2", 200, CT_JSON,
           NULL);
    expect(w.port, "GET", "/api/migrations?limit=1&limit=2&x=%zz&&=", 400,
           CT_JSON, NULL);
    expect(w.port, "GET", "//metrics", 404, CT_JSON, NULL);
    expect(w.port, "GET", "http://localhost/metrics", 404, CT_JSON, NULL);

    /* Still serving after all that. */
    expect(w.port, "GET", "/api/migrations?limit=2", 200, CT_JSON, NULL);
    world_free(&w);
}

/* The list's paging and filters, the stats, over the wire. */
TEST(http_filters_and_stats)
{
    struct world w = {0};
    struct answer a = {0};
    static const char *const bad[] = {
        "/api/migrations?offset=-1", "/api/migrations?offset=1e3",
        "/api/migrations?offset=1000000001", "/api/migrations?offset=",
        "/api/migrations?mode=LIVE", "/api/migrations?result=okay",
        "/api/migrations?domain=", "/api/migrations?domain=a%00b",
        "/api/migrations?domain=a%0ab", "/api/migrations?domain=%zz",
        "/api/migrations?domain=%4", "/api/migrations?since=-5",
        "/api/migrations?since=1.2.3", "/api/migrations?since=1e9",
        "/api/migrations?since=nan", "/api/migrations?since=.5",
        "/api/migrations?since=100000000000",
        "/api/migrations?since=20&until=10", "/api/migrations?until=0",
        "/api/migrations?limit=5&buckets=2", "/api/stats?buckets=0",
        "/api/stats?buckets=201", "/api/stats?limit=1",
        "/api/pool?x=1",
    };

    world_make(&w);
    world_serve(&w);
    /* Pages: the total is of everything the filter takes. */
    request(w.port, "GET", "/api/migrations?limit=1&offset=1", &a);
    ASSERT_EQ(a.status, 200);
    ASSERT(strstr(a.body, "{\"migrations\":[{\"id\":\"m-r\",") == a.body);
    ASSERT(strstr(a.body, "],\"total\":3,\"offset\":1,\"limit\":1}\n") !=
           NULL);
    answer_free(&a);
    request(w.port, "GET", "/api/migrations?offset=3", &a);
    ASSERT_STR_EQ(a.body, "{\"migrations\":[],\"total\":3,\"offset\":3,"
                          "\"limit\":100}\n");
    answer_free(&a);
    /* Names are percent-decoded ('+' a space), exactly matched. */
    request(w.port, "GET", "/api/migrations?domain=vm+%22one%22", &a);
    ASSERT(strstr(a.body, "\"id\":\"m-1\"") != NULL);
    ASSERT(strstr(a.body, "\"total\":1,") != NULL);
    answer_free(&a);
    request(w.port, "GET", "/api/migrations?host=host-b&result=remoting"
                           "&mode=live&since=1500&until=1501", &a);
    ASSERT(strstr(a.body, "\"id\":\"m-r\"") != NULL);
    ASSERT(strstr(a.body, "\"total\":1,") != NULL);
    answer_free(&a);
    request(w.port, "GET", "/api/migrations?host=host-z", &a);
    ASSERT(strstr(a.body, "\"total\":0,") != NULL);
    answer_free(&a);
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        request(w.port, "GET", bad[i], &a);
        if (a.status != 400)
            fprintf(stderr, "%s answered %d\n", bad[i], a.status);
        ASSERT_EQ(a.status, 400);
        answer_free(&a);
    }
    /* Stats: m-1 is the only one with a program's stoppage. */
    request(w.port, "GET", "/api/stats?buckets=3", &a);
    ASSERT_EQ(a.status, 200);
    ASSERT_STR_EQ(a.ctype, CT_JSON);
    ASSERT(strstr(a.body, "{\"count\":3,\"total\":3,\"all\":{\"name\":\"\","
                          "\"count\":3,") == a.body);
    ASSERT(strstr(a.body, "\"pre\":{\"n\":1,\"p50\":0.125,\"p95\":0.125,"
                          "\"max\":0.125,\"sum\":0.125}") != NULL);
    ASSERT(strstr(a.body, "\"trend\":[{\"start\":1000,") != NULL);
    ASSERT(strstr(a.body, "\"hosts\":[{\"name\":\"host-a\",\"count\":3,")
           != NULL);
    ASSERT(strstr(a.body, "\"domains_left_out\":0}\n") != NULL);
    answer_free(&a);
    request(w.port, "GET", "/api/stats?domain=vm-two", &a);
    ASSERT(strstr(a.body, "{\"count\":1,\"total\":1,") == a.body);
    answer_free(&a);
    /* Without a pool source there is no pool. */
    expect(w.port, "GET", "/api/pool", 404, CT_JSON,
           "{\"error\":\"no GPU pool here\"}\n");
    world_free(&w);
}

/* A pool source as the daemon gives it (arrive.c's, here a fixed one):
 * gpu0 held, gpu1 free, gpu2 being attached, one VM waiting, one
 * prepared with 42.5 s left of its lease; from the
 * third call on the hypervisor is gone. */
static int fake_pool(void *arg, hd_pool_use_fn *use, void *use_arg)
{
    static const struct hd_pool_gpu_state g[] = {
        {"gpu0", "ua-crane-gpu0", "0000:65:00.0", "vm <a>", false},
        {"gpu1", "ua-crane-gpu1", "", "", false},
        {"gpu2", "ua-crane-gpu2", "", "", true},
    };
    static const struct hd_pool_waiter_state w[] = {{"vm-w", "m-9", 1234.5, 1}};
    static const struct hd_pool_prepared_state p[] = {
        {"vm-p", "m-8", 1230.5, 600, 42.5}};
    static const struct hd_history_health h = {
        .degraded = true, .unsaved = 2, .since = 1240.5,
        .reason = "cannot record its end: No space left on device"};
    struct hd_pool_state s = {"host-a", g, 3, w, 1, "", p, 1, &h};
    int *calls = arg;

    if ((*calls)++ >= 2)
        s.error = "Input/output error";
    return use(use_arg, &s);
}

/* The value of the series LINE (a name with labels, then a space) in the
 * exposition TEXT, or -1. */
static long long series(const char *text, const char *line)
{
    const char *p = text;
    size_t n = strlen(line);

    while ((p = strstr(p, line)) != NULL) {
        if (p == text || p[-1] == '\n')
            return atoll(p + n);
        p += n;
    }
    return -1;
}

/* Every histogram's buckets are cumulative, series by series (a series:
 * its labels but le), and each series' +Inf bucket is its _count. */
static void check_histograms(const char *text)
{
    const char *p = text;
    int seen = 0;

    while ((p = strstr(p, "\n# TYPE ")) != NULL) {
        char name[128], type[32], prev[256] = "";
        long long last = 0, inf = -1;
        const char *line;

        ASSERT_EQ(sscanf(p, "\n# TYPE %127s %31s", name, type), 2);
        p++;
        if (strcmp(type, "histogram") != 0)
            continue;
        seen++;
        for (line = strchr(p, '\n') + 1; *line != '\0' && *line != '#';
             line = strchr(line, '\n') + 1) {
            size_t nl = strlen(name);
            const char *eol = strchr(line, '\n');
            const char *sp = memrchr(line, ' ', (size_t)(eol - line));
            long long v;

            ASSERT(eol != NULL && sp != NULL);
            ASSERT(strncmp(line, name, nl) == 0);
            v = atoll(sp + 1);
            if (strncmp(line + nl, "_bucket", 7) == 0) {
                const char *le = strstr(line, "le=\"");
                char series_[256];

                ASSERT(le != NULL && le < eol);
                snprintf(series_, sizeof(series_), "%.*s",
                         (int)(le - line), line);
                if (strcmp(series_, prev) != 0) {
                    snprintf(prev, sizeof(prev), "%s", series_);
                    last = 0;
                }
                ASSERT(v >= last);
                last = v;
                if (strncmp(le, "le=\"+Inf\"", 9) == 0)
                    inf = v;
            } else if (strncmp(line + nl, "_count", 6) == 0) {
                ASSERT_EQ(v, inf);
            }
        }
    }
    ASSERT_EQ(seen, 3);
}

TEST(http_pool_and_gauges)
{
    struct world w = {0};
    struct answer a = {0};
    int calls = 0;
    struct hd_http_sources src = {.pool = fake_pool, .arg = &calls};

    world_make(&w);
    ASSERT_EQ(hd_http_start_with(&w.http, "127.0.0.1", 0, w.h, &src), 0);
    w.port = hd_http_port(w.http);
    /* crane's pool JSON (pool_report.c renders it; its own tests check
     * every field). */
    request(w.port, "GET", "/api/pool", &a);
    ASSERT_EQ(a.status, 200);
    ASSERT_STR_EQ(a.ctype, CT_JSON);
    ASSERT(strstr(a.body, "{\"host\":\"host-a\",\"total\":3,\"free\":1,"
                          "\"held\":1,\"reserved\":1,") == a.body);
    ASSERT(strstr(a.body, "\"holder\":\"vm <a>\"") != NULL);
    ASSERT(strstr(a.body, "\"waiting\":[{\"domain\":\"vm-w\","
                          "\"migration_id\":\"m-9\",\"since\":1234.5,"
                          "\"gpus\":1}]")
           != NULL);
    ASSERT(strstr(a.body, "\"prepared\":[{\"domain\":\"vm-p\","
                          "\"migration_id\":\"m-8\",\"since\":1230.5,"
                          "\"lease_s\":600,\"lease_left\":42.5}]")
           != NULL);
    ASSERT(strstr(a.body, "\"history\":{\"degraded\":true,"
                          "\"read_only\":false,\"unsaved\":2,"
                          "\"dropped\":0,\"since\":1240.5,\"reason\":"
                          "\"cannot record its end: No space left on "
                          "device\"}") != NULL);
    answer_free(&a);
    request(w.port, "GET", "/metrics", &a);
    ASSERT_EQ(a.status, 200);
    ASSERT_EQ(series(a.body, "crane_gpu_pool_gpus{state=\"free\"} "), 1);
    ASSERT_EQ(series(a.body, "crane_gpu_pool_gpus{state=\"held\"} "), 1);
    ASSERT_EQ(series(a.body, "crane_gpu_pool_gpus{state=\"reserved\"} "), 1);
    ASSERT_EQ(series(a.body, "crane_gpu_pool_waiting_vms "), 1);
    ASSERT(strstr(a.body, "\ncrane_build_info{version=\"") != NULL);
    /* Three finished live migrations in the history, 2.5 s each. */
    ASSERT_EQ(series(a.body, "crane_migration_duration_seconds_count"
                             "{mode=\"live\"} "), 3);
    ASSERT_EQ(series(a.body, "crane_migration_duration_seconds_bucket"
                             "{mode=\"live\",le=\"1\"} "), 0);
    ASSERT_EQ(series(a.body, "crane_migration_duration_seconds_bucket"
                             "{mode=\"live\",le=\"2.5\"} "), 3);
    ASSERT_EQ(series(a.body, "crane_migration_duration_seconds_count"
                             "{mode=\"offline\"} "), 0);
    ASSERT_EQ(series(a.body, "crane_migration_stoppage_seconds_count"
                             "{phase=\"pre\"} "), 1);
    check_histograms(a.body);
    answer_free(&a);
    /* The hypervisor gone: the pool is 503, the metrics go on without
     * its gauges. */
    expect(w.port, "GET", "/api/pool", 503, CT_JSON, NULL);
    request(w.port, "GET", "/metrics", &a);
    ASSERT_EQ(a.status, 200);
    ASSERT(strstr(a.body, "crane_gpu_pool_gpus") == NULL);
    ASSERT(strstr(a.body, "crane_build_info") != NULL);
    answer_free(&a);
    world_free(&w);
}

/* The daemon's history health as the fake daemon says it. */
static struct hd_history_health fake_health_now;

static void fake_health(void *arg, struct hd_history_health *out)
{
    (void)arg;
    *out = fake_health_now;
}

/* A history that cannot be opened: the routes that read it are 503, the
 * metrics keep the health gauges without the counters (no fake reset);
 * once the file is there and the health's generation moves, the server
 * opens it by itself. */
TEST(http_history_unreadable)
{
    struct world w = {0};
    struct answer a = {0};
    char missing[600];
    struct hd_http_sources src = {.health = fake_health,
                                  .history_path = missing};
    struct hd_http *http;
    uint16_t port;

    world_make(&w);
    snprintf(missing, sizeof(missing), "%s.none/hostd.db", w.db.path);
    fake_health_now = (struct hd_history_health){
        .degraded = true, .read_only = true, .unsaved = 1, .dropped = 2,
        .dropped_total = 7, .reason = "read-only file system"};
    ASSERT_EQ(hd_http_start_with(&http, "127.0.0.1", 0, NULL, &src), 0);
    port = hd_http_port(http);
    expect(port, "GET", "/api/migrations", 503, CT_JSON,
           "{\"error\":\"the migration history cannot be read\"}\n");
    expect(port, "GET", "/api/stats", 503, CT_JSON, NULL);
    expect(port, "GET", "/api/migrations/m-1", 503, CT_JSON, NULL);
    request(port, "GET", "/metrics", &a);
    ASSERT_EQ(a.status, 200);
    ASSERT_EQ(series(a.body, "crane_history_degraded "), 1);
    ASSERT_EQ(series(a.body, "crane_history_read_only "), 1);
    ASSERT_EQ(series(a.body, "crane_history_unsaved_migrations "), 1);
    /* The drops of earlier runs too (the file's count): never down. */
    ASSERT_EQ(series(a.body, "crane_history_dropped_migrations_total "), 7);
    ASSERT(strstr(a.body, "crane_migrations_total") == NULL);
    answer_free(&a);
    /* The file is readable now (the fixture's), and writable again. */
    snprintf(missing, sizeof(missing), "%s", w.db.path);
    fake_health_now = (struct hd_history_health){.generation = 1};
    request(port, "GET", "/api/migrations", &a);
    ASSERT_EQ(a.status, 200);
    ASSERT(strstr(a.body, "\"total\":3") != NULL);
    answer_free(&a);
    request(port, "GET", "/metrics", &a);
    ASSERT_EQ(series(a.body, "crane_history_degraded "), 0);
    ASSERT_EQ(series(a.body, "crane_migration_duration_seconds_count"
                             "{mode=\"live\"} "), 3);
    answer_free(&a);
    hd_http_stop(http);
    world_free(&w);
}

#endif /* HD_HAVE_HTTP */
