/* The conformance program's record of answers: one line per probe, the
 * same natively and under crane in every mode. */
#ifndef CRANE_TESTS_CONFORM_H
#define CRANE_TESTS_CONFORM_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/*
 * Each probe records what the OpenCL implementation answered (an error
 * code, a size, a value that is no handle) as one line "name: answer".
 * With --dump the lines go to stdout, so that tests/integration/conform.sh
 * can compare a run under crane with a native one line by line; the
 * program checks on its own only what the specification fixes (CHECK,
 * EXPECT), so that it passes in any one mode on a conformant vendor.
 */
static int conform_dump;
static int conform_no_native;   /* --no-native: no native kernel (a switch
                                   changes the device's capability) */
static unsigned conform_lines;

static void rec(const char *name, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void rec(const char *name, const char *fmt, ...)
{
    va_list ap;

    conform_lines++;
    if (!conform_dump)
        return;
    printf("%s: ", name);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
}

/* Records an error code by value. */
#define REC_ERR(name, call) rec(name, "err %d", (int)(call))

/* Records a query's error, size and (when it fits 8 bytes) value. */
static void rec_info(const char *name, cl_int err, size_t size,
                     const void *value)
{
    unsigned long long v = 0;

    if (err != CL_SUCCESS) {
        rec(name, "err %d", (int)err);
        return;
    }
    if (size <= sizeof(v) && value)
        memcpy(&v, value, size);
    if (size <= sizeof(v))
        rec(name, "size %zu value 0x%llx", size, v);
    else
        rec(name, "size %zu", size);
}

/* Records a string-valued answer whole. */
static void rec_string(const char *name, cl_int err, const char *s)
{
    if (err != CL_SUCCESS)
        rec(name, "err %d", (int)err);
    else
        rec(name, "\"%s\"", s);
}

#endif /* CRANE_TESTS_CONFORM_H */
