/* Executors of memory reads (buffers, rectangles, images): staged,
 * into the client's ring, on its lanes, or pending until their event. */
#include "exec_mem_int.h"

#include "callbacks.h"
#include "hostmem.h"
#include "lanes.h"
#include "ringpin.h"
#include "staging.h"

#include "proto/log.h"
#include "validate.h"

#include <stdlib.h>
#include <string.h>

#include "proto/pcopy.h"
#include "proto/shm.h"

/*
 * The packed size of a read, in bytes.  It is bounded by the source's own
 * size (a region that fits an object holds no more bytes than the object),
 * so a request can never make the proxy allocate more than the tenant's
 * device memory.
 */
static cl_int read_len(struct mem_op *op, cl_mem src, size_t *len)
{
    const Crane__MemCommand *mc = op->mc;
    size_t elem = 1, have = 0;
    uint64_t n;

    if (clGetMemObjectInfo(src, CL_MEM_SIZE, sizeof(have), &have, NULL) !=
        CL_SUCCESS)
        return px_fail(op->c, CL_INVALID_MEM_OBJECT, "no size");
    if (mc->op == CRANE__MEM_OP__MEM_READ) {
        n = mc->size;
    } else {
        if (mc->op == CRANE__MEM_OP__MEM_READ_IMAGE &&
            clGetImageInfo(src, CL_IMAGE_ELEMENT_SIZE, sizeof(elem), &elem,
                           NULL) != CL_SUCCESS)
            return px_fail(op->c, CL_INVALID_MEM_OBJECT, "not an image");
        if (px_mul3(mc->region[0], mc->region[1], mc->region[2], &n) ||
            px_mul3(n, elem, 1, &n))
            return px_fail(op->c, CL_INVALID_VALUE, "read region too large");
    }
    if (n > have)
        return px_fail(op->c, CL_INVALID_VALUE,
                       "read of %llu bytes from an object of %zu",
                       (unsigned long long)n, have);
    *len = (size_t)n;
    return CL_SUCCESS;
}

_Static_assert(PX_READ_CHUNK <= PX_CHUNK_BYTES, "a read's chunk is kept");

/* Reads at least this big stage through pinned memory over a shared area. */
#define STAGED_MIN (1u << 20)

/*
 * A blocking buffer read over a shared area, staged through the tenant's
 * pinned pair (HOST): the device copies one chunk into one buffer at pinned
 * speed while the previous chunk is copied from the other into ring 1 and
 * announced.  Once a chunk has left, a failure ends the read with its error
 * in the final Reply; nothing is owned across replies.
 */
