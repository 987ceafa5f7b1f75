/* The version every crane program reports, from one place (the build). */
#include "version.h"

/* build/gen/crane_version.h: written by the Makefile from CRANE_VERSION
 * (the VERSION file, or `git describe`), rewritten only when it changes. */
#include "crane_version.h"

#include <stdio.h>

const char *crn_version(void)
{
    return CRANE_VERSION;
}

void crn_print_version(const char *program)
{
    printf("%s %s\n", program, CRANE_VERSION);
}
