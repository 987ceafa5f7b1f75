/* The HTTP API's query parameters, untrusted input: only known names,
 * plain decimals within bounds, epoch times, percent-decoded names, the
 * history's filter. */
#ifndef HD_HTTP_QUERY_H
#define HD_HTTP_QUERY_H

#include "host-daemon/history/history.h"

#include <microhttpd.h>
#include <stdint.h>

/* -EINVAL when the request has a parameter not in KNOWN (NULL-ended). */
int hd_http_only_known(struct MHD_Connection *c, const char *const *known);

/* Parses ?NAME= (absent: DEF) as a plain decimal in MIN..MAX into *OUT;
 * -EINVAL for anything else (signs, exponents, escapes, empty). */
int hd_http_parse_uint(struct MHD_Connection *c, const char *name,
                       uint64_t def, uint64_t min, uint64_t max,
                       uint64_t *out);

/*
 * The filter of ?domain= and ?host= (percent-decoded, '+' a space,
 * 1..HD_NAME_MAX bytes, no control character), ?mode=live|offline,
 * ?result= (a result's name), ?since= and ?until= (epoch seconds: digits
 * and one '.', above 0, below 10^11, since < until) into *F; -EINVAL for
 * anything malformed.
 */
int hd_http_parse_filter(struct MHD_Connection *c, struct hd_filter *f);

#endif /* HD_HTTP_QUERY_H */