static cl_int read_staged(struct mem_op *op, cl_mem src, size_t len,
                          size_t chunk, void *const host[2])
{
    const Crane__MemCommand *mc = op->mc;
    struct px_call *c = op->c;
    struct px_tenant *t = c->t;
    size_t n = (len + chunk - 1) / chunk, next = 0;
    cl_event ev[2] = {NULL, NULL};
    cl_int err = CL_SUCCESS;

    for (; next < n && next < 2 && err == CL_SUCCESS; next++) {
        size_t off = next * chunk, k = len - off > chunk ? chunk : len - off;
        err = clEnqueueReadBuffer(op->q, src, CL_FALSE, mc->src_offset + off,
                                  k, host[next & 1], op->nwait, op->wait,
                                  &ev[next & 1]);
    }
    clFlush(op->q);
    for (size_t i = 0; i < n && err == CL_SUCCESS; i++) {
        Crane__Reply r = CRANE__REPLY__INIT;
        size_t off = i * chunk, k = len - off > chunk ? chunk : len - off;
        cl_int status = CL_COMPLETE;
        uint64_t pos;
        int rc;

        clWaitForEvents(1, &ev[i & 1]);
        clGetEventInfo(ev[i & 1], CL_EVENT_COMMAND_EXECUTION_STATUS,
                       sizeof(status), &status, NULL);
        clReleaseEvent(ev[i & 1]);
        ev[i & 1] = NULL;
        if (status < 0) {
            err = status;
            break;
        }
        r.seq = c->m->seq;
        r.more = 1;
        r.bulk_offset = off;
        if (crn_shm_reserve_wait(t->shm, CRN_SHM_TO_CLIENT, k, PX_SHM_WAIT_MS,
                                 &pos) == 0) {
            crn_pcopy_from_pinned(crn_shm_at(t->shm, CRN_SHM_TO_CLIENT, pos),
                                  host[i & 1], k);
            r.shm_bulk = true;
            r.shm_pos = pos;
            r.bulk_len = k;
            rc = px_send_more(t, &r, NULL, 0, NULL);
        } else {
            /* No room for long: this chunk takes the stream. */
            uint8_t *copy = malloc(k);
            if (!copy) {
                err = px_fail(c, CL_OUT_OF_HOST_MEMORY,
                              "no room for %zu bytes", k);
                break;
            }
            memcpy(copy, host[i & 1], k);
            rc = px_send_more(t, &r, copy, k, copy);
            if (rc < 0)
                free(copy);
        }
        if (rc < 0) {
            err = px_fail(c, CL_OUT_OF_HOST_MEMORY, "out of memory sending "
                          "read %llu", (unsigned long long)c->m->seq);
            break;
        }
        if (next < n) {
            /* The buffer this chunk left is free for the one after next. */
            size_t o2 = next * chunk;
            size_t k2 = len - o2 > chunk ? chunk : len - o2;
            err = clEnqueueReadBuffer(op->q, src, CL_FALSE,
                                      mc->src_offset + o2, k2, host[next & 1],
                                      op->nwait, op->wait, &ev[next & 1]);
            clFlush(op->q);
            next++;
        }
    }
    /* What is still in flight writes into the staging: let it land. */
    for (int j = 0; j < 2; j++)
        if (ev[j]) {
            clWaitForEvents(1, &ev[j]);
            clReleaseEvent(ev[j]);
        }
    if (err == CL_SUCCESS && op->evp)
        err = clEnqueueMarkerWithWaitList(op->q, 0, NULL, &op->ev);
    return err;
}

/*
 * A blocking buffer read over a pinned shared area (ringpin.h): the device
 * copies each chunk straight into ring 1, where it is announced, while the
 * client copies the chunk before out.  A chunk that finds no room for long
 * takes the stream.  Once a chunk has left, a failure ends the read with
 * its error in the final Reply.
 */
static cl_int read_into_ring(struct mem_op *op, cl_mem src, size_t len,
                             size_t chunk)
{
    const Crane__MemCommand *mc = op->mc;
    struct px_call *c = op->c;
    struct px_tenant *t = c->t;
    cl_int err = CL_SUCCESS;

    for (size_t off = 0; off < len && err == CL_SUCCESS; off += chunk) {
        Crane__Reply r = CRANE__REPLY__INIT;
        size_t k = len - off > chunk ? chunk : len - off;
        /* The wait list holds for the first chunk; the rest follow it in
         * the queue's order.  Without the list its pointer goes too: a
         * count of 0 with a list is CL_INVALID_EVENT_WAIT_LIST. */
        cl_uint nwait = off ? 0 : op->nwait;
        const cl_event *wait = nwait ? op->wait : NULL;
        uint64_t pos;
        int rc;

        r.seq = c->m->seq;
        r.more = 1;
        r.bulk_offset = off;
        if (crn_shm_reserve_wait(t->shm, CRN_SHM_TO_CLIENT, k, PX_SHM_WAIT_MS,
                                 &pos) == 0) {
            err = clEnqueueReadBuffer(op->q, src, CL_TRUE,
                                      mc->src_offset + off, k,
                                      crn_shm_at(t->shm, CRN_SHM_TO_CLIENT,
                                                 pos),
                                      nwait, wait, NULL);
            if (err != CL_SUCCESS)
                break;           /* the room is never announced */
            r.shm_bulk = true;
            r.shm_pos = pos;
            r.bulk_len = k;
            rc = px_send_more(t, &r, NULL, 0, NULL);
        } else {
            uint8_t *copy = px_chunk_alloc(k);
            if (!copy) {
                err = px_fail(c, CL_OUT_OF_HOST_MEMORY,
                              "no room for %zu bytes", k);
                break;
            }
            err = clEnqueueReadBuffer(op->q, src, CL_TRUE,
                                      mc->src_offset + off, k, copy, nwait,
                                      wait, NULL);
            if (err != CL_SUCCESS) {
                px_chunk_free(copy);
                break;
            }
            rc = px_send_more(t, &r, copy, k, copy);
            if (rc < 0)
                px_chunk_free(copy);
        }
        if (rc < 0)
            err = px_fail(c, CL_OUT_OF_HOST_MEMORY, "out of memory sending "
                          "read %llu", (unsigned long long)c->m->seq);
    }
    if (err == CL_SUCCESS && op->evp)
        err = clEnqueueMarkerWithWaitList(op->q, 0, NULL, &op->ev);
    CRN_DEBUG("tenant %llu: a read of %zu bytes went straight into the "
             "pinned ring (%d)", (unsigned long long)t->num, len, err);
    return err;
}

