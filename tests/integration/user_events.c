/* User events set from another thread while threads wait on them, and on
 * work that waits on them (clWaitForEvents, clFinish, a blocking read and
 * a blocking write behind the work, a marker behind a non-blocking read
 * behind it), as pyopencl's test_user_event does, and on two user events at
 * once and one set to an error: every wait must return once the event is
 * set, and not before, with the error where one was set; the work's results are checked,
 * the non-blocking read's bytes in place once the marker's wait returned
 * (remoted, a wait ends on the proxy's notice unless such a read's bytes
 * are still on their way).  Remoted, the set reaches the proxy after the read: a proxy
 * that waited for the read inside its loop would never see it. */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define N 1024
#define ROUNDS 3
#define BIG_WORDS (1u << 18)     /* 1 MiB: a write the proxy may stage */

#define CHECK(x)                                                          \
    do {                                                                  \
        cl_int e_ = (x);                                                  \
        if (e_ != CL_SUCCESS) {                                           \
            printf("FAIL user_events: %s returned %d (line %d)\n", #x,    \
                   e_, __LINE__);                                         \
            exit(1);                                                      \
        }                                                                 \
    } while (0)

static const char *source =
    "__kernel void add(__global uint *d, uint k)\n"
    "{ size_t i = get_global_id(0); d[i] = d[i] * 3u + k + (uint)i; }\n";

struct waiter {
    pthread_t thread;
    enum { WAIT_USER, WAIT_WORK, FINISH, READ, WRITE, NBREAD } what;
    cl_event event;
    cl_command_queue queue;
    cl_mem buf;
    cl_uint word;                /* READ, NBREAD: the buffer's first word */
    const void *src;             /* WRITE: BIG_WORDS words into buf */
    atomic_bool started, returned;
    cl_int err;
};

static void *wait_main(void *arg)
{
    struct waiter *w = arg;

    atomic_store(&w->started, true);
    if (w->what == FINISH)
        w->err = clFinish(w->queue);
    else if (w->what == WRITE)
        w->err = clEnqueueWriteBuffer(w->queue, w->buf, CL_TRUE, 0,
                                      BIG_WORDS * sizeof(cl_uint), w->src, 0,
                                      NULL, NULL);
    else if (w->what == READ)
        w->err = clEnqueueReadBuffer(w->queue, w->buf, CL_TRUE, 0,
                                     sizeof(w->word), &w->word, 0, NULL,
                                     NULL);
    else if (w->what == NBREAD) {
        cl_event marker = NULL;
        w->err = clEnqueueReadBuffer(w->queue, w->buf, CL_FALSE, 0,
                                     sizeof(w->word), &w->word, 0, NULL,
                                     NULL);
        if (w->err == CL_SUCCESS)
            w->err = clEnqueueMarkerWithWaitList(w->queue, 0, NULL, &marker);
        if (w->err == CL_SUCCESS)
            w->err = clWaitForEvents(1, &marker);
        if (marker)
            clReleaseEvent(marker);
    }
    else
        w->err = clWaitForEvents(1, &w->event);
    atomic_store(&w->returned, true);
    return NULL;
}

/* Waits on the two events at W->src (a cl_event[2]). */
static void *wait_two(void *arg)
{
    struct waiter *w = arg;

    atomic_store(&w->started, true);
    w->err = clWaitForEvents(2, (const cl_event *)w->src);
    atomic_store(&w->returned, true);
    return NULL;
}

/* A wait that never returns fails the test instead of stalling it. */
static void hung(int sig)
{
    static const char msg[] = "FAIL user_events: a wait still blocks after "
                              "120 s\n";
    (void)sig;
    if (write(1, msg, sizeof(msg) - 1) < 0)
        _exit(2);
    _exit(1);
}

