/* Event test: out-of-order queues with wait lists, user events, callbacks,
 * markers and barriers, profiling, and event queries. */
#define TEST_NAME "events"
#define CL_TARGET_OPENCL_VERSION 300
#include "clcheck.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

/* Words per buffer, chains in the out-of-order test, launches per chain. */
#define N 2048
#define CHAINS 4
#define CHAIN_LEN 50
#define PROFILED 100
#define MAX_CALLBACKS 256

static const char *kernel_source =
    "__kernel void advance(__global uint *d, uint mul, uint add)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    d[i] = d[i] * mul + add + (uint)i;\n"
    "}\n";

struct callbacks;

/* What one event callback saw, filled in by the callback itself. */
struct cb_record {
    struct callbacks *owner;
    cl_event expected;
    cl_int expected_status;
    cl_event got;
    cl_int status;
    int calls;
};

/* Callback bookkeeping shared with the OpenCL runtime's threads. */
struct callbacks {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int fired;
    int registered;
    struct cb_record rec[MAX_CALLBACKS];
};

/* The objects every step uses. */
struct state {
    cl_context context;
    cl_device_id device;
    cl_command_queue inq;   /* in-order, profiling */
    cl_command_queue ooq;   /* out-of-order if the device has it */
    cl_kernel advance;
    cl_mem buf[CHAINS];
    cl_uint mirror[CHAINS][N];
    struct callbacks cb;
};

/* Applies one launch of the advance kernel to a mirror. */
static void advance_model(cl_uint *m, cl_uint mul, cl_uint add)
{
    for (size_t i = 0; i < N; i++)
        m[i] = m[i] * mul + add + (cl_uint)i;
}

/* Enqueues the advance kernel on one buffer and updates its mirror. */
static void launch(struct state *st, cl_command_queue q, int b, cl_uint mul,
                   cl_uint add, cl_uint nwait, const cl_event *wait,
                   cl_event *ev)
{
    size_t global = N;

    CHECK(clSetKernelArg(st->advance, 0, sizeof(cl_mem), &st->buf[b]));
    CHECK(clSetKernelArg(st->advance, 1, sizeof(mul), &mul));
    CHECK(clSetKernelArg(st->advance, 2, sizeof(add), &add));
    CHECK(clEnqueueNDRangeKernel(q, st->advance, 1, NULL, &global, NULL, nwait,
                                 wait, ev));
    advance_model(st->mirror[b], mul, add);
}

/* Reads a buffer and compares it with its mirror. */
static void verify(struct state *st, int b, const char *step)
{
    static cl_uint got[N];
    char what[128];

    CHECK(clEnqueueReadBuffer(st->inq, st->buf[b], CL_TRUE, 0, sizeof(got),
                              got, 0, NULL, NULL));
    snprintf(what, sizeof(what), "buffer %d after %s", b, step);
    expect_uints(got, st->mirror[b], N, what);
}

/* Checks that an event reports the queue, context and command type the
 * program expects. */
static void check_event(struct state *st, cl_event ev, cl_command_queue q,
                        cl_command_type type)
{
    cl_command_queue gotq = (cl_command_queue)(uintptr_t)1;
    cl_context gotc = NULL;
    cl_command_type gott = 0;

    CHECK(clGetEventInfo(ev, CL_EVENT_COMMAND_QUEUE, sizeof(gotq), &gotq,
                         NULL));
    EXPECT(gotq == q, "CL_EVENT_COMMAND_QUEUE is %p, expected %p",
           (void *)gotq, (void *)q);
    CHECK(clGetEventInfo(ev, CL_EVENT_CONTEXT, sizeof(gotc), &gotc, NULL));
    EXPECT(gotc == st->context, "CL_EVENT_CONTEXT is %p, expected %p",
           (void *)gotc, (void *)st->context);
    CHECK(clGetEventInfo(ev, CL_EVENT_COMMAND_TYPE, sizeof(gott), &gott,
                         NULL));
    EXPECT(gott == type, "CL_EVENT_COMMAND_TYPE is 0x%x, expected 0x%x",
           (unsigned)gott, (unsigned)type);
}

