/* A kernel that never ends, for the proxy's bounds on a tenant's work
 * (tests/proxy/endless.sh): builds it, launches it, prints "spinning",
 * then waits in clFinish.  Remoted, the wait can only end by the proxy
 * ending the tenant: it then prints "clFinish: ERR" and exits 0 when ERR
 * is an error (the tenant was ended, as --max-kernel-seconds wants), 1
 * when clFinish succeeded (it cannot: the kernel never ends).  Any earlier
 * failure prints FAIL and exits 2.
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <stdio.h>
#include <unistd.h>

/* FLAG[0] stays 0 (volatile: each read is a real one, so the loop can
 * be neither proven endless nor removed). */
static const char *source =
    "__kernel void spin(volatile __global int *flag) {\n"
    "    while (flag[0] == 0)\n"
    "        flag[1]++;\n"
    "}\n";

#define CK(call)                                                           \
    do {                                                                   \
        cl_int e_ = (call);                                                \
        if (e_ != CL_SUCCESS) {                                            \
            printf("FAIL spin: %s: %d (line %d)\n", #call, e_, __LINE__); \
            return 2;                                                      \
        }                                                                  \
    } while (0)

int main(void)
{
    cl_platform_id plat;
    cl_device_id dev;
    cl_int err, zero[2] = {0, 0};
    size_t one = 1;

    setvbuf(stdout, NULL, _IONBF, 0);
    CK(clGetPlatformIDs(1, &plat, NULL));
    CK(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL));
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CK(err);
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, dev, NULL,
                                                            &err);
    CK(err);
    cl_mem flag = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                 sizeof(zero), zero, &err);
    CK(err);
    cl_program prog = clCreateProgramWithSource(ctx, 1, &source, NULL, &err);
    CK(err);
    CK(clBuildProgram(prog, 1, &dev, NULL, NULL, NULL));
    cl_kernel k = clCreateKernel(prog, "spin", &err);
    CK(err);
    CK(clSetKernelArg(k, 0, sizeof(flag), &flag));
    CK(clEnqueueNDRangeKernel(q, k, 1, NULL, &one, &one, 0, NULL, NULL));
    CK(clFlush(q));
    /* The finish alone, after the launch's batch ended: the proxy's worker
     * then waits for the device on its loop thread (inline waits), the
     * hardest case for noticing that the client left. */
    usleep(300 * 1000);
    printf("spinning\n");
    err = clFinish(q);
    printf("clFinish: %d\n", err);
    return err != CL_SUCCESS ? 0 : 1;
}
