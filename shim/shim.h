/* Shadow objects, the call gate and backend interface shared by the shim. */
#ifndef CRANE_SHIM_H
#define CRANE_SHIM_H

#include "opencl.h"
#include <CL/cl_icd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"

#define SHIM_EXPORT __attribute__((visibility("default")))
#define SHIM_LIKELY(x) __builtin_expect(!!(x), 1)
#define SHIM_UNLIKELY(x) __builtin_expect(!!(x), 0)

enum shim_kind {
    SHIM_PLATFORM = 1,
    SHIM_DEVICE,
    SHIM_CONTEXT,
    SHIM_QUEUE,
    SHIM_MEM,
    SHIM_SAMPLER,
    SHIM_PROGRAM,
    SHIM_KERNEL,
    SHIM_EVENT,
    SHIM_KIND_COUNT
};

/* A live object's magic is SHIM_MAGIC + kind; a released one's is 0.  Shadow
 * memory is never returned to malloc (see objects.c), so reading the magic
 * of a released handle is always safe. */
#define SHIM_MAGIC 0x43524e00u

struct shim_obj;

/* What the store (objects.c) and a switch (rehome.c) do with a shadow that
 * depends on its kind.  Each kind's file defines its row (devices.c:
 * shim_platform_kind and shim_device_kind; context.c: shim_context_kind;
 * ...) and passes it to shim_obj_new; every shadow points at its row, so
 * the store and the switch call through it without knowing any kind. */
struct shim_kind_ops {
    enum shim_kind kind;
    /* What a switch recreates of this kind, in its logs. */
    const char *name;
    /* Findable by address (shim_obj_find_live): memory objects and
     * samplers, which a kernel without argument info may be given as a
     * plain 8-byte value. */
    bool by_address;
    /* The proxy's object is kept as a twin while the program runs on the
     * vendor, for the next switch back to reuse (rehome.c). */
    bool twins;
    /* Frees what the shadow owns and drops its references on other
     * shadows; the store has released its real handle and recycles its
     * memory.  NULL: nothing to free. */
    void (*destroy)(struct shim_obj *o);
    /* Makes the real object again, on the backend now in use, from what
     * the shadow recorded (a switch, in creation order): 0, or -errno
     * (-EIO with shim_vendor_err set).  NULL: the backend's binding
     * (shim_platforms_bind) gives it its handle. */
    int (*realize)(struct shim_obj *o);
    /* Releases REAL, a real handle O had on some backend, through that
     * backend.  NULL: the backend owns it (platforms, root devices are
     * checked in the row itself). */
    void (*release_real)(const struct shim_obj *o, void *real);
    /* The program's last reference is gone (the shadow may live on for
     * its children): what the kind must stop relying on the program for.
     * Called with the object held.  NULL: nothing. */
    void (*unnamed)(struct shim_obj *o);
};

/* Every shim handle starts with this header.  `dispatch` must come first:
 * ICD loaders call through it, which is how programs that reach OpenCL via
 * dlopen("libOpenCL.so.1") end up in the shim. */
struct shim_obj {
    const struct _cl_icd_dispatch *dispatch;
    uint32_t magic;
    uint32_t kind;
    const struct shim_kind_ops *ops;  /* its kind's row */
    void *real;                  /* the current backend's handle */
    atomic_uint app_refs;        /* what CL_*_REFERENCE_COUNT reports */
    atomic_uint child_refs;      /* shadows that need this one to rebuild */
    /* Claimed by whichever release destroys the object.  The program's
     * last release and another thread's last child release (a switch
     * preparing on its own thread) can both see both counts at zero;
     * without the claim both destroyed it, and its recycled memory was
     * linked into the store twice (a cycle a switch then walked for
     * ever). */
    atomic_bool finalizing;
    uint64_t seq;                /* creation order = recreation order */
    struct shim_obj *prev, *next;  /* the store, in creation order */
    struct shim_obj *free_next;  /* per-kind free list */
    /* The proxy's object for this shadow, kept while the program runs on
     * the vendor so that the next switch to the proxy reuses it
     * (rehome.c: twins). */
    _Atomic(void *) twin;
    unsigned long twin_conn;     /* the connection it belongs to */
    unsigned twin_build;         /* programs: build_gen when kept */
};

struct shim_platform;

/* What identifies a device and what a program may rely on of it, read
 * when the program first sees it (devmatch.c). */
