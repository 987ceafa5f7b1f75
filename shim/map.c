/* Maps that survive a switch: every map is recorded on its memory object,
 * and a map whose pointer does not belong to the vendor (shim memory, or a
 * CL_MEM_USE_HOST_PTR buffer's own host memory) is "carried" across a
 * switch: the vendor's mapping is ended at the switch, the program keeps
 * its pointer, and its unmap writes the bytes into whatever backend the
 * object lives on by then.
 *
 * A vendor map that is not carriable (a pointer into the vendor's memory)
 * refuses the switch once, and from then on maps use shim memory (a read
 * into it at the map, a write back at the unmap), so a program that keeps
 * some buffer mapped most of the time is switchable after its next
 * unmap/map cycle.  CRANE_PORTABLE_MAPS=1 starts that way.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "check.h"
#include "hostmem.h"
#include "proto/log.h"
#include "mem_int.h"
#include "shim.h"


/* One map of one memory object. */
struct shim_map {
    void *ptr;                   /* what the program got */
    bool owned;                  /* shim memory, freed at the unmap */
    bool carried;                /* no vendor mapping: the shim unmaps */
    bool image;
    cl_map_flags flags;
    size_t offset, size;         /* buffers */
    size_t origin[3], region[3], row_pitch, slice_pitch;  /* images */
    struct shim_map *next;
};

/* Maps use shim memory from now on (after a switch was refused for a
 * vendor map, or CRANE_PORTABLE_MAPS=1). */
atomic_bool shim_maps_portable;

static pthread_mutex_t maps_lock = PTHREAD_MUTEX_INITIALIZER;

static bool writes(cl_map_flags f)
{
    return f & (CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION);
}

static void record(struct shim_mem *m, struct shim_map *mp)
{
    pthread_mutex_lock(&maps_lock);
    mp->next = m->map_list;
    m->map_list = mp;
    pthread_mutex_unlock(&maps_lock);
    atomic_fetch_add(&m->maps, 1);
}

static struct shim_map *take(struct shim_mem *m, const void *ptr)
{
    struct shim_map *mp = NULL;

    pthread_mutex_lock(&maps_lock);
    for (struct shim_map **pp = &m->map_list; *pp; pp = &(*pp)->next)
        if ((*pp)->ptr == ptr) {
            mp = *pp;
            *pp = mp->next;
            break;
        }
    pthread_mutex_unlock(&maps_lock);
    if (mp)
        atomic_fetch_sub(&m->maps, 1);
    return mp;
}

/* Whether PTR lies in the program's own host memory behind M
 * (CL_MEM_USE_HOST_PTR, maybe through a parent): that memory outlives
 * every backend. */
static bool in_host_memory(struct shim_mem *m, const void *ptr)
{
    const struct shim_mem *r = shim_mem_root(m);
    const char *p = ptr, *h = r->host_ptr;

    return h && shim_mem_over_host(r) && p >= h && p < h + r->size;
}

/* Whether MP is the remote backend's map in the host-memory region, which
 * a switch carries: that memory outlives every backend.  Not for a buffer
 * whose host access flags forbid host reads or writes: the carried map's
 * unmap writes through whatever vendor the buffer lives on by then, which
 * may refuse that. */
static bool carriable_in_region(struct shim_mem *m, const struct shim_map *mp)
{
    return !mp->image && !in_host_memory(m, mp->ptr) &&
           !(shim_mem_host_access(m) &
             (CL_MEM_HOST_NO_ACCESS | CL_MEM_HOST_READ_ONLY |
              CL_MEM_HOST_WRITE_ONLY)) &&
           shim_hostmem_owns(mp->ptr);
}

static bool portable(struct shim_mem *m)
{
    /* Host-pointer buffers map onto the program's memory anyway. */
    return (shim_config.portable_maps ||
            atomic_load_explicit(&shim_maps_portable,
                                 memory_order_relaxed)) &&
           !shim_mem_over_host(shim_mem_root(m)) &&
           m->type != SHIM_PIPE;
}

