/* clbench: SHOC-style OpenCL micro-benchmarks for measuring shim overhead. */

/*
 * Each subcommand builds its kernels, warms up (which also makes the
 * implementation compile its work-group functions), times a fixed amount of
 * work with CLOCK_MONOTONIC around the enqueue loop and the final clFinish,
 * verifies the output against a CPU reference and prints one line:
 *
 *     RESULT <name> <seconds> <metric-value> <metric-unit>
 *
 * Exit status: 0 pass, 1 verification mismatch, 2 usage or OpenCL error.
 * The program is deliberately ordinary OpenCL so that it can be run both
 * natively and under build/bin/crane-run in the same session.
 */

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clbench.h"

/* ---- command table, device selection, main ------------------------------ */

static const struct {
    const char *name;
    bench_fn *fn;
    const char *help;
} tests[] = {
    {"bus_h2d", bench_bus_h2d, "host-to-device bandwidth, 64 MiB writes"},
    {"bus_d2h", bench_bus_d2h, "device-to-host bandwidth, 64 MiB reads"},
    {"launch", bench_launch, "trivial kernel enqueue rate"},
    {"setarg", bench_setarg, "8 clSetKernelArg + 1 tiny launch per iteration"},
    {"stencil", bench_stencil, "2D 5-point Jacobi, 512x512"},
    {"reduction", bench_reduction, "two-pass float sum of 4M elements"},
    {"sort", bench_sort, "bitonic sort of 256Ki keys, 171 launches"},
    {"gemm", bench_gemm, "tiled SGEMM 512x512"},
};

#define NTESTS (sizeof(tests) / sizeof(tests[0]))

static void usage(FILE *f)
{
    fprintf(f, "usage: clbench [--platform N] [--device N] "
            "[--device-type gpu|cpu|all]\n"
            "               [--scale S] [--pageable] TEST | --list\n"
            "prints: DEVICE <platform> | <device> | <driver version>\n"
            "        RESULT <name> <seconds> <metric-value> <metric-unit>\n"
            "--list prints every platform and device with its indices\n"
            "tests:\n");
    for (size_t i = 0; i < NTESTS; i++)
        fprintf(f, "  %-10s %s\n", tests[i].name, tests[i].help);
}

/* Open platform/device by index and create the context and queue. */
static int bench_open(struct bench *b, cl_uint pidx, cl_uint didx,
                      cl_device_type type)
{
    cl_platform_id plats[16];
    cl_device_id devs[16];
    cl_uint np = 0, nd = 0;
    cl_int err;
    char version[128] = "";

    CL_TRY(clGetPlatformIDs(16, plats, &np));
    if (pidx >= np) {
        fprintf(stderr, "clbench: platform %u not found (%u present)\n",
                (unsigned)pidx, (unsigned)np);
        goto out;
    }
    b->platform = plats[pidx];
    CL_TRY(clGetDeviceIDs(b->platform, type, 16, devs, &nd));
    if (didx >= nd) {
        fprintf(stderr, "clbench: device %u not found (%u present)\n",
                (unsigned)didx, (unsigned)nd);
        goto out;
    }
    b->device = devs[didx];
    CL_TRY(clGetDeviceInfo(b->device, CL_DEVICE_MAX_WORK_GROUP_SIZE,
                           sizeof(b->max_wg), &b->max_wg, NULL));
    CL_TRY(clGetDeviceInfo(b->device, CL_DEVICE_VERSION, sizeof(version) - 1,
                           version, NULL));
    b->context = clCreateContext(NULL, 1, &b->device, NULL, NULL, &err);
    CL_TRY(err);
    /* "OpenCL 2.0" and later have the properties form; 1.x only the old. */
    if (strncmp(version, "OpenCL 1.", 9) == 0)
        b->queue = clCreateCommandQueue(b->context, b->device, 0, &err);
    else
        b->queue = clCreateCommandQueueWithProperties(b->context, b->device,
                                                      NULL, &err);
    CL_TRY(err);
    return 0;
out:
    return -1;
}

