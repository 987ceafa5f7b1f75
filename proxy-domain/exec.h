/* What every executor calls (exec.c), and the executors (exec_*.c). */
#ifndef PX_EXEC_H
#define PX_EXEC_H

#include "cl.h"
#include "tenant.h"

#include "proto/remote.pb-c.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Largest piece of read data sent after one Reply frame. */
#define PX_READ_CHUNK (4u << 20)
/* How long a worker waits for room in a client's shared area before read
 * bytes take the stream. */
#define PX_SHM_WAIT_MS 500

/* A non-blocking read waiting for its event; its data goes out with the
 * next Reply after the event completes. */
struct px_pending {
    struct px_pending *next;
    uint64_t seq;
    cl_event ev;                 /* retained by the proxy */
    uint8_t *data;
    size_t len;
    bool orphan;                 /* its stream is gone: send nothing */
};

/* One call being executed: what an executor gets and fills in. */
struct px_call {
    struct px_tenant *t;
    const Crane__ClientMessage *m;
    uint8_t *bulk;               /* an executor may take it: set NULL */
    size_t bulk_len;
    /* Or the bytes still where they lie in the client's ring 0 (a write
     * that stages through pinned memory, staging.h): RING_AT, until
     * px_call_ring_release frees their room. */
    struct crn_shm *ring;
    uint64_t ring_pos;
    const uint8_t *ring_at;
    Crane__Reply reply;          /* value, size_ret, count, statuses */
    void *value_owner;           /* free()d once the reply is sent */
    char error[160];             /* why the call was refused */
    bool done;                   /* the executor answered itself, or will */
};

/* C's bytes in the ring: copied to the heap (C->bulk, as bytes from the
 * stream) and their room freed; -ENOMEM (the room freed all the same). */
int px_call_ring_copy(struct px_call *c);
/* Frees the room of C's bytes in the ring, if they are there. */
void px_call_ring_release(struct px_call *c);

/* Sends the data of every pending read whose event has completed; with
 * WAIT, waits for all of them first. */
void px_exec_flush_reads(struct px_tenant *t, bool wait);

/* --- for the executors (exec_*.c) ----------------------------------------- */

/* Records why the call failed (printf-style) and returns ERR. */
cl_int px_fail(struct px_call *c, cl_int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Before a creation in a context: ID is free for KIND (else the call fails
 * with "bad or used WHAT") and CTX_ID names a context, into *CTX. */
cl_int px_new_in_context(struct px_call *c, uint64_t id, enum px_kind kind,
                         const char *what, uint64_t ctx_id, cl_context *ctx);
/* The tenant's handle of ID as KIND, or NULL with the call failed as
 * "unknown KIND ID" and its error in *ERR. */
void *px_known(struct px_call *c, uint64_t id, enum px_kind kind,
               cl_int *err);
/* N property words from the client into DST (room for N + 1), ended by 0. */
void px_props(cl_ulong *dst, const uint64_t *src, size_t n);

/* Every id of IDS (N of them) may name a new object of KIND, none twice;
 * else the call fails. */
cl_int px_check_new_ids(struct px_call *c, const uint64_t *ids, size_t n,
                        enum px_kind kind);

/* The tenant's real devices for the N client ids at IDS, into V (room for
 * PX_MAX_DEVICES); an unknown id fails the call. */
cl_int px_device_handles(struct px_call *c, const uint64_t *ids, size_t n,
                         cl_device_id *v);

/*
 * Sends a Reply for the call: completed pending reads go first, then R
 * (with the deferred error, if one is waiting) and BULK_LEN bytes at BULK.
 * BULK_OWNER (may be NULL) is freed after the write.  Returns 0, or
 * -ENOMEM with BULK_OWNER still the caller's.
 */
int px_send_reply(struct px_tenant *t, Crane__Reply *r, const uint8_t *bulk,
                  size_t bulk_len, void *bulk_owner);

/* The same for a chunk of a read (R->more) without sending the pending
 * reads first; R->shm_bulk set: its bytes are in the ring already. */
int px_send_more(struct px_tenant *t, Crane__Reply *r, const uint8_t *bulk,
                 size_t bulk_len, void *bulk_owner);

/* Adds the pending read P (taking it) to the tenant's list. */
void px_pending_add(struct px_tenant *t, struct px_pending *p);

/* The tenant's handles of KIND for the N ids at IDS, into *OUT
 * (malloc()ed, room for one when N is 0; the caller frees); an unknown id
 * fails the call as px_known does. */
cl_int px_handle_array(struct px_call *c, const uint64_t *ids, size_t n,
                       enum px_kind kind, void ***out);
/* Real events for the N ids at IDS, into *OUT (malloc()ed, NULL when N is
 * 0; the caller frees).  CL_INVALID_EVENT_WAIT_LIST for an unknown id. */
cl_int px_wait_list(struct px_call *c, const uint64_t *ids, size_t n,
                    cl_event **out);

/* Before an enqueue that names event ID: checks the id is free.  Returns
 * the cl_event * to pass (NULL for id 0) via *SLOT_PTR. */
cl_int px_event_slot(struct px_call *c, uint64_t id, cl_event *slot,
                     cl_event **slot_ptr);
/* After the enqueue succeeded: records the event under ID (if not 0). */
cl_int px_event_keep(struct px_call *c, uint64_t id, cl_event ev);

/* The executors, one per row of proto/remote_calls.def (exec_*.c;
 * not_now, shm_attach and shm_detach in exec_shm.c, host_attach in
 * hostmem.c). */
#define CRN_REMOTE_CALL(CASE, field, Type, exec, shape, call, bulk, flags) \
    cl_int px_exec_##exec(struct px_call *c);
#include "proto/remote_calls.def"
#undef CRN_REMOTE_CALL

/* Sets kernel argument A (is_svm) to its SVM allocation's address plus its
 * offset (exec_svm.c). */
cl_int px_svm_arg(struct px_call *c, cl_kernel kernel,
                  const Crane__KernelArg *a);

#endif /* PX_EXEC_H */
