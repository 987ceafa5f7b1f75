/* clbench.h: what the benchmark's files share: the device, a result,
 * the error macros and the helpers (clbench.c says what clbench does). */
#ifndef CLBENCH_H
#define CLBENCH_H

#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>

#include <stddef.h>
#include <stdint.h>

enum { BENCH_OK = 0, BENCH_MISMATCH = 1, BENCH_ERROR = 2 };

/* One OpenCL device and queue, shared by every test. */
struct bench {
    cl_platform_id platform;
    cl_device_id device;
    cl_context context;
    cl_command_queue queue;
    double scale;
    size_t max_wg;
    int pageable;
};

/* What a test reports on success: the timed region and its metric. */
struct bench_result {
    double seconds;
    double value;
    const char *unit;
};

typedef int bench_fn(struct bench *b, struct bench_result *r);

/* Run an OpenCL call; on failure log it and jump to the function's out. */
#define CL_TRY(expr)                                                        \
    do {                                                                    \
        cl_int e_ = (expr);                                                 \
        if (e_ != CL_SUCCESS) {                                             \
            cl_report(#expr, e_, __LINE__);                                 \
            goto out;                                                       \
        }                                                                   \
    } while (0)

/* Jump to out unless a helper that logs its own failure succeeded. */
#define TRY(cond)                                                           \
    do {                                                                    \
        if (!(cond))                                                        \
            goto out;                                                       \
    } while (0)

/* The helpers every test uses (clbench_util.c). */
const char *cl_err_name(cl_int err);
void cl_report(const char *what, cl_int err, int line);
double now_s(void);
/* The base work amount multiplied by --scale, never less than one. */
long scaled(const struct bench *b, long base);
/* 1 while more warm-up is needed (clbench_util.c says how long). */
int warming(struct bench *b, long done, long reps, long min, double since);
/* A small deterministic generator so every run sees the same data. */
uint32_t rng_next(uint32_t *state);
void *xmalloc(size_t size);
cl_mem new_buffer(struct bench *b, cl_mem_flags flags, size_t size,
                  void *host);
/* Build one program from source and create the named kernel from it. */
int build_kernel(struct bench *b, const char *src, const char *opts,
                 const char *name, cl_program *prog, cl_kernel *kern);
void release_mem(cl_mem *mems, size_t n);
void release_kernel(cl_program prog, cl_kernel kern);

/* The tests (clbench_bus.c, clbench_kernels.c, clbench_compute.c). */
bench_fn bench_bus_h2d, bench_bus_d2h, bench_launch, bench_setarg,
    bench_stencil, bench_reduction, bench_sort, bench_gemm;

#endif
