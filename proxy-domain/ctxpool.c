/* Contexts made ahead of time, one spare per offered device.
 *
 * Creating a context is the slowest step of rebuilding a program's objects
 * on NVIDIA (~100 ms, a CUDA context each), and a program switching onto the
 * proxy waits for it with its calls held.  A spare made while nobody waits
 * turns that into a hand-over; the next spare is made in the background.
 *
 * A context NVIDIA has just made still sets itself up on its first queue,
 * buffer, copy and program build: a program's first rebuild there took
 * 4.4-5.9 ms, 1.8-2.5 ms once the spare had built and run one kernel
 * (H200).  So each spare of a GPU (or accelerator) does all of that once
 * before it is offered; CRANE_PROXY_WARM_SPARES=0 never, =1 for every
 * device (a CPU device compiles slowly and gains little). */
#include "ctxpool.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/log.h"

#define MAX_SPARES 64

struct spare {
    cl_device_id dev;
    cl_platform_id platform;
    cl_context ctx;              /* NULL while being made or taken */
    pthread_t maker;
    bool making;
};

static struct pool {
    pthread_mutex_t lock;
    pthread_cond_t quit_cv;      /* wakes makers waiting out the delay */
    bool quitting;
    struct spare spares[MAX_SPARES];
    size_t n;
} pool = {.lock = PTHREAD_MUTEX_INITIALIZER,
          .quit_cv = PTHREAD_COND_INITIALIZER};

/*
 * A spare taken is replaced only after CRANE_PROXY_SPARE_DELAY_MS (default
 * 3000): making a context (and warming it) holds the vendor's locks for
 * 100 ms or more, and a program whose switch just took the spare moves its
 * bytes right then: on the H200 its first writes waited 20-75 ms behind
 * the maker.  A program's second context within the delay is made when
 * asked, as without a pool.
 */
static long spare_delay_ms(void)
{
    const char *e = getenv("CRANE_PROXY_SPARE_DELAY_MS");
    char *end;
    long v = e ? strtol(e, &end, 10) : 3000;

    return e && (*end || v < 0 || v > 600000) ? 3000 : v;
}

static const char warm_src[] =
    "kernel void crane_warm(global uint *p) { p[get_global_id(0)] += 1u; }";

/* One queue, buffer, copy each way and kernel launch on CTX, released
 * again; a failure only leaves the context colder (logged). */
static void warm(cl_context ctx, cl_device_id dev)
{
    enum { WORDS = 1u << 16 };
    const size_t bytes = WORDS * sizeof(unsigned);
    unsigned *host = calloc(WORDS, sizeof(*host));  /* makers run at once */
    const char *src = warm_src;
    cl_command_queue q = NULL;
    cl_program prog = NULL;
    cl_kernel k = NULL;
    cl_mem buf = NULL;
    size_t n = WORDS;
    cl_int err = CL_SUCCESS;

    if (!host)
        return;
    q = clCreateCommandQueueWithProperties(ctx, dev, NULL, &err);
    if (q)
        buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (buf)
        err = clEnqueueWriteBuffer(q, buf, CL_TRUE, 0, bytes, host, 0, NULL,
                                   NULL);
    if (buf && err == CL_SUCCESS)
        prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    if (prog && (err = clBuildProgram(prog, 1, &dev, "", NULL, NULL)) ==
                    CL_SUCCESS)
        k = clCreateKernel(prog, "crane_warm", &err);
    if (k && (err = clSetKernelArg(k, 0, sizeof(buf), &buf)) == CL_SUCCESS)
        err = clEnqueueNDRangeKernel(q, k, 1, NULL, &n, NULL, 0, NULL, NULL);
    if (buf && err == CL_SUCCESS)
        err = clEnqueueReadBuffer(q, buf, CL_TRUE, 0, bytes, host, 0, NULL,
                                  NULL);
    if (err != CL_SUCCESS)
        CRN_DEBUG("spare context: warming it stopped at %d", err);
    else
        CRN_DEBUG("spare context warmed: a queue, a buffer, a copy each way "
                 "and a kernel ran once");
    if (k)
        clReleaseKernel(k);
    if (prog)
        clReleaseProgram(prog);
    if (buf)
        clReleaseMemObject(buf);
    if (q)
        clReleaseCommandQueue(q);
    free(host);
}

