/* The first switch to the proxy finds the program's objects made there
 * ahead (shim/prebuild.c), and none made from what changed meanwhile.
 *
 * Makes a context, two queues (the 1.x and the 2.0 call), a sampler,
 * program A (two kernels, arguments set) and program B (built, no kernel),
 * then switches to the proxy (crane_rehome, CRANE_REHOME_TO=remote) from a
 * second thread.  With CRANE_TEST_STOP_AT=prebuild the switch waits there
 * (its programs' twins made, its kernels' not yet) until
 * CRANE_TEST_STOP_FILE is removed; meanwhile this thread builds B again
 * with other options and makes a kernel of it, and makes program C and its
 * kernel.  Without the stop, the same happens once the program is on the
 * proxy, where B was made from its kept binaries (a build must not give
 * that binary again, nor abort PoCL).  Then every kernel runs on the proxy
 * and every word is checked: B's kernel must compute with B's second
 * build.  Everything is released before the exit.
 *
 * Prints "EXPECT prebuilt=N twins=M" (the objects made ahead and taken,
 * for the test to compare with the report), then "PASS prebuild" (exit 0);
 * "FAIL prebuild: ..." (exit 1) on a wrong word or a failed switch.
 */
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define N 4096

static const char *source =
    "__kernel void fill(__global uint *o, uint k)\n"
    "{ uint i = get_global_id(0); o[i] = i * 3u + k + VAL; }\n"
    "__kernel void add(__global uint *o, __global const uint *a)\n"
    "{ uint i = get_global_id(0); o[i] += a[i] * VAL; }\n";

static void fail(const char *what, cl_int err) __attribute__((noreturn));
static void fail(const char *what, cl_int err)
{
    printf("FAIL prebuild: %s: %d\n", what, err);
    fflush(stdout);
    exit(1);
}