/* Blocking reads up to this size leave in their final Reply. */
#define SMALL_READ (64u << 10)

/*
 * A small blocking buffer read, as the program made it: one blocking
 * clEnqueueReadBuffer (the vendor's own wait, no event to wait on after
 * it) straight into ring 1 where room is free, and the bytes named in the
 * final Reply, so that the answer is one frame.  Only where no read is
 * pending: a pending read's bytes must leave before this answer (an
 * earlier read on the same queue is done once this one is) but, taking
 * ring room after this read's, could not leave before it in the ring's
 * order.  Nothing is owned past the return.
 */
static cl_int read_small(struct mem_op *op, cl_mem src, size_t len)
{
    const Crane__MemCommand *mc = op->mc;
    struct px_call *c = op->c;
    struct px_tenant *t = c->t;
    Crane__Reply *r = &c->reply;
    cl_event *evp = op->evp ? &op->ev : NULL;
    uint8_t *data = NULL;
    uint64_t pos;
    cl_int err;

    if (t->shm && crn_shm_reserve(t->shm, CRN_SHM_TO_CLIENT, len, &pos) == 0) {
        err = clEnqueueReadBuffer(op->q, src, CL_TRUE, mc->src_offset, len,
                                  crn_shm_at(t->shm, CRN_SHM_TO_CLIENT, pos),
                                  op->nwait, op->wait, evp);
        if (err != CL_SUCCESS)
            return err;          /* the room is never announced */
        r->shm_bulk = true;
        r->shm_pos = pos;
        r->bulk_len = len;
        c->done = true;
        if (px_send_more(t, r, NULL, 0, NULL) < 0)
            CRN_ERROR("tenant %llu: out of memory answering read %llu",
                     (unsigned long long)t->num,
                     (unsigned long long)c->m->seq);
        return CL_SUCCESS;
    }
    if (!(data = malloc(len)))
        return px_fail(c, CL_OUT_OF_HOST_MEMORY, "no room for %zu bytes",
                       len);
    err = clEnqueueReadBuffer(op->q, src, CL_TRUE, mc->src_offset, len, data,
                              op->nwait, op->wait, evp);
    if (err != CL_SUCCESS) {
        free(data);
        return err;
    }
    c->done = true;
    /* The reply owns DATA once queued (copied to ring 1 if room came). */
    if (px_send_more(t, r, data, len, data) < 0) {
        free(data);
        CRN_ERROR("tenant %llu: out of memory answering read %llu",
                 (unsigned long long)t->num, (unsigned long long)c->m->seq);
    }
    return CL_SUCCESS;
}

/* The chunked read's N copies are under way: flushed, and the program's
 * event (if it asked for one) is the only copy's or a marker after all. */
static cl_int chunks_event(struct mem_op *op, size_t n, cl_event *evs)
{
    clFlush(op->q);
    if (op->evp && n == 1) {
        clRetainEvent(evs[0]);
        op->ev = evs[0];
    } else if (op->evp) {
        return clEnqueueMarkerWithWaitList(op->q, (cl_uint)n, evs, &op->ev);
    }
    return CL_SUCCESS;
}

