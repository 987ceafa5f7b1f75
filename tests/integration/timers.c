/* clGetDeviceAndHostTimer and clGetHostTimer: both answer, and both clocks
 * move forward between two readings.  SKIP (77) where the device has no
 * timer (CL_PLATFORM_HOST_TIMER_RESOLUTION 0, as OpenCL 2.1 allows). */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <stdio.h>
#include <time.h>

int main(void)
{
    cl_platform_id platform;
    cl_device_id device;
    cl_ulong resolution = 0, d0, h0, d1, h1, h2;

    if (clGetPlatformIDs(1, &platform, NULL) != CL_SUCCESS ||
        clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL) !=
            CL_SUCCESS) {
        printf("FAIL timers: no device\n");
        return 1;
    }
    if (clGetPlatformInfo(platform, CL_PLATFORM_HOST_TIMER_RESOLUTION,
                        sizeof(resolution), &resolution, NULL) !=
            CL_SUCCESS ||
        resolution == 0) {
        printf("SKIP timers: the device has no host timer\n");
        return 77;
    }
    cl_int e0 = clGetDeviceAndHostTimer(device, &d0, &h0);
    nanosleep(&(struct timespec){0, 2 * 1000 * 1000}, NULL);
    cl_int e1 = clGetDeviceAndHostTimer(device, &d1, &h1);
    cl_int e2 = clGetHostTimer(device, &h2);
    if (e0 != CL_SUCCESS || e1 != CL_SUCCESS || e2 != CL_SUCCESS) {
        printf("FAIL timers: errors %d %d %d\n", e0, e1, e2);
        return 1;
    }
    if (d1 <= d0 || h1 <= h0 || h2 < h1) {
        printf("FAIL timers: clocks did not advance (device %llu -> %llu, "
               "host %llu -> %llu -> %llu)\n",
               (unsigned long long)d0, (unsigned long long)d1,
               (unsigned long long)h0, (unsigned long long)h1,
               (unsigned long long)h2);
        return 1;
    }
    printf("PASS timers\n");
    return 0;
}
