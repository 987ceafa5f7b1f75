/* Unit tests of the profiling timeline across switches (shim/timebase.c). */
#include "shim/shim.h"
#include "tests/unit/runner.h"

/* The first binding's timestamps pass unchanged; later ones continue the
 * same timeline at the host's rate, whatever their device's epoch. */
TEST(timebase_continues_across_devices)
{
    struct shim_timebase tb = {0};
    const cl_ulong host0 = 5000000000ull;  /* CLOCK_MONOTONIC at enqueue */

    /* Binding 1: a device counting from boot (NVIDIA-like). */
    ASSERT_EQ(shim_timebase_offset(&tb, 1, 145000000000ull, host0), 0);
    ASSERT_EQ(shim_timebase_offset(&tb, 1, 145000100000ull, host0 + 100000),
              0);
    /* Binding 2, 70 ms of host time later: a device counting from 1970
     * (PoCL-like).  Its QUEUED maps to the timeline 70 ms after the last
     * reading. */
    const cl_ulong epoch_ns = 1795554305000000000ull;
    int64_t off = shim_timebase_offset(&tb, 2, epoch_ns, host0 + 70100000);
    ASSERT_EQ((cl_ulong)(epoch_ns + (cl_ulong)off),
              145000100000ull + 70000000ull);
    /* Later readings of the same binding keep the same offset. */
    ASSERT_EQ(shim_timebase_offset(&tb, 2, epoch_ns + 5000,
                                   host0 + 70105000),
              off);
    /* Back to binding 3 on the first device: the timeline goes on, still
     * at the host's rate, not back to the device's own clock. */
    int64_t back = shim_timebase_offset(&tb, 3, 146000000000ull,
                                        host0 + 80105000);
    ASSERT_EQ((cl_ulong)(146000000000ull + (cl_ulong)back),
              145000100000ull + 70000000ull + 5000 + 10000000ull);
}

/* The first reading anchors the timeline whatever binding it comes from:
 * a program that profiles only after a switch sees that device's clock. */
TEST(timebase_first_reading_is_the_timeline)
{
    struct shim_timebase tb = {0};

    ASSERT_EQ(shim_timebase_offset(&tb, 7, 42, 1000), 0);
    ASSERT_EQ(shim_timebase_offset(&tb, 7, 43, 1001), 0);
}

/* A switch between two commands keeps their order even when the anchor
 * is off: the old command's enqueue returned late (its host reading 5 ms
 * after the device's QUEUED, a preempted thread), and it ended later than
 * the anchor alone would put the new device's first command. */
TEST(timebase_new_generation_starts_after_the_old_one_ended)
{
    struct shim_timebase tb = {0};
    const cl_ulong q1 = 1000000000ull, host1 = 7000000000ull;

    ASSERT_EQ(shim_timebase_offset(&tb, 1, q1, host1 + 5000000), 0);
    /* It ended 4 ms after it was queued, on the old device's clock. */
    shim_timebase_seen(&tb, q1 + 4000000);
    /* The new device's first command is queued 1 ms (host) later. */
    int64_t off = shim_timebase_offset(&tb, 2, 50, host1 + 6000000);
    ASSERT((cl_ulong)(50 + off) > q1 + 4000000);
}
