/* A tenant's lanes on the executing side: writes' transfers registered
 * and awaited, reads' bytes sent, the lanes stopped and closed with their
 * connection (lanes.h). */
#include "lanes.h"

#include "proto/log.h"
#include "ringpin.h"

#include "proto/shm.h"

#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

int px_lanes_expect(struct px_tenant *t, struct px_req *r,
                    const Crane__ClientMessage *m, uint64_t bulk)
{
    struct crn_lanes *ls = t ? t->lanes : NULL;
    struct crn_shm *area = t ? t->lane_area : NULL;
    unsigned char *base = r->bulk, *at;
    uint64_t pos;

    /* A buffer write's bytes land in the pinned area where it has room,
     * and the device copies them straight from there (exec_mem.c,
     * write_staged, as from a client's pinned ring); else in the heap. */
    if (ls && area && m->msg_case == CRANE__CLIENT_MESSAGE__MSG_MEM_COMMAND &&
        m->mem_command->op == CRANE__MEM_OP__MEM_WRITE &&
        px_ring_pinnable(area) &&
        crn_shm_reserve(area, CRN_SHM_TO_PROXY, bulk, &pos) == 0 &&
        crn_shm_claim(area, CRN_SHM_TO_PROXY, pos, bulk, &at) == 0) {
        base = at;
        r->ring = area;
        r->ring_pos = pos;
    }
    r->lane_x = ls ? crn_lanes_expect(ls, m->lane_xfer, base, bulk,
                                      m->lane_piece, m->lanes)
                   : NULL;
    if (r->lane_x) {
        r->lanes = ls;
        if (r->ring) {
            free(r->bulk);
            r->bulk = NULL;
        }
        atomic_fetch_add(r->ring ? &t->lane_area_in : &t->lane_heap_in,
                         bulk);
        return 0;
    }
    /* Its room stays taken: the lanes are gone, and nothing else lands
     * in the area. */
    r->ring = NULL;
    /* Dead lanes, a bad shape or an id out of turn: its pieces cannot be
     * placed, and the stream does not carry them; the call fails as one
     * whose pieces did not come (px_lanes_take). */
    r->lane_refused = true;
    CRN_WARN("tenant %llu: transfer %llu on %u lanes refused (lanes off)",
            (unsigned long long)(t ? t->num : 0),
            (unsigned long long)m->lane_xfer, m->lanes);
    crn_lanes_kill(ls, "a transfer that cannot be taken");
    return -1;
}

int px_lanes_take(struct px_req *r)
{
    int rc;

    if (r->lane_refused)
        return -EPIPE;
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

void *px_lanes_read_room(struct px_tenant *t, cl_command_queue q, size_t len,
                         uint64_t *pos)
{
    struct crn_shm *area = t->lane_area;

    if (!area || !px_ring_pinned(area, q) ||
        crn_shm_reserve(area, CRN_SHM_TO_CLIENT, len, pos) < 0)
        return NULL;
    return crn_shm_at(area, CRN_SHM_TO_CLIENT, *pos);
}

void px_lanes_read_done(struct px_tenant *t, uint64_t pos, size_t len)
{
    crn_shm_take(t->lane_area, CRN_SHM_TO_CLIENT, pos, len, NULL);
}

struct crn_lanes *px_lanes_for_read(struct px_tenant *t,
                                    const Crane__ClientMessage *m)
{
    /* Loaded once: the loop thread may put a new generation in place. */
    struct crn_lanes *ls = t->lanes;

    return m->lane_xfer && ls && !t->shm &&
                   m->lanes == crn_lanes_count(ls) &&
                   crn_lane_shape_ok(1, m->lane_piece, m->lanes)
               ? ls
               : NULL;
}

int px_lanes_send(struct crn_lanes *ls, const Crane__ClientMessage *m,
                  const void *at, uint64_t total, uint64_t from,
                  uint64_t to)
{
    return crn_lanes_send(ls, m->lane_xfer, at, total, m->lane_piece, from,
                          to);
}

void px_lanes_stop(struct px_tenant *t)
{
    if (t && t->lanes)
        crn_lanes_kill(t->lanes, NULL);
}

/* Bytes lane I carried in every generation of T's lanes. */
static void lane_bytes(struct px_tenant *t, unsigned i, uint64_t *sent,
                       uint64_t *received)
{
    crn_lanes_bytes(t->lanes, i, sent, received);
    for (unsigned g = 0; g < t->lanes_retired_n; g++) {
        uint64_t s, r;
        crn_lanes_bytes(t->lanes_retired[g], i, &s, &r);
        *sent += s;
        *received += r;
    }
}

void px_lanes_close(struct px_tenant *t)
{
    if (!t || !t->lanes)
        return;
    for (unsigned i = 0; i < CRN_LANES_MAX; i++) {
        uint64_t sent, received;
        lane_bytes(t, i, &sent, &received);
        if (sent || received)
            CRN_INFO("tenant %llu: lane %u carried %llu bytes in, %llu out",
                    (unsigned long long)t->num, i,
                    (unsigned long long)received, (unsigned long long)sent);
    }
    if (atomic_load(&t->lane_area_in) + atomic_load(&t->lane_heap_in) +
        atomic_load(&t->lane_area_out) + atomic_load(&t->lane_heap_out))
        CRN_INFO("tenant %llu: lanes' bytes: %llu in and %llu out through "
                "the pinned area, %llu in and %llu out through the heap",
                (unsigned long long)t->num,
                (unsigned long long)atomic_load(&t->lane_area_in),
                (unsigned long long)atomic_load(&t->lane_area_out),
                (unsigned long long)atomic_load(&t->lane_heap_in),
                (unsigned long long)atomic_load(&t->lane_heap_out));
    crn_lanes_free(t->lanes);
    t->lanes = NULL;
    for (unsigned g = 0; g < t->lanes_retired_n; g++)
        crn_lanes_free(t->lanes_retired[g]);
    t->lanes_retired_n = 0;
    t->lane_gen = 0;
    if (t->lane_area) {
        px_shm_close(t->lane_area);
        free(t->lane_area);
        t->lane_area = NULL;
    }
}
