/* OpenCL's rules on a call's plain values, the same for every vendor:
 * checked by the shim before it batches a call (shim/check.c) and by
 * crane-proxy before its vendor sees one (proxy-domain/validate.c). */
#ifndef CRN_CLRULES_H
#define CRN_CLRULES_H

#include <stdbool.h>
#include <stdint.h>

/* A fill's pattern: 1, 2, 4, ... 128 bytes, the offset and the size its
 * multiples (clEnqueueFillBuffer). */
bool crn_fill_pattern_ok(uint64_t pattern_size, uint64_t offset,
                         uint64_t size);

/* clEnqueueMigrateMemObjects's flags: CL_MIGRATE_MEM_OBJECT_HOST and
 * CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED, nothing else. */
bool crn_migrate_flags_ok(uint64_t flags);

#endif
