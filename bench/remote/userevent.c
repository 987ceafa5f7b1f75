/* How long a thread waiting on a user event (or on a marker behind one)
 * takes to wake once another thread sets it, as pyopencl's
 * test_user_event does: prints the mean, median and worst wake-up.
 *   userevent [--iters N] [user|marker]    (default 40, user) */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CK(call)                                                          \
    do {                                                                  \
        cl_int e_ = (call);                                               \
        if (e_ != CL_SUCCESS) {                                           \
            fprintf(stderr, "userevent: %s returned %d\n", #call, e_);    \
            exit(1);                                                      \
        }                                                                 \
    } while (0)

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static cl_event user;
static atomic_int waiting;
static double set_at;

/* Sets the user event once the waiter is about to wait, and a little
 * later (so that it really waits). */
static void *setter(void *arg)
{
    (void)arg;
    while (!atomic_load(&waiting))
        ;
    struct timespec d = {0, 3 * 1000 * 1000};
    nanosleep(&d, NULL);
    set_at = now();
    CK(clSetUserEventStatus(user, CL_COMPLETE));
    return NULL;
}

int main(int argc, char **argv)
{
    int iters = 40;
    const char *what = "user";  /* or "marker": a marker behind it */
    cl_platform_id plat;
    cl_device_id dev;
    cl_int err;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--iters") == 0 && i + 1 < argc)
            iters = atoi(argv[++i]);
        else if (strcmp(argv[i], "marker") == 0 ||
                 strcmp(argv[i], "user") == 0)
            what = argv[i];
        else {
            fprintf(stderr, "usage: userevent [--iters N] [user|marker]\n");
            return 2;
        }
    }
    if (iters < 1)
        iters = 1;
    CK(clGetPlatformIDs(1, &plat, NULL));
    CK(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL));
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CK(err);
    cl_command_queue q =
        clCreateCommandQueueWithProperties(ctx, dev, NULL, &err);
    CK(err);
    double sum = 0, worst = 0, *all = calloc(iters, sizeof(*all));
    if (!all)
        return 1;
    for (int i = 0; i < iters; i++) {
        pthread_t th;
        cl_event marker = NULL;
        user = clCreateUserEvent(ctx, &err);
        CK(err);
        if (strcmp(what, "marker") == 0)
            CK(clEnqueueMarkerWithWaitList(q, 1, &user, &marker));
        atomic_store(&waiting, 0);
        if (pthread_create(&th, NULL, setter, NULL))
            return 1;
        atomic_store(&waiting, 1);
        CK(clWaitForEvents(1, marker ? &marker : &user));
        double woke = now();
        pthread_join(th, NULL);
        double d = woke - set_at;
        sum += d;
        all[i] = d;
        if (d > worst)
            worst = d;
        if (marker)
            CK(clReleaseEvent(marker));
        CK(clReleaseEvent(user));
    }
    CK(clFinish(q));
    qsort(all, iters, sizeof(*all), by_value);
    printf("RESULT userevent-%s %d mean_ms %.3f median_ms %.3f worst_ms "
           "%.3f\n", what, iters, sum / iters * 1e3, all[iters / 2] * 1e3,
           worst * 1e3);
    free(all);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return 0;
}