/*
 * A blocking buffer read whose bytes leave on the client's lanes: chunks
 * of PX_READ_CHUNK read by the device into the lanes' pinned area (lanes.h)
 * while the pieces of those before them leave, at most READ_WINDOW chunks
 * under way, each chunk's room taken again once its pieces left; where
 * the area has no room for one with none under way (not pinned for this
 * queue's context, CRANE_PROXY_PIN_RING=0), a kept heap chunk instead.
 * The window bounds what a read holds (it used to take a chunk for every
 * 4 MiB of it at once: past the area's 64 MiB, fresh heap that the device
 * filled at pageable speed and page faults, 2 GB/s for a switch's 1 GiB).
 * Every piece leaves (contents undefined after a device error, as on the
 * stream) or the lanes are given up, so the client never waits for bytes
 * that will not come; the final Reply says lane_bytes.
 */
#define READ_WINDOW (PX_LANE_RING / PX_READ_CHUNK)

struct read_slot {
    uint8_t *at;
    uint64_t pos;                /* room in the area, or ~0: a heap chunk */
    cl_event ev;                 /* its device read, NULL: none (failed) */
};

/* Slot S's chunk (K bytes) given back. */
static void read_slot_free(struct px_call *c, struct read_slot *s, size_t k)
{
    if (s->ev)
        clReleaseEvent(s->ev);
    s->ev = NULL;
    if (s->pos != UINT64_MAX)
        px_lanes_read_done(c->t, s->pos, k);
    else
        px_chunk_free(s->at);
    s->at = NULL;
}

/* The oldest chunk of the window, I, once the device filled it, with
 * those after it (below QUEUED) that lie right behind it in memory and are
 * filled already: the last one's index, for one send, so that each lane
 * carries several pieces per wake-up.  A chunk whose read failed sets
 * *ERR (if not set yet). */
static size_t ready_run(struct read_slot *win, size_t i, size_t queued,
                        size_t chunk, cl_int *err)
{
    struct read_slot *s = &win[i % READ_WINDOW];
    cl_int status;
    size_t j;

    if (s->ev)
        clWaitForEvents(1, &s->ev);
    for (j = i; j + 1 < queued; j++) {
        struct read_slot *a = &win[j % READ_WINDOW],
                         *b = &win[(j + 1) % READ_WINDOW];
        status = CL_QUEUED;
        if (b->at != a->at + chunk || !b->ev ||
            clGetEventInfo(b->ev, CL_EVENT_COMMAND_EXECUTION_STATUS,
                           sizeof(status), &status, NULL) != CL_SUCCESS ||
            status != CL_COMPLETE)
            break;
    }
    for (size_t x = i; x <= j; x++) {
        struct read_slot *a = &win[x % READ_WINDOW];
        status = a->ev ? CL_COMPLETE : CL_INVALID_OPERATION;
        if (a->ev)
            clGetEventInfo(a->ev, CL_EVENT_COMMAND_EXECUTION_STATUS,
                           sizeof(status), &status, NULL);
        if (status < 0 && *err == CL_SUCCESS)
            *err = status;
    }
    return j;
}

/* A read whose chunks leave on the lanes LS (the set the read was asked
 * on: a newer one that replaces it takes none of its pieces). */