/* Returns an event's execution status. */
static cl_int event_status(cl_event ev)
{
    cl_int status = 0;

    CHECK(clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS,
                         sizeof(status), &status, NULL));
    return status;
}

/* Records what the runtime passed to an event callback and wakes the
 * waiting thread. */
static void CL_CALLBACK on_event_record(cl_event ev, cl_int status,
                                        void *user)
{
    struct cb_record *rec = user;
    struct callbacks *cb = rec->owner;

    pthread_mutex_lock(&cb->lock);
    rec->got = ev;
    rec->status = status;
    rec->calls++;
    cb->fired++;
    pthread_cond_broadcast(&cb->cond);
    pthread_mutex_unlock(&cb->lock);
}

/* Registers a callback on an event for one execution status. */
static void add_callback(struct state *st, cl_event ev, cl_int type)
{
    struct callbacks *cb = &st->cb;
    int i = cb->registered;

    if (i >= MAX_CALLBACKS)
        fail("too many callbacks");
    cb->rec[i].owner = cb;
    cb->rec[i].expected = ev;
    cb->rec[i].expected_status = type;
    cb->registered++;
    CHECK(clSetEventCallback(ev, type, on_event_record, &cb->rec[i]));
}

/* Waits (up to ten seconds) for every registered callback, then checks
 * each one saw its own event handle and status exactly once. */
static void wait_callbacks(struct state *st)
{
    struct callbacks *cb = &st->cb;
    struct timespec deadline;

    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 10;
    pthread_mutex_lock(&cb->lock);
    while (cb->fired < cb->registered) {
        if (pthread_cond_timedwait(&cb->cond, &cb->lock, &deadline) ==
            ETIMEDOUT)
            break;
    }
    pthread_mutex_unlock(&cb->lock);
    EXPECT(cb->fired == cb->registered, "%d of %d callbacks fired", cb->fired,
           cb->registered);
    for (int i = 0; i < cb->registered; i++) {
        struct cb_record *rec = &cb->rec[i];

        EXPECT(rec->calls == 1, "callback %d ran %d times", i, rec->calls);
        EXPECT(rec->got == rec->expected,
               "callback %d got event %p, the program holds %p", i,
               (void *)rec->got, (void *)rec->expected);
        EXPECT(rec->status == rec->expected_status,
               "callback %d got status %d, expected %d", i, rec->status,
               rec->expected_status);
    }
}

/* Runs several dependent chains on the out-of-order queue, ordered only by
 * event wait lists, with cross-chain copies. */
static void step_out_of_order(struct state *st)
{
    static cl_uint initial[CHAINS][N];
    cl_event last[CHAINS];

    /* Non-blocking writes from a copy, as the mirrors change at once. */
    memcpy(initial, st->mirror, sizeof(initial));
    for (int c = 0; c < CHAINS; c++) {
        CHECK(clEnqueueWriteBuffer(st->ooq, st->buf[c], CL_FALSE, 0,
                                   sizeof(initial[c]), initial[c], 0, NULL,
                                   &last[c]));
        check_event(st, last[c], st->ooq, CL_COMMAND_WRITE_BUFFER);
    }
    for (int it = 0; it < CHAIN_LEN; it++) {
        for (int c = 0; c < CHAINS; c++) {
            cl_event ev;

            launch(st, st->ooq, c, 3u + 2u * (cl_uint)it,
                   (cl_uint)(c * 1000 + it), 1, &last[c], &ev);
            if (it % 10 == 0)
                check_event(st, ev, st->ooq, CL_COMMAND_NDRANGE_KERNEL);
            if (it % 5 == 0)
                add_callback(st, ev, CL_COMPLETE);
            else if (it % 5 == 1)
                add_callback(st, ev, CL_SUBMITTED);
            else if (it % 5 == 2)
                add_callback(st, ev, CL_RUNNING);
            CHECK(clReleaseEvent(last[c]));
            last[c] = ev;
        }
        if (it % 10 == 5) {
            /* Chain b takes a slice of chain a once both are ready; both
             * chains then continue after the copy. */
            int a = it % CHAINS;
            int b = (a + 1) % CHAINS;
            cl_event wait[2] = {last[a], last[b]};
            cl_event ev;

            CHECK(clEnqueueCopyBuffer(st->ooq, st->buf[a], st->buf[b], 0,
                                      sizeof(cl_uint) * 100,
                                      sizeof(cl_uint) * 500, 2, wait, &ev));
            memcpy(st->mirror[b] + 100, st->mirror[a],
                   sizeof(cl_uint) * 500);
            check_event(st, ev, st->ooq, CL_COMMAND_COPY_BUFFER);
            CHECK(clReleaseEvent(last[a]));
            CHECK(clReleaseEvent(last[b]));
            CHECK(clRetainEvent(ev));
            last[a] = ev;
            last[b] = ev;
        }
        if (it % 16 == 0)
            CHECK(clFlush(st->ooq));
    }
    CHECK(clWaitForEvents(CHAINS, last));
    for (int c = 0; c < CHAINS; c++) {
        EXPECT(event_status(last[c]) == CL_COMPLETE, "chain %d incomplete", c);
        CHECK(clReleaseEvent(last[c]));
        verify(st, c, "out-of-order chains");
    }
}

