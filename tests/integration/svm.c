/* Coarse-grained SVM as pyopencl uses it: allocations written through
 * maps, kernels given SVM pointers (one into the middle of an allocation),
 * SVM copies, fills and frees; every byte checked.  SKIP (77) without
 * coarse-grained SVM. */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 4096
#define HALF (N / 2)

#define CHECK(x)                                                          \
    do {                                                                  \
        cl_int e_ = (x);                                                  \
        if (e_ != CL_SUCCESS) {                                           \
            printf("FAIL svm: %s returned %d (line %d)\n", #x, e_,       \
                   __LINE__);                                             \
            exit(1);                                                      \
        }                                                                 \
    } while (0)

static const char *source =
    "__kernel void blend(__global uint *out, __global const uint *in, uint k)\n"
    "{ size_t i = get_global_id(0); out[i] = out[i] * 5u + in[i] + k; }\n";

static void expect(const cl_uint *got, const cl_uint *want, size_t n,
                   const char *what)
{
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i]) {
            printf("FAIL svm: %s: word %zu is %u, want %u\n", what, i,
                   got[i], want[i]);
            exit(1);
        }
}

int main(void)
{
    cl_platform_id platform;
    cl_device_id device;
    cl_device_svm_capabilities caps = 0;
    static cl_uint a_model[N], b_model[N], host[N];
    cl_int err;

    CHECK(clGetPlatformIDs(1, &platform, NULL));
    CHECK(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL));
    if (clGetDeviceInfo(device, CL_DEVICE_SVM_CAPABILITIES, sizeof(caps),
                        &caps, NULL) != CL_SUCCESS ||
        !(caps & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER)) {
        printf("SKIP svm: the device has no coarse-grained SVM\n");
        return 77;
    }
    cl_context ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    CHECK(err);
    cl_command_queue q =
        clCreateCommandQueueWithProperties(ctx, device, NULL, &err);
    CHECK(err);
    cl_program p = clCreateProgramWithSource(ctx, 1, &source, NULL, &err);
    CHECK(err);
    CHECK(clBuildProgram(p, 1, &device, "", NULL, NULL));
    cl_kernel k = clCreateKernel(p, "blend", &err);
    CHECK(err);

    cl_uint *a = clSVMAlloc(ctx, CL_MEM_READ_WRITE, N * sizeof(cl_uint), 0);
    cl_uint *b = clSVMAlloc(ctx, CL_MEM_READ_WRITE, N * sizeof(cl_uint), 0);
    cl_uint *c = clSVMAlloc(ctx, CL_MEM_READ_WRITE, N * sizeof(cl_uint), 0);
    if (!a || !b || !c) {
        printf("FAIL svm: clSVMAlloc returned NULL\n");
        return 1;
    }
    /* Written by the host between a map and an unmap. */
    CHECK(clEnqueueSVMMap(q, CL_TRUE, CL_MAP_WRITE_INVALIDATE_REGION, a,
                          N * sizeof(cl_uint), 0, NULL, NULL));
    CHECK(clEnqueueSVMMap(q, CL_TRUE, CL_MAP_WRITE, b, N * sizeof(cl_uint),
                          0, NULL, NULL));
    for (cl_uint i = 0; i < N; i++) {
        a[i] = a_model[i] = i * 2654435761u;
        b[i] = b_model[i] = i ^ 0x5a5a5a5au;
    }
    CHECK(clEnqueueSVMUnmap(q, a, 0, NULL, NULL));
    CHECK(clEnqueueSVMUnmap(q, b, 0, NULL, NULL));

    /* Kernels on whole allocations, then on their second halves. */
    size_t global = N, half = HALF;
    for (cl_uint round = 0; round < 4; round++) {
        cl_uint off = round % 2 ? HALF : 0;
        CHECK(clSetKernelArgSVMPointer(k, 0, a + off));
        CHECK(clSetKernelArgSVMPointer(k, 1, b + off));
        CHECK(clSetKernelArg(k, 2, sizeof(round), &round));
        CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, off ? &half : &global,
                                     NULL, 0, NULL, NULL));
        for (cl_uint i = off; i < N; i++)
            a_model[i] = a_model[i] * 5u + b_model[i] + round;
    }
    /* An SVM copy, a fill, and a copy out to plain host memory. */
    CHECK(clEnqueueSVMMemcpy(q, CL_FALSE, c, a, N * sizeof(cl_uint), 0, NULL,
                             NULL));
    cl_uint pattern = 0xdeadbeefu;
    CHECK(clEnqueueSVMMemFill(q, c + HALF, &pattern, sizeof(pattern),
                              HALF * sizeof(cl_uint), 0, NULL, NULL));
    CHECK(clEnqueueSVMMemcpy(q, CL_TRUE, host, a, N * sizeof(cl_uint), 0,
                             NULL, NULL));
    expect(host, a_model, N, "allocation a copied out");
    CHECK(clEnqueueSVMMap(q, CL_TRUE, CL_MAP_READ, c, N * sizeof(cl_uint), 0,
                          NULL, NULL));
    expect(c, a_model, HALF, "first half of the copy");
    for (cl_uint i = HALF; i < N; i++)
        if (c[i] != pattern) {
            printf("FAIL svm: filled word %u is 0x%x\n", i, c[i]);
            return 1;
        }
    CHECK(clEnqueueSVMUnmap(q, c, 0, NULL, NULL));
    /* The host writes into a mapped allocation reach the device. */
    CHECK(clEnqueueSVMMap(q, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, b,
                          N * sizeof(cl_uint), 0, NULL, NULL));
    expect(b, b_model, N, "allocation b mapped again");
    for (cl_uint i = 0; i < N; i++)
        b[i] = b_model[i] = b_model[i] * 3u;
    CHECK(clEnqueueSVMUnmap(q, b, 0, NULL, NULL));
    CHECK(clSetKernelArgSVMPointer(k, 0, a));
    CHECK(clSetKernelArgSVMPointer(k, 1, b));
    cl_uint last = 99;
    CHECK(clSetKernelArg(k, 2, sizeof(last), &last));
    CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL,
                                 NULL));
    for (cl_uint i = 0; i < N; i++)
        a_model[i] = a_model[i] * 5u + b_model[i] + last;
    CHECK(clEnqueueSVMMap(q, CL_TRUE, CL_MAP_READ, a, N * sizeof(cl_uint), 0,
                          NULL, NULL));
    expect(a, a_model, N, "allocation a after the last kernel");
    CHECK(clEnqueueSVMUnmap(q, a, 0, NULL, NULL));

    void *frees[2] = {a, b};
    cl_event freed;
    CHECK(clEnqueueSVMFree(q, 2, frees, NULL, NULL, 0, NULL, &freed));
    CHECK(clWaitForEvents(1, &freed));
    CHECK(clReleaseEvent(freed));
    CHECK(clFinish(q));
    clSVMFree(ctx, c);
    CHECK(clReleaseKernel(k));
    CHECK(clReleaseProgram(p));
    CHECK(clReleaseCommandQueue(q));
    CHECK(clReleaseContext(ctx));
    printf("PASS svm\n");
    return 0;
}