static cl_int read_on_lanes(struct mem_op *op, struct crn_lanes *ls,
                            cl_mem src, size_t len)
{
    const Crane__MemCommand *mc = op->mc;
    struct px_call *c = op->c;
    size_t chunk = PX_READ_CHUNK, n = (len + chunk - 1) / chunk;
    size_t queued = 0, sent = 0;      /* chunks read / gone, in order */
    struct read_slot win[READ_WINDOW];
    cl_int err = CL_SUCCESS;
    bool any_sent = false;
    /* Room in the pinned area comes back as chunks leave: worth waiting
     * for rather than taking heap. */
    bool area = c->t->lane_area && px_ring_pinned(c->t->lane_area, op->q);
    int rc = 0;

#define CHUNK_LEN(i) (len - (i) * chunk > chunk ? chunk : len - (i) * chunk)
    while (sent < n) {
        /* The window filled: room taken in chunk order while it lasts. */
        while (queued < n && queued - sent < READ_WINDOW) {
            struct read_slot *s = &win[queued % READ_WINDOW];
            size_t k = CHUNK_LEN(queued);
            s->ev = NULL;
            s->pos = UINT64_MAX;
            s->at = area ? px_lanes_read_room(c->t, op->q, k, &s->pos)
                         : NULL;
            if (!s->at && area && queued > sent)
                break;           /* room comes back as chunks leave */
            if (!s->at) {
                s->pos = UINT64_MAX;
                s->at = px_chunk_alloc(k);
            }
            if (!s->at) {
                err = px_fail(c, CL_OUT_OF_HOST_MEMORY, "no room for %zu "
                              "bytes", k);
                break;
            }
            if (err == CL_SUCCESS)
                err = clEnqueueReadBuffer(op->q, src, CL_FALSE,
                                          mc->src_offset + queued * chunk, k,
                                          s->at, op->nwait, op->wait,
                                          &s->ev);
            if (err != CL_SUCCESS)
                s->ev = NULL;
            queued++;
        }
        clFlush(op->q);
        if (err != CL_SUCCESS && !any_sent) {
            /* Nothing has left: the client takes nothing from the lanes. */
            for (size_t i = sent; i < queued; i++) {
                struct read_slot *s = &win[i % READ_WINDOW];
                if (s->ev)
                    clWaitForEvents(1, &s->ev);
                read_slot_free(c, s, CHUNK_LEN(i));
            }
            return err;
        }
        if (queued == sent) {
            /* No chunk to be had after pieces left: the rest cannot
             * leave, and the client must not wait for it. */
            crn_lanes_kill(ls, "a read's chunk could not be had");
            break;
        }
        /* One send of the oldest filled run (ready_run). */
        size_t i = sent, j = ready_run(win, i, queued, chunk, &err);
        struct read_slot *s = &win[i % READ_WINDOW];
        size_t off = i * chunk, end = (j + 1) * chunk < len ? (j + 1) * chunk
                                                           : len;
        if (rc == 0 &&
            (rc = px_lanes_send(ls, c->m, s->at, len, off, end)) < 0)
            err = px_fail(c, CL_OUT_OF_RESOURCES, "read %llu: its lanes "
                          "failed (%s)", (unsigned long long)c->m->seq,
                          strerror(-rc));
        any_sent = true;
        for (size_t x = i; x <= j; x++) {
            struct read_slot *a = &win[x % READ_WINDOW];
            atomic_fetch_add(a->pos != UINT64_MAX ? &c->t->lane_area_out
                                                  : &c->t->lane_heap_out,
                             CHUNK_LEN(x));
            read_slot_free(c, a, CHUNK_LEN(x));
        }
        sent = j + 1;
    }
#undef CHUNK_LEN
    if (op->evp && err == CL_SUCCESS)
        err = clEnqueueMarkerWithWaitList(op->q, 0, NULL, &op->ev);
    c->reply.lane_bytes = len;
    return err;
}

/*
 * A blocking buffer read: every chunk of at most PX_READ_CHUNK bytes is
 * enqueued at once with its own event, and each leaves as soon as it is
 * copied, while the device copies the next.  The last chunk's entry owns
 * the staging buffer (a stream's entries are written and freed in order).
 * Once a chunk has left, the rest leave too, even after a failure, so that
 * the buffer always has an owner; the final Reply then carries the error.
 */
/* Sends the N chunks of a read as each completes (their staging freed
 * once written); after a failure, none but those sent already. */