struct shim_device_ident {
    char vendor[128], name[256], driver[128];
    cl_device_type type;
    cl_ulong max_alloc;
    size_t max_wg;
    cl_bool images;
    char *extensions;            /* malloc()ed, space-separated */
};

/* A device's profiling timeline across switches (timebase.c). */
struct shim_timebase {
    bool anchored;               /* a first reading fixed the timeline */
    unsigned long gen;           /* the binding its offset is for */
    int64_t offset;              /* added to that binding's timestamps */
    cl_ulong anchor_timeline;    /* the latest reading: timeline ns ... */
    cl_ulong anchor_host;        /* ... and CLOCK_MONOTONIC ns */
    cl_ulong high_water;         /* the latest timeline ns handed out */
};

struct shim_device {
    struct shim_obj obj;
    struct shim_timebase timebase;
    struct shim_platform *platform;
    struct shim_device *parent;  /* sub-devices only */
    cl_device_partition_property *partition;  /* 0-terminated copy */
    unsigned index;              /* among the platform's or parent's devices */
    cl_device_type type;
    struct shim_device_ident ident;  /* root devices */
};

struct shim_platform {
    struct shim_obj obj;
    struct shim_device **devices;  /* root devices, in vendor order */
    cl_uint n_devices;
    unsigned index;              /* among all platforms of the backend */
};

struct shim_context {
    struct shim_obj obj;
    void *premade;               /* made by prewarm.c for the next realize */
    cl_context_properties *props;  /* 0-terminated, shim platform inside */
    struct shim_device **devices;
    cl_uint n_devices;
    void (CL_CALLBACK *notify)(const char *, const void *, size_t, void *);
    void *notify_data;
    /* Whether the vendor the program started on accepts reads and writes
     * that host access flags forbid (SHIM_HOST_* bits, mem.c): on the
     * proxy the shim answers as it would. */
    atomic_uint host_policy;
};

#define SHIM_HOST_PROBED 1u
#define SHIM_HOST_READS_OK 2u            /* clEnqueueRead* */
#define SHIM_HOST_WRITES_OK 4u           /* clEnqueueWrite* */
#define SHIM_HOST_MAP_READ_OK 8u         /* a map with CL_MAP_READ */
#define SHIM_HOST_MAP_WRITE_OK 16u       /* with CL_MAP_WRITE */
#define SHIM_HOST_MAP_INVALIDATE_OK 32u  /* CL_MAP_WRITE_INVALIDATE_REGION */

/* Added by the map checks to the access they ask shim_mem_host_check
 * about, so that a vendor's answer to maps and to transfers stay apart
 * (NVIDIA refuses a read of a no-access buffer but maps it to
 * invalidate). */
#define SHIM_ACCESS_MAP ((cl_map_flags)1 << 62)

struct shim_queue {
    struct shim_obj obj;
    struct shim_context *context;
    struct shim_device *device;
    cl_queue_properties *props;  /* 0-terminated; NULL for the 1.x call */
    cl_command_queue_properties legacy_props;
    bool legacy;
    bool profiling;              /* CL_QUEUE_PROFILING_ENABLE asked */
};

enum shim_mem_type { SHIM_BUFFER, SHIM_SUB_BUFFER, SHIM_IMAGE, SHIM_PIPE };

struct shim_mem {
    struct shim_obj obj;
    struct shim_context *context;
    enum shim_mem_type type;
    cl_mem_flags flags;          /* as the program gave them */
    cl_mem_flags reported_flags; /* CL_MEM_FLAGS, as the vendor said it */
    size_t size;                 /* bytes of storage (images: packed) */
    void *host_ptr;              /* CL_MEM_USE_HOST_PTR (or its sub-buffer),
                                    or own_host */
    void *own_host;              /* CL_MEM_ALLOC_HOST_PTR root buffers: the
                                    shim's memory, lent to every vendor as
                                    CL_MEM_USE_HOST_PTR (mem_own.c) */
    bool own_blank;              /* own_host holds none of the program's
                                    bytes yet: its first creation needs none */
    cl_mem_properties *props;    /* 0-terminated or NULL */
    struct shim_mem *parent;     /* sub-buffer, or an image's buffer */
    size_t origin;               /* sub-buffer offset in the parent */
    cl_image_format format;
    cl_image_desc desc;
    cl_uint pipe_packet_size, pipe_max_packets;
    /* Dirty tracking lives on root buffers and images: the byte range the
     * device may have changed since `shadow` was last made equal to it. */
    atomic_size_t dirty_lo, dirty_hi;
    pthread_mutex_t dirty_lock;
    void *shadow;                /* RAM copy made at extraction */
    bool shadow_valid;
    /* Pre-copy into the target (precopy.c): an object made ahead on the
     * side a switch goes to, in context premade_ctx, holding the RAM
     * copy's bytes; the next realize there adopts it, and the switch then
     * writes only what its stop read ([stop_lo, stop_hi)). */
    void *premade, *premade_ctx;
    unsigned long premade_conn;  /* on the proxy: its connection; else 0 */
    bool premade_used;
    size_t stop_lo, stop_hi;
    bool streamed;               /* a switch streams its bytes (rehome.c) */
    atomic_int maps;             /* outstanding maps */
    struct shim_map *map_list;   /* them, for a switch (map.c) */
    /* Root objects over the program's memory (CL_MEM_USE_HOST_PTR): the
     * program named none of the objects over it any longer, so the memory
     * is its own again (mem_lent.c). */
    atomic_bool host_returned;
};

