/* An error only the proxy's vendor can find, in a call the remote backend
 * batched, across a switch back to the vendor: the switch must work and the
 * program must get the error at its next clFinish, once.
 *
 * Run under crane-run with CRANE_PROXY set and CRANE_REHOME_TO=alternate:
 * the program switches to the proxy itself (crane_rehome), launches a
 * kernel with an argument not set (the shim's own check answers at once),
 * then one with a work-group larger than the device allows (an error that
 * only the vendor knows to give, so remoted it travels batched), switches
 * back, and finishes the queue.  Then it launches properly and checks
 * every word.  Natively (no crane_rehome) it checks the error comes at
 * once.  Prints PASS (exit 0), FAIL (exit 1) or SKIP (exit 77).
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#define N 1024

static const char *source =
    "__kernel void fill(__global uint *a) { a[get_global_id(0)] = 7; }\n";

#define CK(call)                                                           \
    do {                                                                   \
        cl_int e_ = (call);                                                \
        if (e_ != CL_SUCCESS) {                                            \
            printf("FAIL deferred: %s: %d (line %d)\n", #call, e_,         \
                   __LINE__);                                              \
            return 1;                                                      \
        }                                                                  \
    } while (0)

/* A switch by the program's own hand: 0, else the failure. */
static int switch_now(int (*rehome)(void), const char *where)
{
    int rc = rehome();
    if (rc != 0)
        printf("FAIL deferred: the switch %s failed: %d\n", where, rc);
    return rc;
}

int main(void)
{
    int (*rehome)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "crane_rehome");
    cl_platform_id plat;
    cl_device_id dev;
    size_t max_wg;
    cl_uint got[N];
    cl_int err;

    CK(clGetPlatformIDs(1, &plat, NULL));
    CK(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL));
    CK(clGetDeviceInfo(dev, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof(max_wg),
                       &max_wg, NULL));
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CK(err);
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, dev, NULL,
                                                            &err);
    CK(err);
    cl_program prog = clCreateProgramWithSource(ctx, 1, &source, NULL, &err);
    CK(err);
    CK(clBuildProgram(prog, 1, &dev, NULL, NULL, NULL));
    cl_kernel k = clCreateKernel(prog, "fill", &err);
    CK(err);
    cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 2 * max_wg *
                                sizeof(cl_uint) + N * sizeof(cl_uint),
                                NULL, &err);
    CK(err);
    CK(clSetKernelArg(k, 0, sizeof(buf), &buf));
    CK(clFinish(q));

    if (rehome && switch_now(rehome, "to the proxy") != 0)
        return 1;
    /* What the shim can tell itself comes at once, remoted too: a kernel
     * with an argument not set. */
    cl_kernel unset = clCreateKernel(prog, "fill", &err);
    CK(err);
    size_t one = 1;
    err = clEnqueueNDRangeKernel(q, unset, 1, NULL, &one, NULL, 0, NULL,
                                 NULL);
    if (err != CL_INVALID_KERNEL_ARGS) {
        printf("FAIL deferred: a launch with an argument not set: %d, not "
               "CL_INVALID_KERNEL_ARGS (%d)\n",
               err, CL_INVALID_KERNEL_ARGS);
        return 1;
    }
    CK(clReleaseKernel(unset));
    size_t too_many = 2 * max_wg;
    err = clEnqueueNDRangeKernel(q, k, 1, NULL, &too_many, &too_many, 0,
                                 NULL, NULL);
    int deferred = err == CL_SUCCESS;
    if (!deferred && err != CL_INVALID_WORK_GROUP_SIZE) {
        printf("FAIL deferred: a work-group of %zu: %d\n", too_many, err);
        return 1;
    }
    if (!rehome && deferred) {
        printf("FAIL deferred: natively a work-group of %zu was taken\n",
               too_many);
        return 1;
    }
    if (rehome && switch_now(rehome, "back to the vendor") != 0)
        return 1;
    err = clFinish(q);
    if (deferred && err != CL_INVALID_WORK_GROUP_SIZE) {
        printf("FAIL deferred: clFinish after the switch: %d, not "
               "CL_INVALID_WORK_GROUP_SIZE (%d)\n",
               err, CL_INVALID_WORK_GROUP_SIZE);
        return 1;
    }
    /* Reported once; the program goes on. */
    CK(clFinish(q));
    size_t global = N;
    CK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, NULL));
    CK(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, sizeof(got), got, 0, NULL,
                           NULL));
    for (int i = 0; i < N; i++)
        if (got[i] != 7) {
            printf("FAIL deferred: word %d is %u, not 7\n", i, got[i]);
            return 1;
        }
    printf("PASS deferred: the error %s, every word right\n",
           !deferred ? "came at once"
                     : "crossed the switch to the next clFinish");
    clReleaseMemObject(buf);
    clReleaseKernel(k);
    clReleaseProgram(prog);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return 0;
}
