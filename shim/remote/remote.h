/* The remote backend: OpenCL objects that live in a crane-proxy, reached
 * through proto/remote.proto (docs/remoting.md has the rules). */
#ifndef CRANE_SHIM_REMOTE_H
#define CRANE_SHIM_REMOTE_H

#include "proto/remote.pb-c.h"
#include "shim.h"

/*
 * The remote backend is to the shim what a vendor library is: its handles
 * start with a dispatch table (shim_remote_dispatch), so every call the
 * shim forwards with VENDOR(real)->clX reaches the function here that turns
 * it into a message.  Ids are chosen here (client ids), so creations need
 * no round trip; calls whose answer the program does not need yet are
 * batched and leave at the next call that needs an answer.
 */
struct rc_obj {
    const struct _cl_icd_dispatch *dispatch; /* shim_proxy_table */
    uint64_t id;
    enum shim_kind kind;
    bool user_event; /* a struct rc_user_event */
};

/* A user event, which remembers whether this client set it yet (SET, also
 * once released), and the status it was set to (STATUS, valid once
 * COMPLETED): a wait on it alone ends here (remote_event.c). */
struct rc_user_event {
    struct rc_obj obj;
    atomic_bool set;
    atomic_bool completed;
    atomic_int status;
};

/* A device's type comes with the Welcome: clGetDeviceIDs is answered here. */
struct rc_device {
    struct rc_obj obj;
    cl_device_type type;
    _Atomic cl_ulong max_alloc;  /* asked once; 0 before */
};

struct rc_platform {
    struct rc_obj obj;
    struct rc_device **devices;
    cl_uint n_devices;
};

/* A queue remembers whether anything went to it since its last clFinish,
 * which then needs no round trip. */
struct rc_queue {
    struct rc_obj obj;
    atomic_bool pending;
};

/* One outstanding map: where the program's pointer is and what it covers. */
struct rc_map {
    void *ptr;
    bool owned;                  /* allocated here (not the host pointer) */
    bool image, writes;
    size_t offset, size;         /* buffers */
    size_t origin[3], region[3]; /* images */
    struct rc_map *next;
};

struct rc_mem {
    struct rc_obj obj;
    cl_mem_flags flags;
    size_t size;
    void *host_ptr;              /* CL_MEM_USE_HOST_PTR */
    size_t elem;                 /* image: bytes per pixel, 0 for buffers */
    pthread_mutex_t lock;
    struct rc_map *maps;
};

/* A coarse-grained SVM allocation (remote_svm.c): the program's pointers
 * point into `host`, memory of this process; the proxy keeps the device's
 * copy as a buffer named by mem.obj.id, which the buffer commands take. */
struct rc_svm {
    struct rc_mem mem;
    unsigned char *host;
    struct rc_svm *next;
};

/* The SVM allocation holding P (at *OFFSET from its start), or NULL. */
struct rc_svm *shim_remote_svm_find(const void *p, size_t *offset);

/* What a clSetKernelArg gives an argument, as far as its validity goes:
 * the vendor accepts or refuses a shape (a __local size, a NULL buffer, a
 * buffer, an image of each kernel access, a sampler, plain bytes of one
 * size) for an argument whatever the value's own bytes. */
enum rc_arg_kind {
    RC_ARG_LOCAL,
    RC_ARG_NULL,
    RC_ARG_BUFFER,
    RC_ARG_IMAGE_RW,
    RC_ARG_IMAGE_RO,
    RC_ARG_IMAGE_WO,
    RC_ARG_SAMPLER,
    RC_ARG_BYTES
};

/* A kernel's arguments, cached until the next launch carries the changed
 * ones. */
struct rc_arg {
    bool changed;
    bool is_object, is_local;
    bool is_svm;                 /* object: an SVM allocation, 0 for NULL */
    uint64_t object;
    uint64_t svm_offset;
    size_t size;
    unsigned char *value;        /* malloc()ed, size bytes */
    /* The shapes the proxy's vendor accepted for this argument (bits of
     * enum rc_arg_kind), and the size of plain bytes it accepted: a set
     * of one of these is batched, any other is sent and answered first
     * (remote_kernel.c). */
    uint8_t valid_kinds;
    size_t valid_bytes;
};

