/* What every executor calls: failures, handles for ids, events, the bytes
 * of its call in the ring, replies and the pending reads that go first. */
#include "exec.h"
#include "kout.h"
#include "outq.h"

#include "proto/pcopy.h"
#include "proto/shm.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cl_int px_fail(struct px_call *c, cl_int err, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(c->error, sizeof(c->error), fmt, ap);
    va_end(ap);
    return err;
}

cl_int px_new_in_context(struct px_call *c, uint64_t id, enum px_kind kind,
                         const char *what, uint64_t ctx_id, cl_context *ctx)
{
    cl_int err = px_tenant_check_new(c->t, id, kind);

    if (err != CL_SUCCESS)
        return px_fail(c, err, "bad or used %s", what);
    *ctx = px_known(c, ctx_id, PX_CONTEXT, &err);
    return *ctx ? CL_SUCCESS : err;
}

void *px_known(struct px_call *c, uint64_t id, enum px_kind kind,
               cl_int *err)
{
    void *h = px_tenant_handle(c->t, id, kind, err);

    if (!h)
        *err = px_fail(c, *err, "unknown %s %llu", px_kind_name(kind),
                       (unsigned long long)id);
    return h;
}

void px_props(cl_ulong *dst, const uint64_t *src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = src[i];
    dst[n] = 0;
}

/* Checks that every id of IDS (N of them) may name a new object of KIND
 * and that none appears twice. */
cl_int px_check_new_ids(struct px_call *c, const uint64_t *ids, size_t n,
                        enum px_kind kind)
{
    for (size_t i = 0; i < n; i++) {
        cl_int err = px_tenant_check_new(c->t, ids[i], kind);
        if (err != CL_SUCCESS)
            return px_fail(c, err, "%s id %llu is %s", px_kind_name(kind),
                           (unsigned long long)ids[i],
                           err == CL_INVALID_VALUE ? "not a client id"
                                                   : "in use");
        for (size_t j = 0; j < i; j++)
            if (ids[j] == ids[i])
                return px_fail(c, px_kind_error(kind),
                               "%s id %llu given twice", px_kind_name(kind),
                               (unsigned long long)ids[i]);
    }
    return CL_SUCCESS;
}

cl_int px_device_handles(struct px_call *c, const uint64_t *ids, size_t n,
                         cl_device_id *v)
{
    cl_int err;

    for (size_t i = 0; i < n; i++)
        if (!(v[i] = px_known(c, ids[i], PX_DEVICE, &err)))
            return err;
    return CL_SUCCESS;
}

/* Copies a reply's bulk into ring 1 of the tenant's shared area and names
 * it in R.  The client frees room as it reads the replies the loop thread
 * writes, so a worker waits a little for room; the loop thread itself must
 * not (it writes those replies).  Without room the bytes take the stream. */
static int shm_put(struct px_tenant *t, Crane__Reply *r, const uint8_t *bulk,
                   size_t bulk_len)
{
    uint64_t pos;
    int rc = crn_shm_reserve_wait(t->shm, CRN_SHM_TO_CLIENT, bulk_len,
                                  t->shm_nowait ? 0 : PX_SHM_WAIT_MS, &pos);

    if (rc < 0)
        return rc;
    memcpy(crn_shm_at(t->shm, CRN_SHM_TO_CLIENT, pos), bulk, bulk_len);
    r->shm_bulk = true;
    r->shm_pos = pos;
    return 0;
}

/* Packs R (with the waiting deferred error) and hands it to the tenant's
 * connection; no flush of pending reads. */
