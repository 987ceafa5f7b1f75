/* A program built with clCompileProgram + clLinkProgram switches back and
 * forth without being compiled or linked again (shim/program_cache.c).
 *
 * Compiles two units against a header program, links them into an
 * executable, builds a third program from source, and runs the linked
 * kernels and the built one, each word checked.  Then ROUNDS (argv[1], default 3) times:
 * switches (crane_rehome, CRANE_REHOME_TO=alternate: to the proxy, back),
 * runs every kernel again on each side and checks every word.  At the end,
 * back on the vendor, it links the kept units once more, compiles both
 * again with another option and links them: both must compute what
 * the vendor would (the units made from their binaries must be real
 * compiled objects, with their source and a successful build status,
 * and a compile must take the source again).
 *
 * Prints "EXPECT programs=N" (how many programs a switch back must make
 * from binaries, for tests/integration/kept-binaries.sh to compare with
 * the report) and "PASS kept_binaries" (exit 0); "FAIL kept_binaries:
 * ..." (exit 1); "SKIP kept_binaries: ..." (77) outside crane-run.
 */
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 8192

static const char *header = "#define SCALE(x) ((x) * MUL + 5u)\n";
static const char *unit_a =
    "#include \"scale.h\"\n"
    "uint helper(uint v) { return SCALE(v) ^ 0x5a5au; }\n"
    "__kernel void lk_fill(__global uint *o, uint k)\n"
    "{ uint i = get_global_id(0); o[i] = helper(i + k); }\n";
static const char *unit_b =
    "uint helper(uint v);\n"
    "__kernel void lk_mix(__global uint *o, __global const uint *a)\n"
    "{ uint i = get_global_id(0); o[i] = helper(a[i]) + i; }\n";
static const char *plain =
    "__kernel void pk(__global uint *o) { uint i = get_global_id(0);"
    " o[i] = o[i] * 7u + 1u; }\n";

static void fail(const char *what, cl_int err) __attribute__((noreturn));
static void fail(const char *what, cl_int err)
{
    printf("FAIL kept_binaries: %s: %d\n", what, err);
    fflush(stdout);
    exit(1);
}

#define CK(call)                        \
    do {                                \
        cl_int e_ = (call);             \
        if (e_ != CL_SUCCESS)           \
            fail(#call, e_);            \
    } while (0)

static cl_context ctx;
static cl_device_id dev;
static cl_command_queue q;
static cl_mem buf_a, buf_b;

static uint32_t helper(uint32_t v, uint32_t mul)
{
    return (v * mul + 5u) ^ 0x5a5au;
}

static cl_program source(const char *src)
{
    cl_int err;
    cl_program p = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);

    if (!p)
        fail("clCreateProgramWithSource", err);
    return p;
}

static cl_program compile(const char *src, cl_program hdr, const char *opt)
{
    cl_program p = source(src);
    const char *name = "scale.h";

    CK(clCompileProgram(p, 1, &dev, opt, 1, &hdr, &name, NULL, NULL));
    return p;
}

static cl_program link2(cl_program a, cl_program b)
{
    cl_program in[2] = {a, b};
    cl_int err;
    cl_program p = clLinkProgram(ctx, 1, &dev, NULL, 2, in, NULL, NULL, &err);

    if (!p || err != CL_SUCCESS)
        fail("clLinkProgram", err);
    return p;
}

/* Runs the linked program's two kernels and the plain one; every word
 * checked against MUL, the unit's -DMUL. */