struct rc_kernel {
    struct rc_obj obj;
    pthread_mutex_t lock;
    struct rc_arg *args;
    cl_uint n_args;              /* room in args */
    cl_uint n_changed;
};

/* A reply being waited for; `dst` receives a read's packed bytes. */
struct rc_reply {
    Crane__Reply *reply;         /* the final Reply; NULL on transport error */
    Crane__ServerMessage *msg;   /* owns reply */
};

/* --- the connection (remote_conn.c) -------------------------------------- */

/* Connects to the endpoint in shim_config.remote and shakes hands; fills
 * the platform list.  Returns 0 or a negative errno. */
int shim_remote_connect(void);
/* Closes the connection and stops its threads. */
void shim_remote_disconnect(void);
/* Whether the stream still works (false once it failed or closed). */
bool shim_remote_alive(void);
/* Whether the proxy's heartbeats say one of our calls still executes
 * there (docs/remoting.md, "Liveness"): WHAT (LEN bytes) names it, FOR_S
 * how long it has run; either may be NULL. */
bool shim_remote_running(char *what, size_t len, double *for_s);
/* Detached reads not yet answered, and those lost with a connection. */
size_t shim_remote_reads_outstanding(void);
/* Platforms from the Welcome. */
int shim_remote_platforms(cl_platform_id **out, cl_uint *n);

/* A fresh client id for a new object. */
uint64_t shim_remote_new_id(void);
/* Registers/unregisters an object: the id and address maps. */
int shim_remote_track(struct rc_obj *o);
void shim_remote_untrack(struct rc_obj *o);
/* The object with this id, or NULL. */
struct rc_obj *shim_remote_by_id(uint64_t id);
/* Whether P is the address of a live memory object or sampler of ours. */
struct rc_obj *shim_remote_by_addr(const void *p);

/* Queues M (plus BULK_LEN raw bytes) without waiting for an answer.
 * Returns CL_SUCCESS or the error that makes the call fail now. */
cl_int shim_remote_send(Crane__ClientMessage *m, const void *bulk,
                        size_t bulk_len);
/* Sends M and waits for its answer; a read's bytes go to DST (DST_LEN
 * bytes).  On CL_SUCCESS the caller owns *OUT (shim_remote_reply_free).
 * Returns the call's error, or an earlier batched call's (deferred), or a
 * transport error (CL_DEVICE_NOT_AVAILABLE). */
cl_int shim_remote_call(Crane__ClientMessage *m, const void *bulk,
                        size_t bulk_len, void *dst, size_t dst_len,
                        struct rc_reply *out);
/* Sends M whose answer carries a read's bytes into DST later: nobody
 * waits; a later synchronising call sees them arrived (docs/remoting.md). */
cl_int shim_remote_call_detached(Crane__ClientMessage *m, void *dst,
                                 size_t dst_len);
/* The error of an earlier batched call, once (0 if none); in a switch's
 * own calls (shim_own_calls) left for the program. */
cl_int shim_remote_take_deferred(void);
/* That error taken whoever asks: for a switch leaving the proxy, which
 * hands it on to the program (shim_owed_take). */
cl_int shim_remote_hand_over_deferred(void);
/* Sends everything batched. */
cl_int shim_remote_flush(void);
void shim_remote_reply_free(struct rc_reply *r);
/* A program callback to run on the callback thread when the proxy sends
 * Notify{cookie}. */
struct rc_watch {
    void (CL_CALLBACK *fn)(cl_event, cl_int, void *);
    cl_event event;
    void *data;
    /* The shim's own wake-up, which neither blocks nor calls OpenCL: run
     * on the thread that read the Notify, not the callbacks thread. */
    bool on_reader;
};

/* Registers a watch; returns its cookie for WatchEvent (0: no memory).
 * Take returns it once, for the Notify that names it, else NULL. */
uint64_t shim_remote_watch_add(struct rc_watch *w);
struct rc_watch *shim_remote_watch_take(uint64_t cookie);

/* Program bytes (source, IL, all binaries together) above INLINE travel as
 * bulk after their CreateProgram; more than MAX is refused (the proxy's
 * PX_MAX_BULK, docs/remoting.md). */