static int emit_reply(struct px_tenant *t, Crane__Reply *r,
                      const uint8_t *bulk, size_t bulk_len, void *bulk_owner)
{
    struct px_out *o;

    if (t->deferred_seq) {
        r->deferred_seq = t->deferred_seq;
        r->deferred_err = t->deferred_err;
        t->deferred_seq = 0;
        t->deferred_err = 0;
    }
    /* A chunk of read bytes bigger than a quarter of the client's ring
     * leaves as several, so that the ring holds more than one at a time. */
    size_t piece = t->shm ? t->shm->ring_len / 4 : 0;
    while (r->more && piece && bulk_len > piece) {
        Crane__Reply part = *r;
        part.bulk_len = piece;
        if (shm_put(t, &part, bulk, piece) < 0 ||
            !(o = px_out_pack_reply(&part)))
            break;              /* the rest takes the stream */
        px_tenant_send(t, o, false);
        r->deferred_seq = 0;    /* said once */
        r->deferred_err = 0;
        r->bulk_offset += piece;
        bulk += piece;
        bulk_len -= piece;
    }
    /* What kernels printed so far goes with this reply (kout.h). */
    size_t kout_len;
    uint8_t *kout = px_kout_take(&kout_len);
    r->kernel_output.data = kout;
    r->kernel_output.len = kout_len;
    if (r->shm_bulk) {
        /* The caller put the bytes in the ring already (bulk_len set). */
        o = px_out_pack_reply(r);
        free(kout);
        r->kernel_output.data = NULL;
        if (!o)
            return -ENOMEM;
        o->bulk_owner = bulk_owner;
        px_tenant_send(t, o, false);
        return 0;
    }
    r->bulk_len = bulk_len;
    if (bulk_len && t->shm && shm_put(t, r, bulk, bulk_len) == 0)
        bulk_len = 0;           /* the bytes are in the shared area */
    o = px_out_pack_reply(r);
    free(kout);
    r->kernel_output.data = NULL;
    if (!o)
        return -ENOMEM;         /* BULK_OWNER stays the caller's */
    o->bulk = bulk;
    o->bulk_len = bulk_len;
    o->bulk_owner = bulk_owner;
    px_tenant_send(t, o, false);
    return 0;
}

/* Sends a completed read's data in chunks, then its final Reply. */
static void send_pending(struct px_tenant *t, struct px_pending *p)
{
    Crane__Reply r = CRANE__REPLY__INIT;
    cl_int status = CL_COMPLETE;
    size_t off = 0;

    clGetEventInfo(p->ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(status),
                   &status, NULL);
    if (p->orphan)
        goto out;
    r.seq = p->seq;
    if (status == CL_COMPLETE) {
        while (off < p->len) {
            Crane__Reply chunk = CRANE__REPLY__INIT;
            size_t n = p->len - off;
            if (n > PX_READ_CHUNK)
                n = PX_READ_CHUNK;
            chunk.seq = p->seq;
            chunk.more = 1;
            chunk.bulk_offset = off;
            /* The last chunk's entry owns the staging buffer: entries of
             * one stream are written, and freed, in order. */
            if (emit_reply(t, &chunk, p->data + off, n,
                           off + n == p->len ? p->data : NULL) < 0) {
                /* Entries already queued may point into the data. */
                if (off > 0)
                    p->data = NULL;
                status = CL_OUT_OF_HOST_MEMORY;
                break;
            }
            off += n;
        }
        if (p->len > 0 && off == p->len)
            p->data = NULL;     /* the last chunk's entry owns it */
    }
    r.err = status == CL_COMPLETE ? CL_SUCCESS : status;
    emit_reply(t, &r, NULL, 0, NULL);
out:
    px_chunk_free(p->data);
    clReleaseEvent(p->ev);
    free(p);
}

static bool read_done(const struct px_pending *p)
{
    cl_int status = CL_COMPLETE;

    if (clGetEventInfo(p->ev, CL_EVENT_COMMAND_EXECUTION_STATUS,
                       sizeof(status), &status, NULL) != CL_SUCCESS)
        return true;
    return status <= CL_COMPLETE;
}

void px_exec_flush_reads(struct px_tenant *t, bool wait)
{
    struct px_pending **pp = &t->pend_head;

    t->pend_tail = NULL;
    if (!*pp)
        return;
    while (*pp) {
        struct px_pending *p = *pp;
        if (wait)
            clWaitForEvents(1, &p->ev);
        if (read_done(p)) {
            *pp = p->next;
            send_pending(t, p);
        } else {
            t->pend_tail = p;
            pp = &p->next;
        }
    }
    if (!t->pend_head)
        atomic_store(&t->pend_since, 0);
}

