/* Writes through a small shared-memory ring while it is full: writes held
 * back by a user event that another thread sets later (the proxy must not
 * hold their ring room until then: the client's later writes would wait
 * for it), then writes the proxy stages through pinned memory many more
 * than its pinned buffers; every byte read back and checked. */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PIECE (512u << 10)
#define PIECES 48
#define WORDS (PIECE / 4)

#define CHECK(x)                                                          \
    do {                                                                  \
        cl_int e_ = (x);                                                  \
        if (e_ != CL_SUCCESS) {                                           \
            printf("FAIL ring_writes: %s returned %d (line %d)\n", #x, e_,  \
                   __LINE__);                                             \
            exit(1);                                                      \
        }                                                                 \
    } while (0)

struct setter {
    cl_event ev;
    long delay_ms;
};

static void *set_later(void *arg)
{
    struct setter *s = arg;
    struct timespec ts = {s->delay_ms / 1000, (s->delay_ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
    CHECK(clSetUserEventStatus(s->ev, CL_COMPLETE));
    return NULL;
}

static void fill(uint32_t *p, unsigned round, unsigned piece)
{
    for (uint32_t i = 0; i < WORDS; i++)
        p[i] = (round * 0x9e3779b9u) ^ (piece * 0x85ebca6bu) ^ (i * 2654435761u);
}

/* PIECES writes into BUF, the first waiting on GATE (when given); checked
 * after a finish. */
static void round_of_writes(cl_context ctx, cl_command_queue q, cl_mem buf,
                            unsigned round, cl_event gate)
{
    static uint32_t host[PIECES][WORDS], back[WORDS];

    for (unsigned i = 0; i < PIECES; i++) {
        fill(host[i], round, i);
        CHECK(clEnqueueWriteBuffer(q, buf, CL_FALSE, (size_t)i * PIECE,
                                   PIECE, host[i], gate && i == 0 ? 1 : 0,
                                   gate && i == 0 ? &gate : NULL, NULL));
    }
    CHECK(clFinish(q));
    for (unsigned i = 0; i < PIECES; i++) {
        CHECK(clEnqueueReadBuffer(q, buf, CL_TRUE, (size_t)i * PIECE, PIECE,
                                  back, 0, NULL, NULL));
        if (memcmp(back, host[i], PIECE) != 0) {
            printf("FAIL ring_writes: round %u piece %u differs\n", round, i);
            exit(1);
        }
    }
    (void)ctx;
}

int main(void)
{
    cl_platform_id plat;
    cl_device_id dev;
    cl_int err;

    CHECK(clGetPlatformIDs(1, &plat, NULL));
    CHECK(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL));
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK(err);
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, dev, NULL,
                                                            &err);
    CHECK(err);
    cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE,
                                (size_t)PIECES * PIECE, NULL, &err);
    CHECK(err);

    /* 1: every write queued behind a user event set 200 ms later, by
     * another thread, while this one keeps writing. */
    for (unsigned round = 0; round < 2; round++) {
        cl_event gate = clCreateUserEvent(ctx, &err);
        CHECK(err);
        struct setter s = {gate, 200};
        pthread_t t;
        if (pthread_create(&t, NULL, set_later, &s) != 0) {
            printf("FAIL ring_writes: no thread\n");
            return 1;
        }
        round_of_writes(ctx, q, buf, round, gate);
        pthread_join(t, NULL);
        CHECK(clReleaseEvent(gate));
    }
    /* 2: no user event: the proxy may stage them through pinned memory. */
    for (unsigned round = 2; round < 5; round++)
        round_of_writes(ctx, q, buf, round, NULL);
    /* 3: the whole buffer in one read, bigger than a ring: the proxy reads
     * it in chunks (staged, or straight into a pinned ring). */
    static uint32_t all[PIECES][WORDS], want[WORDS];
    CHECK(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, (size_t)PIECES * PIECE,
                              all, 0, NULL, NULL));
    for (unsigned i = 0; i < PIECES; i++) {
        fill(want, 4, i);
        if (memcmp(all[i], want, PIECE) != 0) {
            printf("FAIL ring_writes: the whole read differs in piece %u\n",
                   i);
            return 1;
        }
    }
    CHECK(clReleaseMemObject(buf));
    CHECK(clReleaseCommandQueue(q));
    CHECK(clReleaseContext(ctx));
    printf("PASS ring_writes: %u rounds of %u writes of %u KiB\n", 5, PIECES,
           PIECE >> 10);
    return 0;
}
