/* The remote backend's maps: mapped regions live in the program's memory
 * (a buffer's in the host-memory region of the shared area where the
 * proxy took one, hostmem.h) and travel at map and unmap. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hostmem.h"
#include "proto/log.h"
#include "remote.h"

/* --- maps */

/* A mapped region lives in client memory: the host pointer's own bytes
 * for CL_MEM_USE_HOST_PTR buffers, a fresh allocation otherwise (a
 * buffer's from the host-memory region, whose bytes the proxy moves in
 * place, while it has room); the map reads it in (unless the program will
 * overwrite it all), the unmap writes it back if the program may have
 * written. */
static void *map_alloc(struct rc_mem *m, size_t offset, size_t len,
                       bool *owned)
{
    void *p = NULL;

    *owned = false;
    if (m->host_ptr && !m->elem)
        return (char *)m->host_ptr + offset;
    *owned = true;
    if (!m->elem && shim_remote_host_on() && !(p = shim_hostmem_alloc(len)))
        CRN_DEBUG("remote: no room for %zu bytes in the host-memory "
                  "region: this map lives in the heap", len);
    return p ? p : aligned_alloc(4096, ((len ? len : 1) + 4095) &
                                           ~(size_t)4095);
}

/* Frees a region allocation once the write that reads it completed (the
 * callbacks thread). */
static void CL_CALLBACK free_when_written(cl_event e, cl_int status,
                                          void *p)
{
    (void)e;
    (void)status;
    shim_hostmem_free(p);
}

static void map_record(struct rc_mem *m, struct rc_map *mp)
{
    pthread_mutex_lock(&m->lock);
    mp->next = m->maps;
    m->maps = mp;
    pthread_mutex_unlock(&m->lock);
}

void *CL_API_CALL rc_clEnqueueMapBuffer(cl_command_queue q, cl_mem b,
                                        cl_bool blocking, cl_map_flags flags,
                                        size_t offset, size_t size, cl_uint n,
                                        const cl_event *wl, cl_event *ev,
                                        cl_int *errcode_ret)
{
    struct rc_mem *m = (void *)b;
    struct rc_map *mp = calloc(1, sizeof(*mp));
    cl_int err = CL_OUT_OF_HOST_MEMORY;

    (void)blocking;
    if (!mp || !(mp->ptr = map_alloc(m, offset, size, &mp->owned)))
        goto fail;
    mp->offset = offset;
    mp->size = size;
    mp->writes = flags & (CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION);
    if (flags & CL_MAP_WRITE_INVALIDATE_REGION)
        err = rc_sync_call(CRANE__SYNC_OP__SYNC_MARKER, q, n, wl, ev, false);
    else
        err = rc_clEnqueueReadBuffer(q, b, CL_TRUE, offset, size, mp->ptr, n,
                                     wl, ev);
    if (err != CL_SUCCESS)
        goto fail;
    map_record(m, mp);
    if (errcode_ret)
        *errcode_ret = CL_SUCCESS;
    return mp->ptr;
fail:
    if (mp && mp->owned)
        shim_hostmem_free(mp->ptr);
    free(mp);
    if (errcode_ret)
        *errcode_ret = err;
    return NULL;
}

void *CL_API_CALL rc_clEnqueueMapImage(cl_command_queue q, cl_mem image,
                                       cl_bool blocking, cl_map_flags flags,
                                       const size_t *origin,
                                       const size_t *region, size_t *row_pitch,
                                       size_t *slice_pitch, cl_uint n,
                                       const cl_event *wl, cl_event *ev,
                                       cl_int *errcode_ret)
{
    struct rc_mem *m = (void *)image;
    struct rc_map *mp = NULL;
    cl_int err = CL_INVALID_VALUE;

    (void)blocking;
    if (!origin || !region || !row_pitch)
        goto fail;
    size_t row = region[0] * rc_elem_of(image);
    size_t len = row * region[1] * region[2];
    err = CL_OUT_OF_HOST_MEMORY;
    if (!(mp = calloc(1, sizeof(*mp))) ||
        !(mp->ptr = map_alloc(m, 0, len, &mp->owned)))
        goto fail;
    mp->image = true;
    memcpy(mp->origin, origin, sizeof(mp->origin));
    memcpy(mp->region, region, sizeof(mp->region));
    mp->writes = flags & (CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION);
    *row_pitch = row;
    if (slice_pitch)
        *slice_pitch = region[2] > 1 || region[1] > 1 ? row * region[1] : 0;
    if (flags & CL_MAP_WRITE_INVALIDATE_REGION)
        err = rc_sync_call(CRANE__SYNC_OP__SYNC_MARKER, q, n, wl, ev, false);
    else
        err = rc_clEnqueueReadImage(q, image, CL_TRUE, origin, region, row,
                                    row * region[1], mp->ptr, n, wl, ev);
    if (err != CL_SUCCESS)
        goto fail;
    map_record(m, mp);
    if (errcode_ret)
        *errcode_ret = CL_SUCCESS;
    return mp->ptr;
fail:
    if (mp && mp->owned)
        shim_hostmem_free(mp->ptr);
    free(mp);
    if (errcode_ret)
        *errcode_ret = err;
    return NULL;
}

