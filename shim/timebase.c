/* Profiling timestamps on one timeline per device, across switches.
 *
 * Each OpenCL device counts profiling time from its own epoch: NVIDIA's
 * from about boot, PoCL's from 1970.  A program moved from one device to
 * another mid-run would see its next command start before (or decades
 * after) the last one ended.  The shim therefore answers every profiling
 * query on the timeline of the device the program first profiled on:
 * the first backend generation's timestamps pass unchanged (natively
 * nothing differs), and a later generation's are shifted by an offset
 * chosen so that its clock continues the timeline at the rate of the
 * host's monotonic clock.
 *
 * The offset needs a pair of readings of the same instant on both
 * clocks.  An event's CL_PROFILING_COMMAND_QUEUED is taken by the device
 * when the command is enqueued, and the shim reads CLOCK_MONOTONIC right
 * after the enqueue returns: that pair, from the device's latest event,
 * is the anchor (timeline time, host time).  The first event of a new
 * generation then gets offset = anchor_timeline + (its host time -
 * anchor_host) - its QUEUED.  The error is the difference between the
 * two enqueues' delays from the device's reading to the shim's (usually
 * microseconds, but a thread preempted there on a loaded machine makes it
 * milliseconds, more than a quick switch's stoppage).  So the order of
 * commands across a switch is also enforced: a new generation's first
 * QUEUED lands after every timestamp handed out before (the high water:
 * every event of the old generation was retired, its times read, at the
 * switch), since each of its commands was enqueued after the switch.
 */
#include <time.h>

#include "shim.h"

/* The host's monotonic clock in ns: the rate a new generation keeps. */
cl_ulong shim_timebase_host_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (cl_ulong)ts.tv_sec * 1000000000ull + (cl_ulong)ts.tv_nsec;
}

int64_t shim_timebase_offset(struct shim_timebase *tb, unsigned long gen,
                             cl_ulong queued, cl_ulong host_queued)
{
    if (!tb->anchored) {
        /* The first timeline: the device's own clock, unchanged. */
        tb->anchored = true;
        tb->gen = gen;
        tb->offset = 0;
    } else if (tb->gen != gen) {
        cl_ulong now_on_timeline =
            tb->anchor_timeline + (host_queued - tb->anchor_host);
        if (now_on_timeline <= tb->high_water)
            now_on_timeline = tb->high_water + 1;
        tb->gen = gen;
        tb->offset = (int64_t)(now_on_timeline - queued);
    }
    /* The latest reading is the best anchor for the next generation. */
    tb->anchor_timeline = queued + (cl_ulong)tb->offset;
    tb->anchor_host = host_queued;
    return tb->offset;
}

static pthread_mutex_t timebase_lock = PTHREAD_MUTEX_INITIALIZER;

void shim_timebase_translate(struct shim_event *e, cl_ulong raw_queued,
                             cl_ulong *values, unsigned n)
{
    struct shim_device *d = e->queue ? e->queue->device : NULL;

    if (!d || !e->host_queued || !raw_queued)
        return;
    pthread_mutex_lock(&timebase_lock);
    int64_t off = shim_timebase_offset(&d->timebase, e->generation,
                                       raw_queued, e->host_queued);
    for (unsigned i = 0; i < n; i++)
        if (values[i]) {
            values[i] += (cl_ulong)off;
            shim_timebase_seen(&d->timebase, values[i]);
        }
    pthread_mutex_unlock(&timebase_lock);
}

void shim_timebase_seen(struct shim_timebase *tb, cl_ulong t)
{
    if (t > tb->high_water)
        tb->high_water = t;
}