/* Holds work behind user events, checks it waits, then releases it. */
static void step_user_events(struct state *st)
{
    cl_int err;

    for (int round = 0; round < 20; round++) {
        int b = round % CHAINS;
        cl_event user, work[2];
        cl_uint host[64];
        cl_int status;

        user = clCreateUserEvent(st->context, &err);
        CHECK(err);
        check_event(st, user, NULL, CL_COMMAND_USER);
        EXPECT(event_status(user) == CL_SUBMITTED,
               "a new user event has status %d", event_status(user));
        if (round % 4 == 0)
            add_callback(st, user, CL_COMPLETE);

        /* A write, a kernel and a read, all held by the user event. */
        for (int i = 0; i < 64; i++)
            host[i] = (cl_uint)(round * 64 + i) * 2654435761u;
        CHECK(clEnqueueWriteBuffer(st->ooq, st->buf[b], CL_FALSE,
                                   sizeof(cl_uint) * 64, sizeof(host), host,
                                   1, &user, &work[0]));
        memcpy(st->mirror[b] + 64, host, sizeof(host));
        launch(st, st->ooq, b, 5, (cl_uint)round, 1, &work[0], &work[1]);
        if (round % 4 == 1)
            add_callback(st, work[1], CL_COMPLETE);
        CHECK(clFlush(st->ooq));

        status = event_status(work[1]);
        EXPECT(status != CL_COMPLETE && status >= 0,
               "work behind an unset user event has status %d", status);

        CHECK(clSetUserEventStatus(user, CL_COMPLETE));
        CHECK(clWaitForEvents(2, work));
        EXPECT(event_status(user) == CL_COMPLETE, "user event status %d",
               event_status(user));
        CHECK(clReleaseEvent(user));
        CHECK(clReleaseEvent(work[0]));
        CHECK(clReleaseEvent(work[1]));
        verify(st, b, "user event round");
    }
}

