/* A device's SVM capabilities say only what holds: prints them ("CAPS
 * 0x..."), then checks each against what the device does.  Fine-grained
 * buffers reported: a fine-grained allocation is made, written by the
 * host with no map, changed by a kernel and read by the host with no map
 * after clFinish.  Not reported: clSVMAlloc with CL_MEM_SVM_FINE_GRAIN_BUFFER
 * returns NULL.  Atomics reported: an allocation with CL_MEM_SVM_ATOMICS
 * is made; not reported: refused.  Coarse-grained buffers reported: one is
 * made.  "PASS svm_caps" (exit 0) or "FAIL svm_caps: ..." (exit 1);
 * tests/integration/svm-caps.sh compares the capabilities across modes. */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>

#define N 1024

static const char *source =
    "__kernel void twice(__global uint *p)\n"
    "{ size_t i = get_global_id(0); p[i] = p[i] * 2u + 1u; }\n";

static void fail(const char *what, long v) __attribute__((noreturn));
static void fail(const char *what, long v)
{
    printf("FAIL svm_caps: %s (%ld)\n", what, v);
    exit(1);
}

#define CK(x)                                                             \
    do {                                                                  \
        cl_int e_ = (x);                                                  \
        if (e_ != CL_SUCCESS)                                             \
            fail(#x, e_);                                                 \
    } while (0)

/* A fine-grained allocation used with no map: the host's words reach the
 * kernel, the kernel's reach the host once it finished. */
static void fine_grain(cl_context ctx, cl_device_id dev, cl_uint *p)
{
    cl_int err;
    cl_command_queue q =
        clCreateCommandQueueWithProperties(ctx, dev, NULL, &err);
    CK(err);
    cl_program prog = clCreateProgramWithSource(ctx, 1, &source, NULL, &err);
    CK(err);
    CK(clBuildProgram(prog, 1, &dev, "-cl-std=CL2.0", NULL, NULL));
    cl_kernel k = clCreateKernel(prog, "twice", &err);
    CK(err);
    for (cl_uint i = 0; i < N; i++)
        p[i] = i * 7u;
    CK(clSetKernelArgSVMPointer(k, 0, p));
    size_t global = N;
    CK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, NULL));
    CK(clFinish(q));
    for (cl_uint i = 0; i < N; i++)
        if (p[i] != i * 14u + 1u)
            fail("a fine-grained word after the kernel, with no map", i);
    clReleaseKernel(k);
    clReleaseProgram(prog);
    clReleaseCommandQueue(q);
}

int main(void)
{
    cl_platform_id plat;
    cl_device_id dev;
    cl_device_svm_capabilities caps = 0;
    cl_int err;

    CK(clGetPlatformIDs(1, &plat, NULL));
    CK(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL));
    if (clGetDeviceInfo(dev, CL_DEVICE_SVM_CAPABILITIES, sizeof(caps), &caps,
                        NULL) != CL_SUCCESS)
        caps = 0;  /* a 1.2 device: no SVM */
    printf("CAPS 0x%llx\n", (unsigned long long)caps);
    if (!caps) {
        printf("PASS svm_caps\n");
        return 0;
    }
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CK(err);
    const cl_svm_mem_flags fine = CL_MEM_READ_WRITE |
                                  CL_MEM_SVM_FINE_GRAIN_BUFFER;
    void *c = clSVMAlloc(ctx, CL_MEM_READ_WRITE, N * 4, 0);
    if (!!(caps & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER) != !!c)
        fail("a coarse-grained allocation against the capabilities", !!c);
    cl_uint *f = clSVMAlloc(ctx, fine, N * 4, 0);
    if (!!(caps & CL_DEVICE_SVM_FINE_GRAIN_BUFFER) != !!f)
        fail("a fine-grained allocation against the capabilities", !!f);
    if (f)
        fine_grain(ctx, dev, f);
    void *a = clSVMAlloc(ctx, fine | CL_MEM_SVM_ATOMICS, N * 4, 0);
    if (!!(caps & CL_DEVICE_SVM_ATOMICS) != !!a)
        fail("an allocation with atomics against the capabilities", !!a);
    clSVMFree(ctx, a);
    clSVMFree(ctx, f);
    clSVMFree(ctx, c);
    clReleaseContext(ctx);
    printf("PASS svm_caps\n");
    return 0;
}
