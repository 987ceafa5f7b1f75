/* Dirty tracking: which bytes of each buffer and image the device may have
 * changed since the shim last copied them to RAM.
 *
 * State lives on root objects (buffers and images; a sub-buffer marks its
 * parent's range, an image made from a buffer marks the buffer).  Before an
 * object's first extraction everything is extracted anyway, so marking costs
 * one load.  After it, a mark that falls inside the current range costs two
 * loads; only a range that grows takes the object's lock.
 */
#include "shim.h"

struct shim_mem *shim_mem_root(struct shim_mem *m)
{
    while (m->parent)
        m = m->parent;
    return m;
}

static void mark(struct shim_mem *m, size_t lo, size_t hi)
{
    if (hi > m->size)
        hi = m->size;
    if (m->type == SHIM_SUB_BUFFER) {
        lo += m->origin;
        hi += m->origin;
        m = m->parent;
    } else if (m->parent) {
        /* An image over a buffer: its bytes are the buffer's. */
        m = shim_mem_root(m);
        lo = 0;
        hi = m->size;
    }
    if (lo >= hi || !m->shadow_valid)
        return;
    if (lo >= atomic_load_explicit(&m->dirty_lo, memory_order_relaxed) &&
        hi <= atomic_load_explicit(&m->dirty_hi, memory_order_relaxed))
        return;
    pthread_mutex_lock(&m->dirty_lock);
    if (lo < atomic_load(&m->dirty_lo))
        atomic_store(&m->dirty_lo, lo);
    if (hi > atomic_load(&m->dirty_hi))
        atomic_store(&m->dirty_hi, hi);
    pthread_mutex_unlock(&m->dirty_lock);
}

void shim_mem_dirty(cl_mem handle, size_t offset, size_t size)
{
    struct shim_mem *m = SHIM_AS(shim_mem, SHIM_MEM, handle);

    if (m && offset + size >= offset)
        mark(m, offset, offset + size);
}

/* [LO, HI) of root M dirty again (a pre-copy round that failed). */
void shim_mem_dirty_range(struct shim_mem *m, size_t lo, size_t hi)
{
    mark(m, lo, hi);
}

void shim_mem_dirty_all(cl_mem handle)
{
    struct shim_mem *m = SHIM_AS(shim_mem, SHIM_MEM, handle);

    if (m)
        mark(m, 0, SIZE_MAX);
}

/* A rectangular region marks the span from its first to its last byte. */
void shim_mem_dirty_rect(cl_mem handle, const size_t *origin,
                         const size_t *region, size_t row_pitch,
                         size_t slice_pitch)
{
    struct shim_mem *m = SHIM_AS(shim_mem, SHIM_MEM, handle);

    if (!m || !origin || !region)
        return;
    if (row_pitch == 0)
        row_pitch = region[0];
    if (slice_pitch == 0)
        slice_pitch = region[1] * row_pitch;
    size_t first = origin[2] * slice_pitch + origin[1] * row_pitch + origin[0];
    size_t last = (origin[2] + region[2] - 1) * slice_pitch +
                  (origin[1] + region[1] - 1) * row_pitch + origin[0] +
                  region[0];
    mark(m, first, last);
}

void shim_mem_dirty_map(cl_mem handle, cl_map_flags flags, size_t offset,
                        size_t size)
{
    if (flags & (CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION))
        shim_mem_dirty(handle, offset, size);
}

/* Bumped whenever a buffer's dirty range is emptied.  Ranges otherwise only
 * grow, so a kernel whose argument objects have not changed since it marked
 * them all, in the same epoch, has nothing to mark: the launch costs one
 * load and one compare. */
static atomic_ulong dirty_epoch = 1;

/* After the shim copied the whole object to RAM: nothing is dirty. */
void shim_mem_dirty_reset(struct shim_mem *m)
{
    m->shadow_valid = true;
    atomic_store(&m->dirty_lo, SIZE_MAX);
    atomic_store(&m->dirty_hi, 0);
    atomic_fetch_add(&dirty_epoch, 1);
}

/* A launch makes every buffer behind a writable argument dirty.  Which
 * arguments are writable was settled by clSetKernelArg. */
void shim_kernel_dirty_args(struct shim_kernel *k)
{
    unsigned long epoch =
        atomic_load_explicit(&dirty_epoch, memory_order_acquire);

    if (k->marked_epoch == epoch)
        return;
    for (cl_uint i = 0; i < k->n_args; i++) {
        struct shim_arg *a = &k->args[i];
        if (a->writes && a->obj)
            mark((struct shim_mem *)a->obj, 0, SIZE_MAX);
    }
    k->marked_epoch = epoch;
}

void shim_kernel_launching(cl_kernel handle)
{
    struct shim_kernel *k = SHIM_AS(shim_kernel, SHIM_KERNEL, handle);

    if (k)
        shim_kernel_dirty_args(k);
}
