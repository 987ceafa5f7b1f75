/* A tenant's lanes on the connection side: made with each Welcome, joined
 * by lane connections after their handshake (lanes.h; lanes.c ends them
 * with the connection). */
#include "conn.h"
#include "lanes.h"

#include "ctxpool.h"
#include "proto/log.h"
#include "ringpin.h"

#include "proto/auth.h"
#include "proto/frame.h"

#include <errno.h>
#include <stdlib.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

void px_lanes_open(struct px_conn *c, struct px_tenant *t,
                   Crane__Welcome *w)
{
    char who[64];

    px_lanes_close(t);
    if (c->srv->ep.kind != CRN_EP_TCP || c->srv->max_lanes == 0)
        return;
    snprintf(who, sizeof(who), "tenant %llu", (unsigned long long)t->num);
    if (crn_random_bytes(t->lane_key, sizeof(t->lane_key)) < 0 ||
        !(t->lanes = crn_lanes_new(who, PX_LANE_TIMEOUT_MS))) {
        CRN_WARN("%s: no lanes (out of memory or randomness)", who);
        return;
    }
    /* Test only: CRANE_PROXY_TEST_LANE_FAULT=BYTES shuts lane 0 down
     * mid-piece once it has sent that many bytes (a read's, lanes.sh). */
    const char *fault = getenv("CRANE_PROXY_TEST_LANE_FAULT");
    if (fault && atoll(fault) > 0)
        crn_lanes_fault_after(t->lanes, (uint64_t)atoll(fault), false);
    w->lanes_max = c->srv->max_lanes;
    w->lane_key.data = t->lane_key;
    w->lane_key.len = sizeof(t->lane_key);
}

/* T's landing area for the lanes' bytes, made with its first lane: a
 * memfd area pinned now for the spare context the program's first
 * context will most likely be (ringpin.h), as a shared area is at its
 * ShmAttach: pinning 128 MiB took tens of ms on the H200, which the
 * first copy through the lanes (a switch's stop) paid before. */
static void make_area(struct px_tenant *t)
{
    struct crn_shm *s;
    cl_context spare;

    if (t->lane_area || !(s = calloc(1, sizeof(*s))))
        return;
    if (crn_shm_create(PX_LANE_RING, s) < 0) {
        CRN_WARN("tenant %llu: no area for the lanes' bytes: they land in "
                "the heap", (unsigned long long)t->num);
        free(s);
        return;
    }
    px_ring_allow(s);
    t->lane_area = s;
    if ((spare = px_ctxpool_peek())) {
        px_ring_prepin(s, spare);
        clReleaseContext(spare);
    }
}

/* The lane's answer, written before it joins (nothing else is written on
 * it but pieces). */
static int lane_welcome(int fd)
{
    Crane__ServerMessage m = CRANE__SERVER_MESSAGE__INIT;
    Crane__Welcome w = CRANE__WELCOME__INIT;

    w.version = 1;
    m.msg_case = CRANE__SERVER_MESSAGE__MSG_WELCOME;
    m.welcome = &w;
    return crn_frame_write(fd, &m.base);
}

/* Lane 0 of generation GEN (above T's): T's lanes so far are retired
 * (killed, kept for requests that still name them until the connection
 * ends) and a fresh set takes their place.  0, or -1 with C refused. */
static int new_generation(struct px_conn *c, struct px_tenant *t,
                          uint32_t gen)
{
    struct crn_lanes *fresh;
    char who[64];

    if (c->lane_index != 0) {
        px_conn_refuse(c, "lane %u out of turn (a new generation begins "
                          "with lane 0)", c->lane_index);
        return -1;
    }
    if (t->lanes_retired_n >= CRN_LANE_GENERATIONS - 1) {
        px_conn_refuse(c, "lane generation %u: no more than %u sets of "
                          "lanes per connection", gen, CRN_LANE_GENERATIONS);
        return -1;
    }
    snprintf(who, sizeof(who), "tenant %llu", (unsigned long long)t->num);
    if (!(fresh = crn_lanes_new(who, PX_LANE_TIMEOUT_MS))) {
        px_conn_refuse(c, "no room for a new set of lanes");
        return -1;
    }
    crn_lanes_kill(t->lanes, "their client joins a new generation");
    t->lanes_retired[t->lanes_retired_n++] = t->lanes;
    t->lanes = fresh;
    CRN_INFO("tenant %llu: lanes rejoined: generation %u replaces %u",
             (unsigned long long)t->num, gen, t->lane_gen);
    t->lane_gen = gen;
    return 0;
}

void px_lanes_attach(struct px_conn *c)
{
    struct px_tenant *t = px_server_find_tenant(c->srv, c->token,
                                                c->token_len);
    uint8_t want[CRN_LANE_KEY_LEN];
    uv_os_fd_t ufd;
    int fd, flags, one = 1, rc;
    unsigned have;

    if (!t || !t->conn || !t->lanes) {
        px_conn_refuse(c, "a lane for no connected tenant");
        return;
    }
    if (crn_lane_mac(t->lane_key, t->token, sizeof(t->token),
                     c->lane_index, c->lane_generation, want) < 0 ||
        !crn_auth_equal(want, c->lane_mac, sizeof(want))) {
        px_conn_refuse(c, "lane authentication failed");
        return;
    }
    /* Lanes of an older set than the tenant's are stale: refused, so
     * that nothing but the newest set carries its bytes. */
    if (c->lane_generation < t->lane_gen) {
        px_conn_refuse(c, "lane %u of generation %u is stale (lanes are at "
                          "generation %u)", c->lane_index,
                       c->lane_generation, t->lane_gen);
        return;
    }
    if (c->lane_generation > t->lane_gen &&
        new_generation(c, t, c->lane_generation) < 0)
        return;
    have = crn_lanes_count(t->lanes);
    if (c->lane_index != have || have >= c->srv->max_lanes) {
        px_conn_refuse(c, "lane %u out of turn (%u open, at most %u)",
                            c->lane_index, have, c->srv->max_lanes);
        return;
    }
    if (uv_fileno(&c->tr.h.handle, &ufd) < 0 ||
        (fd = fcntl(ufd, F_DUPFD_CLOEXEC, 3)) < 0) {
        px_conn_refuse(c, "no descriptor for the lane");
        return;
    }
    /* The lane's threads block, with their own timeouts (proto/lane.c). */
    flags = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if ((rc = lane_welcome(fd)) < 0)
        close(fd);
    else
        rc = crn_lanes_add(t->lanes, c->lane_index, fd);  /* takes FD */
    if (rc < 0) {
        CRN_WARN("tenant %llu: lane %u not taken: %s",
                (unsigned long long)t->num, c->lane_index, strerror(-rc));
        px_conn_close(c, NULL);
        return;
    }
    make_area(t);
    CRN_INFO("tenant %llu (%s pid %u): lane %u from %s%s",
            (unsigned long long)t->num, t->program, t->pid, c->lane_index,
            c->peer, t->lane_gen ? " (rejoined)" : "");
    /* The stream is the lane's now: this connection ends without a word
     * (its own descriptor closes, the lane's copy stays). */
    px_conn_close(c, NULL);
}
