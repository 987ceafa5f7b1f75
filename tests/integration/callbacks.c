/* Destructor callbacks: a buffer's, a sub-buffer's and a context's run
 * once each when the object goes, newest registration first, with the
 * program's own handle and data. */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>

static int order[8], fired;
static void *seen[8];

static void CL_CALLBACK mem_gone(cl_mem m, void *data)
{
    if (fired < 8) {
        seen[fired] = m;
        order[fired++] = (int)(size_t)data;
    }
}

static void CL_CALLBACK ctx_gone(cl_context c, void *data)
{
    if (fired < 8) {
        seen[fired] = c;
        order[fired++] = (int)(size_t)data;
    }
}

static int fail(const char *what, int err)
{
    printf("FAIL callbacks: %s (%d)\n", what, err);
    return 1;
}

int main(void)
{
    cl_platform_id platform;
    cl_device_id device;
    cl_int err;

    if (clGetPlatformIDs(1, &platform, NULL) != CL_SUCCESS ||
        clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL) !=
            CL_SUCCESS)
        return fail("no device", 0);
    cl_context ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    if (!ctx)
        return fail("clCreateContext", err);
    cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 4096, NULL, &err);
    if (!buf)
        return fail("clCreateBuffer", err);
    cl_buffer_region r = {0, 1024};
    cl_mem sub = clCreateSubBuffer(buf, CL_MEM_READ_WRITE,
                                   CL_BUFFER_CREATE_TYPE_REGION, &r, &err);
    if (!sub)
        return fail("clCreateSubBuffer", err);
    if ((err = clSetContextDestructorCallback(ctx, ctx_gone, (void *)5)) ||
        (err = clSetMemObjectDestructorCallback(buf, mem_gone, (void *)1)) ||
        (err = clSetMemObjectDestructorCallback(buf, mem_gone, (void *)2)) ||
        (err = clSetMemObjectDestructorCallback(sub, mem_gone, (void *)3)))
        return fail("setting a destructor callback", err);
    if ((err = clReleaseMemObject(sub)))
        return fail("releasing the sub-buffer", err);
    if (fired != 1 || order[0] != 3 || seen[0] != sub)
        return fail("the sub-buffer's callback did not run once, with its "
                    "handle",
                    fired);
    if ((err = clReleaseMemObject(buf)))
        return fail("releasing the buffer", err);
    if (fired != 3 || order[1] != 2 || order[2] != 1 || seen[1] != buf ||
        seen[2] != buf)
        return fail("the buffer's callbacks did not run newest first, with "
                    "its handle",
                    fired);
    if ((err = clReleaseContext(ctx)))
        return fail("releasing the context", err);
    if (fired != 4 || order[3] != 5 || seen[3] != ctx)
        return fail("the context's callback did not run, with its handle",
                    fired);
    printf("PASS callbacks\n");
    return 0;
}
