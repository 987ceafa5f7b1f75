/* The backend interface: what the shim asks of a backend (native, remote,
 * dead), its rows found by side, never by name.  Part of shim.h. */
#ifndef CRANE_SHIM_BACKEND_H
#define CRANE_SHIM_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "opencl.h"

/* The side a backend's objects are on, which is all a switch asks of
 * which backend it holds: objects made ahead for a switch onto the vendor
 * side are a shadow's `premade`, onto the proxy side its `twin`. */
enum shim_side {
    SHIM_SIDE_NONE,   /* no objects anywhere (dead.c) */
    SHIM_SIDE_VENDOR, /* the vendor's own devices, here */
    SHIM_SIDE_PROXY,  /* a crane-proxy's, over a connection */
};

/* A backend's bulk bytes as this process moved them, cumulative seconds:
 * copying out (into a ring or the socket), waiting for a ring's room,
 * copying in. */
struct shim_bulk {
    double out_copy_s, out_wait_s, in_copy_s;
};

/* Bulk bytes a connection carried so far, each way together. */
struct shim_shm_counts {
    uint64_t shm_bytes;    /* through a shared area */
    uint64_t stream_bytes; /* on the stream */
    uint64_t host_bytes;   /* in place in the host-memory region
                              (hostmem.h): copied by nobody */
};

/* A piece of a read handed on where it lies: BYTES stay valid until the
 * sink frees the ring up to RING_END (the ring's release, in ring order,
 * before it returns a failure); RING_END 0: bytes that came on the
 * stream, valid only during the call.  0, or -errno (the read fails). */
typedef int (*shim_ring_sink)(void *arg, size_t off, const void *bytes,
                              size_t len, uint64_t ring_end);

/* The most a ring's piece holds: a quarter of a ring, at most this. */
#define SHIM_RING_PIECE (8u << 20)

/* A shared area's rings a backend lends a switch's device copies
 * (remote/remote_ring.c for the proxy's). */
struct shim_ring_ops {
    /* The area as this process maps it, when it is a memfd of ours in use
     * both ways (a proxy on this host; never a file or a BAR, which a
     * native device may not reach), and which one it is (a new
     * connection's area may be mapped where an old one was). */
    bool (*area)(void **base, size_t *size, unsigned long *gen);
    /* The most a piece holds (at most SHIM_RING_PIECE); 0: no ring. */
    size_t (*piece)(void);
    /* Room for LEN bytes in ring 0, held for the caller (*AT: where the
     * bytes go), waiting up to WAIT_MS: 0, -EAGAIN, -ENOTCONN, -EMSGSIZE.
     * Held pieces must be named (write) in the order they were taken. */
    int (*hold)(size_t len, long wait_ms, uint64_t *pos, void **at);
    /* Names the held piece at POS as the bytes of a write of [OFF,
     * OFF+LEN) of the backend's buffer B on its queue Q: batched, flushed
     * at once, errors at the queue's next clFinish. */
    cl_int (*write)(cl_command_queue q, cl_mem b, size_t off, size_t len,
                    uint64_t pos);
    /* Held pieces given up unnamed (after a failure). */
    void (*unhold)(void);
    /* Ring 1 freed up to RING_END (see shim_ring_sink). */
    void (*release)(uint64_t ring_end);
    /* A blocking read of [OFF, OFF+LEN) of B on Q, every piece handed to
     * SINK.  CL_SUCCESS only when all was read and SINK took every piece. */
    cl_int (*read_to_sink)(cl_command_queue q, cl_mem b, size_t off, size_t len,
                           shim_ring_sink sink, void *arg);
    /* Holds attaching and giving up the area off (they wait) while a
     * switch's device copies use it, so that it is not unmapped under
     * them. */
    void (*area_hold)(void);
    void (*area_unhold)(void);
};

/* A shared area crane-guestd attaches to a backend's connection and takes
 * back (docs/remoting.md, "Shared memory"; remote/remote_shm.h says how). */
struct shim_shm_ops {
    int (*use)(const char *path, const char *name, uint64_t offset,
               uint64_t limit, long patience_ms, char *why, size_t why_len);
    int (*release)(char *why, size_t why_len);
    int (*attached)(void);
    void (*counts)(struct shim_shm_counts *out);
};

/* A backend provides real platforms; every call on their objects then goes
 * through the real handles' own dispatch tables.  Every hook after
 * `prewarm` is optional: a backend without it is one with no connection
 * (the defaults of the shim_backend_* functions below). */
