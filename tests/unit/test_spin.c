/* Unit tests of proto/spin.c: polling a socket for a peer's answer. */
#include "runner.h"

#include "proto/spin.h"

#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

/* Bytes waiting are seen while spinning and after it; none: a time out,
 * whether it spun or not; a peer gone counts as ready (the read says). */
TEST(spin_readable)
{
    int sv[2];

    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    ASSERT(!crn_spin_readable(sv[0], 0, 0));
    ASSERT(!crn_spin_readable(sv[0], 200000, 5));
    ASSERT_EQ(write(sv[1], "x", 1), 1);
    ASSERT(crn_spin_readable(sv[0], 200000, 0));
    ASSERT(crn_spin_readable(sv[0], 0, -1));
    char c;
    ASSERT_EQ(read(sv[0], &c, 1), 1);
    close(sv[1]);
    ASSERT(crn_spin_readable(sv[0], 1000, -1));
    close(sv[0]);
}

/* The knob: in range taken, out of range or garbage the default. */
TEST(spin_env)
{
    long dflt = crn_spin_default_us();

    ASSERT(dflt == 0 || dflt == 50);
    setenv("CRANE_TEST_SPIN", "120", 1);
    ASSERT_EQ(crn_spin_us_from_env("CRANE_TEST_SPIN"), 120);
    setenv("CRANE_TEST_SPIN", "0", 1);
    ASSERT_EQ(crn_spin_us_from_env("CRANE_TEST_SPIN"), 0);
    setenv("CRANE_TEST_SPIN", "10001", 1);
    ASSERT_EQ(crn_spin_us_from_env("CRANE_TEST_SPIN"), dflt);
    setenv("CRANE_TEST_SPIN", "5x", 1);
    ASSERT_EQ(crn_spin_us_from_env("CRANE_TEST_SPIN"), dflt);
    unsetenv("CRANE_TEST_SPIN");
    ASSERT_EQ(crn_spin_us_from_env("CRANE_TEST_SPIN"), dflt);
}
