/* dlopen test: an application that loads libOpenCL.so.1 at run time and
 * finds every entry point with dlsym, as plugin-style programs do. */
#define TEST_NAME "dlopen_app"
#define CL_TARGET_OPENCL_VERSION 300
#define CLCHECK_NO_LINK
#include "clcheck.h"

#include <CL/cl_icd.h>
#include <dlfcn.h>
#include <stdint.h>

/* Words per buffer and kernel launches. */
#define N 8192
#define LAUNCHES 200

/* Every OpenCL function this program calls, looked up by name. */
#define CL_FUNCTIONS(X)                                                    \
    X(clGetPlatformIDs)                                                    \
    X(clGetPlatformInfo)                                                   \
    X(clGetDeviceIDs)                                                      \
    X(clGetDeviceInfo)                                                     \
    X(clCreateContext)                                                     \
    X(clCreateCommandQueueWithProperties)                                  \
    X(clCreateProgramWithSource)                                           \
    X(clBuildProgram)                                                      \
    X(clGetProgramBuildInfo)                                               \
    X(clCreateKernel)                                                      \
    X(clCreateBuffer)                                                      \
    X(clGetMemObjectInfo)                                                  \
    X(clEnqueueWriteBuffer)                                                \
    X(clEnqueueReadBuffer)                                                 \
    X(clEnqueueMapBuffer)                                                  \
    X(clEnqueueUnmapMemObject)                                             \
    X(clSetKernelArg)                                                      \
    X(clEnqueueNDRangeKernel)                                              \
    X(clWaitForEvents)                                                     \
    X(clFinish)                                                            \
    X(clReleaseEvent)                                                      \
    X(clReleaseMemObject)                                                  \
    X(clReleaseKernel)                                                     \
    X(clReleaseProgram)                                                    \
    X(clReleaseCommandQueue)                                               \
    X(clReleaseContext)

/* The looked-up entry points, typed by the official cl_icd.h typedefs. */
struct cl_fns {
#define DECLARE_FN(name) cl_api_##name name;
    CL_FUNCTIONS(DECLARE_FN)
#undef DECLARE_FN
};

static const char *kernel_source =
    "__kernel void saxpy(__global const uint *x, __global uint *y, uint a)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    y[i] = a * x[i] + y[i];\n"
    "}\n";

/* Loads the library and every function in CL_FUNCTIONS. */
static void *load(struct cl_fns *cl)
{
    void *lib = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);

    if (lib == NULL)
        fail("dlopen(libOpenCL.so.1): %s", dlerror());
