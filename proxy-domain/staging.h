/* Pinned host buffers the proxy stages reads through. */
#ifndef PX_STAGING_H
#define PX_STAGING_H

#include "cl.h"
#include "tenant.h"

/* Host pointer WHICH (0 or 1) of T's pair of pinned buffers of at least
 * SIZE bytes in Q's context, made (and mapped once) on first use; NULL
 * when the implementation cannot make them. */
void *px_staging_get(struct px_tenant *t, cl_command_queue q, size_t size,
                     int which);
/* Unmaps and releases them (teardown: before the tenant's objects). */
void px_staging_free(struct px_tenant *t);

#endif /* PX_STAGING_H */
