/* A tenant: one client's objects (id -> real handle), quota, and outbox. */
#ifndef PX_TENANT_H
#define PX_TENANT_H

#include "cl.h"
#include "devices.h"
#include "proto/lane.h"
#include "proto/map.h"
#include "outq.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

/* Bytes of a Welcome.session_token. */
#define PX_TOKEN_LEN 32

/* Object kinds: the values of remote.proto's ObjKind. */
enum px_kind {
    PX_PLATFORM = 1,
    PX_DEVICE,
    PX_CONTEXT,
    PX_QUEUE,
    PX_MEM,
    PX_SAMPLER,
    PX_PROGRAM,
    PX_KERNEL,
    PX_EVENT,
};

/* One object of the tenant, under the id the client chose. */
struct px_obj {
    uint64_t id;
    void *handle;                /* the real OpenCL handle, one reference */
    uint64_t order;              /* creation order, for teardown */
    uint64_t bytes;              /* counted against the quota */
    enum px_kind kind;
    bool user_event;
    void *info;                  /* kernels: what validation learnt of the
                                    kernel (validate_dev.c), free()d with
                                    the entry */
    cl_mem_object_type mem_type; /* memory objects: CL_MEM_TYPE once asked
                                    (px_tenant_mem_type), else 0 */
    cl_device_id queue_dev;      /* queues: CL_QUEUE_DEVICE once asked (a
                                    launch's check), else NULL */
};

/* Where a tenant's frames go while a connection holds it.  PUSH takes the
 * entry; POKE says that a pending read may have completed.  Both may be
 * called from any thread, with the tenant's lock held. */
struct px_sink {
    void (*push)(void *ctx, struct px_out *o);
    void (*poke)(void *ctx);
    void *ctx;
};

struct px_pending;

struct crn_shm;
struct px_staging;
struct px_wstage;
struct px_host_busy;

struct px_tenant {
    atomic_int refs;
    uint64_t num;                /* for logs: tenant 1, 2, ... */
    uint8_t token[PX_TOKEN_LEN];
    char program[64];
    uint32_t pid;
    uint64_t quota;              /* 0: no limit */
    uint64_t max_objects;        /* 0: no limit (--max-objects) */
    const struct px_devices *devs;

    /*
     * The executing side: touched by one thread at a time, the work item
     * of the connection holding the tenant, or the teardown after it.
     */
    struct crn_map objs;          /* id -> struct px_obj * */
    struct crn_map rev;           /* real handle -> id */
    uint64_t next_order;
    uint64_t mem_bytes;          /* live buffers and images */
    struct px_pending *pend_head, *pend_tail;  /* non-blocking reads */
    /* The connection's shared area (ring 1 carries read bytes), set by the
     * ShmAttach executor from shm_offered, which the loop thread set. */
    struct crn_shm *shm, *shm_offered;
    /* The client's host-memory region (hostmem.h): set by the HostAttach
     * executor from host_offered, which the loop thread set; kept across
     * connections until the tenant ends. */
    struct crn_shm *host;
    struct crn_shm *_Atomic host_offered;
    struct px_host_busy *host_busy;
    bool shm_nowait;             /* executing on the loop thread: no waits */
    atomic_bool shm_given_up;    /* a ShmDetach executed: area unmapped */
    struct px_staging *staging;  /* pinned read staging (staging.c) */
    struct px_wstage *wstage;    /* pinned write staging (staging.c) */
    bool wstage_off;             /* the implementation could not make it */
    /* Lanes of the connection holding it (lanes.c): made with its
     * Welcome (a new key each time), freed when that connection ends;
     * the loop thread registers writes' transfers, executors wait.  A
     * lane of a higher generation replaces them (conn_lanes.c): the old
     * sets, dead, are kept for requests still naming them until the
     * connection ends. */
    _Atomic(struct crn_lanes *) lanes;
    uint32_t lane_gen;
    struct crn_lanes *lanes_retired[CRN_LANE_GENERATIONS];
    unsigned lanes_retired_n;
    uint8_t lane_key[32];
    /* Where the lanes' bytes land: a memfd area of its own, pinned for
     * the device as a client's area is (ringpin.h), ring 0 for writes'
     * bytes, ring 1 for reads' chunks (lanes.c). */
    struct crn_shm *lane_area;
    /* Bytes the lanes carried in (writes) and out (reads), through that
     * area or the heap, for the log. */
    atomic_uint_fast64_t lane_area_in, lane_heap_in;
    atomic_uint_fast64_t lane_area_out, lane_heap_out;
    uint64_t deferred_seq;       /* first failure without want_reply */
    int32_t deferred_err;

    /* For heartbeats (conn_beat.c reads them on its thread): the
     * interval the client asked for (0: none), the call executing (its
     * ClientMessage field number) and since when, since when a read has
     * been pending (uv_hrtime ns; 0: none).  Set only with beat_ms. */
    atomic_uint beat_ms;
    atomic_uint running_call;
    atomic_uint_fast64_t running_since, pend_since;

    /* For the status line: read by the loop while a worker writes. */
    atomic_uint_fast64_t stat_objects;
    atomic_uint_fast64_t stat_bytes;