struct shim_sampler {
    struct shim_obj obj;
    struct shim_context *context;
    cl_sampler_properties *props;  /* 0-terminated; NULL as given */
    /* Made by clCreateSampler (props then holds its three pairs): its
     * CL_SAMPLER_PROPERTIES is empty, as for a NULL list. */
    bool legacy;
};

enum shim_program_origin {
    SHIM_FROM_SOURCE,
    SHIM_FROM_BINARY,
    SHIM_FROM_IL,
    SHIM_FROM_BUILTIN,
    SHIM_FROM_LINK
};

enum shim_build_step { SHIM_NOT_BUILT, SHIM_BUILT, SHIM_COMPILED };

struct shim_spec_const {
    cl_uint id;
    size_t size;
    void *value;
};

struct shim_program {
    struct shim_obj obj;
    struct shim_context *context;
    enum shim_program_origin origin;
    char *source;                /* source, builtin kernel names */
    void *il;
    size_t il_size;
    struct shim_device **devices;  /* binary/builtin/link/build device list */
    cl_uint n_devices;
    size_t *bin_sizes;
    unsigned char **bins;
    enum shim_build_step step;
    struct shim_device **build_devices;  /* NULL: all of the context's */
    cl_uint n_build_devices;
    char *options;               /* as the program gave them */
    struct shim_program **inputs;  /* headers (compile) or inputs (link) */
    char **input_names;          /* header include names */
    cl_uint n_inputs;
    struct shim_spec_const *spec;
    cl_uint n_spec;
    struct shim_program_cache *cache;  /* binaries for a faster rebuild */
    /* Where no binaries are kept: the vendor's, taken at the program's
     * first CL_PROGRAM_BINARY_SIZES or _BINARIES since its build, so both
     * answer the same binaries across a switch (program_cache.c). */
    struct shim_program_cache *answer;
    bool cache_due;              /* built since: binaries still to fetch */
    unsigned cache_gen;          /* bumped by every build */
    atomic_bool arg_info;        /* built with -cl-kernel-arg-info */
    unsigned build_gen;          /* bumped by every (re)build: twins */
    /* Its real program (its twin) was made from the kept binaries
     * (program_cache.c), not its source: a build gets the source back
     * first (program.c). */
    bool real_from_binary, twin_from_binary;
    bool arg_info_hidden;        /* ...which the program did not ask for */
    /* Not asked for: whether the native vendor gave argument info when
     * first asked (1), or not (-1); 0 before. */
    atomic_int arg_info_seen;
};

/* How an argument may touch memory, from clGetKernelArgInfo. */
enum shim_arg_class {
    SHIM_ARG_UNKNOWN = 0,   /* no arg info: decide per value (slow path) */
    SHIM_ARG_VALUE,
    SHIM_ARG_LOCAL,
    SHIM_ARG_MEM_RO,        /* const pointer, __constant, read_only image */
    SHIM_ARG_MEM_RW,
    SHIM_ARG_SAMPLER
};

#define SHIM_ARG_INLINE 32

struct shim_arg {
    uint8_t cls;            /* enum shim_arg_class */
    bool set;
    bool writes;            /* obj is a memory object the kernel may write */
    bool null_value;        /* set with a NULL value (local memory) */
    size_t size;
    struct shim_obj *obj;
    union {
        unsigned char bytes[SHIM_ARG_INLINE];
        void *heap;
    } v;
};