int main(void)
{
    cl_platform_id platform;
    cl_device_id device;
    cl_int err;
    static cl_uint mirror[N], got[N], big[BIG_WORDS], big_got[BIG_WORDS];

    signal(SIGALRM, hung);
    alarm(120);
    CHECK(clGetPlatformIDs(1, &platform, NULL));
    CHECK(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL));
    cl_context ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    CHECK(err);
    cl_command_queue q =
        clCreateCommandQueueWithProperties(ctx, device, NULL, &err);
    CHECK(err);
    cl_program p = clCreateProgramWithSource(ctx, 1, &source, NULL, &err);
    CHECK(err);
    CHECK(clBuildProgram(p, 1, &device, "", NULL, NULL));
    cl_kernel k = clCreateKernel(p, "add", &err);
    CHECK(err);
    for (size_t i = 0; i < N; i++)
        mirror[i] = (cl_uint)i * 2654435761u;
    cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                sizeof(mirror), mirror, &err);
    CHECK(err);
    cl_mem big_buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof(big),
                                    NULL, &err);
    CHECK(err);

    for (cl_uint round = 0; round < ROUNDS; round++) {
        enum { WAITERS = 6 };
        struct waiter w[WAITERS] = {{.what = WAIT_USER},
                                    {.what = WAIT_WORK},
                                    {.what = FINISH},
                                    {.what = READ},
                                    {.what = WRITE},
                                    {.what = NBREAD}};
        size_t global = N;
        cl_event user = clCreateUserEvent(ctx, &err), work;
        CHECK(err);
        CHECK(clSetKernelArg(k, 0, sizeof(buf), &buf));
        CHECK(clSetKernelArg(k, 1, sizeof(round), &round));
        CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 1, &user,
                                     &work));
        CHECK(clFlush(q));
        for (size_t i = 0; i < N; i++)
            mirror[i] = mirror[i] * 3u + round + (cl_uint)i;
        w[0].event = user;
        w[1].event = work;
        w[2].queue = q;
        w[3].queue = q;
        w[3].buf = buf;
        /* A blocking write queued behind the gated work: it may return at
         * once (the bytes are copied) or once the work ran; either way
         * the set below must still reach the work (remoted: the proxy
         * must not wait for it in its loop). */
        for (size_t i = 0; i < BIG_WORDS; i++)
            big[i] = (cl_uint)i * 40503u + round;
        w[4].queue = q;
        w[4].buf = big_buf;
        w[4].src = big;
        w[5].queue = q;
        w[5].buf = buf;
        w[5].word = ~mirror[0];
        for (int i = 0; i < WAITERS; i++)
            if (pthread_create(&w[i].thread, NULL, wait_main, &w[i])) {
                printf("FAIL user_events: pthread_create\n");
                return 1;
            }
        for (int i = 0; i < WAITERS; i++)
            while (!atomic_load(&w[i].started))
                sched_yield();
        /* Give the waits time to block (not a condition of the result). */
        nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL);
        for (int i = 0; i < WAITERS; i++)
            if (w[i].what != WRITE && atomic_load(&w[i].returned)) {
                printf("FAIL user_events: waiter %d returned (%d) before "
                       "the user event was set\n",
                       i, w[i].err);
                return 1;
            }
        CHECK(clSetUserEventStatus(user, CL_COMPLETE));
        for (int i = 0; i < WAITERS; i++) {
            pthread_join(w[i].thread, NULL);
            CHECK(w[i].err);
        }
        if (w[3].word != mirror[0]) {
            printf("FAIL user_events: round %u: the blocking read behind "
                   "the work saw %u, want %u\n", round, w[3].word,
                   mirror[0]);
            return 1;
        }
        if (w[5].word != mirror[0]) {
            printf("FAIL user_events: round %u: after the marker's wait, "
                   "the non-blocking read behind the work saw %u, want "
                   "%u\n", round, w[5].word, mirror[0]);
            return 1;
        }
        CHECK(clReleaseEvent(work));
        CHECK(clReleaseEvent(user));
        CHECK(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, sizeof(got), got, 0,
                                  NULL, NULL));
        CHECK(clEnqueueReadBuffer(q, big_buf, CL_TRUE, 0, sizeof(big_got),
                                  big_got, 0, NULL, NULL));
        if (memcmp(big, big_got, sizeof(big)) != 0) {
            printf("FAIL user_events: round %u: the blocking write behind "
                   "the work did not land\n", round);
            return 1;
        }
        for (size_t i = 0; i < N; i++)
            if (got[i] != mirror[i]) {
                printf("FAIL user_events: round %u word %zu: %u, want %u\n",
                       round, i, got[i], mirror[i]);
                return 1;
            }
    }
    /* One thread waits on two user events at once (remoted, a wait on
     * user events alone ends in the shim, at the set): not before both
     * are set; then on one set to an error, which the wait reports. */
    {
        cl_event two[2];
        struct waiter both = {.what = WAIT_USER};
        struct waiter bad = {.what = WAIT_USER};
        for (int i = 0; i < 2; i++) {
            two[i] = clCreateUserEvent(ctx, &err);
            CHECK(err);
        }
        both.src = two;
        if (pthread_create(&both.thread, NULL, wait_two, &both)) {
            printf("FAIL user_events: pthread_create\n");
            return 1;
        }
        while (!atomic_load(&both.started))
            sched_yield();
        CHECK(clSetUserEventStatus(two[1], CL_COMPLETE));
        nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL);
        if (atomic_load(&both.returned)) {
            printf("FAIL user_events: a wait on two user events returned "
                   "(%d) with one still unset\n", both.err);
            return 1;
        }
        CHECK(clSetUserEventStatus(two[0], CL_COMPLETE));
        pthread_join(both.thread, NULL);
        CHECK(both.err);
        /* Set already: the wait returns at once. */
        CHECK(clWaitForEvents(2, two));
        bad.event = clCreateUserEvent(ctx, &err);
        CHECK(err);
        if (pthread_create(&bad.thread, NULL, wait_main, &bad)) {
            printf("FAIL user_events: pthread_create\n");
            return 1;
        }
        while (!atomic_load(&bad.started))
            sched_yield();
        CHECK(clSetUserEventStatus(bad.event, -1));
        pthread_join(bad.thread, NULL);
        if (bad.err != CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST) {
            printf("FAIL user_events: a wait on a user event set to -1 "
                   "returned %d, want %d\n", bad.err,
                   CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST);
            return 1;
        }
        for (int i = 0; i < 2; i++)
            CHECK(clReleaseEvent(two[i]));
        CHECK(clReleaseEvent(bad.event));
    }
    CHECK(clReleaseMemObject(big_buf));
    CHECK(clReleaseMemObject(buf));
    CHECK(clReleaseKernel(k));
    CHECK(clReleaseProgram(p));
    CHECK(clReleaseCommandQueue(q));
    CHECK(clReleaseContext(ctx));
    printf("PASS user_events\n");
    return 0;
}
