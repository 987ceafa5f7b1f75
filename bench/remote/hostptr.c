/* hostptr: what bounds the proxy's bulk copies: a device's copies to and
 * from a shared (memfd) mapping, unpinned, then wrapped in a
 * CL_MEM_USE_HOST_PTR buffer (which NVIDIA pins: proxy-domain/ringpin.h),
 * against a pinned CL_MEM_ALLOC_HOST_PTR buffer and a CPU memcpy.
 *
 *     build/bench/hostptr [MIB]      (64 MiB, first device of platform 0)
 *
 * Prints "RESULT name GB/s" lines; exit 0, or 2 on an OpenCL error. */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define REPS 20

static double now_s(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

#define TRY(x)                                                          \
    do {                                                                \
        cl_int e_ = (x);                                                \
        if (e_ != CL_SUCCESS) {                                         \
            fprintf(stderr, "hostptr: %s: %d\n", #x, (int)e_);          \
            exit(2);                                                    \
        }                                                               \
    } while (0)

static cl_command_queue q;
static cl_mem dev;
static size_t len;

static void report(const char *name, double t0)
{
    printf("RESULT %-22s %7.2f GB/s\n", name,
           (double)len * REPS / (now_s() - t0) / 1e9);
}

/* REPS blocking copies of the whole buffer to (WRITE) or from DEV. */
static void copies(const char *name, void *host, int write)
{
    double t0 = now_s();

    for (int i = 0; i < REPS; i++)
        TRY(write ? clEnqueueWriteBuffer(q, dev, CL_TRUE, 0, len, host, 0,
                                         NULL, NULL)
                  : clEnqueueReadBuffer(q, dev, CL_TRUE, 0, len, host, 0,
                                        NULL, NULL));
    report(name, t0);
}

int main(int argc, char **argv)
{
    cl_platform_id p;
    cl_device_id d;
    cl_int err;

    len = (size_t)(argc > 1 ? atoi(argv[1]) : 64) << 20;
    if (len == 0) {
        fprintf(stderr, "usage: hostptr [MIB]\n");
        return 2;
    }
    TRY(clGetPlatformIDs(1, &p, NULL));
    TRY(clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 1, &d, NULL));
    cl_context c = clCreateContext(NULL, 1, &d, NULL, NULL, &err);
    TRY(err);
    q = clCreateCommandQueueWithProperties(c, d, NULL, &err);
    TRY(err);
    dev = clCreateBuffer(c, CL_MEM_READ_WRITE, len, NULL, &err);
    TRY(err);
    int fd = memfd_create("hostptr", 0);
    if (fd < 0 || ftruncate(fd, (off_t)len) < 0)
        return 2;
    char *ring = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (ring == MAP_FAILED)
        return 2;
    memset(ring, 1, len);

    copies("write from memfd", ring, 1);
    copies("read into memfd", ring, 0);
    cl_mem wrap = clCreateBuffer(c, CL_MEM_USE_HOST_PTR | CL_MEM_READ_WRITE,
                                 len, ring, &err);
    TRY(err);
    copies("write from wrapped", ring, 1);
    copies("read into wrapped", ring, 0);

    cl_mem pin = clCreateBuffer(c, CL_MEM_ALLOC_HOST_PTR, len, NULL, &err);
    TRY(err);
    void *pp = clEnqueueMapBuffer(q, pin, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE,
                                  0, len, 0, NULL, NULL, &err);
    TRY(err);
    copies("write from pinned", pp, 1);
    copies("read into pinned", pp, 0);
    double t0 = now_s();
    for (int i = 0; i < REPS; i++)
        memcpy(pp, ring, len);
    report("memcpy, one core", t0);

    TRY(clEnqueueUnmapMemObject(q, pin, pp, 0, NULL, NULL));
    TRY(clFinish(q));
    clReleaseMemObject(pin);
    clReleaseMemObject(wrap);
    clReleaseMemObject(dev);
    munmap(ring, len);
    close(fd);
    clReleaseCommandQueue(q);
    clReleaseContext(c);
    return 0;
}
