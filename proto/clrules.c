/* OpenCL's rules on a call's plain values, shared by the shim and
 * crane-proxy. */
#include "proto/clrules.h"

#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>

bool crn_fill_pattern_ok(uint64_t pattern_size, uint64_t offset,
                         uint64_t size)
{
    return pattern_size && pattern_size <= 128 &&
           !(pattern_size & (pattern_size - 1)) && offset % pattern_size == 0 &&
           size % pattern_size == 0;
}

bool crn_migrate_flags_ok(uint64_t flags)
{
    return !(flags & ~(uint64_t)(CL_MIGRATE_MEM_OBJECT_HOST |
                                 CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED));
}
