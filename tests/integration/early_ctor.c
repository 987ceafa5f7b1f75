/* The process's first OpenCL call comes from another library's constructor
 * (early_lib.c), before main: the platforms it made the shim create are
 * then reached through the ICD loader, which calls through each handle's
 * dispatch table, as a program that dlopens libOpenCL.so.1 does.  Their
 * table is the shim's only if libcrane.so's own constructor ran first
 * (it hands the store the table; -z initfirst, shim/README.md "Layers").
 * Run under crane-run; prints PASS (exit 0) or FAIL (exit 1). */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

extern cl_uint early_platforms;
extern cl_int early_err;

typedef cl_int (*get_ids_fn)(cl_uint, cl_platform_id *, cl_uint *);
typedef cl_int (*get_info_fn)(cl_platform_id, cl_platform_info, size_t,
                              void *, size_t *);

int main(void)
{
    char direct[256] = "", loaded[256] = "";
    cl_platform_id p = NULL;
    cl_uint n = 0;
    void *lib = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);

    if (early_err != CL_SUCCESS || early_platforms == 0) {
        printf("FAIL early_ctor: the constructor's clGetPlatformIDs: %d, "
               "%u platforms\n", early_err, early_platforms);
        return 1;
    }
    if (!lib) {
        printf("FAIL early_ctor: dlopen(libOpenCL.so.1): %s\n", dlerror());
        return 1;
    }
    get_ids_fn get_ids = (get_ids_fn)dlsym(lib, "clGetPlatformIDs");
    get_info_fn get_info = (get_info_fn)dlsym(lib, "clGetPlatformInfo");
    if (!get_ids || !get_info || get_ids(1, &p, &n) != CL_SUCCESS || !p) {
        printf("FAIL early_ctor: no platform through the ICD loader\n");
        return 1;
    }
    /* The loader calls the platform's dispatch table here. */
    if (get_info(p, CL_PLATFORM_NAME, sizeof(loaded), loaded, NULL) !=
            CL_SUCCESS ||
        clGetPlatformInfo(p, CL_PLATFORM_NAME, sizeof(direct), direct,
                          NULL) != CL_SUCCESS ||
        !loaded[0] || strcmp(loaded, direct) != 0) {
        printf("FAIL early_ctor: the platform's name through the loader "
               "'%s', directly '%s'\n", loaded, direct);
        return 1;
    }
    printf("PASS early_ctor: %u platform(s) made in a constructor; '%s' "
           "through the ICD loader\n", early_platforms, loaded);
    return 0;
}