void px_pending_add(struct px_tenant *t, struct px_pending *p)
{
    p->next = NULL;
    if (t->pend_tail) {
        t->pend_tail->next = p;
    } else {
        t->pend_head = p;
        if (atomic_load_explicit(&t->beat_ms, memory_order_relaxed))
            atomic_store(&t->pend_since, uv_hrtime());
    }
    t->pend_tail = p;
}

int px_send_reply(struct px_tenant *t, Crane__Reply *r, const uint8_t *bulk,
                  size_t bulk_len, void *bulk_owner)
{
    if (t->pend_head)
        px_exec_flush_reads(t, false);
    return emit_reply(t, r, bulk, bulk_len, bulk_owner);
}

int px_send_more(struct px_tenant *t, Crane__Reply *r, const uint8_t *bulk,
                 size_t bulk_len, void *bulk_owner)
{
    return emit_reply(t, r, bulk, bulk_len, bulk_owner);
}

cl_int px_handle_array(struct px_call *c, const uint64_t *ids, size_t n,
                       enum px_kind kind, void ***out)
{
    void **v = malloc((n ? n : 1) * sizeof(*v));
    cl_int err;

    if (!v)
        return px_fail(c, CL_OUT_OF_HOST_MEMORY, "out of memory");
    for (size_t i = 0; i < n; i++) {
        if (!(v[i] = px_known(c, ids[i], kind, &err))) {
            free(v);
            return err;
        }
    }
    *out = v;
    return CL_SUCCESS;
}

cl_int px_wait_list(struct px_call *c, const uint64_t *ids, size_t n,
                    cl_event **out)
{
    cl_int err;

    *out = NULL;
    if (n == 0)
        return CL_SUCCESS;
    err = px_handle_array(c, ids, n, PX_EVENT, (void ***)out);
    /* An unknown id: the specification's error for a bad wait list. */
    if (err != CL_SUCCESS && err != CL_OUT_OF_HOST_MEMORY)
        err = CL_INVALID_EVENT_WAIT_LIST;
    return err;
}

cl_int px_event_slot(struct px_call *c, uint64_t id, cl_event *slot,
                     cl_event **slot_ptr)
{
    cl_int err;

    *slot = NULL;
    *slot_ptr = NULL;
    if (id == 0)
        return CL_SUCCESS;
    err = px_tenant_check_new(c->t, id, PX_EVENT);
    if (err != CL_SUCCESS)
        return px_fail(c, err, "event id %llu is %s",
                       (unsigned long long)id,
                       err == CL_INVALID_VALUE ? "not a client id" : "in use");
    *slot_ptr = slot;
    return CL_SUCCESS;
}

cl_int px_event_keep(struct px_call *c, uint64_t id, cl_event ev)
{
    if (id == 0 || !ev)
        return CL_SUCCESS;
    return px_tenant_add(c->t, id, PX_EVENT, ev, 0, false);
}

int px_call_ring_copy(struct px_call *c)
{
    uint8_t *p;

    if (!c->ring)
        return 0;
    /* On a pool thread: big pieces in kept chunks, as fresh heap there
     * would cost a page fault per 4 KiB (outq.h). */
    p = c->bulk_len >= PX_CHUNK_MIN ? px_chunk_alloc(c->bulk_len)
                                    : malloc(c->bulk_len);
    if (p)
        crn_pcopy(p, c->ring_at, c->bulk_len);
    px_call_ring_release(c);
    if (!p)
        return -ENOMEM;
    px_chunk_free(c->bulk);
    c->bulk = p;
    return 0;
}

void px_call_ring_release(struct px_call *c)
{
    if (!c->ring)
        return;
    crn_shm_release(c->ring, CRN_SHM_TO_PROXY, c->ring_pos + c->bulk_len);
    c->ring = NULL;
    c->ring_at = NULL;
}