struct shim_kernel {
    struct shim_obj obj;
    struct shim_program *program;
    char *name;
    cl_uint n_args;
    struct shim_arg *args;
    bool uses_svm;
    /* Remoted launches' work-group rules (check.c), asked once: its
     * reqd_work_group_size (0s: none) and whether the device takes a
     * global size that no local size divides. */
    atomic_bool wg_known;
    /* CL_KERNEL_ATTRIBUTES as the vendor said it at creation: a twin from
     * a kept binary after a switch says none (PoCL 3.1). */
    char *attributes;
    size_t wg_reqd[3];
    bool wg_nonuniform;
    /* The dirty epoch at which a launch last marked every writable
     * argument (0: an argument object changed since, mark again). */
    unsigned long marked_epoch;
};

struct shim_event {
    struct shim_obj obj;
    struct shim_context *context;
    struct shim_queue *queue;    /* NULL for user events */
    cl_command_type command;
    bool user;
    cl_int user_status;          /* CL_SUBMITTED until set */
    bool retired;                /* completed before a re-home */
    cl_int status;               /* once retired */
    bool profiled;               /* prof[] valid once retired */
    cl_ulong prof[5];            /* queued, submit, start, end, complete */
    unsigned long generation;    /* the device binding it was enqueued on */
    cl_ulong host_queued;        /* CLOCK_MONOTONIC ns after the enqueue */
};

/* --- the store (objects.c) ----------------------------------------------- */

/* The rows of struct shim_kind_ops, one per kind, each in its kind's file. */
extern const struct shim_kind_ops shim_platform_kind, shim_device_kind,
    shim_context_kind, shim_queue_kind, shim_mem_kind, shim_sampler_kind,
    shim_program_kind, shim_kernel_kind, shim_event_kind;

/* A new shadow of the kind OPS, SIZE bytes (its kind's struct), holding
 * REAL; its creation makes it last in the store's order. */
void *shim_obj_new(const struct shim_kind_ops *ops, size_t size, void *real);
void shim_obj_retain_child(struct shim_obj *parent);
void shim_obj_release_child(struct shim_obj *parent);
int shim_obj_retain(void *handle, enum shim_kind kind);
int shim_obj_release(void *handle, enum shim_kind kind);
bool shim_obj_is(const void *handle, enum shim_kind kind);
struct shim_obj *shim_obj_find_live(const void *value);
void shim_store_lock(void);
void shim_store_unlock(void);
struct shim_obj *shim_store_first(void);
struct shim_obj *shim_store_last(void);
size_t shim_store_count(enum shim_kind kind);

/* What a switch uses to move the program's state (switch.h). */
#include "switch/switch.h"

/* Thread-locals read on every call: initial-exec, so that each read is one
 * %fs-relative load instead of a call to __tls_get_addr.  The shim is
 * preloaded (static TLS is reserved for it at start-up); a process that
 * only dlopens it still finds room in glibc's static TLS surplus. */
#define SHIM_TLS __thread __attribute__((tls_model("initial-exec")))

/* The vendor's error code when a realize function returned -EIO. */
extern SHIM_TLS cl_int shim_vendor_err;

/* Set while this thread runs a switch (rehome.c): its calls to the proxy
 * answer their own verdicts and leave the errors of the program's batched
 * calls to the program (remote_conn.c).  In state.c. */
extern SHIM_TLS bool shim_own_calls;
/* Set while this thread makes the real object of a buffer over host
 * memory none of whose bytes are needed (shim_maps_cover, mem.c): the
 * remote backend then sends the proxy none of them.  In state.c. */
extern SHIM_TLS bool shim_create_no_bytes;
/* An error of a batched call that a switch away from the proxy handed on
 * (shim_owe, rehome.c): owed once to the program's next clFinish or
 * clWaitForEvents; CL_SUCCESS if none.  In state.c. */
void shim_owe(cl_int err);
cl_int shim_owed_take(void);
/* What a switch waits for, shown to crane-guestd while a command of its
 * runs (control.c hands the function down; NULL: nobody to show it to,
 * or TEXT "" when the wait ended), and that command's deadline (shim_now
 * time, 0: none): a wait ends before it (state.c). */
extern void (*shim_wait_shown)(const char *text);
extern _Atomic double shim_cmd_deadline;

/* Releases a shadow's twin on the proxy, if it has one (rehome_linger.c). */
void shim_twin_release(struct shim_obj *o);

/* What the store calls above itself, handed to it by the files above:
 * the ICD table every new shadow points at (exports.c, when the library
 * loads) and the release of a shadow's twin (start.c, before the first
 * shadow).  Through these the store names neither the entry points nor
 * the switch. */
