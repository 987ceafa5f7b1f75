/* The host daemon's HTTP server: dashboard, JSON API, Prometheus metrics. */
#ifndef HD_HTTP_H
#define HD_HTTP_H

#include <stdint.h>

#include "history.h"

/* Default and largest ?limit= of GET /api/migrations. */
#define HD_HTTP_LIST_DEFAULT 100
#define HD_HTTP_LIST_MAX HD_LIST_MAX

struct hd_http;

/*
 * Starts serving on ADDR (a numeric IPv4 or IPv6 address, NULL for
 * 127.0.0.1) and PORT (0: an ephemeral port, see hd_http_port), from one
 * server thread of libmicrohttpd's:
 *   GET / and /dashboard       the operator dashboard (host-daemon/
 *                              dashboard.html, built in), text/html, with
 *                              a Content-Security-Policy that allows only
 *                              the page's own inline script and style and
 *                              fetches from this server
 *   GET /metrics               Prometheus text (version 0.0.4)
 *   GET /api/migrations        {"migrations":[...]}, newest first;
 *                              ?limit=N, 1..HD_HTTP_LIST_MAX
 *   GET /api/migrations/ID     one migration with its steps; 400 for an id
 *                              that is not [A-Za-z0-9._-]{1,64}, 404 for
 *                              an unknown one
 * Anything else is 404; a method other than GET or HEAD is 405.  Errors
 * have a body {"error":"..."}; every answer says "X-Content-Type-Options:
 * nosniff".  Paths and query values are not percent-decoded (nothing valid
 * needs it), so "%" makes an id or a limit bad.  A request line and headers
 * over 32 KiB are refused (a long URL: 414).
 *
 * H is used by the server's thread only, from here until hd_http_stop: the
 * caller opens a struct hd_history for the server and does not touch it
 * meanwhile (the daemon writes through its own; WAL lets both go on).  *OUT
 * owns the server until hd_http_stop.  -EINVAL: bad arguments; -EIO: the
 * server could not start, e.g. the port is taken (logged).
 */
int hd_http_start(struct hd_http **out, const char *addr, uint16_t port,
                  struct hd_history *h);

/* The port the server listens on (the one bound when 0 was asked for). */
uint16_t hd_http_port(const struct hd_http *s);

/* Stops the server, waiting for its thread; S may be NULL. */
void hd_http_stop(struct hd_http *s);

#endif /* HD_HTTP_H */