#define LOAD_FN(name)                                                      \
    do {                                                                   \
        void *sym = dlsym(lib, #name);                                     \
        if (sym == NULL)                                                   \
            fail("dlsym(%s): %s", #name, dlerror());                       \
        memcpy(&cl->name, &sym, sizeof(sym));                              \
    } while (0);
    CL_FUNCTIONS(LOAD_FN)
#undef LOAD_FN
    return lib;
}

int main(void)
{
    struct cl_fns cl;
    void *lib = load(&cl);
    cl_platform_id platform;
    cl_device_id device;
    cl_context context;
    cl_command_queue queue;
    cl_program program;
    cl_kernel kernel;
    cl_mem x, y;
    cl_context owner = NULL;
    static cl_uint xh[N], yh[N], got[N];
    size_t global = N;
    char name[256] = "";
    cl_int err;

    CHECK(cl.clGetPlatformIDs(1, &platform, NULL));
    CHECK(cl.clGetPlatformInfo(platform, CL_PLATFORM_NAME, sizeof(name) - 1,
                               name, NULL));
    EXPECT(name[0] != '\0', "empty platform name");
    CHECK(cl.clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL));
    context = cl.clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    CHECK(err);
    queue = cl.clCreateCommandQueueWithProperties(context, device, NULL, &err);
    CHECK(err);
    program = cl.clCreateProgramWithSource(context, 1, &kernel_source, NULL,
                                           &err);
    CHECK(err);
    err = cl.clBuildProgram(program, 1, &device, "", NULL, NULL);
    if (err != CL_SUCCESS) {
        static char log[16384];

        cl.clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG,
                                 sizeof(log) - 1, log, NULL);
        fail("clBuildProgram returned %d, log:\n%s", err, log);
    }
    kernel = cl.clCreateKernel(program, "saxpy", &err);
    CHECK(err);

    for (size_t i = 0; i < N; i++) {
        xh[i] = (cl_uint)i * 2654435761u;
        yh[i] = (cl_uint)(i ^ 0x5555u);
    }
    x = cl.clCreateBuffer(context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                          sizeof(xh), xh, &err);
    CHECK(err);
    y = cl.clCreateBuffer(context, CL_MEM_READ_WRITE, sizeof(yh), NULL, &err);
    CHECK(err);
    CHECK(cl.clGetMemObjectInfo(y, CL_MEM_CONTEXT, sizeof(owner), &owner,
                                NULL));
    EXPECT(owner == context, "CL_MEM_CONTEXT is %p, expected %p",
           (void *)owner, (void *)context);
    CHECK(cl.clEnqueueWriteBuffer(queue, y, CL_TRUE, 0, sizeof(yh), yh, 0,
                                  NULL, NULL));
    CHECK(cl.clSetKernelArg(kernel, 0, sizeof(cl_mem), &x));
    CHECK(cl.clSetKernelArg(kernel, 1, sizeof(cl_mem), &y));

    for (int it = 0; it < LAUNCHES; it++) {
        cl_uint a = (cl_uint)it * 7u + 1u;
        cl_event ev;

        CHECK(cl.clSetKernelArg(kernel, 2, sizeof(a), &a));
        CHECK(cl.clEnqueueNDRangeKernel(queue, kernel, 1, NULL, &global, NULL,
                                        0, NULL, &ev));
        for (size_t i = 0; i < N; i++)
            yh[i] = a * xh[i] + yh[i];
        if (it % 10 == 9) {
            CHECK(cl.clWaitForEvents(1, &ev));
            CHECK(cl.clEnqueueReadBuffer(queue, y, CL_TRUE, 0, sizeof(got),
                                         got, 0, NULL, NULL));
            expect_uints(got, yh, N, "y during launches");
        }
        CHECK(cl.clReleaseEvent(ev));
        if (it % 50 == 25) {
            /* A map that reads and changes y in place. */
            cl_uint *p = cl.clEnqueueMapBuffer(queue, y, CL_TRUE,
                                               CL_MAP_READ | CL_MAP_WRITE, 0,
                                               sizeof(yh), 0, NULL, NULL,
                                               &err);

            CHECK(err);
            expect_uints(p, yh, N, "mapped y");
            for (size_t i = 0; i < N; i++)
                p[i] = yh[i] = p[i] ^ (cl_uint)it;
            CHECK(cl.clEnqueueUnmapMemObject(queue, y, p, 0, NULL, NULL));
        }
    }
    CHECK(cl.clFinish(queue));
    CHECK(cl.clEnqueueReadBuffer(queue, y, CL_TRUE, 0, sizeof(got), got, 0,
                                 NULL, NULL));
    expect_uints(got, yh, N, "final y");
    CHECK(cl.clEnqueueReadBuffer(queue, x, CL_TRUE, 0, sizeof(got), got, 0,
                                 NULL, NULL));
    expect_uints(got, xh, N, "read-only x");

    CHECK(cl.clReleaseMemObject(x));
    CHECK(cl.clReleaseMemObject(y));
    CHECK(cl.clReleaseKernel(kernel));
    CHECK(cl.clReleaseProgram(program));
    CHECK(cl.clReleaseCommandQueue(queue));
    CHECK(cl.clReleaseContext(context));
    dlclose(lib);
    pass();
}