void shim_store_set_dispatch(const struct _cl_icd_dispatch *table);
void shim_store_set_twin_release(void (*release)(struct shim_obj *o));

/* Releases the real handle of any kind through its vendor (its kind's
 * row), ... */
void shim_real_release(struct shim_obj *o);
/* ... or a real handle it had before a switch of backends. */
void shim_real_release_handle(const struct shim_obj *o, void *real);

/* --- handle translation -------------------------------------------------- */

#define SHIM_REAL_FN(kind, type, fn)                                        \
    static inline type fn(type h)                                           \
    {                                                                       \
        const struct shim_obj *o = (const struct shim_obj *)h;              \
        return (o && o->magic == SHIM_MAGIC + kind) ? (type)o->real : NULL; \
    }
SHIM_REAL_FN(SHIM_PLATFORM, cl_platform_id, shim_real_platform)
SHIM_REAL_FN(SHIM_DEVICE, cl_device_id, shim_real_device)
SHIM_REAL_FN(SHIM_CONTEXT, cl_context, shim_real_context)
SHIM_REAL_FN(SHIM_QUEUE, cl_command_queue, shim_real_queue)
SHIM_REAL_FN(SHIM_MEM, cl_mem, shim_real_mem)
SHIM_REAL_FN(SHIM_SAMPLER, cl_sampler, shim_real_sampler)
SHIM_REAL_FN(SHIM_PROGRAM, cl_program, shim_real_program)
SHIM_REAL_FN(SHIM_KERNEL, cl_kernel, shim_real_kernel)
SHIM_REAL_FN(SHIM_EVENT, cl_event, shim_real_event)

/* R(h): the real handle behind any shim handle, NULL for an invalid one (the
 * vendor then returns the spec's error for it).  The compiler picks the
 * translation from the parameter's declared type. */
#define R(h)                                      \
    _Generic((h),                                 \
        cl_platform_id: shim_real_platform,       \
        cl_device_id: shim_real_device,           \
        cl_context: shim_real_context,            \
        cl_command_queue: shim_real_queue,        \
        cl_mem: shim_real_mem,                    \
        cl_sampler: shim_real_sampler,            \
        cl_program: shim_real_program,            \
        cl_kernel: shim_real_kernel,              \
        cl_event: shim_real_event)(h)

/* Whether a handle is live, whatever its type.  Entry points check this
 * before the gate and read the real handle only inside it, since a re-home
 * may be swapping real handles meanwhile. */
#define SHIM_KIND_OF(h)                           \
    _Generic((h),                                 \
        cl_platform_id: SHIM_PLATFORM,            \
        cl_device_id: SHIM_DEVICE,                \
        cl_context: SHIM_CONTEXT,                 \
        cl_command_queue: SHIM_QUEUE,             \
        cl_mem: SHIM_MEM,                         \
        cl_sampler: SHIM_SAMPLER,                 \
        cl_program: SHIM_PROGRAM,                 \
        cl_kernel: SHIM_KERNEL,                   \
        cl_event: SHIM_EVENT)
#define SHIM_LIVE(h) shim_obj_is((h), SHIM_KIND_OF(h))

/* The shadow behind a handle of the given kind, NULL if not live. */
#define SHIM_AS(type, kind, h)                                           \
    ((h) && ((const struct shim_obj *)(h))->magic == SHIM_MAGIC + (kind) \
         ? (struct type *)(h)                                            \
         : NULL)

/* The vendor dispatch table behind a real handle. */
#define VENDOR(real) (*(struct _cl_icd_dispatch *const *)(real))

/* The remote backend's dispatch table (remote_dispatch.c), which every
 * handle of a proxy's object starts with; NULL until that backend first
 * loads (remote_backend.c sets it).  Kept here, in the process state
 * (state.c), so that the files which make such handles (remote_obj.c,
 * remote_conn_setup.c) or ask whose a handle is need not name the table,
 * which itself names every rc_ row. */
extern const struct _cl_icd_dispatch *shim_proxy_table;

/* Whether a real handle is the remote backend's (an object of the
 * proxy), and whether a live shadow's real handle is. */
static inline bool shim_real_on_remote(const void *real)
{
    return real && shim_proxy_table && VENDOR(real) == shim_proxy_table;
}

static inline bool shim_on_remote(const void *handle)
{
    const struct shim_obj *o = handle;
    return o && shim_real_on_remote(o->real);
}

/* Defines release_real for a kind row (struct shim_kind_ops) whose real
 * handles all go back to their vendor through FN (clReleaseContext...). */
