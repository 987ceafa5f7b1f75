/* The GPU probe child: does the vendor library see a device? */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <CL/cl_icd.h>

#include "driver.h"

#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef cl_int(CL_API_CALL *get_platforms_fn)(cl_uint, cl_platform_id *,
                                               cl_uint *);
typedef void *(CL_API_CALL *get_ext_fn)(const char *);

static cl_device_type device_type(const char *type)
{
    if (strcmp(type, "cpu") == 0)
        return CL_DEVICE_TYPE_CPU;
    if (strcmp(type, "accelerator") == 0)
        return CL_DEVICE_TYPE_ACCELERATOR;
    if (strcmp(type, "all") == 0)
        return CL_DEVICE_TYPE_ALL;
    return CL_DEVICE_TYPE_GPU;
}

/* Devices of TYPE that LIB offers, or -1 when it cannot be asked.  Like
 * an ICD loader: clIcdGetPlatformIDsKHR, then each platform's own
 * dispatch table (vendor libraries need not export clGetDeviceIDs). */
static long count_devices(const char *lib, cl_device_type type)
{
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    get_platforms_fn get_platforms;
    cl_platform_id platforms[16];
    cl_uint n = 0;
    long total = 0;

    if (!h) {
        fprintf(stderr, "cannot load %s: %s\n", lib, dlerror());
        return -1;
    }
    get_platforms = (get_platforms_fn)dlsym(h, "clIcdGetPlatformIDsKHR");
    if (!get_platforms) {
        get_ext_fn ext = (get_ext_fn)dlsym(h, "clGetExtensionFunctionAddress");
        if (ext)
            get_platforms = (get_platforms_fn)ext("clIcdGetPlatformIDsKHR");
    }
    if (!get_platforms)
        get_platforms = (get_platforms_fn)dlsym(h, "clGetPlatformIDs");
    if (!get_platforms) {
        fprintf(stderr, "%s is not an OpenCL vendor library\n", lib);
        return -1;
    }
    if (get_platforms(16, platforms, &n) != CL_SUCCESS || n == 0) {
        fprintf(stderr, "%s offers no platform\n", lib);
        return 0;
    }
    for (cl_uint i = 0; i < n && i < 16; i++) {
        const struct _cl_icd_dispatch *dt =
            *(const struct _cl_icd_dispatch *const *)platforms[i];
        cl_uint nd = 0;
        if (dt && dt->clGetDeviceIDs &&
            dt->clGetDeviceIDs(platforms[i], type, 0, NULL, &nd) ==
                CL_SUCCESS)
            total += nd;
    }
    /* Not closed: the process ends now, and some vendors do not unload. */
    return total;
}

int gd_probe_gpu(const char *lib, const char *type, const char *dir,
                 long want)
{
    cl_device_type t = device_type(type);
    long total = 0;

    if (lib && *lib) {
        total = count_devices(lib, t);
    } else {
        struct dirent **names;
        int n = scandir(dir, &names, NULL, alphasort);
        if (n < 0) {
            fprintf(stderr, "no vendor: cannot read %s\n", dir);
            return 1;
        }
        for (int i = 0; i < n; i++) {
            size_t len = strlen(names[i]->d_name);
            char file[PATH_MAX], line[PATH_MAX] = "";
            FILE *f;
            if (len > 4 && strcmp(names[i]->d_name + len - 4, ".icd") == 0) {
                snprintf(file, sizeof(file), "%s/%s", dir, names[i]->d_name);
                if ((f = fopen(file, "re"))) {
                    if (fgets(line, sizeof(line), f))
                        line[strcspn(line, "\r\n")] = '\0';
                    fclose(f);
                }
                long c = *line ? count_devices(line, t) : -1;
                if (c > 0)
                    total += c;
            }
            free(names[i]);
        }
        free(names);
    }
    if (total <= 0) {
        fprintf(stderr, "the vendor library finds no %s device\n", type);
        return 1;
    }
    /* Every GPU of the VM must be up, not the first one alone. */
    if (total < want) {
        fprintf(stderr, "the vendor library finds %ld of the %ld %s "
                "devices\n", total, want, type);
        return 1;
    }
    fprintf(stderr, "%ld %s device(s)\n", total, type);
    return 0;
}