    pthread_mutex_t lock;        /* guards the three fields below */
    struct px_sink sink;         /* push == NULL: detached */
    struct px_out *held_head, *held_tail;  /* notices while detached */
    struct crn_map uevents;       /* user events never set (tenant.c) */

    /* The loop thread's side (server.c). */
    struct px_tenant *next;      /* the server's list of tenants */
    void *conn;                  /* the connection holding it, or NULL */
    void *waiting;               /* a connection resuming it, or NULL */
    uv_timer_t grace;            /* while detached with --grace */
    bool grace_armed;
    bool closing;                /* being torn down */
};

/* A new tenant with one reference and a random token; NULL when out of
 * memory or randomness (logged). */
struct px_tenant *px_tenant_new(const struct px_devices *devs, uint64_t num,
                                uint64_t quota);
void px_tenant_ref(struct px_tenant *t);
/* Drops a reference; the last one frees the tenant, which must own no
 * objects by then (px_tenant_release_all). */
void px_tenant_unref(struct px_tenant *t);

/* The invalid-object error of KIND (CL_INVALID_CONTEXT, ...). */
cl_int px_kind_error(enum px_kind kind);
const char *px_kind_name(enum px_kind kind);

/*
 * The real handle of the object ID of KIND, or NULL with *ERR set to the
 * kind's invalid-object error: unknown ids, ids of another kind and 0 all
 * fail alike.  Platforms and devices the proxy offers (ids with the top bit)
 * are found too.
 */
void *px_tenant_handle(struct px_tenant *t, uint64_t id, enum px_kind kind,
                       cl_int *err);
struct px_obj *px_tenant_obj(struct px_tenant *t, uint64_t id,
                             enum px_kind kind);
/* The CL_MEM_TYPE of the tenant's memory object ID: asked of the vendor
 * once and kept (it never changes; the proxy's checks ask before every
 * launch and copy); 0 where ID names none or the vendor cannot tell. */
cl_mem_object_type px_tenant_mem_type(struct px_tenant *t, uint64_t id);

/* CL_SUCCESS when ID may name a new object of KIND: CL_INVALID_VALUE for 0
 * or an id with the top bit, the kind's error for an id in use,
 * CL_OUT_OF_RESOURCES when the tenant holds max_objects already. */
cl_int px_tenant_check_new(struct px_tenant *t, uint64_t id,
                           enum px_kind kind);

/*
 * Records HANDLE as object ID of KIND, counting BYTES against the quota
 * (already checked with px_tenant_charge).  Takes the handle: on failure
 * (out of memory) it is released.  USER_EVENT marks a user event, set to an
 * error status at teardown if the client never set it.
 */
cl_int px_tenant_add(struct px_tenant *t, uint64_t id, enum px_kind kind,
                     void *handle, uint64_t bytes, bool user_event);

/* Takes N handles of KIND a call made at once (sub-devices, a program's
 * kernels): the first N_IDS become objects IDS, the rest are released, and
 * after a failure every one not yet recorded is released too. */
cl_int px_tenant_adopt(struct px_tenant *t, const uint64_t *ids,
                       size_t n_ids, enum px_kind kind, void **handles,
                       size_t n);

/* Releases the client's object ID of KIND and forgets the id. */
cl_int px_tenant_remove(struct px_tenant *t, uint64_t id, enum px_kind kind);

/* CL_SUCCESS when BYTES more fit the quota, else
 * CL_MEM_OBJECT_ALLOCATION_FAILURE. */
cl_int px_tenant_charge(struct px_tenant *t, uint64_t bytes);

/* The tenant's id for a real handle (its own objects, then offered
 * platforms and devices), or 0. */
uint64_t px_tenant_id_of(struct px_tenant *t, const void *handle);

/* Whether the client has user events it has not set: then no call may
 * wait inside the proxy's loop for the device (the set would queue behind
 * it). */
bool px_tenant_has_unset_user_events(struct px_tenant *t);
/* A user event was set by the client: teardown leaves it alone. */
void px_tenant_user_event_set(struct px_tenant *t, cl_event ev);
/* Sets every user event the client never set to an error status, so that
 * commands (and a worker blocked on them) finish.  Any thread. */
void px_tenant_abort_user_events(struct px_tenant *t);

/* Releases every object, children first (reverse creation order); returns
 * how many.  Only with no work item running for the tenant. */
size_t px_tenant_release_all(struct px_tenant *t);

/* Connects the tenant to SINK and hands it the notices held meanwhile,
 * after FIRST (the Welcome) if not NULL. */
void px_tenant_attach(struct px_tenant *t, const struct px_sink *sink,
                      struct px_out *first);
/* Disconnects the tenant: later notices are held, later replies dropped. */
void px_tenant_detach(struct px_tenant *t);
/* Sends O on the tenant's connection.  Without one, a notice (HOLD) is
 * kept for the next connection and anything else is dropped. */
void px_tenant_send(struct px_tenant *t, struct px_out *o, bool hold);
/* Tells the connection that a pending read may have completed. */
void px_tenant_poke(struct px_tenant *t);

#endif /* PX_TENANT_H */
