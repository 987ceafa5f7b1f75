/* The HTTP API's query parameters, untrusted input: only known names,
 * plain decimals within bounds, epoch times, percent-decoded names, the
 * history's filter. */
#include "http_query.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static enum MHD_Result check_known(void *cls, enum MHD_ValueKind kind,
                                   const char *key, const char *value)
{
    const char *const *known = ((const char *const **)cls)[0];
    int *unknown = (int *)((const char *const **)cls)[1];

    (void)kind;
    (void)value;
    for (; *known != NULL; known++)
        if (strcmp(*known, key) == 0)
            return MHD_YES;
    *unknown = 1;
    return MHD_NO;
}

int hd_http_only_known(struct MHD_Connection *c, const char *const *known)
{
    int unknown = 0;
    const void *cls[2] = {known, &unknown};

    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, check_known, cls);
    return unknown ? -EINVAL : 0;
}

static const char *arg(struct MHD_Connection *c, const char *name)
{
    return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
}

int hd_http_parse_uint(struct MHD_Connection *c, const char *name,
                      uint64_t def, uint64_t min, uint64_t max, uint64_t *out)
{
    const char *v = arg(c, name);
    uint64_t n = 0;

    *out = def;
    if (v == NULL)
        return 0;
    if (*v == '\0')
        return -EINVAL;
    for (; *v != '\0'; v++) {
        if (*v < '0' || *v > '9')
            return -EINVAL;
        n = n * 10 + (uint64_t)(*v - '0');
        if (n > max)
            return -EINVAL;
    }
    if (n < min)
        return -EINVAL;
    *out = n;
    return 0;
}

/* Parses ?NAME= (absent: 0) as seconds since the epoch: digits with at
 * most one '.', more than 0 and below 10^11. */
static int parse_time(struct MHD_Connection *c, const char *name, double *out)
{
    const char *v = arg(c, name);
    size_t len, dots = 0;
    char *end;
    double t;

    *out = 0;
    if (v == NULL)
        return 0;
    len = strnlen(v, 33);
    if (len == 0 || len > 32)
        return -EINVAL;
    for (size_t i = 0; i < len; i++) {
        if (v[i] == '.')
            dots++;
        else if (v[i] < '0' || v[i] > '9')
            return -EINVAL;
    }
    if (dots > 1 || v[0] == '.' || v[len - 1] == '.')
        return -EINVAL;
    t = strtod(v, &end);
    if (*end != '\0' || !isfinite(t) || t <= 0 || t >= 1e11)
        return -EINVAL;
    *out = t;
    return 0;
}

static int hex_digit(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/*
 * Parses ?NAME= (absent: "") as a name: percent-decoded here (the server
 * decodes nothing, keep_escapes), '+' as a space, 1..CAP-1 bytes, no
 * control character or NUL (a "%00" would cut it short).
 */
static int parse_name(struct MHD_Connection *c, const char *name, char *out,
                      size_t cap)
{
    const char *v = arg(c, name);
    size_t n = 0;

    out[0] = '\0';
    if (v == NULL)
        return 0;
    for (; *v != '\0'; v++) {
        int ch = (unsigned char)*v;

        if (ch == '%') {
            int hi = hex_digit(v[1]);
            int lo = hi < 0 ? -1 : hex_digit(v[2]);

            if (lo < 0)
                return -EINVAL;
            ch = hi * 16 + lo;
            v += 2;
        } else if (ch == '+') {
            ch = ' ';
        }
        if (ch < 0x20 || ch == 0x7f || n + 1 >= cap)
            return -EINVAL;
        out[n++] = (char)ch;
    }
    out[n] = '\0';
    return n > 0 ? 0 : -EINVAL;
}

int hd_http_parse_filter(struct MHD_Connection *c, struct hd_filter *f)
{
    const char *mode = arg(c, "mode");
    const char *result = arg(c, "result");

    hd_filter_init(f);
    if (parse_name(c, "domain", f->domain, sizeof(f->domain)) != 0 ||
        parse_name(c, "host", f->host, sizeof(f->host)) != 0 ||
        parse_time(c, "since", &f->since) != 0 ||
        parse_time(c, "until", &f->until) != 0)
        return -EINVAL;
    if (f->since > 0 && f->until > 0 && f->until <= f->since)
        return -EINVAL;
    if (mode != NULL) {
        if (strcmp(mode, "live") == 0)
            f->mode = HD_MODE_LIVE;
        else if (strcmp(mode, "offline") == 0)
            f->mode = HD_MODE_OFFLINE;
        else
            return -EINVAL;
    }
    if (result != NULL) {
        for (int r = 0; r < HD_RESULT_COUNT && f->result < 0; r++)
            if (strcmp(result, hd_result_name((enum hd_result)r)) == 0)
                f->result = r;
        if (f->result < 0)
            return -EINVAL;
    }
    return hd_filter_check(f);
}