/* The unmap's write of a buffer map whose bytes stay in the host-memory
 * region until the proxy has written them: the memory goes back to the
 * region when the write's event completes, not before (another map could
 * take it meanwhile).  A watch that cannot be set keeps it (lost room,
 * never bytes changed under the device). */
static cl_int unmap_in_place(cl_command_queue q, cl_mem h, struct rc_map *mp,
                             cl_uint n, const cl_event *wl, cl_event *ev)
{
    cl_event own = NULL, *evp = ev ? ev : &own;
    cl_int err = rc_clEnqueueWriteBuffer(q, h, CL_FALSE, mp->offset,
                                         mp->size, mp->ptr, n, wl, evp);

    if (err != CL_SUCCESS)
        return err;
    /* Our own call: it neither takes nor causes the program's deferred
     * error. */
    bool was = shim_own_calls;
    shim_own_calls = true;
    err = rc_clSetEventCallback(*evp, CL_COMPLETE, free_when_written,
                                mp->ptr);
    shim_own_calls = was;
    if (err != CL_SUCCESS)
        CRN_WARN("remote: cannot watch an unmap's write: %zu bytes of the "
                 "host-memory region stay taken", mp->size);
    mp->owned = false;           /* the callback frees it */
    if (own)
        rc_clReleaseEvent(own);
    return CL_SUCCESS;
}

cl_int CL_API_CALL rc_clEnqueueUnmapMemObject(cl_command_queue q, cl_mem h,
                                              void *ptr, cl_uint n,
                                              const cl_event *wl, cl_event *ev)
{
    struct rc_mem *m = (void *)h;
    struct rc_map *mp = NULL;
    cl_int err;

    pthread_mutex_lock(&m->lock);
    for (struct rc_map **pp = &m->maps; *pp; pp = &(*pp)->next)
        if ((*pp)->ptr == ptr) {
            mp = *pp;
            *pp = mp->next;
            break;
        }
    pthread_mutex_unlock(&m->lock);
    if (!mp)
        return CL_INVALID_VALUE;
    if (!mp->writes)
        err = rc_sync_call(CRANE__SYNC_OP__SYNC_MARKER, q, n, wl, ev, false);
    else if (mp->image)
        err = rc_clEnqueueWriteImage(q, h, CL_FALSE, mp->origin, mp->region, 0,
                                     0, mp->ptr, n, wl, ev);
    else if (mp->owned && shim_remote_host_on() &&
             shim_hostmem_owns(mp->ptr))
        err = unmap_in_place(q, h, mp, n, wl, ev);
    else
        err = rc_clEnqueueWriteBuffer(q, h, CL_FALSE, mp->offset, mp->size,
                                      mp->ptr, n, wl, ev);
    /* The bytes left with the call (or are read in place, above): the
     * memory can go. */
    if (mp->owned)
        shim_hostmem_free(mp->ptr);
    free(mp);
    return err;
}

void shim_remote_mem_free(struct rc_mem *m)
{
    while (m->maps) {
        struct rc_map *mp = m->maps;
        m->maps = mp->next;
        if (mp->owned)
            shim_hostmem_free(mp->ptr);
        free(mp);
    }
    pthread_mutex_destroy(&m->lock);
    free(m);
}
