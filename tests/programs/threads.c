/* Thread test: four threads share one context, program and input buffer,
 * each with its own queue, kernel and buffers, all launching at once. */
#define TEST_NAME "threads"
#define CL_TARGET_OPENCL_VERSION 300
#include "clcheck.h"

#include <pthread.h>
#include <stdint.h>

/* Threads, words per buffer, and launches per thread. */
#define THREADS 4
#define N 16384
#define LAUNCHES 200

static const char *kernel_source =
    "__kernel void churn(__global const uint *shared_in, __global uint *d,\n"
    "                    uint k, uint seed)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    d[i] = d[i] * 1664525u + k + seed * (uint)i + shared_in[i];\n"
    "}\n";

/* What every thread shares, set up before the threads start. */
struct shared {
    cl_context context;
    cl_device_id device;
    cl_program program;
    cl_mem input;
    cl_uint input_host[N];
    pthread_barrier_t start;
};

/* One thread's own objects and mirror. */
struct worker {
    struct shared *sh;
    int id;
    cl_uint mirror[N];
    cl_uint got[N];
    cl_uint staging[N];
};

/* Reads the worker's buffer (blocking or not) and compares it. */
static void verify(struct worker *w, cl_command_queue q, cl_mem d,
                   int blocking, int it)
{
    cl_event ev;
    char what[96];

    memset(w->got, 0, sizeof(w->got));
    CHECK(clEnqueueReadBuffer(q, d, blocking ? CL_TRUE : CL_FALSE, 0,
                              sizeof(w->got), w->got, 0, NULL, &ev));
    if (!blocking)
        CHECK(clWaitForEvents(1, &ev));
    CHECK(clReleaseEvent(ev));
    snprintf(what, sizeof(what), "thread %d after launch %d", w->id, it);
    expect_uints(w->got, w->mirror, N, what);
}

/* The body of each thread: its own queue, kernel and buffer, many launches
 * and reads, plus buffers made and dropped along the way. */
static void *run_worker(void *arg)
{
    struct worker *w = arg;
    struct shared *sh = w->sh;
    cl_uint seed = 0x1000u * (cl_uint)(w->id + 1);
    size_t global = N;
    cl_command_queue q;
    cl_kernel k;
    cl_mem d;
    cl_int err;

    q = clCreateCommandQueueWithProperties(sh->context, sh->device, NULL,
                                           &err);
    CHECK(err);
    k = make_kernel(sh->program, "churn");
    for (size_t i = 0; i < N; i++)
        w->mirror[i] = (cl_uint)(i * 31u) ^ seed;
    d = clCreateBuffer(sh->context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                       sizeof(w->mirror), w->mirror, &err);
    CHECK(err);
    CHECK(clSetKernelArg(k, 0, sizeof(cl_mem), &sh->input));
    CHECK(clSetKernelArg(k, 1, sizeof(cl_mem), &d));
    CHECK(clSetKernelArg(k, 3, sizeof(seed), &seed));

    pthread_barrier_wait(&sh->start);
    for (int it = 0; it < LAUNCHES; it++) {
        cl_uint kv = (cl_uint)it * 40503u + (cl_uint)w->id;

        CHECK(clSetKernelArg(k, 2, sizeof(kv), &kv));
        CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL,
                                     NULL));
        for (size_t i = 0; i < N; i++)
            w->mirror[i] = w->mirror[i] * 1664525u + kv + seed * (cl_uint)i +
                           sh->input_host[i];

        if (it % 10 == 9)
            verify(w, q, d, it % 20 == 9, it);
        if (it % 25 == 12) {
            /* Overwrite a stretch from the host, via a short-lived buffer. */
            size_t off = (size_t)(it * 97) % (N - 1024);
            cl_mem tmp;

            for (size_t i = 0; i < 1024; i++)
                w->staging[i] = (cl_uint)(it * 1024 + (int)i) ^ seed;
            tmp = clCreateBuffer(sh->context,
                                 CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                 1024 * sizeof(cl_uint), w->staging, &err);
            CHECK(err);
            CHECK(clEnqueueCopyBuffer(q, tmp, d, 0, off * sizeof(cl_uint),
                                      1024 * sizeof(cl_uint), 0, NULL, NULL));
            CHECK(clReleaseMemObject(tmp));
            memcpy(w->mirror + off, w->staging, 1024 * sizeof(cl_uint));
        }
    }
    CHECK(clFinish(q));
    verify(w, q, d, 1, LAUNCHES);
    CHECK(clReleaseMemObject(d));
    CHECK(clReleaseKernel(k));
    CHECK(clReleaseCommandQueue(q));
    return NULL;
}

int main(void)
{
    static struct shared sh;
    static struct worker workers[THREADS];
    pthread_t tids[THREADS];
    cl_platform_id platform;
    cl_int err;

    pick_device(&platform, &sh.device);
    sh.context = clCreateContext(NULL, 1, &sh.device, NULL, NULL, &err);
    CHECK(err);
    sh.program = build_source(sh.context, sh.device, kernel_source, "");
    for (size_t i = 0; i < N; i++)
        sh.input_host[i] = (cl_uint)(i * 2654435761u);
    sh.input = clCreateBuffer(sh.context,
                              CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                              sizeof(sh.input_host), sh.input_host, &err);
    CHECK(err);
    if (pthread_barrier_init(&sh.start, NULL, THREADS) != 0)
        fail("pthread_barrier_init failed");

    for (int t = 0; t < THREADS; t++) {
        workers[t].sh = &sh;
        workers[t].id = t;
        if (pthread_create(&tids[t], NULL, run_worker, &workers[t]) != 0)
            fail("pthread_create failed");
    }
    for (int t = 0; t < THREADS; t++)
        pthread_join(tids[t], NULL);

    /* The shared input is unchanged after all that. */
    {
        static cl_uint got[N];
        cl_command_queue q;

        q = clCreateCommandQueueWithProperties(sh.context, sh.device, NULL,
                                               &err);
        CHECK(err);
        CHECK(clEnqueueReadBuffer(q, sh.input, CL_TRUE, 0, sizeof(got), got,
                                  0, NULL, NULL));
        expect_uints(got, sh.input_host, N, "shared input");
        CHECK(clReleaseCommandQueue(q));
    }
    pthread_barrier_destroy(&sh.start);
    CHECK(clReleaseMemObject(sh.input));
    CHECK(clReleaseProgram(sh.program));
    CHECK(clReleaseContext(sh.context));
    pass();
}
