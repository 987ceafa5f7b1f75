/* A library whose constructor makes the process's first OpenCL call, as a
 * library with a global OpenCL context does: it runs before the
 * constructors of a preloaded libcrane.so unless that one runs first
 * (-z initfirst), and the platforms it makes the shim create must still
 * point at the shim's ICD table (tests/integration/early_ctor.c checks). */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>

cl_uint early_platforms;
cl_int early_err = 1;

__attribute__((constructor)) static void early_first_call(void)
{
    early_err = clGetPlatformIDs(0, NULL, &early_platforms);
}
