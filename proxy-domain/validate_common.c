/* The checks every part of validation uses: the refusal's text, lists and
 * property words within their bounds. */
#include "validate_common.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

int px_bad(cl_int err, char *why, size_t len, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
    return err;
}

int px_check_props(size_t n, bool pairs, const char *what, char *why,
                   size_t why_len)
{
    if (n > PX_MAX_PROPS)
        return BAD("%s: %zu property words (at most %d)", what, n,
                   PX_MAX_PROPS);
    if (pairs && n % 2)
        return BAD("%s: properties must be name/value pairs", what);
    return 0;
}

int px_check_list(size_t n, size_t max, const char *what, char *why,
                  size_t why_len)
{
    if (n > max)
        return BAD("%s: %zu entries (at most %zu)", what, n, max);
    return 0;
}