#define SHIM_RELEASE_REAL_WITH(fn)                                  \
    static void release_real(const struct shim_obj *o, void *real) \
    {                                                               \
        (void)o;                                                    \
        VENDOR(real)->fn(real);                                     \
    }

/* Arrays of handles translated for one call; small ones live on the stack. */
#define SHIM_XLATE_STACK 16
struct shim_xlate {
    void *stack[SHIM_XLATE_STACK];
    void **real;
    cl_uint n;
};
/* Wait lists: events retired by a re-home are complete and are dropped. */
cl_int shim_xlate_events(struct shim_xlate *x, const cl_event *events,
                         cl_uint n);
/* Other handle arrays; `bad` is returned for a handle that is not live. */
cl_int shim_xlate_handles(struct shim_xlate *x, const void *const *handles,
                          cl_uint n, enum shim_kind kind, cl_int bad);
void shim_xlate_done(struct shim_xlate *x);

/* --- the call gate (gate.c) ---------------------------------------------- */

/* Every entry point passes the gate; a re-home closes it and waits until the
 * calls inside have left.  Each thread counts its own calls in a slot only
 * it writes, so the fast path has no locked instruction and no shared
 * cache line: a compiler barrier orders the count before reading `closed`,
 * and the closer makes that order real on every CPU with membarrier(2)
 * (the asymmetric fence of userspace RCU).  Without membarrier, entering
 * costs one full fence instead. */
struct shim_gate_slot {
    atomic_long inside;          /* calls this thread is in */
    atomic_bool used;            /* owned by a live thread */
    struct shim_gate_slot *next; /* every slot ever made */
};

struct shim_gate {
    atomic_int closed;
    bool asymmetric;             /* membarrier(2) works here */
    _Atomic(struct shim_gate_slot *) slots;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    pthread_t owner;             /* the thread that closed it */
};

extern struct shim_gate shim_gate;
extern SHIM_TLS struct shim_gate_slot *shim_gate_slot;

/* Set on a vendor thread while it runs a program's event callback.  Such a
 * thread passes a closed gate (a re-home waits for callbacks to finish, and
 * the vendor is still loaded then) but never starts a re-home itself. */
extern SHIM_TLS bool shim_in_callback;
extern atomic_ulong shim_calls_until_rehome;  /* 0: test hook off */

struct shim_gate_slot *shim_gate_slot_claim(void);
void shim_gate_wait_open(void);
void shim_gate_signal(void);
void shim_test_hook_fire(void);
struct shim_rehome_times;
/* Re-homes through REHOME (start.c passes shim_rehome) before every
 * EVERY-th call. */
void shim_test_hook_arm(unsigned long every,
                        int (*rehome)(struct shim_rehome_times *t));

static inline void shim_gate_fence(void)
{
    if (SHIM_LIKELY(shim_gate.asymmetric))
        atomic_signal_fence(memory_order_seq_cst);
    else
        atomic_thread_fence(memory_order_seq_cst);
}

static inline void shim_enter(void)
{
    struct shim_gate_slot *s = shim_gate_slot;

    if (SHIM_UNLIKELY(!s))
        s = shim_gate_slot_claim();
    atomic_store_explicit(
        &s->inside, atomic_load_explicit(&s->inside, memory_order_relaxed) + 1,
        memory_order_relaxed);
    shim_gate_fence();
    if (SHIM_UNLIKELY(atomic_load_explicit(&shim_gate.closed,
                                           memory_order_relaxed)))
        shim_gate_wait_open();
    if (SHIM_UNLIKELY(atomic_load_explicit(&shim_calls_until_rehome,
                                           memory_order_relaxed)))
        shim_test_hook_fire();
}

static inline void shim_leave(void)
{
    struct shim_gate_slot *s = shim_gate_slot;

    atomic_store_explicit(
        &s->inside, atomic_load_explicit(&s->inside, memory_order_relaxed) - 1,
        memory_order_release);
    shim_gate_fence();
    if (SHIM_UNLIKELY(atomic_load_explicit(&shim_gate.closed,
                                           memory_order_relaxed)))
        shim_gate_signal();
}

int shim_gate_close(long timeout_ms);
void shim_gate_open(void);

/* --- backends (backend.h) ---------------------------------------------- */

/* Where a program goes when a re-home lost its old side and could bring up
 * no other (dead.c, the row on SHIM_SIDE_NONE): its one real handle, whose
 * table answers every row with CL_DEVICE_NOT_AVAILABLE (retains and
 * releases: CL_SUCCESS). */
