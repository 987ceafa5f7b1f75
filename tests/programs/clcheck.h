/* Shared checking and device-picking helpers for the crane test programs. */
#ifndef CRANE_TESTS_CLCHECK_H
#define CRANE_TESTS_CLCHECK_H

/*
 * Each program defines TEST_NAME (a string literal) before including this
 * header.  A program that must not link against libOpenCL (dlopen_app.c)
 * defines CLCHECK_NO_LINK so that the helpers calling OpenCL are left out.
 */
#ifndef TEST_NAME
#error "define TEST_NAME before including clcheck.h"
#endif

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300
#endif
#include <CL/cl.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The exit status that test runners read as "skipped". */
#define EXIT_SKIP 77

/* Ends a failure line and exits with status 1. */
static inline void fail_exit(void) __attribute__((noreturn));
static inline void fail_exit(void)
{
    printf("\n");
    fflush(stdout);
    exit(1);
}

/* Finishes a failure line begun by the caller and exits with status 1. */
static inline void fail_tail(const char *fmt, ...)
    __attribute__((noreturn, format(printf, 1, 2)));
static inline void fail_tail(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fail_exit();
}

/* Prints "FAIL <name>: <message>" on stdout and exits with status 1. */
static inline void fail(const char *fmt, ...)
    __attribute__((noreturn, format(printf, 1, 2)));
static inline void fail(const char *fmt, ...)
{
    va_list ap;

    printf("FAIL %s: ", TEST_NAME);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fail_exit();
}

/* Prints "PASS <name>" and exits with status 0. */
static inline void pass(void) __attribute__((noreturn));
static inline void pass(void)
{
    printf("PASS %s\n", TEST_NAME);
    fflush(stdout);
    exit(0);
}

/* Prints "SKIP <name>: <why>" and exits with the skip status. */
static inline void skip(const char *why) __attribute__((noreturn));
static inline void skip(const char *why)
{
    printf("SKIP %s: %s\n", TEST_NAME, why);
    fflush(stdout);
    exit(EXIT_SKIP);
}

/* Fails the test, naming the call and its error code, unless it returned
 * CL_SUCCESS. */
#define CHECK(call)                                                        \
    do {                                                                   \
        cl_int check_err_ = (call);                                        \
        if (check_err_ != CL_SUCCESS)                                      \
            fail("%s:%d: %s returned %d", __FILE__, __LINE__, #call,       \
                 (int)check_err_);                                         \
    } while (0)

/* Fails the test unless a call returned exactly the expected error code. */
#define CHECK_ERR(call, want)                                              \
    do {                                                                   \
        cl_int check_err_ = (call);                                        \
        if (check_err_ != (want))                                          \
            fail("%s:%d: %s returned %d, expected %s (%d)", __FILE__,      \
                 __LINE__, #call, (int)check_err_, #want, (int)(want));    \
    } while (0)

/* Fails the test with a formatted message unless a condition holds. */
#define EXPECT(cond, ...)                                                  \
    do {                                                                   \
        if (!(cond)) {                                                     \
            printf("FAIL %s: %s:%d: (%s) ", TEST_NAME, __FILE__, __LINE__, \
                   #cond);                                                 \
            fail_tail(__VA_ARGS__);                                        \
        }                                                                  \
    } while (0)

/* Compares two byte arrays and fails, naming the first differing byte. */
static inline void expect_bytes(const void *got, const void *want,
                                size_t size, const char *what)
{
    const unsigned char *g = got;
    const unsigned char *w = want;

    for (size_t i = 0; i < size; i++) {
        if (g[i] != w[i])
            fail("%s: byte %zu of %zu is 0x%02x, expected 0x%02x", what, i,
                 size, g[i], w[i]);
    }
}

/* Compares two cl_uint arrays and fails, naming the first differing word. */
static inline void expect_uints(const cl_uint *got, const cl_uint *want,
                                size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++) {
        if (got[i] != want[i])
            fail("%s: element %zu of %zu is %u, expected %u", what, i, n,
                 got[i], want[i]);
    }
}

#ifndef CLCHECK_NO_LINK

/* Picks the first device of the first platform. */
static inline void pick_device(cl_platform_id *platform, cl_device_id *device)
{
    cl_uint n = 0;

    CHECK(clGetPlatformIDs(1, platform, &n));
    if (n == 0)
        fail("no OpenCL platform");
    CHECK(clGetDeviceIDs(*platform, CL_DEVICE_TYPE_ALL, 1, device, NULL));
}

/* Returns the device's OpenCL version as major * 10 + minor (e.g. 30). */
static inline int device_version(cl_device_id device)
{
    char text[256] = "";
    int major = 0;
    int minor = 0;

    CHECK(clGetDeviceInfo(device, CL_DEVICE_VERSION, sizeof(text) - 1, text,
                          NULL));
    if (sscanf(text, "OpenCL %d.%d", &major, &minor) != 2)
        fail("cannot parse CL_DEVICE_VERSION '%s'", text);
    return major * 10 + minor;
}

/* Builds a program from source and fails with the build log on error. */
static inline cl_program build_source(cl_context context,
                                      cl_device_id device, const char *source,
                                      const char *options)
{
    cl_int err;
    cl_program program;

    program = clCreateProgramWithSource(context, 1, &source, NULL, &err);
    CHECK(err);
    err = clBuildProgram(program, 1, &device, options, NULL, NULL);
    if (err != CL_SUCCESS) {
        static char log[16384];

        log[0] = '\0';
        clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG,
                              sizeof(log) - 1, log, NULL);
        fail("clBuildProgram returned %d, log:\n%s", (int)err, log);
    }
    return program;
}

/* Creates one kernel by name. */
static inline cl_kernel make_kernel(cl_program program, const char *name)
{
    cl_int err;
    cl_kernel kernel = clCreateKernel(program, name, &err);

    if (err != CL_SUCCESS)
        fail("clCreateKernel(%s) returned %d", name, (int)err);
    return kernel;
}

#endif /* CLCHECK_NO_LINK */

#endif /* CRANE_TESTS_CLCHECK_H */