/* Print "DEVICE <platform> | <device> | <driver version>" for device d. */
static void print_device(cl_platform_id p, cl_device_id d, const char *tag)
{
    char pname[128] = "?", dname[128] = "?", driver[64] = "?";

    clGetPlatformInfo(p, CL_PLATFORM_NAME, sizeof(pname) - 1, pname, NULL);
    clGetDeviceInfo(d, CL_DEVICE_NAME, sizeof(dname) - 1, dname, NULL);
    clGetDeviceInfo(d, CL_DRIVER_VERSION, sizeof(driver) - 1, driver, NULL);
    printf("%s %s | %s | %s\n", tag, pname, dname, driver);
}

/* --list: every platform and device, by the indices --platform and
 * --device take (device indices counted within --device-type). */
static int list_devices(cl_device_type type)
{
    cl_platform_id plats[16];
    cl_device_id devs[16];
    cl_uint np = 0, nd;
    char tag[32];

    CL_TRY(clGetPlatformIDs(16, plats, &np));
    for (cl_uint p = 0; p < np && p < 16; p++) {
        nd = 0;
        if (clGetDeviceIDs(plats[p], type, 16, devs, &nd) != CL_SUCCESS)
            nd = 0;
        for (cl_uint d = 0; d < nd && d < 16; d++) {
            snprintf(tag, sizeof(tag), "platform %u device %u:",
                     (unsigned)p, (unsigned)d);
            print_device(plats[p], devs[d], tag);
        }
    }
    return BENCH_OK;
out:
    return BENCH_ERROR;
}

static void bench_close(struct bench *b)
{
    if (b->queue)
        clReleaseCommandQueue(b->queue);
    if (b->context)
        clReleaseContext(b->context);
}

static int parse_uint(const char *s, cl_uint *out)
{
    char *end;
    unsigned long v = strtoul(s, &end, 10);

    if (!*s || *end || v > 1024)
        return -1;
    *out = (cl_uint)v;
    return 0;
}

int main(int argc, char **argv)
{
    struct bench b = {.scale = 1.0};
    struct bench_result r = {0};
    cl_uint pidx = 0, didx = 0;
    cl_device_type type = CL_DEVICE_TYPE_ALL;
    const char *name = NULL;
    bench_fn *fn = NULL;
    int rc, list = 0;

    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

        if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(arg, "--platform") && val) {
            if (parse_uint(val, &pidx))
                goto bad;
            i++;
        } else if (!strcmp(arg, "--device") && val) {
            if (parse_uint(val, &didx))
                goto bad;
            i++;
        } else if (!strcmp(arg, "--device-type") && val) {
            if (!strcmp(val, "gpu"))
                type = CL_DEVICE_TYPE_GPU;
            else if (!strcmp(val, "cpu"))
                type = CL_DEVICE_TYPE_CPU;
            else if (!strcmp(val, "all"))
                type = CL_DEVICE_TYPE_ALL;
            else
                goto bad;
            i++;
        } else if (!strcmp(arg, "--list")) {
            list = 1;
        } else if (!strcmp(arg, "--pageable")) {
            b.pageable = 1;
        } else if (!strcmp(arg, "--scale") && val) {
            char *end;

            b.scale = strtod(val, &end);
            if (!*val || *end || !(b.scale > 0) || b.scale > 1e6)
                goto bad;
            i++;
        } else if (arg[0] != '-' && !name) {
            name = arg;
        } else {
            goto bad;
        }
    }
    if (list)
        return name ? (usage(stderr), BENCH_ERROR) : list_devices(type);
    if (!name)
        goto bad;
    for (size_t i = 0; i < NTESTS; i++)
        if (!strcmp(name, tests[i].name))
            fn = tests[i].fn;
    if (!fn) {
        fprintf(stderr, "clbench: unknown test '%s'\n", name);
        goto bad;
    }

    if (bench_open(&b, pidx, didx, type)) {
        bench_close(&b);
        return BENCH_ERROR;
    }
    print_device(b.platform, b.device, "DEVICE");
    fflush(stdout);
    rc = fn(&b, &r);
    bench_close(&b);
    if (rc == BENCH_MISMATCH)
        fprintf(stderr, "clbench: %s: result does not match the CPU "
                "reference\n", name);
    if (rc != BENCH_OK)
        return rc;
    printf("RESULT %s %.6f %.4f %s\n", name, r.seconds, r.value, r.unit);
    return BENCH_OK;
bad:
    usage(stderr);
    return BENCH_ERROR;
}