/* Whether a map of M on Q goes into shim memory (map_own).  A map that
 * M's host access flags forbid is the vendor's, so that its verdict is the
 * vendor's own; one they allow whose bytes the host may not read (a map
 * for writing of a host-write-only buffer or image) is read through the
 * device, which needs an in-order queue, else it is the vendor's too. */
static bool map_in_shim(struct shim_queue *q, struct shim_mem *m,
                        cl_map_flags flags)
{
    cl_command_queue_properties props = 0;
    void *rq = q->obj.real, *rm = m->obj.real;

    if (!portable(m) || m->context != q->context)
        return false;
    if (shim_mem_host_forbids(m, rm, flags))
        return false;
    if ((flags & CL_MAP_WRITE_INVALIDATE_REGION) ||
        !shim_mem_host_forbids(m, rm, CL_MAP_READ))
        return true;
    /* PoCL crashes copying an image over a buffer into a buffer. */
    if (m->type == SHIM_IMAGE && m->parent)
        return false;
    return VENDOR(rq)->clGetCommandQueueInfo(rq, CL_QUEUE_PROPERTIES,
                                             sizeof(props), &props,
                                             NULL) == CL_SUCCESS &&
           !(props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
}

/* The shim's own mapping: memory, filled unless the program overwrites
 * it all; the command's event is the read's (or a marker's). */
static void *map_own(struct shim_queue *q, struct shim_mem *m,
                     struct shim_map *mp, cl_bool blocking,
                     struct shim_xlate *wl, cl_event *ev, cl_int *err)
{
    void *rq = q->obj.real, *rm = m->obj.real;
    size_t len = mp->image
                     ? mp->row_pitch * mp->region[1] * mp->region[2]
                     : mp->size;
    void *p = NULL;
    cl_event done = NULL;

    /* Remoted, a buffer's bytes move in place from and to the host-memory
     * region while it has room. */
    if (!mp->image && shim_real_on_remote(rq) &&
        shim_backend_host_on(shim_proxy_backend()))
        p = shim_hostmem_alloc(len);
    if (!p)
        p = aligned_alloc(4096, ((len ? len : 1) + 4095) & ~(size_t)4095);

    if (!p) {
        *err = CL_OUT_OF_HOST_MEMORY;
        return NULL;
    }
    if (mp->flags & CL_MAP_WRITE_INVALIDATE_REGION)
        *err = VENDOR(rq)->clEnqueueMarkerWithWaitList(
            rq, wl->n, (const cl_event *)wl->real, ev);
    else if (shim_mem_host_forbids(m, rm, CL_MAP_READ)) {
        /* A map for writing of a buffer the host may only write: its
         * bytes come through the device (map_common chose this). */
        cl_event *last = ev ? ev : blocking ? &done : NULL;
        if (mp->image)
            *err = shim_hostcopy_read_image_events(
                rq, m->context->obj.real, rm, mp->origin, mp->region, len, p,
                wl->n, (const cl_event *)wl->real, last);
        else
            *err = shim_hostcopy_read_events(
                rq, m->context->obj.real, rm, mp->offset, mp->size, p, wl->n,
                (const cl_event *)wl->real, last);
        if (*err == CL_SUCCESS && blocking)
            *err = VENDOR(*last)->clWaitForEvents(1, last);
        if (done)
            VENDOR(done)->clReleaseEvent(done);
    } else if (mp->image)
        *err = VENDOR(rq)->clEnqueueReadImage(
            rq, rm, blocking, mp->origin, mp->region, mp->row_pitch,
            mp->slice_pitch, p, wl->n, (const cl_event *)wl->real, ev);
    else
        *err = VENDOR(rq)->clEnqueueReadBuffer(
            rq, rm, blocking, mp->offset, mp->size, p, wl->n,
            (const cl_event *)wl->real, ev);
    if (*err != CL_SUCCESS) {
        shim_hostmem_free(p);
        return NULL;
    }
    mp->owned = mp->carried = true;
    return p;
}

static void *map_common(cl_command_queue command_queue, cl_mem memobj,
                        cl_bool blocking, cl_map_flags flags,
                        struct shim_map *mp, cl_uint n_wait,
                        const cl_event *wait, cl_event *event,
                        cl_int *errcode_ret, bool image)
{
    struct shim_queue *q = SHIM_AS(shim_queue, SHIM_QUEUE, command_queue);
    struct shim_mem *m = SHIM_AS(shim_mem, SHIM_MEM, memobj);
    struct shim_xlate wl;
    cl_event ev = NULL;
    cl_int err = CL_INVALID_COMMAND_QUEUE;
    void *p = NULL;

    if (!q)
        goto out;
    err = CL_INVALID_MEM_OBJECT;
    if (!m)
        goto out;
    shim_enter();
    err = shim_xlate_events(&wl, wait, n_wait);
    if (err == CL_SUCCESS)
        err = shim_check_map(command_queue, memobj, image, mp->offset,
                             mp->size, mp->origin, mp->region, n_wait, wait,
                             flags);
    if (err == CL_SUCCESS) {
        void *rq = q->obj.real, *rm = m->obj.real;
        cl_event *evp = event ? &ev : NULL;
        mp->flags = flags;
        mp->image = image;
        if (image)
            shim_mem_dirty_map(memobj, flags, 0, SIZE_MAX);
        else
            shim_mem_dirty_map(memobj, flags, mp->offset, mp->size);
        if (map_in_shim(q, m, flags))
            p = map_own(q, m, mp, blocking, &wl, evp, &err);
        else if (image)
            p = VENDOR(rq)->clEnqueueMapImage(
                rq, rm, blocking, flags, mp->origin, mp->region,
                &mp->row_pitch, &mp->slice_pitch, wl.n,
                (const cl_event *)wl.real, evp, &err);
        else
            p = VENDOR(rq)->clEnqueueMapBuffer(
                rq, rm, blocking, flags, mp->offset, mp->size, wl.n,
                (const cl_event *)wl.real, evp, &err);
        if (p) {
            mp->ptr = p;
            record(m, mp);
            mp = NULL;
            if (event)
                err = shim_event_wrap(event, ev, q);
        }
        shim_xlate_done(&wl);
    }
    shim_leave();
out:
    free(mp);
    if (errcode_ret)
        *errcode_ret = err;
    return p;
}

SHIM_EXPORT CL_API_ENTRY void *CL_API_CALL clEnqueueMapBuffer(
    cl_command_queue command_queue, cl_mem buffer, cl_bool blocking_map,
    cl_map_flags map_flags, size_t offset, size_t size,
    cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
    cl_event *event, cl_int *errcode_ret)
{
    struct shim_map *mp = calloc(1, sizeof(*mp));

    if (!mp) {
        if (errcode_ret)
            *errcode_ret = CL_OUT_OF_HOST_MEMORY;
        return NULL;
    }
    mp->offset = offset;
    mp->size = size;
    return map_common(command_queue, buffer, blocking_map, map_flags, mp,
                      num_events_in_wait_list, event_wait_list, event,
                      errcode_ret, false);
}

SHIM_EXPORT CL_API_ENTRY void *CL_API_CALL clEnqueueMapImage(
    cl_command_queue command_queue, cl_mem image, cl_bool blocking_map,
    cl_map_flags map_flags, const size_t *origin, const size_t *region,
    size_t *image_row_pitch, size_t *image_slice_pitch,
    cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
    cl_event *event, cl_int *errcode_ret)
{
    struct shim_mem *m = SHIM_AS(shim_mem, SHIM_MEM, image);
    struct shim_map *mp;
    void *p;

    if (!origin || !region || !image_row_pitch) {
        if (errcode_ret)
            *errcode_ret = CL_INVALID_VALUE;
        return NULL;
    }
    if (!(mp = calloc(1, sizeof(*mp)))) {
        if (errcode_ret)
            *errcode_ret = CL_OUT_OF_HOST_MEMORY;
        return NULL;
    }
    memcpy(mp->origin, origin, sizeof(mp->origin));
    memcpy(mp->region, region, sizeof(mp->region));
    /* The shim's own image mapping is packed. */
    if (m && m->type == SHIM_IMAGE) {
        cl_mem_object_type t = m->desc.image_type;
        mp->row_pitch = region[0] * shim_image_elem_size(&m->format);
        if (t == CL_MEM_OBJECT_IMAGE3D || t == CL_MEM_OBJECT_IMAGE2D_ARRAY)
            mp->slice_pitch = mp->row_pitch * region[1];
        else if (t == CL_MEM_OBJECT_IMAGE1D_ARRAY)
            mp->slice_pitch = mp->row_pitch;
    }
    p = map_common(command_queue, image, blocking_map, map_flags, mp,
                   num_events_in_wait_list, event_wait_list, event,
                   errcode_ret, true);
    if (p) {
        /* The record holds the pitches the pointer was given with. */
        pthread_mutex_lock(&maps_lock);
        for (struct shim_map *r = m->map_list; r; r = r->next)
            if (r->ptr == p) {
                *image_row_pitch = r->row_pitch;
                if (image_slice_pitch)
                    *image_slice_pitch = r->slice_pitch;
                break;
            }
        pthread_mutex_unlock(&maps_lock);
    }
    return p;
}

/* A carried map's unmap: the program's bytes go to the object where it
 * lives now; the command's event is that write's (or a marker's). */
static cl_int unmap_carried(struct shim_queue *q, struct shim_mem *m,
                            struct shim_map *mp, struct shim_xlate *wl,
                            cl_event *ev)
{
    void *rq = q->obj.real, *rm = m->obj.real;
    /* Shim memory is freed at once, so its write must be done first. */
    cl_bool blocking = mp->owned;
    cl_int err;

    if (!writes(mp->flags))
        err = VENDOR(rq)->clEnqueueMarkerWithWaitList(
            rq, wl->n, (const cl_event *)wl->real, ev);
    else if (mp->image)
        err = VENDOR(rq)->clEnqueueWriteImage(
            rq, rm, blocking, mp->origin, mp->region, mp->row_pitch,
            mp->slice_pitch, mp->ptr, wl->n, (const cl_event *)wl->real, ev);
    else
        err = VENDOR(rq)->clEnqueueWriteBuffer(
            rq, rm, blocking, mp->offset, mp->size, mp->ptr, wl->n,
            (const cl_event *)wl->real, ev);
    if (err == CL_SUCCESS && writes(mp->flags)) {
        /* The device copy changed after the last switch's copy. */
        if (mp->image)
            shim_mem_dirty_all((cl_mem)m);
        else
            shim_mem_dirty((cl_mem)m, mp->offset, mp->size);
    }
    return err;
}

SHIM_EXPORT CL_API_ENTRY cl_int CL_API_CALL clEnqueueUnmapMemObject(
    cl_command_queue command_queue, cl_mem memobj, void *mapped_ptr,
    cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
    cl_event *event)
{
    struct shim_queue *q = SHIM_AS(shim_queue, SHIM_QUEUE, command_queue);
    struct shim_mem *m = SHIM_AS(shim_mem, SHIM_MEM, memobj);
    struct shim_map *mp;
    struct shim_xlate wl;
    cl_event ev = NULL;
    cl_int err;

    if (!q)
        return CL_INVALID_COMMAND_QUEUE;
    if (!m)
        return CL_INVALID_MEM_OBJECT;
    shim_enter();
    err = shim_xlate_events(&wl, event_wait_list, num_events_in_wait_list);
    if (err == CL_SUCCESS) {
        mp = take(m, mapped_ptr);
        cl_event *evp = event ? &ev : NULL;
        if (mp && mp->carried && m->context == q->context)
            err = unmap_carried(q, m, mp, &wl, evp);
        else
            err = VENDOR(q->obj.real)->clEnqueueUnmapMemObject(
                q->obj.real, m->obj.real, mapped_ptr, wl.n,
                (const cl_event *)wl.real, evp);
        if (err == CL_SUCCESS) {
            if (mp && mp->owned)
                shim_hostmem_free(mp->ptr);
            free(mp);
            if (event)
                err = shim_event_wrap(event, ev, q);
        } else if (mp) {
            record(m, mp);  /* still mapped */
        }
        shim_xlate_done(&wl);
    }
    shim_leave();
    return err;
}

/* --- at a switch (rehome.c) ------------------------------------------------ */

/* 0 when every map can be carried across a switch; else -EBUSY, and maps
 * use shim memory from now on so that the next attempt can go. */
int shim_maps_check(void)
{
    const struct shim_mem *busy = NULL;
    const struct shim_map *bmp = NULL;

    pthread_mutex_lock(&maps_lock);
    for (struct shim_obj *o = shim_store_first(); o && !busy; o = o->next) {
        struct shim_mem *m = (void *)o;
        if (o->kind != SHIM_MEM)
            continue;
        for (const struct shim_map *mp = m->map_list; mp; mp = mp->next)
            if (!mp->carried && !in_host_memory(m, mp->ptr) &&
                !carriable_in_region(m, mp)) {
                busy = m;
                bmp = mp;
                break;
            }
    }
    if (busy) {
        bool was = atomic_exchange(&shim_maps_portable, true);
        shim_switch_refuse(
            -EBUSY,
            "%s of %zu bytes (flags 0x%llx) is mapped into the vendor's "
            "memory (%zu bytes at %zu, map flags 0x%llx), which would not "
            "survive; %s",
            busy->type == SHIM_IMAGE ? "an image" : "a buffer", busy->size,
            (unsigned long long)busy->flags, bmp->size, bmp->offset,
            (unsigned long long)bmp->flags,
            was ? "it must be unmapped (maps made since use shim memory)"
                : "maps use shim memory from now on, so the next attempt "
                  "can carry them once it is unmapped");
    }
    pthread_mutex_unlock(&maps_lock);
    return busy ? -EBUSY : 0;
}

/* Ends the vendor's side of every map of the program's own host memory
 * (the program keeps its pointer; its unmap is the shim's from now on).
 * Q_FOR gives a queue of the object's context.  0 or -EIO, logged. */
int shim_maps_carry(cl_command_queue (*q_for)(struct shim_context *, void *),
                    void *arg)
{
    int rc = 0;

    pthread_mutex_lock(&maps_lock);
    for (struct shim_obj *o = shim_store_first(); o && !rc; o = o->next) {
        struct shim_mem *m = (void *)o;
        if (o->kind != SHIM_MEM)
            continue;
        for (struct shim_map *mp = m->map_list; mp && !rc; mp = mp->next) {
            if (mp->carried)
                continue;
            /* The backend's map in the host-memory region: its memory
             * stays, as the map's from now on, once the backend let go. */
            bool keep = carriable_in_region(m, mp);
            if (keep)
                shim_hostmem_retain(mp->ptr);
            cl_command_queue q = q_for(m->context, arg);
            cl_int err = q ? VENDOR(q)->clEnqueueUnmapMemObject(
                                 q, m->obj.real, mp->ptr, 0, NULL, NULL)
                           : CL_OUT_OF_RESOURCES;
            if (err == CL_SUCCESS)
                err = VENDOR(q)->clFinish(q);
            if (err != CL_SUCCESS) {
                CRN_ERROR("re-home: ending the vendor's map of a %zu-byte "
                          "object failed: %d", m->size, err);
                if (keep)
                    shim_hostmem_free(mp->ptr);
                rc = -EIO;
            } else {
                mp->carried = true;
                mp->owned = mp->owned || keep;
                if (keep)
                    CRN_DEBUG("re-home: a map of %zu bytes in host memory "
                              "carried across", mp->size);
            }
        }
    }
    pthread_mutex_unlock(&maps_lock);
    return rc;
}

bool shim_maps_cover(struct shim_mem *m)
{
    bool all = false;

    if (m->type != SHIM_BUFFER || m->parent)
        return false;
    pthread_mutex_lock(&maps_lock);
    for (const struct shim_map *mp = m->map_list; mp && !all; mp = mp->next)
        all = writes(mp->flags) && mp->offset == 0 && mp->size >= m->size;
    pthread_mutex_unlock(&maps_lock);
    return all;
}

/* Maps left when an object is destroyed: the shim's memory goes too. */
void shim_maps_free(struct shim_mem *m)
{
    pthread_mutex_lock(&maps_lock);
    while (m->map_list) {
        struct shim_map *mp = m->map_list;
        m->map_list = mp->next;
        if (mp->owned)
            shim_hostmem_free(mp->ptr);
        free(mp);
    }
    pthread_mutex_unlock(&maps_lock);
}
