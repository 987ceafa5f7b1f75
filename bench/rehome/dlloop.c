/* dlloop: how many times one process can load an OpenCL vendor library,
 * and what each load leaves behind, without crane.
 *
 *   dlloop --lib LIB [--loads N] [--context] [--every K]
 *
 * Each iteration dlopens LIB (RTLD_NOW | RTLD_LOCAL), asks it for its
 * platforms through clIcdGetPlatformIDsKHR (as an ICD loader and crane's
 * shim do), with --context also makes and releases a context on its first
 * device, then dlcloses it, and counts the process's open fds, its device
 * fds (/dev/... character devices other than /dev/null and the like) and
 * its mappings (/proc/self/maps lines).  Prints a line every K loads
 * (default 1) and at the first load that gives no platform, then one
 * summary line:
 *   dlloop: LIB loads=N ok=M first_fail=F fds_per_load=X devfds_per_load=Y
 *   maps_per_load=Z
 * Exit 0 when every load gave platforms, 1 when one did not, 2 on bad
 * arguments.  bench/rehome/README.md says how to read it.
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <CL/cl_icd.h>
#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef cl_int(CL_API_CALL *icd_get_platforms_fn)(cl_uint, cl_platform_id *,
                                                   cl_uint *);
typedef void *(CL_API_CALL *get_ext_fn)(const char *);

struct counts {
    int fds, devfds, maps;
};

static int harmless(const char *p)
{
    static const char *const ok[] = {"/dev/null", "/dev/zero", "/dev/urandom",
                                     "/dev/random", "/dev/tty", "/dev/pts/",
                                     "/dev/shm/", "/dev/ptmx"};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
        if (strncmp(p, ok[i], strlen(ok[i])) == 0)
            return 1;
    return 0;
}

static struct counts count(void)
{
    struct counts c = {0, 0, 0};
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    char line[PATH_MAX + 128];
    FILE *f;

    while (d && (e = readdir(d))) {
        char link[64], target[PATH_MAX];
        struct stat st;
        int fd = atoi(e->d_name);
        if (e->d_name[0] == '.' || fd == dirfd(d))
            continue;
        c.fds++;
        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, target, sizeof(target) - 1);
        if (n <= 0)
            continue;
        target[n] = '\0';
        if (strncmp(target, "/dev/", 5) == 0 && !harmless(target) &&
            fstat(fd, &st) == 0 && S_ISCHR(st.st_mode))
            c.devfds++;
    }
    if (d)
        closedir(d);
    if ((f = fopen("/proc/self/maps", "re"))) {
        while (fgets(line, sizeof(line), f))
            c.maps++;
        fclose(f);
    }
    return c;
}

/* One load: the number of platforms it gave (0: none), -1 if the
 * library did not open. */
static int load_once(const char *lib, int with_context)
{
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    icd_get_platforms_fn get = NULL;
    cl_uint n = 0;

    if (!h) {
        fprintf(stderr, "dlloop: dlopen(%s): %s\n", lib, dlerror());
        return -1;
    }
    get_ext_fn ext = (get_ext_fn)dlsym(h, "clGetExtensionFunctionAddress");
    if (ext)
        get = (icd_get_platforms_fn)ext("clIcdGetPlatformIDsKHR");
    if (!get)
        get = (icd_get_platforms_fn)dlsym(h, "clIcdGetPlatformIDsKHR");
    if (get && get(0, NULL, &n) != CL_SUCCESS)
        n = 0;
    if (n && with_context) {
        /* Through the platform's own dispatch table, as the shim does. */
        cl_platform_id p;
        cl_device_id dev;
        cl_int err;
        if (get(1, &p, NULL) == CL_SUCCESS) {
            struct _cl_icd_dispatch *t = *(struct _cl_icd_dispatch **)p;
            if (t->clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 1, &dev, NULL) ==
                CL_SUCCESS) {
                cl_context c = t->clCreateContext(NULL, 1, &dev, NULL, NULL,
                                                  &err);
                if (c)
                    t->clReleaseContext(c);
                else
                    n = 0;
            }
        }
    }
    dlclose(h);
    return (int)n;
}

int main(int argc, char **argv)
{
    const char *lib = NULL;
    long loads = 200, every = 1;
    int with_context = 0, ok = 0, first_fail = 0;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--lib") == 0 && i + 1 < argc)
            lib = argv[++i];
        else if (strcmp(argv[i], "--loads") == 0 && i + 1 < argc)
            loads = strtol(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--every") == 0 && i + 1 < argc)
            every = strtol(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--context") == 0)
            with_context = 1;
        else {
            fprintf(stderr, "usage: dlloop --lib LIB [--loads N] "
                            "[--context] [--every K]\n");
            return 2;
        }
    }
    if (!lib || loads < 1 || every < 1) {
        fprintf(stderr, "dlloop: --lib LIB is needed (loads, every >= 1)\n");
        return 2;
    }
    struct counts c0 = count(), c1 = c0, c;
    for (long i = 1; i <= loads; i++) {
        int n = load_once(lib, with_context);
        c = count();
        if (i == 1)
            c1 = c;
        if (n > 0)
            ok++;
        else if (!first_fail)
            first_fail = (int)i;
        if (i % every == 0 || i == first_fail || i == loads)
            printf("load %ld platforms=%d fds=%d devfds=%d maps=%d\n", i,
                   n, c.fds, c.devfds, c.maps);
        if (n < 0)
            break;
    }
    /* Per load after the first (the first may set up what stays). */
    double per = loads > 1 ? (double)(loads - 1) : 1;
    printf("dlloop: %s loads=%ld ok=%d first_fail=%d fds_per_load=%.2f "
           "devfds_per_load=%.2f maps_per_load=%.2f (before: fds=%d "
           "maps=%d; after load 1: fds=%d maps=%d)\n",
           lib, loads, ok, first_fail, (c.fds - c1.fds) / per,
           (c.devfds - c1.devfds) / per, (c.maps - c1.maps) / per, c0.fds,
           c0.maps, c1.fds, c1.maps);
    return first_fail ? 1 : 0;
}