static cl_int send_chunks(struct mem_op *op, size_t len, size_t chunk,
                          size_t n, cl_event *evs, uint8_t **chunks,
                          const uint64_t *pos)
{
    struct px_call *c = op->c;
    cl_int err = CL_SUCCESS, status;
    bool sent = false;

    for (size_t i = 0; i < n; i++) {
        Crane__Reply r = CRANE__REPLY__INIT;
        size_t off = i * chunk;
        size_t k = len - off > chunk ? chunk : len - off;
        bool in_ring = pos && pos[i] != UINT64_MAX;

        status = CL_COMPLETE;
        clWaitForEvents(1, &evs[i]);
        clGetEventInfo(evs[i], CL_EVENT_COMMAND_EXECUTION_STATUS,
                       sizeof(status), &status, NULL);
        clReleaseEvent(evs[i]);
        if (status < 0 && err == CL_SUCCESS)
            err = status;
        if ((err != CL_SUCCESS && !sent) || (!chunks[i] && !in_ring)) {
            /* A ring chunk skipped leaves a gap the ring's order allows. */
            px_chunk_free(chunks[i]);
            chunks[i] = NULL;
            continue;
        }
        r.seq = c->m->seq;
        r.more = 1;
        r.bulk_offset = off;
        if (in_ring) {
            r.shm_bulk = true;
            r.shm_pos = pos[i];
            r.bulk_len = k;
        }
        /* Chunks leave without the pending reads' data first: that would
         * take ring room behind this read's, out of the ring's order (the
         * final Reply, after them, sends it). */
        if (px_send_more(c->t, &r, chunks[i], in_ring ? 0 : k, chunks[i]) <
            0) {
            CRN_ERROR("tenant %llu: out of memory sending read %llu",
                     (unsigned long long)c->t->num,
                     (unsigned long long)c->m->seq);
            err = CL_OUT_OF_HOST_MEMORY;
            /* This chunk was not queued; the later ones never will be. */
            px_chunk_free(chunks[i]);
            for (size_t j = i + 1; j < n; j++) {
                clWaitForEvents(1, &evs[j]);
                clReleaseEvent(evs[j]);
                px_chunk_free(chunks[j]);
            }
            sent = true;
            break;
        }
        sent = true;
    }
    return err;
}

/* The read as chunks of CHUNK bytes, each its own command: into the ring
 * where room is free, else into the heap; each sent as it completes. */
static cl_int read_chunks(struct mem_op *op, cl_mem src, size_t len,
                          size_t chunk)
{
    const Crane__MemCommand *mc = op->mc;
    struct px_call *c = op->c;
    struct crn_shm *shm = c->t->shm;
    size_t n;
    cl_event *evs;
    uint8_t **chunks;
    uint64_t *pos = NULL;        /* ring position of chunk i, or ~0 */
    size_t done = 0;
    cl_int err = CL_SUCCESS;

    n = (len + chunk - 1) / chunk;
    if (shm && !(pos = calloc(n, sizeof(*pos))))
        return px_fail(c, CL_OUT_OF_HOST_MEMORY, "no room for %zu bytes",
                       len);
    /* One staging buffer per chunk, each owned by its own reply entry:
     * chunk-sized allocations are reused from the heap (see main.c). */
    chunks = calloc(n, sizeof(*chunks));
    evs = calloc(n, sizeof(*evs));
    if (!chunks || !evs) {
        free(chunks);
        free(evs);
        free(pos);
        return px_fail(c, CL_OUT_OF_HOST_MEMORY, "no room for %zu bytes",
                       len);
    }
    for (; done < n; done++) {
        size_t off = done * chunk;
        size_t k = len - off > chunk ? chunk : len - off;
        /* Ring room is taken in chunk order while it lasts; once a chunk
         * finds none, the later ones go through the heap (their replies
         * copy them into the ring in order, after these). */
        if (pos && (done == 0 || pos[done - 1] != UINT64_MAX) &&
            crn_shm_reserve(shm, CRN_SHM_TO_CLIENT, k, &pos[done]) == 0) {
            chunks[done] = NULL;
            err = clEnqueueReadBuffer(op->q, src, CL_FALSE,
                                      mc->src_offset + off, k,
                                      crn_shm_at(shm, CRN_SHM_TO_CLIENT,
                                                 pos[done]),
                                      op->nwait, op->wait, &evs[done]);
            if (err != CL_SUCCESS)
                break;
            continue;
        }
        if (pos)
            pos[done] = UINT64_MAX;
        if (!(chunks[done] = px_chunk_alloc(k))) {
            err = px_fail(c, CL_OUT_OF_HOST_MEMORY, "no room for %zu bytes",
                          len);
            break;
        }
        err = clEnqueueReadBuffer(op->q, src, CL_FALSE, mc->src_offset + off,
                                  k, chunks[done], op->nwait, op->wait,
                                  &evs[done]);
        if (err != CL_SUCCESS) {
            px_chunk_free(chunks[done]);
            chunks[done] = NULL;
            break;
        }
    }
    if (err == CL_SUCCESS)
        err = chunks_event(op, n, evs);
    if (err != CL_SUCCESS) {
        /* Nothing has left: wait for the copies, then drop the data. */
        clWaitForEvents((cl_uint)done, evs);
        for (size_t i = 0; i < done; i++) {
            clReleaseEvent(evs[i]);
            px_chunk_free(chunks[i]);
        }
        free(evs);
        free(chunks);
        free(pos);
        return err;
    }
    err = send_chunks(op, len, chunk, n, evs, chunks, pos);
    free(evs);
    free(chunks);
    free(pos);
    return err;
}

