/* A tenant's lanes on the executing side: writes' transfers registered
 * and awaited, reads' bytes sent (lanes.h). */
#include "lanes.h"

#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int px_lanes_expect(struct px_tenant *t, struct px_req *r,
                    const Crane__ClientMessage *m, uint64_t bulk)
{
    struct crn_lanes *ls = t ? t->lanes : NULL;

    r->lane_x = ls ? crn_lanes_expect(ls, m->lane_xfer, r->bulk, bulk,
                                      m->lane_piece, m->lanes)
                   : NULL;
    if (r->lane_x) {
        r->lanes = ls;
        return 0;
    }
    /* Dead lanes, a bad shape or an id out of turn: its pieces cannot be
     * placed, and the stream does not carry them. */
    snprintf(r->error, sizeof(r->error), "transfer %llu on %u lanes "
             "refused (lanes off)", (unsigned long long)m->lane_xfer,
             m->lanes);
    crn_lanes_kill(ls, "a transfer that cannot be taken");
    return -1;
}

int px_lanes_take(struct px_req *r)
{
    int rc;

    if (!r->lane_x)
        return 0;
    rc = crn_lanes_wait(r->lanes, r->lane_x, PX_LANE_TIMEOUT_MS);
    crn_lanes_forget(r->lanes, r->lane_x);
    r->lane_x = NULL;
    return rc;
}

void px_lanes_forget(struct px_req *r)
{
    if (r->lane_x)
        crn_lanes_forget(r->lanes, r->lane_x);
    r->lane_x = NULL;
}

bool px_lanes_for_read(struct px_tenant *t, const Crane__ClientMessage *m)
{
    return m->lane_xfer && t->lanes && !t->shm &&
           m->lanes == crn_lanes_count(t->lanes) &&
           crn_lane_shape_ok(1, m->lane_piece, m->lanes);
}

int px_lanes_send(struct px_tenant *t, const Crane__ClientMessage *m,
                  const void *at, uint64_t total, uint64_t from,
                  uint64_t to)
{
    return crn_lanes_send(t->lanes, m->lane_xfer, at, total, m->lane_piece,
                          from, to);
}