static void run(cl_program linked, cl_program built, uint32_t mul,
                uint32_t k, const char *when)
{
    static uint32_t got[N], prev[N];
    size_t global = N;
    cl_int err;
    cl_kernel fill = clCreateKernel(linked, "lk_fill", &err);
    cl_kernel mix = fill ? clCreateKernel(linked, "lk_mix", &err) : NULL;
    cl_kernel pk = mix ? clCreateKernel(built, "pk", &err) : NULL;

    if (!pk)
        fail("clCreateKernel", err);
    CK(clSetKernelArg(fill, 0, sizeof(buf_a), &buf_a));
    CK(clSetKernelArg(fill, 1, sizeof(k), &k));
    CK(clSetKernelArg(mix, 0, sizeof(buf_b), &buf_b));
    CK(clSetKernelArg(mix, 1, sizeof(buf_a), &buf_a));
    CK(clSetKernelArg(pk, 0, sizeof(buf_b), &buf_b));
    CK(clEnqueueNDRangeKernel(q, fill, 1, NULL, &global, NULL, 0, NULL,
                              NULL));
    CK(clEnqueueNDRangeKernel(q, mix, 1, NULL, &global, NULL, 0, NULL,
                              NULL));
    CK(clEnqueueReadBuffer(q, buf_b, CL_TRUE, 0, sizeof(prev), prev, 0, NULL,
                           NULL));
    CK(clEnqueueNDRangeKernel(q, pk, 1, NULL, &global, NULL, 0, NULL, NULL));
    CK(clEnqueueReadBuffer(q, buf_b, CL_TRUE, 0, sizeof(got), got, 0, NULL,
                           NULL));
    for (uint32_t i = 0; i < N; i++) {
        uint32_t a = helper(i + k, mul), b = helper(a, mul) + i;
        if (prev[i] != b || got[i] != b * 7u + 1u) {
            printf("FAIL kept_binaries: %s: word %u is %u/%u, want %u/%u\n",
                   when, i, prev[i], got[i], b, b * 7u + 1u);
            exit(1);
        }
    }
    clReleaseKernel(fill);
    clReleaseKernel(mix);
    clReleaseKernel(pk);
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 3;
    int (*rehome)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "crane_rehome");
    cl_platform_id plat;
    cl_int err;

    if (!rehome) {
        printf("SKIP kept_binaries: not under crane-run (no crane_rehome)\n");
        return 77;
    }
    CK(clGetPlatformIDs(1, &plat, NULL));
    CK(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL));
    if (!(ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err)))
        fail("clCreateContext", err);
    if (!(q = clCreateCommandQueue(ctx, dev, 0, &err)))
        fail("clCreateCommandQueue", err);
    buf_a = clCreateBuffer(ctx, CL_MEM_READ_WRITE, N * 4, NULL, &err);
    buf_b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, N * 4, NULL, &err);
    if (!buf_a || !buf_b)
        fail("clCreateBuffer", err);

    cl_program hdr = source(header);
    cl_program a = compile(unit_a, hdr, "-DMUL=3u");
    cl_program b = compile(unit_b, hdr, "-DMUL=3u");
    cl_program linked = link2(a, b);
    cl_program built = source(plain);
    CK(clBuildProgram(built, 1, &dev, NULL, NULL, NULL));
    /* Two compiled units, the linked program, the built one. */
    printf("EXPECT programs=4\n");
    run(linked, built, 3, 11, "natively");

    for (int r = 0; r < rounds; r++) {
        char when[64];
        CK(rehome());
        snprintf(when, sizeof(when), "round %d on the proxy", r);
        run(linked, built, 3, (uint32_t)r, when);
        CK(rehome());
        snprintf(when, sizeof(when), "round %d back", r);
        run(linked, built, 3, (uint32_t)r + 100u, when);
    }

    /* The units, made from their binaries, link again ... */
    cl_program relinked = link2(a, b);
    run(relinked, built, 3, 7, "relinked");
    cl_program_binary_type type = 0;
    CK(clGetProgramBuildInfo(a, dev, CL_PROGRAM_BINARY_TYPE, sizeof(type),
                             &type, NULL));
    if (type != CL_PROGRAM_BINARY_TYPE_COMPILED_OBJECT)
        fail("a unit's binary type after the switches", (cl_int)type);
    /* Its source and build status as the program left them. */
    char src[1024] = "";
    CK(clGetProgramInfo(a, CL_PROGRAM_SOURCE, sizeof(src) - 1, src, NULL));
    if (strcmp(src, unit_a) != 0)
        fail("a unit's CL_PROGRAM_SOURCE after the switches", 0);
    cl_build_status st = CL_BUILD_NONE;
    CK(clGetProgramBuildInfo(a, dev, CL_PROGRAM_BUILD_STATUS, sizeof(st),
                             &st, NULL));
    if (st != CL_BUILD_SUCCESS)
        fail("a unit's build status after the switches", st);
    CK(clGetProgramBuildInfo(linked, dev, CL_PROGRAM_BUILD_STATUS,
                             sizeof(st), &st, NULL));
    if (st != CL_BUILD_SUCCESS)
        fail("the linked program's build status after the switches", st);
    /* ... and compile again from their source with other options. */
    const char *name = "scale.h";
    CK(clCompileProgram(a, 1, &dev, "-DMUL=9u", 1, &hdr, &name, NULL, NULL));
    CK(clCompileProgram(b, 1, &dev, "-DMUL=9u", 1, &hdr, &name, NULL, NULL));
    cl_program nine = link2(a, b);
    run(nine, built, 9, 5, "compiled again");

    clReleaseProgram(nine);
    clReleaseProgram(relinked);
    clReleaseProgram(linked);
    clReleaseProgram(built);
    clReleaseProgram(a);
    clReleaseProgram(b);
    clReleaseProgram(hdr);
    clReleaseMemObject(buf_a);
    clReleaseMemObject(buf_b);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    printf("PASS kept_binaries\n");
    return 0;
}