struct shim_backend_ops {
    const char *name;
    enum shim_side side;
    /* Loads the implementation and fills the real platform list. */
    int (*load)(void);
    /* Unloads it completely; every real object must be released first. */
    int (*unload)(void);
    /* The real platforms found by load(). */
    int (*platforms)(cl_platform_id **out, cl_uint *n);
    /* An extension function of the implementation, or NULL. */
    void *(*extension)(cl_platform_id real, const char *name);
    /* Work a switch onto this backend (SELF) from another one can do
     * before the gate closes, while the program still runs elsewhere. */
    void (*prewarm)(const struct shim_backend_ops *self);
    /* The connection's generation: objects made on it ahead (twins) stay
     * valid while it stays the same; 0 while there is none. */
    unsigned long (*generation)(void);
    /* Whether the connection still works (false: closed, or silent past
     * CRANE_PROXY_TIMEOUT_MS). */
    bool (*alive)(void);
    /* Whether a call runs there now, what (WHAT) and for how long. */
    bool (*running)(char *what, size_t len, double *for_s);
    /* Reads whose answers are still owed. */
    size_t (*reads_outstanding)(void);
    /* The program's errors the backend owes it, taken (CL_SUCCESS: none). */
    cl_int (*hand_over_deferred)(void);
    /* Its bulk bytes' times so far, and how they go now ("shm",
     * "stream" or "none"). */
    void (*bulk_stats)(struct shim_bulk *out);
    const char *(*transport)(void);
    /* A kernel argument a switch sets again: batched, its shape taken as
     * valid.  NULL: the kernel's own clSetKernelArg. */
    cl_int (*restore_arg)(void *kernel, cl_uint index, size_t size,
                          const void *value);
    /* The most one allocation may hold on the real device DEV, 0 when the
     * backend does not know (the shim's checks before batching). */
    cl_ulong (*device_max_alloc)(void *dev);
    /* Whether reads and writes of pointers in the host-memory region
     * (hostmem.h) go in place on this backend. */
    bool (*host_on)(void);
    /* A shared area crane-guestd attaches (NULL: none can be). */
    const struct shim_shm_ops *shm;
    /* Rings a switch's device copies may borrow (NULL: none). */
    const struct shim_ring_ops *ring;
};

/* Registers a backend's row when libcrane loads (its constructors run
 * before any other library's: -z initfirst), so that no file lists the
 * backends; backend.c finds them by side. */
void shim_backend_add(const struct shim_backend_ops *row);
#define SHIM_BACKEND_REGISTER(row)                                             \
    __attribute__((constructor)) static void shim_backend_add_##row(void)      \
    {                                                                          \
        shim_backend_add(&(row));                                              \
    }

/* The registered backend on SIDE, or NULL (backend.c). */
const struct shim_backend_ops *shim_backend_for(enum shim_side side);

static inline bool shim_backend_on(const struct shim_backend_ops *b,
                                   enum shim_side side)
{
    return b && b->side == side;
}

/* The two sides a switch moves between, and whether B is on one. */
static inline const struct shim_backend_ops *shim_proxy_backend(void)
{
    return shim_backend_for(SHIM_SIDE_PROXY);
}

static inline const struct shim_backend_ops *shim_vendor_backend(void)
{
    return shim_backend_for(SHIM_SIDE_VENDOR);
}

static inline bool shim_is_proxy(const struct shim_backend_ops *b)
{
    return shim_backend_on(b, SHIM_SIDE_PROXY);
}

static inline bool shim_is_vendor(const struct shim_backend_ops *b)
{
    return shim_backend_on(b, SHIM_SIDE_VENDOR);
}

/* The hooks asked with their defaults where a backend (or B NULL) has
 * none (backend.c). */
unsigned long shim_backend_generation(const struct shim_backend_ops *b);
bool shim_backend_alive(const struct shim_backend_ops *b);
bool shim_backend_running(const struct shim_backend_ops *b, char *what,
                          size_t len, double *for_s);
size_t shim_backend_reads_outstanding(const struct shim_backend_ops *b);
cl_int shim_backend_hand_over_deferred(const struct shim_backend_ops *b);
void shim_backend_bulk_stats(const struct shim_backend_ops *b,
                             struct shim_bulk *out);
const char *shim_backend_transport(const struct shim_backend_ops *b);
bool shim_backend_host_on(const struct shim_backend_ops *b);
cl_ulong shim_backend_device_max_alloc(const struct shim_backend_ops *b,
                                       void *dev);

/* The proxy side's connection generation, which twins are stamped with
 * (0: no proxy backend, or none connected). */
static inline unsigned long shim_twin_generation(void)
{
    return shim_backend_generation(shim_proxy_backend());
}

#endif /* CRANE_SHIM_BACKEND_H */