#define CK(call)                        \
    do {                                \
        cl_int e_ = (call);             \
        if (e_ != CL_SUCCESS)           \
            fail(#call, e_);            \
    } while (0)

static int (*rehome)(void);
static int switch_rc = -1;

static void *switcher(void *arg)
{
    (void)arg;
    switch_rc = rehome();
    return NULL;
}

static cl_program build(cl_context ctx, cl_device_id dev, const char *opts)
{
    cl_int err;
    cl_program p = clCreateProgramWithSource(ctx, 1, &source, NULL, &err);

    if (!p)
        fail("clCreateProgramWithSource", err);
    CK(clBuildProgram(p, 1, &dev, opts, NULL, NULL));
    return p;
}

static cl_kernel kernel(cl_program p, const char *name)
{
    cl_int err;
    cl_kernel k = clCreateKernel(p, name, &err);

    if (!k)
        fail(name, err);
    return k;
}

static void fill_args(cl_kernel k, cl_mem o, cl_uint v)
{
    CK(clSetKernelArg(k, 0, sizeof(o), &o));
    CK(clSetKernelArg(k, 1, sizeof(v), &v));
}

static void check(cl_command_queue q, cl_mem m, const uint32_t *want,
                  const char *what)
{
    static uint32_t got[N];

    CK(clEnqueueReadBuffer(q, m, CL_TRUE, 0, sizeof(got), got, 0, NULL,
                           NULL));
    for (unsigned i = 0; i < N; i++)
        if (got[i] != want[i]) {
            printf("FAIL prebuild: %s word %u is %u, want %u\n", what, i,
                   got[i], want[i]);
            exit(1);
        }
}

int main(void)
{
    const char *stop = getenv("CRANE_TEST_STOP_FILE");
    cl_platform_id plat;
    cl_device_id dev;
    cl_int err;
    static uint32_t y0[N], want[N];
    size_t global = N;

    rehome = (int (*)(void))dlsym(RTLD_DEFAULT, "crane_rehome");
    if (!rehome) {
        printf("SKIP prebuild: not under crane-run (no crane_rehome)\n");
        return 77;
    }
    CK(clGetPlatformIDs(1, &plat, NULL));
    CK(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL));
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    if (!ctx)
        fail("clCreateContext", err);
    cl_command_queue q1 = clCreateCommandQueue(ctx, dev, 0, &err);
    if (!q1)
        fail("clCreateCommandQueue", err);
    cl_command_queue q2 =
        clCreateCommandQueueWithProperties(ctx, dev, NULL, &err);
    if (!q2)
        fail("clCreateCommandQueueWithProperties", err);
    unsigned made = 3;
    cl_bool images = CL_FALSE;
    CK(clGetDeviceInfo(dev, CL_DEVICE_IMAGE_SUPPORT, sizeof(images), &images,
                       NULL));
    cl_sampler smp = NULL;
    if (images) {
        const cl_sampler_properties sp[] = {
            CL_SAMPLER_NORMALIZED_COORDS, CL_FALSE, CL_SAMPLER_FILTER_MODE,
            CL_FILTER_NEAREST, 0};
        if (!(smp = clCreateSamplerWithProperties(ctx, sp, &err)))
            fail("clCreateSamplerWithProperties", err);
        made++;
    }
    cl_mem x = clCreateBuffer(ctx, CL_MEM_READ_WRITE, N * 4, NULL, &err);
    cl_mem y = clCreateBuffer(ctx, CL_MEM_READ_WRITE, N * 4, NULL, &err);
    cl_mem z = clCreateBuffer(ctx, CL_MEM_READ_WRITE, N * 4, NULL, &err);
    cl_mem w = clCreateBuffer(ctx, CL_MEM_READ_WRITE, N * 4, NULL, &err);
    if (!x || !y || !z || !w)
        fail("clCreateBuffer", err);
    cl_program a = build(ctx, dev, "-DVAL=1");
    cl_program b = build(ctx, dev, "-DVAL=1");
    cl_kernel afill = kernel(a, "fill"), aadd = kernel(a, "add");
    fill_args(afill, x, 7);
    CK(clSetKernelArg(aadd, 0, sizeof(y), &y));
    CK(clSetKernelArg(aadd, 1, sizeof(x), &x));
    made += 4;
    for (unsigned i = 0; i < N; i++)
        y0[i] = i * 2654435761u;
    CK(clEnqueueWriteBuffer(q2, y, CL_TRUE, 0, sizeof(y0), y0, 0, NULL,
                            NULL));
    /* Natively once, so that the objects are in use before the switch. */
    CK(clEnqueueNDRangeKernel(q1, afill, 1, NULL, &global, NULL, 0, NULL,
                              NULL));
    CK(clFinish(q1));

    pthread_t th;
    if (pthread_create(&th, NULL, switcher, NULL))
        fail("pthread_create", 0);
    cl_kernel bfill = NULL, cfill = NULL;
    cl_program c = NULL;
    if (stop) {
        /* The switch waits at its step: what changes now must not be
         * taken from what it made before. */
        unsigned waited = 0;
        while (access(stop, F_OK) != 0 && waited++ < 30000)
            usleep(1000);
        if (access(stop, F_OK) != 0)
            fail("the switch never stopped at prebuild", 0);
        CK(clBuildProgram(b, 1, &dev, "-DVAL=2", NULL, NULL));
        bfill = kernel(b, "fill");
        fill_args(bfill, z, 9);
        c = build(ctx, dev, "-DVAL=5");
        cfill = kernel(c, "fill");
        fill_args(cfill, w, 11);
        unlink(stop);
    }
    pthread_join(th, NULL);
    if (switch_rc != 0)
        fail("the switch to the proxy", switch_rc);
    /* Every object made before the switch was made ahead; with the stop,
     * program B's twin was of its first build (not taken), and neither
     * its new kernel nor program C and its kernel had twins. */
    printf("EXPECT prebuilt=%u twins=%u\n", made, stop ? made - 1 : made);
    if (!stop) {
        CK(clBuildProgram(b, 1, &dev, "-DVAL=2", NULL, NULL));
        bfill = kernel(b, "fill");
        fill_args(bfill, z, 9);
        c = build(ctx, dev, "-DVAL=5");
        cfill = kernel(c, "fill");
        fill_args(cfill, w, 11);
    }

    /* On the proxy: arguments set before the switch, and after. */
    CK(clEnqueueNDRangeKernel(q1, afill, 1, NULL, &global, NULL, 0, NULL,
                              NULL));
    CK(clEnqueueNDRangeKernel(q1, aadd, 1, NULL, &global, NULL, 0, NULL,
                              NULL));
    CK(clEnqueueNDRangeKernel(q2, bfill, 1, NULL, &global, NULL, 0, NULL,
                              NULL));
    CK(clEnqueueNDRangeKernel(q2, cfill, 1, NULL, &global, NULL, 0, NULL,
                              NULL));
    CK(clFinish(q1));
    CK(clFinish(q2));
    for (unsigned i = 0; i < N; i++)
        want[i] = i * 3u + 7 + 1;
    check(q2, x, want, "A fill (x)");
    for (unsigned i = 0; i < N; i++)
        want[i] = y0[i] + (i * 3u + 7 + 1);
    check(q2, y, want, "A add (y)");
    for (unsigned i = 0; i < N; i++)
        want[i] = i * 3u + 9 + 2;
    check(q2, z, want, "B fill after its second build (z)");
    for (unsigned i = 0; i < N; i++)
        want[i] = i * 3u + 11 + 5;
    check(q2, w, want, "C fill (w)");

    clReleaseKernel(afill);
    clReleaseKernel(aadd);
    clReleaseKernel(bfill);
    clReleaseKernel(cfill);
    clReleaseProgram(a);
    clReleaseProgram(b);
    clReleaseProgram(c);
    clReleaseMemObject(x);
    clReleaseMemObject(y);
    clReleaseMemObject(z);
    clReleaseMemObject(w);
    if (smp)
        clReleaseSampler(smp);
    clReleaseCommandQueue(q1);
    clReleaseCommandQueue(q2);
    clReleaseContext(ctx);
    /* Answered by the proxy only after every release sent before it: they
     * ran before the program ends (the proxy drops what it has not run
     * yet when the connection goes, which would hide no leak but count
     * the program's own objects as left). */
    size_t res = 0;
    CK(clGetDeviceInfo(dev, CL_DEVICE_PROFILING_TIMER_RESOLUTION,
                       sizeof(res), &res, NULL));
    printf("PASS prebuild\n");
    return 0;
}
