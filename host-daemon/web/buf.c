/* A growable text buffer the metrics and JSON renderers write into. */
#include "buf.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void hd_buf_free(struct hd_buf *b)
{
    free(b->data);
    *b = (struct hd_buf){0};
}

/* Makes room for N more bytes plus the NUL; returns 0 or b->err. */
static int reserve(struct hd_buf *b, size_t n)
{
    size_t cap;
    char *p;

    if (b->err != 0)
        return b->err;
    if (n > HD_BUF_MAX || b->len + n + 1 > HD_BUF_MAX) {
        b->err = -E2BIG;
        return b->err;
    }
    if (b->len + n + 1 <= b->cap)
        return 0;
    cap = b->cap != 0 ? b->cap : 256;
    while (cap < b->len + n + 1)
        cap *= 2;
    p = realloc(b->data, cap);
    if (p == NULL) {
        b->err = -ENOMEM;
        return b->err;
    }
    b->data = p;
    b->cap = cap;
    return 0;
}

int hd_buf_put(struct hd_buf *b, const char *s, size_t len)
{
    int rc = reserve(b, len);

    if (rc != 0)
        return rc;
    memcpy(b->data + b->len, s, len);
    b->len += len;
    b->data[b->len] = '\0';
    return 0;
}

int hd_buf_puts(struct hd_buf *b, const char *s)
{
    return hd_buf_put(b, s, strlen(s));
}

int hd_buf_printf(struct hd_buf *b, const char *fmt, ...)
{
    va_list ap;
    int n;
    int rc;

    if (b->err != 0)
        return b->err;
    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->err = -EINVAL;
        return b->err;
    }
    rc = reserve(b, (size_t)n);
    if (rc != 0)
        return rc;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}

int hd_buf_put_double(struct hd_buf *b, double v)
{
    char s[32];

    if (isnan(v))
        return hd_buf_puts(b, "NaN");
    if (isinf(v))
        return hd_buf_puts(b, v > 0 ? "+Inf" : "-Inf");
    /* 0.1 prints as 0.1, not 0.10000000000000001: fewest digits first. */
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(s, sizeof(s), "%.*g", prec, v);
        if (strtod(s, NULL) == v)
            break;
    }
    return hd_buf_puts(b, s);
}