/* Orders out-of-order work with markers and barriers alone. */
static void step_markers_barriers(struct state *st)
{
    cl_int err;

    for (int round = 0; round < 15; round++) {
        cl_event ev[CHAINS], marker, barrier, user, tail;

        /* Independent launches, then a marker that waits for all of them. */
        for (int c = 0; c < CHAINS; c++)
            launch(st, st->ooq, c, 7, (cl_uint)round, 0, NULL, &ev[c]);
        CHECK(clEnqueueMarkerWithWaitList(st->ooq, 0, NULL, &marker));
        check_event(st, marker, st->ooq, CL_COMMAND_MARKER);
        CHECK(clWaitForEvents(1, &marker));
        for (int c = 0; c < CHAINS; c++) {
            EXPECT(event_status(ev[c]) == CL_COMPLETE,
                   "launch %d not complete after the marker", c);
            CHECK(clReleaseEvent(ev[c]));
        }
        CHECK(clReleaseEvent(marker));

        /* Two launches on one buffer, ordered only by a barrier. */
        launch(st, st->ooq, round % CHAINS, 11, 1, 0, NULL, NULL);
        CHECK(clEnqueueBarrierWithWaitList(st->ooq, 0, NULL, &barrier));
        check_event(st, barrier, st->ooq, CL_COMMAND_BARRIER);
        launch(st, st->ooq, round % CHAINS, 13, 2, 0, NULL, NULL);

        /* A barrier on a user event holds everything after it. */
        user = clCreateUserEvent(st->context, &err);
        CHECK(err);
        CHECK(clEnqueueBarrierWithWaitList(st->ooq, 1, &user, NULL));
        launch(st, st->ooq, (round + 1) % CHAINS, 17, 3, 0, NULL, &tail);
        CHECK(clFlush(st->ooq));
        EXPECT(event_status(tail) != CL_COMPLETE,
               "work after a barrier on an unset user event completed");
        CHECK(clSetUserEventStatus(user, CL_COMPLETE));

        /* A marker with a wait list completes after that list. */
        CHECK(clEnqueueMarkerWithWaitList(st->ooq, 1, &tail, &marker));
        CHECK(clWaitForEvents(1, &marker));
        EXPECT(event_status(tail) == CL_COMPLETE,
               "marker completed before its wait list");
        EXPECT(event_status(barrier) == CL_COMPLETE,
               "barrier incomplete after later work");
        CHECK(clReleaseEvent(marker));
        CHECK(clReleaseEvent(barrier));
        CHECK(clReleaseEvent(user));
        CHECK(clReleaseEvent(tail));
        CHECK(clFinish(st->ooq));
        if (round % 5 == 4) {
            for (int c = 0; c < CHAINS; c++)
                verify(st, c, "markers and barriers");
        }
    }
}

/* Returns one profiling time of an event. */
static cl_ulong prof(cl_event ev, cl_profiling_info what)
{
    cl_ulong t = 0;

    CHECK(clGetEventProfilingInfo(ev, what, sizeof(t), &t, NULL));
    return t;
}

/* Launches on the profiling queue and checks each event's timestamps. */
static void step_profiling(struct state *st)
{
    cl_event evs[PROFILED];
    cl_event plain;
    cl_ulong t = 0;

    for (int i = 0; i < PROFILED; i++) {
        int b = i % CHAINS;

        launch(st, st->inq, b, 19, (cl_uint)i, 0, NULL, &evs[i]);
        if (i % 25 == 0)
            check_event(st, evs[i], st->inq, CL_COMMAND_NDRANGE_KERNEL);
    }
    CHECK(clWaitForEvents(PROFILED, evs));
    for (int i = 0; i < PROFILED; i++) {
        cl_ulong q = prof(evs[i], CL_PROFILING_COMMAND_QUEUED);
        cl_ulong s = prof(evs[i], CL_PROFILING_COMMAND_SUBMIT);
        cl_ulong b = prof(evs[i], CL_PROFILING_COMMAND_START);
        cl_ulong e = prof(evs[i], CL_PROFILING_COMMAND_END);
        cl_int err;

        EXPECT(q <= s && s <= b && b <= e,
               "event %d times queued %llu submit %llu start %llu end %llu",
               i, (unsigned long long)q, (unsigned long long)s,
               (unsigned long long)b, (unsigned long long)e);
        EXPECT(q != 0, "event %d has a zero queued time", i);
        /* An in-order queue starts each command after the last one ends. */
        if (i > 0) {
            cl_ulong prev_end = prof(evs[i - 1], CL_PROFILING_COMMAND_END);

            EXPECT(b >= prev_end, "event %d starts at %llu before event %d "
                   "ends at %llu", i, (unsigned long long)b, i - 1,
                   (unsigned long long)prev_end);
        }
        /* CL_PROFILING_COMMAND_COMPLETE is OpenCL 2.0; where it is
         * answered it must not precede the end. */
        err = clGetEventProfilingInfo(evs[i], CL_PROFILING_COMMAND_COMPLETE,
                                      sizeof(t), &t, NULL);
        if (err == CL_SUCCESS)
            EXPECT(t >= e, "event %d completes at %llu before its end %llu",
                   i, (unsigned long long)t, (unsigned long long)e);
        else
            EXPECT(err == CL_INVALID_VALUE,
                   "CL_PROFILING_COMMAND_COMPLETE query returned %d", err);
    }
    for (int i = 0; i < PROFILED; i++)
        CHECK(clReleaseEvent(evs[i]));

    /* An event from a queue without profiling has no profiling data. */
    launch(st, st->ooq, 0, 23, 4, 0, NULL, &plain);
    CHECK(clWaitForEvents(1, &plain));
    CHECK_ERR(clGetEventProfilingInfo(plain, CL_PROFILING_COMMAND_END,
                                      sizeof(t), &t, NULL),
              CL_PROFILING_INFO_NOT_AVAILABLE);
    CHECK(clReleaseEvent(plain));
    for (int c = 0; c < CHAINS; c++)
        verify(st, c, "profiled launches");
}

