/* Long-running test: an iterative stencil with an accumulator over a 1 MB
 * buffer, one launch per iteration, checked against a CPU simulation.
 *   longrun [ITERATIONS [return]]   return: main returns 0 after PASS
 *   instead of calling exit() (the shim's exit hold, tests/guest churn) */
#define TEST_NAME "longrun"
#define CL_TARGET_OPENCL_VERSION 300
#include "clcheck.h"

#include <stdbool.h>
#include <stdint.h>

/* Words per buffer (1 MB), default iterations, and how often to check. */
#define N (256 * 1024)
#define DEFAULT_ITERATIONS 2000
#define CHECK_EVERY 100
#define INJECT_EVERY 37
#define INJECT_WORDS 512

static const char *kernel_source =
    "__kernel void stencil(__global const uint *src, __global uint *dst,\n"
    "                      __global uint *acc, uint it)\n"
    "{\n"
    "    uint n = get_global_size(0);\n"
    "    uint i = get_global_id(0);\n"
    "    uint l = src[i == 0 ? n - 1 : i - 1];\n"
    "    uint r = src[i == n - 1 ? 0 : i + 1];\n"
    "    uint v = (l + 2u * src[i] + r) * 0x9e37u ^ it;\n"
    "    dst[i] = v;\n"
    "    acc[i] += v >> 7;\n"
    "}\n";

/* The CPU model of the device buffers. */
struct model {
    cl_uint *cur;
    cl_uint *next;
    cl_uint *acc;
};

/* Returns one new value of the stencil from its three inputs. */
static inline cl_uint stencil(cl_uint l, cl_uint c, cl_uint r, cl_uint it)
{
    return ((l + 2u * c + r) * 0x9e37u) ^ it;
}

/* Advances the model by one iteration, exactly as the kernel does; the two
 * wrapping ends are done apart so the inner loop has no modulo. */
static void model_step(struct model *m, cl_uint it)
{
    const cl_uint *s = m->cur;
    cl_uint *d = m->next;
    cl_uint *acc = m->acc;

    d[0] = stencil(s[N - 1], s[0], s[1], it);
    for (size_t i = 1; i < N - 1; i++)
        d[i] = stencil(s[i - 1], s[i], s[i + 1], it);
    d[N - 1] = stencil(s[N - 2], s[N - 1], s[0], it);
    for (size_t i = 0; i < N; i++)
        acc[i] += d[i] >> 7;
    m->next = m->cur;
    m->cur = d;
}

/* Allocates a word array or fails. */
static cl_uint *alloc_words(void)
{
    cl_uint *p = malloc(N * sizeof(cl_uint));

    if (p == NULL)
        fail("out of memory");
    return p;
}

int main(int argc, char **argv)
{
    cl_platform_id platform;
    cl_device_id device;
    cl_context context;
    cl_command_queue queue;
    cl_program program;
    cl_kernel kernel;
    cl_mem buf[2], acc;
    struct model m;
    cl_uint *got = alloc_words();
    cl_uint inject[INJECT_WORDS];
    long iterations = DEFAULT_ITERATIONS;
    size_t global = N;
    cl_int err;
    int cur = 0;

    bool by_return = false;

    if (argc > 1) {
        char *end;

        iterations = strtol(argv[1], &end, 10);
        if (*end != '\0' || iterations < 1 ||
            (argc > 2 && strcmp(argv[2], "return") != 0) || argc > 3)
            fail("usage: %s [iterations [return]]", argv[0]);
        by_return = argc > 2;
    }
    pick_device(&platform, &device);
    context = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    CHECK(err);
    queue = clCreateCommandQueueWithProperties(context, device, NULL, &err);
    CHECK(err);
    program = build_source(context, device, kernel_source, "");
    kernel = make_kernel(program, "stencil");

    m.cur = alloc_words();
    m.next = alloc_words();
    m.acc = alloc_words();
    for (size_t i = 0; i < N; i++) {
        m.cur[i] = (cl_uint)(i * 2654435761u);
        m.next[i] = 0;
        m.acc[i] = (cl_uint)i;
    }
    buf[0] = clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                            N * sizeof(cl_uint), m.cur, &err);
    CHECK(err);
    buf[1] = clCreateBuffer(context, CL_MEM_READ_WRITE, N * sizeof(cl_uint),
                            NULL, &err);
    CHECK(err);
    acc = clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                         N * sizeof(cl_uint), m.acc, &err);
    CHECK(err);
    CHECK(clSetKernelArg(kernel, 2, sizeof(cl_mem), &acc));

    for (long it = 0; it < iterations; it++) {
        cl_uint itv = (cl_uint)it;

        /* Now and then the host overwrites a stretch of the current state. */
        if (it % INJECT_EVERY == INJECT_EVERY - 1) {
            size_t off = (size_t)(it * 7919) % (N - INJECT_WORDS);

            for (size_t i = 0; i < INJECT_WORDS; i++)
                inject[i] = (cl_uint)(it * 131 + (long)i);
            CHECK(clEnqueueWriteBuffer(queue, buf[cur], CL_TRUE,
                                       off * sizeof(cl_uint), sizeof(inject),
                                       inject, 0, NULL, NULL));
            memcpy(m.cur + off, inject, sizeof(inject));
        }

        CHECK(clSetKernelArg(kernel, 0, sizeof(cl_mem), &buf[cur]));
        CHECK(clSetKernelArg(kernel, 1, sizeof(cl_mem), &buf[1 - cur]));
        CHECK(clSetKernelArg(kernel, 3, sizeof(itv), &itv));
        CHECK(clEnqueueNDRangeKernel(queue, kernel, 1, NULL, &global, NULL, 0,
                                     NULL, NULL));
        model_step(&m, itv);
        cur = 1 - cur;

        if (it % CHECK_EVERY == CHECK_EVERY - 1 || it == iterations - 1) {
            char what[64];

            CHECK(clEnqueueReadBuffer(queue, buf[cur], CL_TRUE, 0,
                                      N * sizeof(cl_uint), got, 0, NULL,
                                      NULL));
            snprintf(what, sizeof(what), "state after iteration %ld", it);
            expect_uints(got, m.cur, N, what);
            CHECK(clEnqueueReadBuffer(queue, acc, CL_TRUE, 0,
                                      N * sizeof(cl_uint), got, 0, NULL,
                                      NULL));
            snprintf(what, sizeof(what), "accumulator after iteration %ld",
                     it);
            expect_uints(got, m.acc, N, what);
        }
    }

    CHECK(clReleaseMemObject(buf[0]));
    CHECK(clReleaseMemObject(buf[1]));
    CHECK(clReleaseMemObject(acc));
    CHECK(clReleaseKernel(kernel));
    CHECK(clReleaseProgram(program));
    CHECK(clReleaseCommandQueue(queue));
    CHECK(clReleaseContext(context));
    free(m.cur);
    free(m.next);
    free(m.acc);
    free(got);
    if (by_return) {
        printf("PASS %s\n", TEST_NAME);
        fflush(stdout);
        return 0;
    }
    pass();
}
