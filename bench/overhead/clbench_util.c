/* clbench: the helpers every test uses: OpenCL errors by name, the
 * clock, warm-up, data, buffers and kernels. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clbench.h"

/* The OpenCL error codes we name in messages; others print as numbers. */
#define CL_ERRORS(X)                                                        \
    X(CL_DEVICE_NOT_FOUND)                                                  \
    X(CL_DEVICE_NOT_AVAILABLE)                                              \
    X(CL_COMPILER_NOT_AVAILABLE)                                            \
    X(CL_MEM_OBJECT_ALLOCATION_FAILURE)                                     \
    X(CL_OUT_OF_RESOURCES)                                                  \
    X(CL_OUT_OF_HOST_MEMORY)                                                \
    X(CL_BUILD_PROGRAM_FAILURE)                                             \
    X(CL_INVALID_VALUE)                                                     \
    X(CL_INVALID_DEVICE_TYPE)                                               \
    X(CL_INVALID_PLATFORM)                                                  \
    X(CL_INVALID_DEVICE)                                                    \
    X(CL_INVALID_CONTEXT)                                                   \
    X(CL_INVALID_COMMAND_QUEUE)                                             \
    X(CL_INVALID_MEM_OBJECT)                                                \
    X(CL_INVALID_PROGRAM)                                                   \
    X(CL_INVALID_PROGRAM_EXECUTABLE)                                        \
    X(CL_INVALID_KERNEL_NAME)                                               \
    X(CL_INVALID_KERNEL)                                                    \
    X(CL_INVALID_ARG_INDEX)                                                 \
    X(CL_INVALID_ARG_VALUE)                                                 \
    X(CL_INVALID_ARG_SIZE)                                                  \
    X(CL_INVALID_KERNEL_ARGS)                                               \
    X(CL_INVALID_WORK_DIMENSION)                                            \
    X(CL_INVALID_WORK_GROUP_SIZE)                                           \
    X(CL_INVALID_WORK_ITEM_SIZE)                                            \
    X(CL_INVALID_GLOBAL_OFFSET)                                             \
    X(CL_INVALID_EVENT_WAIT_LIST)                                           \
    X(CL_INVALID_OPERATION)                                                 \
    X(CL_INVALID_BUFFER_SIZE)                                               \
    X(CL_INVALID_GLOBAL_WORK_SIZE)

const char *cl_err_name(cl_int err)
{
    switch (err) {
#define X(name) case name: return #name;
    CL_ERRORS(X)
#undef X
    default:
        return "unknown OpenCL error";
    }
}

void cl_report(const char *what, cl_int err, int line)
{
    fprintf(stderr, "clbench: line %d: %s failed: %s (%d)\n", line, what,
            cl_err_name(err), (int)err);
}


double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The base work amount multiplied by --scale, never less than one. */
long scaled(const struct bench *b, long base)
{
    double n = (double)base * b->scale;

    return n < 1.0 ? 1 : (long)(n + 0.5);
}

/*
 * Warm-up lasts at least min steps, a tenth of the timed work and
 * WARM_SECONDS of wall time, so that clocks, caches and driver pools have
 * settled before the clock starts. Past the first two bounds it goes on in
 * chunks of a fortieth of the timed work, draining the queue before each
 * look at the clock so that queued work counts, not just enqueued work.
 * Returns 1 while more warm-up is needed.
 */
#define WARM_SECONDS 0.2

int warming(struct bench *b, long done, long reps, long min,
                   double since)
{
    long need = reps / 10 > min ? reps / 10 : min;
    long chunk = reps / 40 > 1 ? reps / 40 : 1;

    if (done < need)
        return 1;
    if ((done - need) % chunk)
        return 1;
    if (clFinish(b->queue) != CL_SUCCESS)
        return 0;
    return now_s() - since < WARM_SECONDS;
}

/* A small deterministic generator so every run sees the same data. */
uint32_t rng_next(uint32_t *state)
{
    uint32_t x = *state;

    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    *state = x;
    return x;
}

void *xmalloc(size_t size)
{
    void *p = malloc(size);

    if (!p)
        fprintf(stderr, "clbench: out of memory (%zu bytes)\n", size);
    return p;
}

cl_mem new_buffer(struct bench *b, cl_mem_flags flags, size_t size,
                         void *host)
{
    cl_int err;
    cl_mem mem;

    if (host)
        flags |= CL_MEM_COPY_HOST_PTR;
    mem = clCreateBuffer(b->context, flags, size, host, &err);
    if (err != CL_SUCCESS) {
        cl_report("clCreateBuffer", err, __LINE__);
        return NULL;
    }
    return mem;
}

/* Build one program from source and create the named kernel from it. */
int build_kernel(struct bench *b, const char *src, const char *opts,
                        const char *name, cl_program *prog, cl_kernel *kern)
{
    cl_int err;
    size_t log_size = 0;
    char *log;

    *kern = NULL;
    *prog = clCreateProgramWithSource(b->context, 1, &src, NULL, &err);
    if (err != CL_SUCCESS) {
        cl_report("clCreateProgramWithSource", err, __LINE__);
        return 0;
    }
    err = clBuildProgram(*prog, 1, &b->device, opts, NULL, NULL);
    if (err != CL_SUCCESS) {
        cl_report("clBuildProgram", err, __LINE__);
        clGetProgramBuildInfo(*prog, b->device, CL_PROGRAM_BUILD_LOG, 0,
                              NULL, &log_size);
        log = log_size ? malloc(log_size + 1) : NULL;
        if (log && clGetProgramBuildInfo(*prog, b->device,
                                         CL_PROGRAM_BUILD_LOG, log_size, log,
                                         NULL) == CL_SUCCESS) {
            log[log_size] = '\0';
            fprintf(stderr, "clbench: build log:\n%s\n", log);
        }
        free(log);
        return 0;
    }
    *kern = clCreateKernel(*prog, name, &err);
    if (err != CL_SUCCESS) {
        cl_report("clCreateKernel", err, __LINE__);
        return 0;
    }
    return 1;
}

void release_mem(cl_mem *mems, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (mems[i])
            clReleaseMemObject(mems[i]);
}

void release_kernel(cl_program prog, cl_kernel kern)
{
    if (kern)
        clReleaseKernel(kern);
    if (prog)
        clReleaseProgram(prog);
}