#define SHIM_REMOTE_PROGRAM_INLINE (256u << 10)
#define SHIM_REMOTE_MAX_BULK (64u << 20)

/* The chunk size of streamed writes and reads. */
size_t shim_remote_chunk(void);
/* LEN bytes read or written in place in that region. */
void shim_remote_count_host(size_t len);

/* --- helpers the remote_*.c files share (remote_obj.c) -------------------- */

/* The id behind a remote handle, 0 for NULL. */
#define RC_ID(h) ((h) ? ((const struct rc_obj *)(h))->id : 0)
#define RC_SET_ERR(e)           \
    do {                        \
        if (errcode_ret)        \
            *errcode_ret = (e); \
    } while (0)

/* A new object of SIZE bytes with a fresh id, registered in the maps. */
void *rc_obj_new(enum shim_kind kind, size_t size);
/* Sends a creation batched; on failure the object is forgotten again. */
void *rc_created(struct rc_obj *o, Crane__ClientMessage *m, const void *bulk,
                 size_t bulk_len, cl_int *errcode_ret);
/* Sends a creation whose error the program must see at once; KEEP (if not
 * NULL) receives the reply. */
void *rc_created_sync(struct rc_obj *o, Crane__ClientMessage *m,
                      const void *bulk, size_t bulk_len, cl_int *errcode_ret,
                      struct rc_reply *keep);
/* Forgets O, made by rc_obj_new but never sent. */
void rc_forget(struct rc_obj *o);
/* Releases the tenant's reference to H, of kind KIND. */
cl_int rc_release(void *h, enum shim_kind kind);

/* A wait list as ids, on the stack when short. */
struct rc_ids {
    uint64_t stack[32];
    uint64_t *v;
    size_t n;
};
cl_int rc_ids_of(struct rc_ids *x, cl_uint n, const cl_event *events);
void rc_ids_done(struct rc_ids *x);
/* An event for the command if the program wants one (OUT not NULL), and
 * its hand-over once the command was sent. */
cl_int rc_event_for(cl_event *out, struct rc_obj **e);
cl_int rc_event_done(cl_int err, cl_event *out, struct rc_obj *e);
/* Work went to Q: its next clFinish must ask the proxy. */
void rc_touch(cl_command_queue q);
/* Events made by enqueues: a fresh id the proxy will name its event by. */
struct rc_obj *shim_remote_event_new(void);
void shim_remote_event_drop(struct rc_obj *e);

/* A query: GetInfo of FN on ID (remote_info.c). */
cl_int rc_get_info(Crane__InfoFn fn, uint64_t id, uint64_t other,
                   cl_uint param, size_t size, void *value, size_t *size_ret);
/* A 0-terminated list of 64-bit name/value properties as the message's
 * pairs (at most 15 pairs); returns their count (remote_context.c). */
size_t rc_prop_pairs(uint64_t out[32], const cl_ulong *props);
/* A Sync message of OP; with REPLY it waits for the answer
 * (remote_event.c). */
/* Before a call the proxy answers only once the device did it (a blocking
 * read): while user events of this client are unset, waits here until
 * everything queued on Q and the wait list WL completed, so that the proxy
 * never waits in its loop for work gated by a user event whose set would
 * queue behind that wait (remote_event.c). */
cl_int rc_wait_before_blocking(cl_command_queue q, cl_uint n,
                               const cl_event *wl);
/* Whether user events of this client are unset (remote_event.c). */
bool rc_user_events_unset(void);
cl_int rc_sync_call(Crane__SyncOp op, cl_command_queue q, cl_uint n,
                    const cl_event *events, cl_event *event, bool reply);
/* An image's bytes per pixel, 0 for a buffer (remote_enqueue_mem.c). */
size_t rc_elem_of(cl_mem image);
/* Sends a kernel's changed arguments (remote_kernel.c). */
cl_int shim_remote_send_args(struct rc_kernel *k);
/* Frees a memory object's client side: its maps (remote_enqueue_map.c). */
void shim_remote_mem_free(struct rc_mem *m);

/* --- the rows of cl_api.def as the remote backend sees them --------------- */