/* A blocking read of a buffer: the path its size and the client's area
 * choose. */
static cl_int read_buffer_blocking(struct mem_op *op, cl_mem src)
{
    const Crane__MemCommand *mc = op->mc;
    struct px_call *c = op->c;
    struct crn_shm *shm = c->t->shm;
    /* With a shared area, chunks of a quarter of its ring at most, read
     * by the device straight into the ring where room is free. */
    size_t chunk = shm && shm->ring_len / 4 < PX_READ_CHUNK
                       ? shm->ring_len / 4
                       : PX_READ_CHUNK;
    size_t len = mc->size;
    /* Over TCP the client may have asked for the bytes on its lanes:
     * each chunk's pieces leave on them in parallel (lanes.c). */
    struct crn_lanes *lanes = shm ? NULL : px_lanes_for_read(c->t, c->m);
    cl_int err;

    if (len == 0)
        return px_fail(c, CL_INVALID_VALUE, "read of 0 bytes");
    err = read_len(op, src, &len);
    if (err != CL_SUCCESS)
        return err;
    if (lanes && len > SMALL_READ)
        return read_on_lanes(op, lanes, src, len);
    if (len <= SMALL_READ) {
        if (c->t->pend_head)
            px_exec_flush_reads(c->t, false);
        if (!c->t->pend_head)
            return read_small(op, src, len);
    }
    if (shm && len >= STAGED_MIN && px_ring_pinned(shm, op->q))
        return read_into_ring(op, src, len, chunk);
    if (shm && len >= STAGED_MIN) {
        void *host[2] = {px_staging_get(c->t, op->q, chunk, 0),
                         px_staging_get(c->t, op->q, chunk, 1)};
        if (host[0] && host[1])
            return read_staged(op, src, len, chunk, host);
    }
    return read_chunks(op, src, len, chunk);
}

/* The device's read of OP's bytes (a buffer's, a rectangle's or an
 * image's region, packed: pitches 0) into DATA, not waited for. */
static cl_int enqueue_packed(struct mem_op *op, cl_mem src, uint8_t *data,
                             size_t len, cl_event *ev)
{
    const Crane__MemCommand *mc = op->mc;
    size_t origin[3], region[3], zero[3] = {0, 0, 0};

    if (mc->op == CRANE__MEM_OP__MEM_READ)
        return clEnqueueReadBuffer(op->q, src, CL_FALSE, mc->src_offset, len,
                                   data, op->nwait, op->wait, ev);
    sizes3(origin, mc->src_origin);
    sizes3(region, mc->region);
    if (mc->op == CRANE__MEM_OP__MEM_READ_RECT)
        return clEnqueueReadBufferRect(op->q, src, CL_FALSE, origin, zero,
                                       region, mc->src_row_pitch,
                                       mc->src_slice_pitch, 0, 0, data,
                                       op->nwait, op->wait, ev);
    return clEnqueueReadImage(op->q, src, CL_FALSE, origin, region, 0, 0,
                              data, op->nwait, op->wait, ev);
}