int main(void)
{
    static struct state st;
    cl_platform_id platform;
    cl_command_queue_properties props = 0;
    cl_program program;
    cl_int err;

    pick_device(&platform, &st.device);
    CHECK(clGetDeviceInfo(st.device, CL_DEVICE_QUEUE_ON_HOST_PROPERTIES,
                          sizeof(props), &props, NULL));
    if (!(props & CL_QUEUE_PROFILING_ENABLE))
        skip("device has no profiling queues");
    st.context = clCreateContext(NULL, 1, &st.device, NULL, NULL, &err);
    CHECK(err);
    {
        cl_queue_properties qp[] = {CL_QUEUE_PROPERTIES,
                                    CL_QUEUE_PROFILING_ENABLE, 0};
        cl_command_queue_properties got = 0;

        st.inq = clCreateCommandQueueWithProperties(st.context, st.device, qp,
                                                    &err);
        CHECK(err);
        CHECK(clGetCommandQueueInfo(st.inq, CL_QUEUE_PROPERTIES, sizeof(got),
                                    &got, NULL));
        EXPECT(got == CL_QUEUE_PROFILING_ENABLE,
               "profiling queue has properties 0x%llx",
               (unsigned long long)got);
    }
    if (props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) {
        cl_queue_properties qp[] = {CL_QUEUE_PROPERTIES,
                                    CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, 0};

        st.ooq = clCreateCommandQueueWithProperties(st.context, st.device, qp,
                                                    &err);
    } else {
        fprintf(stderr, "note: no out-of-order queues, using an in-order "
                        "queue\n");
        st.ooq = clCreateCommandQueueWithProperties(st.context, st.device,
                                                    NULL, &err);
    }
    CHECK(err);
    pthread_mutex_init(&st.cb.lock, NULL);
    pthread_cond_init(&st.cb.cond, NULL);

    program = build_source(st.context, st.device, kernel_source, "");
    st.advance = make_kernel(program, "advance");
    for (int c = 0; c < CHAINS; c++) {
        for (size_t i = 0; i < N; i++)
            st.mirror[c][i] = (cl_uint)(c * N + i) * 40503u;
        st.buf[c] = clCreateBuffer(st.context, CL_MEM_READ_WRITE,
                                   sizeof(st.mirror[c]), NULL, &err);
        CHECK(err);
    }

    step_out_of_order(&st);
    step_user_events(&st);
    step_markers_barriers(&st);
    step_profiling(&st);
    wait_callbacks(&st);

    for (int c = 0; c < CHAINS; c++)
        CHECK(clReleaseMemObject(st.buf[c]));
    CHECK(clReleaseKernel(st.advance));
    CHECK(clReleaseProgram(program));
    CHECK(clReleaseCommandQueue(st.inq));
    CHECK(clReleaseCommandQueue(st.ooq));
    CHECK(clReleaseContext(st.context));
    pass();
}
