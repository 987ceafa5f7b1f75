/* The host daemon's HTTP server: dashboard, JSON API, Prometheus metrics. */
#ifndef HD_HTTP_H
#define HD_HTTP_H

#include <stdbool.h>
#include <stdint.h>

#include "host-daemon/history/backlog.h"
#include "host-daemon/history/history.h"
#include "http_webconf.h"
#include "metrics.h"
#include "pool_report.h"

/* Default and largest ?limit= of GET /api/migrations, largest ?offset=. */
#define HD_HTTP_LIST_DEFAULT 100
#define HD_HTTP_LIST_MAX HD_LIST_MAX
#define HD_HTTP_OFFSET_MAX 1000000000

/* Calls USE(USE_ARG, &state) with this host's GPU pool as it is now (its
 * strings live until USE returns); returns what USE returns. */
typedef int hd_pool_use_fn(void *use_arg, const struct hd_pool_state *s);
typedef int hd_pool_read_fn(void *arg, hd_pool_use_fn *use, void *use_arg);

/* What the server shows besides the history. */
struct hd_http_sources {
    hd_pool_read_fn *pool;    /* NULL: no /api/pool, no pool gauges */
    void *arg;
    /* The history's health (backlog.h) into *OUT, from the server's
     * thread; NULL: no history gauges.  With HISTORY_PATH, the server
     * opens the file afresh when the history it has is none (it could not
     * be opened) or its health's generation changed (writable again). */
    void (*health)(void *arg, struct hd_history_health *out);
    const char *history_path;
    /* The web config (http_webconf.h; NULL: plain HTTP, no credentials),
     * used until hd_http_stop: HTTPS, client certificates, basic auth
     * users or a bearer token on every route.  Plain HTTP is refused on
     * an address that is not loopback unless ALLOW_PLAIN (-EPERM). */
    const struct hd_web_config *web;
    bool allow_plain;
    /* The proxy's and peers' gauges into *OUT (ARG as for pool), from the
     * server's thread; NULL: none.  With a pool, crane_hypervisor_connected
     * says whether the pool could be read. */
    void (*gauges)(void *arg, struct hd_gauges *out);
};

struct hd_http;

/*
 * Starts serving on ADDR (a numeric IPv4 or IPv6 address, NULL for
 * 127.0.0.1) and PORT (0: an ephemeral port, see hd_http_port), from one
 * server thread of libmicrohttpd's:
 *   GET / and /dashboard       the operator dashboard (host-daemon/web/
 *                              dashboard*, built in as one page),
 *                              text/html, with a Content-Security-Policy
 *                              that allows only
 *                              the page's own inline script and style and
 *                              fetches from this server
 *   GET /metrics               Prometheus text (version 0.0.4)
 *   GET /api/migrations        {"migrations":[...],"total":T,"offset":O,
 *                              "limit":L}, newest first; ?limit=N
 *                              (1..HD_HTTP_LIST_MAX, default 100),
 *                              ?offset=N (0..HD_HTTP_OFFSET_MAX) and the
 *                              filter below
 *   GET /api/stats             percentiles, trend, per-host, per-domain
 *                              and per-mode figures over the newest
 *                              HD_SUMMARY_MAX migrations the filter takes
 *                              (json.h, hd_json_stats); ?buckets=N
 *                              (1..HD_TREND_MAX, default 24): the trend's
 *                              spans over [since, until)
 *   GET /api/pool              the GPU pool as crane's JSON (pool_report.h,
 *                              HD_POOL_JSON); 404 without one, 503 when
 *                              the hypervisor does not answer
 *   GET /api/migrations/ID     one migration with its steps; 400 for an id
 *                              that is not [A-Za-z0-9._-]{1,64}, 404 for
 *                              an unknown one
 * The filter: ?domain=NAME, ?host=NAME (as source or destination; both
 * percent-decoded, 1..255 bytes, no control characters), ?mode=live|
 * offline, ?result=running|ok|failed|rolled-back|remoting, ?since=S and
 * ?until=S (seconds since the epoch, since <= start < until).  An unknown
 * or malformed parameter is 400.  Anything else is 404; a method other than GET or HEAD is 405.  Errors
 * have a body {"error":"..."}; every answer says "X-Content-Type-Options:
 * nosniff".  Paths and query values are not percent-decoded but for the
 * filter's names, so "%" makes an id or a number bad.  A request line and headers
 * over 32 KiB are refused (a long URL: 414).
 *
 * H is used by the server's thread only, from here until hd_http_stop: the
 * caller opens a struct hd_history for the server and does not touch it
 * meanwhile (the daemon writes through its own; WAL lets both go on).  *OUT
 * owns the server until hd_http_stop.  -EINVAL: bad arguments; -EPERM:
 * plain HTTP on an address that is not loopback (hd_http_sources); -EIO:
 * the server could not start, e.g. the port is taken (logged).  With a web
 * config, a request without a valid client certificate (when required) is
 * 403, without valid credentials (when users or a token are set) 401 with
 * WWW-Authenticate, before any route.
 */
int hd_http_start(struct hd_http **out, const char *addr, uint16_t port,
                  struct hd_history *h);

/* The same with SRC (copied; may be NULL): SRC->pool is called from the
 * server's thread. */
int hd_http_start_with(struct hd_http **out, const char *addr, uint16_t port,
                       struct hd_history *h,
                       const struct hd_http_sources *src);

/* The port the server listens on (the one bound when 0 was asked for). */
uint16_t hd_http_port(const struct hd_http *s);

/* Stops the server, waiting for its thread; S may be NULL. */
void hd_http_stop(struct hd_http *s);

#endif /* HD_HTTP_H */
