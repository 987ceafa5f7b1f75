/* A growable text buffer the metrics and JSON renderers write into. */
#ifndef HD_BUF_H
#define HD_BUF_H

#include <stddef.h>

/* The largest text a buffer grows to (a metrics page, a JSON answer). */
#define HD_BUF_MAX (16u << 20)

/*
 * Zero-initialise (struct hd_buf b = {0}), append, read b.data (always
 * NUL-terminated once anything was appended), then hd_buf_free.  The first
 * failure (-ENOMEM, -E2BIG past HD_BUF_MAX) sticks in b.err and later
 * appends do nothing, so a renderer checks once at the end.
 */
struct hd_buf {
    char *data;  /* owned; NULL until the first append */
    size_t len;
    size_t cap;
    int err;     /* 0 or the first -errno */
};

void hd_buf_free(struct hd_buf *b);
int hd_buf_put(struct hd_buf *b, const char *s, size_t len);
int hd_buf_puts(struct hd_buf *b, const char *s);
int hd_buf_printf(struct hd_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The shortest decimal that reads back as V (up to 17 digits); "NaN",
 * "+Inf" or "-Inf" when V is not finite (callers writing JSON check). */
int hd_buf_put_double(struct hd_buf *b, double v);

#endif /* HD_BUF_H */