extern void *const shim_dead_handle;
/* Before a switch's gate closes: staging for its vendor contexts. */
void shim_staging_prepare_switch(const struct shim_backend_ops *from,
                                 const struct shim_backend_ops *to);
/* Pre-copy rounds before a switch to TO (NULL: a park) stops the
 * program (precopy.c). */
void shim_precopy(const struct shim_backend_ops *to);

/* --- process-wide state (state.c; set up by start.c) --------------------- */

struct shim_state {
    pthread_once_t once;
    int init_err;                /* 0 or -errno from the first load */
    const struct shim_backend_ops *backend;
    struct shim_platform **platforms;
    cl_uint n_platforms;
    pthread_mutex_t rehome_lock; /* one re-home at a time */
    unsigned rehomes;
    unsigned long bindings;      /* devices bound to real ones so far */
    bool parked;                 /* stop-and-copy: calls wait, state in RAM */
    const struct shim_backend_ops *parked_from;
    double parked_at;
    bool gpu_leaves;             /* the switch under way gives the GPU up
                                    (a migration's prepare, a park): a
                                    vendor holding device files is
                                    unloaded (CRANE_VENDOR_UNLOAD=auto,
                                    native.c) */
};

extern struct shim_state shim;
extern const struct _cl_icd_dispatch shim_icd_dispatch;

/* CRANE_DISABLE=1 (disabled.c): the vendors' own platforms for the ICD
 * loader, and their extension functions; the shim never starts. */
cl_int shim_disabled_platforms(cl_uint num_entries, cl_platform_id *platforms,
                               cl_uint *num_platforms);
void *shim_disabled_extension(const char *name);

/* The start, once (start.c): 0, or -errno if the backend did not load. */
int shim_init(void);
/* Binds the shadow platforms and devices to the backend's (devices.c). */
int shim_platforms_bind(void);

/* Profiling timestamps on one timeline per device (timebase.c). */
cl_ulong shim_timebase_host_now(void);
int64_t shim_timebase_offset(struct shim_timebase *tb, unsigned long gen,
                             cl_ulong queued, cl_ulong host_queued);
void shim_timebase_translate(struct shim_event *e, cl_ulong raw_queued,
                             cl_ulong *values, unsigned n);
/* Records a timeline value handed out: a later generation starts after
 * it. */
void shim_timebase_seen(struct shim_timebase *tb, cl_ulong t);

/* Devices matched by identity and capability (devmatch.c). */
/* The work-items of the largest work-group the program launched: a device
 * it moves to must allow as many. */
extern atomic_size_t shim_local_size_max;
static inline void shim_note_local_size(cl_uint dim, const size_t *local)
{
    if (!local || dim == 0 || dim > 3)
        return;
    size_t n = local[0] * (dim > 1 ? local[1] : 1) * (dim > 2 ? local[2] : 1);
    size_t was = atomic_load_explicit(&shim_local_size_max,
                                      memory_order_relaxed);
    while (n > was && !atomic_compare_exchange_weak_explicit(
                          &shim_local_size_max, &was, n,
                          memory_order_relaxed, memory_order_relaxed))
        ;
}
int shim_device_ident_read(cl_device_id real, struct shim_device_ident *id);
void shim_device_ident_free(struct shim_device_ident *id);
/* Where each of the program's platforms and root devices lands on the
 * loaded backend BE; -ENODEV with WHY when a device in use has no place. */
struct shim_plan {
    cl_platform_id *platforms;   /* per shadow platform */
    cl_device_id **devices;      /* per shadow platform, per root device */
};
int shim_plan_make(const struct shim_backend_ops *be, struct shim_plan *plan,
                   char *why, size_t len);
void shim_plan_free(struct shim_plan *plan);
/* The plan shim_devices_check made for BE, if it was the last one: taken
 * (the caller frees it). */
bool shim_plan_take(const struct shim_backend_ops *be,
                    struct shim_plan *plan);
/* Whether the program may move from FROM to TO (loaded here): 0, or why
 * not, kept for shim_devices_refusal() and logged, TO unloaded again;
 * nothing else changes. */
int shim_devices_check(const struct shim_backend_ops *from,
                       const struct shim_backend_ops *to);
/* The reason of the last refused move, "" if none. */
const char *shim_devices_refusal(void);
void *shim_lookup_entry(const char *name);
size_t shim_entry_count(void);

/* --- buffers' dirty state (dirty.c) -------------------------------------- */

