/* pcopybw: what crn_pcopy (proto/pcopy.c) reaches with 1, 2, 4, 8 and 16
 * threads, between pageable memory and a memfd mapping (the shared
 * area's kind of memory), whole and in the 8 MiB calls a switch makes,
 * against raw threads that each copy their own part (the memory's bound,
 * without crn_pcopy's hand-out) and, where an OpenCL platform is there,
 * from a vendor's pinned CL_MEM_ALLOC_HOST_PTR chunk into the memfd (the
 * way out's copy before ringstream.c).  "helpers sleep" is crn_pcopy as
 * it was before its helpers polled for the next copy (one part per
 * thread, helpers asleep between calls).
 *
 *     build/bench/pcopybw [MIB...]      (default: 64 1024)
 *
 * Prints "RESULT case threads GB/s" lines.  A fresh memfd (pages faulted
 * in by the copy itself) is measured apart from a warm one: first-touch
 * faults of shared memory take the inode's lock, so they do not scale
 * with threads.  Exit 0, 2 on a setup failure. */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "proto/pcopy.h"

#define CALL (8u << 20)          /* a switch's piece */
static const unsigned threads[] = {1, 2, 4, 8, 16};
#define N_THREADS (sizeof(threads) / sizeof(threads[0]))

static double now_s(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void *memfd_map(size_t len, int populate)
{
    int fd = memfd_create("pcopybw", 0);
    void *p;

    if (fd < 0 || ftruncate(fd, (off_t)len) < 0) {
        perror("pcopybw: memfd");
        exit(2);
    }
    p = mmap(NULL, len, PROT_READ | PROT_WRITE,
             MAP_SHARED | (populate ? MAP_POPULATE : 0), fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        perror("pcopybw: mmap");
        exit(2);
    }
    return p;
}

static void *pageable(size_t len)
{
    char *p = malloc(len);

    if (!p) {
        fprintf(stderr, "pcopybw: no %zu bytes\n", len);
        exit(2);
    }
    memset(p, 1, len);
    return p;
}

static void report(const char *name, size_t mib, unsigned n, size_t bytes,
                   double s)
{
    char label[96];

    snprintf(label, sizeof(label), "%s %zuMiB", name, mib);
    printf("RESULT %-40s %2u threads %7.2f GB/s\n", label, n,
           (double)bytes / s / 1e9);
    fflush(stdout);
}

/* REPS copies of LEN bytes, whole or in CALL-sized calls; with ONE_SRC
 * every call reads the same CALL bytes of SRC (a pinned chunk). */
static double timed(void *dst, const void *src, size_t len, int reps,
                    int chunked, int pinned, int one_src)
{
    double t0 = now_s();

    for (int r = 0; r < reps; r++) {
        size_t step = chunked ? CALL : len;
        for (size_t at = 0; at < len; at += step) {
            size_t n = len - at < step ? len - at : step;
            const char *from = (const char *)src + (one_src ? 0 : at);
            if (pinned)
                crn_pcopy_from_pinned((char *)dst + at, from, n);
            else
                crn_pcopy((char *)dst + at, from, n);
        }
    }
    return now_s() - t0;
}

/* Raw threads: each copies its own contiguous part once per rep. */
struct part {
    char *dst;
    const char *src;
    size_t len;
    int reps;
};

static void *raw_main(void *arg)
{
    struct part *p = arg;

    for (int r = 0; r < p->reps; r++)
        memcpy(p->dst, p->src, p->len);
    return NULL;
}

static double raw(void *dst, const void *src, size_t len, int reps,
                  unsigned n)
{
    pthread_t t[16];
    struct part parts[16];
    size_t each = (len / n + 63) & ~(size_t)63;
    double t0 = now_s();

    for (unsigned i = 0; i < n; i++) {
        size_t off = i * each < len ? i * each : len;
        size_t k = len - off < each ? len - off : each;
        parts[i] = (struct part){(char *)dst + off, (const char *)src + off,
                                 k, reps};
        pthread_create(&t[i], NULL, raw_main, &parts[i]);
    }
    for (unsigned i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    return now_s() - t0;
}

/* A pinned chunk of the first OpenCL device, mapped; NULL without one. */
static void *pinned_chunk(size_t len)
{
    cl_platform_id p;
    cl_device_id d;
    cl_int err;

    if (clGetPlatformIDs(1, &p, NULL) != CL_SUCCESS ||
        clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 1, &d, NULL) != CL_SUCCESS)
        return NULL;
    cl_context c = clCreateContext(NULL, 1, &d, NULL, NULL, &err);
    if (!c)
        return NULL;
    cl_command_queue q = clCreateCommandQueueWithProperties(c, d, NULL, &err);
    cl_mem b = q ? clCreateBuffer(c, CL_MEM_ALLOC_HOST_PTR | CL_MEM_READ_WRITE,
                                  len, NULL, &err)
                 : NULL;
    void *ptr = b ? clEnqueueMapBuffer(q, b, CL_TRUE,
                                       CL_MAP_READ | CL_MAP_WRITE, 0, len, 0,
                                       NULL, NULL, &err)
                  : NULL;
    if (ptr)
        memset(ptr, 2, len);
    return ptr;                  /* kept until exit */
}

static void sizes(size_t mib, void *pinned)
{
    size_t len = mib << 20;
    int reps = mib >= 512 ? 3 : 10;
    char *heap = pageable(len);
    char *warm = memfd_map(len, 1);

    memset(warm, 3, len);
    for (size_t i = 0; i < N_THREADS; i++) {
        unsigned n = threads[i];
        crn_pcopy_set_threads(n);
        report("pageable->memfd", mib, n, len * reps,
               timed(warm, heap, len, reps, 0, 0, 0));
        report("memfd->pageable", mib, n, len * reps,
               timed(heap, warm, len, reps, 0, 0, 0));
        report("pageable->memfd 8MiB calls", mib, n, len * reps,
               timed(warm, heap, len, reps, 1, 0, 0));
        report("memfd->pageable 8MiB calls", mib, n, len * reps,
               timed(heap, warm, len, reps, 1, 0, 0));
        /* As before the helpers polled: asleep between calls, one part
         * per thread. */
        crn_pcopy_tune(0, 1);
        report("pageable->memfd 8MiB, helpers sleep", mib, n, len * reps,
               timed(warm, heap, len, reps, 1, 0, 0));
        crn_pcopy_tune(200000, 4);
        /* First touch: a fresh memfd, each page faulted by the copy. */
        char *fresh = memfd_map(len, 0);
        report("pageable->fresh memfd", mib, n, len,
               timed(fresh, heap, len, 1, 0, 0, 0));
        munmap(fresh, len);
        report("raw threads pageable->memfd", mib, n, len * reps,
               raw(warm, heap, len, reps, n));
        if (pinned && len >= CALL) {
            report("pinned chunk->memfd 8MiB calls", mib, n, len * reps,
                   timed(warm, pinned, len, reps, 1, 0, 1));
            report("pinned chunk->memfd streaming", mib, n, len * reps,
                   timed(warm, pinned, len, reps, 1, 1, 1));
        }
    }
    munmap(warm, len);
    free(heap);
}

int main(int argc, char **argv)
{
    void *pinned = pinned_chunk(CALL);

    printf("# %ld CPUs online; crn_pcopy default %u threads; pinned chunk: "
           "%s\n", sysconf(_SC_NPROCESSORS_ONLN), crn_pcopy_default_threads(),
           pinned ? "yes (first OpenCL device)" : "none");
    if (argc < 2) {
        sizes(64, pinned);
        sizes(1024, pinned);
    }
    for (int i = 1; i < argc; i++) {
        long mib = atol(argv[i]);
        if (mib <= 0) {
            fprintf(stderr, "usage: pcopybw [MIB...]\n");
            return 2;
        }
        sizes((size_t)mib, pinned);
    }
    return 0;
}