/*
 * A blocking rectangle or image read whose bytes leave on the client's
 * lanes: the device packs the region (pitches 0) into the lanes' pinned
 * area where it has room (else a kept heap chunk), then its pieces leave
 * as one transfer and the shim spreads them into the program's layout.
 * Once the device was asked, every piece leaves (contents undefined after
 * a device error, as on the stream) or the lanes are given up, so the
 * client never waits for bytes that will not come; the final Reply says
 * lane_bytes.
 */
static cl_int packed_on_lanes(struct mem_op *op, struct crn_lanes *ls,
                              cl_mem src, size_t len)
{
    struct px_call *c = op->c;
    uint64_t pos = UINT64_MAX;
    uint8_t *data = px_lanes_read_room(c->t, op->q, len, &pos);
    cl_int status = CL_COMPLETE, err;
    cl_event ev = NULL;
    int rc;

    if (!data && !(data = px_chunk_alloc(len)))
        return px_fail(c, CL_OUT_OF_HOST_MEMORY, "no room for %zu bytes",
                       len);
    err = enqueue_packed(op, src, data, len, &ev);
    if (err == CL_SUCCESS) {
        clWaitForEvents(1, &ev);
        clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(status),
                       &status, NULL);
        if (status < 0)
            err = status;
        if ((rc = px_lanes_send(ls, c->m, data, len, 0, len)) < 0)
            err = px_fail(c, CL_OUT_OF_RESOURCES, "read %llu: its lanes "
                          "failed (%s)", (unsigned long long)c->m->seq,
                          strerror(-rc));
        atomic_fetch_add(pos != UINT64_MAX ? &c->t->lane_area_out
                                           : &c->t->lane_heap_out,
                         len);
        c->reply.lane_bytes = len;
    }
    if (pos != UINT64_MAX)
        px_lanes_read_done(c->t, pos, len);
    else
        px_chunk_free(data);
    if (ev && op->evp)
        op->ev = ev;
    else if (ev)
        clReleaseEvent(ev);
    return err;
}

/*
 * Reads into one staging buffer.  Blocking: waits, then sends the data.
 * Non-blocking: the read becomes pending and leaves with a later Reply once
 * its event completes, without holding up the tenant's stream.
 */
cl_int px_mem_read(struct mem_op *op, cl_mem src)
{
    const Crane__MemCommand *mc = op->mc;
    struct px_call *c = op->c;
    struct crn_lanes *lanes;
    struct px_pending *p;
    cl_event ev = NULL;
    uint8_t *data;
    size_t len = 0;
    cl_int err;

    /* The common path sends the final Reply, after the chunks. */
    if (mc->blocking && mc->op == CRANE__MEM_OP__MEM_READ)
        return read_buffer_blocking(op, src);
    err = read_len(op, src, &len);
    if (err != CL_SUCCESS)
        return err;
    lanes = mc->blocking && !c->t->shm ? px_lanes_for_read(c->t, c->m)
                                       : NULL;
    if (lanes && len > SMALL_READ)
        return packed_on_lanes(op, lanes, src, len);
    /* On a pool thread: kept chunks where they fit (outq.h). */
    data = len >= PX_CHUNK_MIN ? px_chunk_alloc(len) : malloc(len ? len : 1);
    p = calloc(1, sizeof(*p));
    if (!data || !p) {
        px_chunk_free(data);
        free(p);
        return px_fail(c, CL_OUT_OF_HOST_MEMORY, "no room for %zu bytes",
                       len);
    }
    err = enqueue_packed(op, src, data, len, &ev);
    if (err != CL_SUCCESS) {
        px_chunk_free(data);
        free(p);
        return err;
    }
    clFlush(op->q);
    p->seq = c->m->seq;
    p->ev = ev;
    p->data = data;
    p->len = len;
    if (op->evp) {
        clRetainEvent(ev);
        op->ev = ev;
    }
    c->done = true;
    if (mc->blocking) {
        clWaitForEvents(1, &ev);
        px_pending_add(c->t, p);
        px_exec_flush_reads(c->t, false);
        return CL_SUCCESS;
    }
    px_pending_add(c->t, p);
    /* Wake the connection when the data is ready, so that it leaves even
     * if the client sends nothing more for a while. */
    px_cb_poke(c->t, ev);
    return CL_SUCCESS;
}