void shim_mem_dirty(cl_mem handle, size_t offset, size_t size);
void shim_mem_dirty_all(cl_mem handle);
void shim_mem_dirty_range(struct shim_mem *m, size_t lo, size_t hi);
void shim_mem_dirty_rect(cl_mem handle, const size_t *origin,
                         const size_t *region, size_t row_pitch,
                         size_t slice_pitch);
void shim_mem_dirty_map(cl_mem handle, cl_map_flags flags, size_t offset,
                        size_t size);
void shim_mem_dirty_reset(struct shim_mem *m);
void shim_kernel_dirty_args(struct shim_kernel *k);
struct shim_mem *shim_mem_root(struct shim_mem *m);
/* mem_lent.c: the kind row's `unnamed` of memory objects; whether M's
 * host memory went back to the program (then its bytes are dead). */
void shim_mem_unnamed(struct shim_obj *o);
bool shim_mem_host_returned(struct shim_mem *m);
/* mem_own.c: host memory the shim makes itself for a CL_MEM_ALLOC_HOST_PTR
 * buffer and lends each vendor as CL_MEM_USE_HOST_PTR (made at creation,
 * filled from COPY_FROM if not NULL; freed with the object); whether M's
 * real objects lie over host memory (the program's or the shim's own), so
 * that its bytes are there after an extraction and no RAM copy is made. */
int shim_mem_own_host_make(struct shim_mem *m, const void *copy_from);
void shim_mem_own_host_free(struct shim_mem *m);
bool shim_mem_over_host(const struct shim_mem *m);
/* Argument classes (SHIM_ARG_MEM_RO, _MEM_RW, else _UNKNOWN) of kernel
 * `kernel` read from OpenCL C source (kernel_sig.c): 0, or -ENOENT when it
 * is not defined exactly once there with n_args parameters. */
int shim_kernel_sig_classes(const char *source, const char *kernel,
                            cl_uint n_args, uint8_t *cls);
/* The same for a kernel of a program: from its source, or its linked
 * inputs' sources. */
int shim_program_sig_classes(const struct shim_program *p,
                             const char *kernel, cl_uint n_args,
                             uint8_t *cls);
/* CL_INVALID_OPERATION when the object lives on the proxy (made there
 * without host access flags) and its flags forbid `access` (CL_MAP_READ,
 * CL_MAP_WRITE, ...) from the host, else CL_SUCCESS: a vendor's object
 * carries the flags, and the vendor's verdict is the program's. */
cl_int shim_mem_host_check(cl_command_queue queue, cl_mem memobj,
                           cl_map_flags access);
/* Whether the real object REAL of M carries host access flags (M's, or a
 * parent's) that forbid the host ACCESS: the shim's own copies of it then
 * go through the device (hostcopy.c). */
bool shim_mem_host_forbids(const struct shim_mem *m, const void *real,
                           cl_map_flags access);
void shim_mem_mapped(cl_mem handle);
void shim_mem_unmapped(cl_mem handle);
void shim_kernel_launching(cl_kernel handle);

/* --- maps that survive a switch (map.c) -------------------------------- */

int shim_maps_check(void);
int shim_maps_carry(cl_command_queue (*q_for)(struct shim_context *, void *),
                    void *arg);
void shim_maps_free(struct shim_mem *m);
/* Whether maps for writing of M itself (a root buffer) cover every byte of
 * it: its device bytes are then no one's until those unmaps write the
 * program's, so a switch moves none of them (map.c). */
bool shim_maps_cover(struct shim_mem *m);

/* --- images (mem.c) ------------------------------------------------------ */

/* Bytes per pixel of an image format. */
size_t shim_image_elem_size(const cl_image_format *f);
/* The region (in pixels, rows, slices) covering an image of this shape. */
void shim_image_desc_region(const cl_image_desc *d, size_t region[3]);

/* --- events -------------------------------------------------------------- */

/* Wraps a vendor event returned through `out` into a new shim event. */
cl_int shim_event_wrap(cl_event *out, cl_event real, struct shim_queue *q);

/* Releases events whose last reference went with a vendor callback. */
void shim_event_drain_deferred(void);

/* --- helpers (util.c) ---------------------------------------------------- */

double shim_now(void);
void *shim_props_dup(const void *props, size_t elem);  /* 0-terminated */
size_t shim_props_len(const void *props, size_t elem);
char *shim_strdup(const char *s);
cl_int shim_info_return(const void *src, size_t size, size_t value_size,
                        void *value, size_t *size_ret);

#endif
