/* OpenCL event callbacks that may fire after their tenant is gone, or never. */
#ifndef PX_CALLBACKS_H
#define PX_CALLBACKS_H

#include "cl.h"
#include "tenant.h"

#include <stdint.h>

/*
 * An OpenCL implementation calls an event callback on a thread of its own,
 * maybe long after the tenant that asked for it has been torn down, and
 * some never call it for a command that failed because of its wait list
 * (PoCL 3.1).  So a callback's data is not a pointer but the number of a
 * record in one process-wide registry: a callback whose record is gone
 * does nothing, and px_cb_forget() ends every record of a tenant at its
 * teardown, so nothing leaks and nothing is used after it is freed.
 *
 * All return CL_SUCCESS or the error of clSetEventCallback (nothing is
 * then registered and nothing taken).
 */

/* Sends Notify{EVENT_ID, status, COOKIE} to T once EV reaches STATUS. */
cl_int px_cb_watch(struct px_tenant *t, cl_event ev, cl_int status,
                   uint64_t event_id, uint64_t cookie);
/* Pokes T's connection once EV completes (a pending read is ready). */
cl_int px_cb_poke(struct px_tenant *t, cl_event ev);
/* Frees DATA once EV completes (a non-blocking write's bytes); on
 * failure DATA is still the caller's. */
cl_int px_cb_free(struct px_tenant *t, cl_event ev, void *data);

/* Ends every record of T: waits for the events of px_cb_free ones and
 * frees their data (user events must have been ended first). */
void px_cb_forget(struct px_tenant *t);

#endif /* PX_CALLBACKS_H */