/* Whether spares of DEV are warmed (CRANE_PROXY_WARM_SPARES). */
static bool warms(cl_device_id dev)
{
    const char *w = getenv("CRANE_PROXY_WARM_SPARES");
    cl_device_type type = 0;

    if (w && strcmp(w, "0") == 0)
        return false;
    if (w && strcmp(w, "1") == 0)
        return true;
    return clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof(type), &type,
                           NULL) == CL_SUCCESS &&
           (type & (CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_ACCELERATOR));
}

static cl_context make(cl_device_id dev)
{
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);

    if (!ctx)
        CRN_WARN("spare context: clCreateContext gave %d", err);
    else if (warms(dev))
        warm(ctx, dev);
    return ctx;
}

static void *maker_main(void *arg)
{
    struct spare *s = arg;
    long delay = spare_delay_ms();
    struct timespec until;
    bool quit;

    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += delay / 1000;
    until.tv_nsec += (delay % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&pool.lock);
    while (!pool.quitting &&
           pthread_cond_timedwait(&pool.quit_cv, &pool.lock, &until) == 0)
        ;
    quit = pool.quitting;
    pthread_mutex_unlock(&pool.lock);
    if (quit)
        return NULL;
    cl_context ctx = make(s->dev);

    pthread_mutex_lock(&pool.lock);
    s->ctx = ctx;
    pthread_mutex_unlock(&pool.lock);
    return NULL;
}

void px_ctxpool_init(const struct px_devices *d)
{
    pool.quitting = false;
    for (size_t p = 0; p < d->nplat; p++)
        for (size_t i = 0; i < d->plats[p].ndev && pool.n < MAX_SPARES; i++) {
            struct spare *s = &pool.spares[pool.n++];
            s->dev = d->plats[p].devs[i].handle;
            s->platform = d->plats[p].handle;
            s->ctx = make(s->dev);
        }
}

cl_context px_ctxpool_take(cl_device_id dev, cl_platform_id platform)
{
    cl_context ctx = NULL;

    pthread_mutex_lock(&pool.lock);
    for (size_t i = 0; i < pool.n; i++) {
        struct spare *s = &pool.spares[i];
        if (s->dev != dev || !s->ctx || (platform && platform != s->platform))
            continue;
        ctx = s->ctx;
        s->ctx = NULL;
        /* The previous maker finished (it left a context): reap it. */
        if (s->making)
            pthread_join(s->maker, NULL);
        s->making = pthread_create(&s->maker, NULL, maker_main, s) == 0;
        break;
    }
    pthread_mutex_unlock(&pool.lock);
    return ctx;
}

cl_context px_ctxpool_peek(void)
{
    cl_context ctx = NULL;

    pthread_mutex_lock(&pool.lock);
    for (size_t i = 0; i < pool.n && !ctx; i++)
        if (pool.spares[i].ctx && clRetainContext(pool.spares[i].ctx) ==
                                      CL_SUCCESS)
            ctx = pool.spares[i].ctx;
    pthread_mutex_unlock(&pool.lock);
    return ctx;
}

void px_ctxpool_fini(void)
{
    pthread_mutex_lock(&pool.lock);
    pool.quitting = true;
    pthread_cond_broadcast(&pool.quit_cv);
    pthread_mutex_unlock(&pool.lock);
    for (size_t i = 0; i < pool.n; i++) {
        struct spare *s = &pool.spares[i];
        if (s->making)
            pthread_join(s->maker, NULL);
        s->making = false;
        if (s->ctx)
            clReleaseContext(s->ctx);
        s->ctx = NULL;
    }
    pool.n = 0;
}
