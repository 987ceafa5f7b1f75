/* The remote backend's lanes (remote_lanes.c): extra TCP streams for the
 * bytes of big reads and writes. */
#ifndef SHIM_REMOTE_LANES_H
#define SHIM_REMOTE_LANES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/endpoint.h"
#include "remote.h"

/* At a Welcome: what it offers (lanes, their key, the tenant's token). */
void shim_lanes_welcome(const Crane__Welcome *w);
/* After the handshake on a tcp: endpoint: opens CRANE_REMOTE_LANES lanes
 * (as many as the proxy allows; none below two). */
void shim_lanes_connect(const struct crn_endpoint *ep, const char *text);
/* The connection ends: so do its lanes. */
void shim_lanes_disconnect(void);
/* Whether a transfer of LEN bytes takes the lanes now, and how big a
 * write's message may then be. */
bool shim_lanes_fit(size_t len);
size_t shim_lanes_chunk(void);
/* A message with LEN bulk bytes sent, its bytes on the lanes (the stream
 * when they are gone): CL_SUCCESS once all left, else the call fails. */
cl_int shim_lanes_write(Crane__ClientMessage *m, const void *bulk,
                        size_t len);
/* A write call (its messages sent with shim_lanes_write) begins. */
void shim_lanes_write_begin(void);
/* A blocking read of LEN bytes into DST, its bytes on the lanes: the
 * call's result once the answer and every piece came. */
cl_int shim_lanes_read(Crane__ClientMessage *m, void *dst, size_t len);

#endif /* SHIM_REMOTE_LANES_H */
