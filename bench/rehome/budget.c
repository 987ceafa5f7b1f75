/* budget: one process re-homed many times under crane, every word of its
 * buffers checked after each re-home, its fds and mappings counted.
 *
 *   budget [--rehomes N] [--words W]      (under crane-run)
 *
 * Two buffers of W words (default 1 Mi): a kernel with its arguments set
 * once advances both (the second made from the first by a copy), then the
 * program calls crane_rehome() (where it goes: CRANE_REHOME_TO, e.g.
 * alternate for switches both ways), reads both back and checks every
 * word against a CPU model, N times (default 1000).  After each re-home it
 * prints
 *   rehome I rc=R fds=F devfds=D maps=M
 * and at the end one line
 *   budget: N re-homes, D done, F failed, every word right
 * Exit 0 when every word was right (failed re-homes included: the
 * program stays where its data is whole), 1 for a wrong word, 2 for an
 * OpenCL error, 77 when not under crane-run.  bench/rehome/budget.sh runs
 * it and judges the counts.
 */
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *source =
    "__kernel void advance(__global uint *a, __global uint *b, uint r)\n"
    "{\n"
    "    uint i = get_global_id(0);\n"
    "    a[i] = a[i] * 1664525u + 1013904223u + r;\n"
    "    b[i] = (b[i] ^ a[i]) + i;\n"
    "}\n";

#define CK(call)                                                      \
    do {                                                              \
        cl_int e_ = (call);                                           \
        if (e_ != CL_SUCCESS) {                                       \
            printf("ERROR budget: %s: %d\n", #call, e_);              \
            exit(2);                                                  \
        }                                                             \
    } while (0)

static void count(int *fds, int *devfds, int *maps)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    char line[PATH_MAX + 128];
    FILE *f;

    *fds = *devfds = *maps = 0;
    while (d && (e = readdir(d))) {
        char link[64], target[PATH_MAX];
        struct stat st;
        int fd = atoi(e->d_name);
        if (e->d_name[0] == '.' || fd == dirfd(d))
            continue;
        ++*fds;
        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, target, sizeof(target) - 1);
        if (n > 0) {
            target[n] = '\0';
            if (strncmp(target, "/dev/", 5) == 0 &&
                strncmp(target, "/dev/null", 9) != 0 &&
                strncmp(target, "/dev/pts/", 9) != 0 &&
                strncmp(target, "/dev/shm/", 9) != 0 &&
                fstat(fd, &st) == 0 && S_ISCHR(st.st_mode))
                ++*devfds;
        }
    }
    if (d)
        closedir(d);
    if ((f = fopen("/proc/self/maps", "re"))) {
        while (fgets(line, sizeof(line), f))
            ++*maps;
        fclose(f);
    }
}

int main(int argc, char **argv)
{
    long rehomes = 1000, words = 1 << 20;
    int (*rehome)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "crane_rehome");
    cl_platform_id plat;
    cl_device_id dev;
    cl_int err;

    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--rehomes") == 0)
            rehomes = strtol(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--words") == 0)
            words = strtol(argv[i + 1], NULL, 10);
    }
    if (rehomes < 1 || words < 64) {
        fprintf(stderr, "usage: budget [--rehomes N] [--words W>=64]\n");
        return 2;
    }
    if (!rehome) {
        printf("SKIP budget: not under crane-run (no crane_rehome)\n");
        return 77;
    }
    size_t n = (size_t)words, bytes = n * sizeof(uint32_t);
    uint32_t *a_m = malloc(bytes), *b_m = malloc(bytes), *got = malloc(bytes);
    if (!a_m || !b_m || !got)
        return 2;
    for (size_t i = 0; i < n; i++)
        a_m[i] = (uint32_t)(i * 2654435761u);

    CK(clGetPlatformIDs(1, &plat, NULL));
    CK(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL));
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CK(err);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    CK(err);
    cl_mem a = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                              bytes, a_m, &err);
    CK(err);
    cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    CK(err);
    CK(clEnqueueCopyBuffer(q, a, b, 0, 0, bytes, 0, NULL, NULL));
    memcpy(b_m, a_m, bytes);
    cl_program prog = clCreateProgramWithSource(ctx, 1, &source, NULL, &err);
    CK(err);
    CK(clBuildProgram(prog, 1, &dev, NULL, NULL, NULL));
    cl_kernel k = clCreateKernel(prog, "advance", &err);
    CK(err);
    CK(clSetKernelArg(k, 0, sizeof(a), &a));
    CK(clSetKernelArg(k, 1, sizeof(b), &b));

    long done = 0, failed = 0;
    for (long r = 1; r <= rehomes; r++) {
        cl_uint ru = (cl_uint)r;
        CK(clSetKernelArg(k, 2, sizeof(ru), &ru));
        CK(clEnqueueNDRangeKernel(q, k, 1, NULL, &n, NULL, 0, NULL, NULL));
        for (size_t i = 0; i < n; i++) {
            a_m[i] = a_m[i] * 1664525u + 1013904223u + ru;
            b_m[i] = (b_m[i] ^ a_m[i]) + (uint32_t)i;
        }
        CK(clFlush(q));
        /* The re-home comes with the kernel's results not yet read. */
        int rc = rehome();
        rc == 0 ? done++ : failed++;
        int fds, devfds, maps;
        count(&fds, &devfds, &maps);
        printf("rehome %ld rc=%d fds=%d devfds=%d maps=%d\n", r, rc, fds,
               devfds, maps);
        const uint32_t *want[2] = {a_m, b_m};
        cl_mem mem[2] = {a, b};
        for (int m = 0; m < 2; m++) {
            CK(clEnqueueReadBuffer(q, mem[m], CL_TRUE, 0, bytes, got, 0,
                                   NULL, NULL));
            for (size_t i = 0; i < n; i++)
                if (got[i] != want[m][i]) {
                    printf("FAIL budget: re-home %ld: buffer %c word %zu is "
                           "%08x, want %08x\n",
                           r, "ab"[m], i, got[i], want[m][i]);
                    return 1;
                }
        }
        fflush(stdout);
    }
    printf("budget: %ld re-homes, %ld done, %ld failed, every word right\n",
           rehomes, done, failed);
    clReleaseKernel(k);
    clReleaseProgram(prog);
    clReleaseMemObject(a);
    clReleaseMemObject(b);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    free(a_m);
    free(b_m);
    free(got);
    return 0;
}