/*
 * RC_ROW(WHAT, ret, name, params, remote) becomes
 * WHAT##REMOTE(ret, name, params, reason), WHAT##LOCAL(...) or
 * WHAT##REFUSED(...) after the row's `remote` column (REMOTE, LOCAL or
 * REFUSE("reason")); any other column fails to compile.
 */
#define RC_CAT_(a, b) a##b
#define RC_CAT(a, b) RC_CAT_(a, b)
#define RC_REMOTE REMOTE, ""
#define RC_LOCAL LOCAL, "the shim answers it itself, never through a backend"
#define RC_REFUSE(reason) REFUSED, reason
#define RC_ROW(what, ret, name, params, remote) \
    RC_ROW_(what, ret, name, params, RC_##remote)
#define RC_ROW_(what, ret, name, params, ...) \
    RC_ROW__(what, ret, name, params, __VA_ARGS__)
#define RC_ROW__(what, ret, name, params, kind, reason) \
    RC_CAT(what, kind)(ret, name, params, reason)

/* Every REMOTE row's implementation, checked against the row's prototype;
 * hidden, so a REMOTE row nobody defines fails the link of libcrane.so. */
#define RC_WHAT RC_PROTO_
#define RC_PROTO_REMOTE(ret, name, params, reason) \
    __attribute__((visibility("hidden"))) ret CL_API_CALL rc_##name params;
#define RC_PROTO_LOCAL(ret, name, params, reason)
#define RC_PROTO_REFUSED(ret, name, params, reason)
#include "remote_rows.h"
#undef RC_WHAT
#undef RC_PROTO_REMOTE
#undef RC_PROTO_LOCAL
#undef RC_PROTO_REFUSED

/* What the remote backend does with each row: for the unit test and
 * docs/remoting.md's list (remote_dispatch.c). */
enum shim_remote_kind { SHIM_REMOTE_IMPL, SHIM_REMOTE_LOCAL, SHIM_REMOTE_REFUSED };
struct shim_remote_row {
    const char *name;
    enum shim_remote_kind kind;
    const char *reason;          /* "" for implemented rows */
    size_t slot;                 /* offset in struct _cl_icd_dispatch */
};
extern const struct shim_remote_row shim_remote_rows[];
extern const size_t shim_remote_n_rows;

extern const struct _cl_icd_dispatch shim_remote_dispatch;
/* The largest allocation of a device of the proxy, asked once (for
 * shim_check_buffer_size, check.c). */
cl_ulong shim_remote_device_max_alloc(void *device);
extern const struct shim_backend_ops shim_remote_ops;

/* The remote backend's hooks (backend.h says what each answers), for its
 * row in remote_backend.c: the connection (remote_conn.c,
 * remote_conn_reader.c), the kernel arguments a switch sets again
 * (remote_kernel.c), the shared area's rings (remote_ring.c). */
bool shim_remote_alive(void);
unsigned long shim_remote_generation(void);
bool shim_remote_running(char *what, size_t len, double *for_s);
size_t shim_remote_reads_outstanding(void);
cl_int shim_remote_hand_over_deferred(void);
void shim_remote_bulk_stats(struct shim_bulk *out);
const char *shim_remote_transport(void);
bool shim_remote_host_on(void);
cl_int shim_remote_restore_arg(void *kernel, cl_uint index, size_t size,
                               const void *value);
bool shim_remote_ring_area(void **base, size_t *size, unsigned long *gen);
size_t shim_remote_ring_piece(void);
int shim_remote_ring_hold(size_t len, long wait_ms, uint64_t *pos, void **at);
cl_int shim_remote_ring_write(cl_command_queue q, cl_mem b, size_t off,
                              size_t len, uint64_t pos);
void shim_remote_ring_unhold(void);
void shim_remote_ring_release(uint64_t ring_end);
cl_int shim_remote_read_to_sink(cl_command_queue q, cl_mem b, size_t off,
                                size_t len, shim_ring_sink sink, void *arg);

/* A message of type CASE with its payload in FIELD. */
#define RC_MSG(var, field, CASE, payload)                          \
    Crane__ClientMessage var = CRANE__CLIENT_MESSAGE__INIT;        \
    var.msg_case = CRANE__CLIENT_MESSAGE__MSG_##CASE;              \
    var.field = (payload)

#endif
