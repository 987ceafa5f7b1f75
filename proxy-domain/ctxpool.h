/* Contexts made ahead of time, one spare per offered device. */
#ifndef PX_CTXPOOL_H
#define PX_CTXPOOL_H

#include "cl.h"
#include "devices.h"

/* Makes a spare context for every device of D (at start-up, before any
 * client). */
void px_ctxpool_init(const struct px_devices *d);
/* A ready context on DEV alone, for a creation whose properties are none or
 * just DEV's platform (PLATFORM, NULL for none); NULL when there is no
 * spare.  A new spare is made in the background. */
cl_context px_ctxpool_take(cl_device_id dev, cl_platform_id platform);
/* A spare context (retained: the caller releases it) of the first device
 * that has one, left in the pool; NULL when none is ready. */
cl_context px_ctxpool_peek(void);
/* Waits for spares being made and releases them all. */
void px_ctxpool_fini(void);

#endif /* PX_CTXPOOL_H */
