/* The remote backend's coarse-grained SVM: allocations whose program-side
 * bytes live here and whose device bytes live in a proxy buffer, moved at
 * maps, unmaps and SVM copies (docs/remoting.md, "SVM"). */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "hostmem.h"
#include "proto/log.h"
#include "remote.h"

/* Every live allocation; few per program, so a list. */
static pthread_mutex_t svm_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rc_svm *svm_list;

struct rc_svm *shim_remote_svm_find(const void *p, size_t *offset)
{
    const unsigned char *at = p;
    struct rc_svm *s;

    pthread_mutex_lock(&svm_lock);
    for (s = svm_list; s; s = s->next)
        if (at >= s->host && at < s->host + s->mem.size)
            break;
    if (s)
        *offset = (size_t)(at - s->host);
    pthread_mutex_unlock(&svm_lock);
    return s;
}

static void svm_unlink(struct rc_svm *s)
{
    pthread_mutex_lock(&svm_lock);
    for (struct rc_svm **pp = &svm_list; *pp; pp = &(*pp)->next)
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    pthread_mutex_unlock(&svm_lock);
}

void *CL_API_CALL rc_clSVMAlloc(cl_context c, cl_svm_mem_flags flags,
                                size_t size, cl_uint alignment)
{
    const cl_svm_mem_flags access =
        CL_MEM_READ_WRITE | CL_MEM_WRITE_ONLY | CL_MEM_READ_ONLY;
    static atomic_flag warned = ATOMIC_FLAG_INIT;
    Crane__SvmAlloc sa = CRANE__SVM_ALLOC__INIT;
    size_t align = alignment > 64 ? alignment : 64;
    struct rc_svm *s;

    if (flags & ~access) {
        /* The program's bytes are a copy here: sharing them at a finer
         * grain than map/unmap cannot hold. */
        if (!atomic_flag_test_and_set(&warned))
            CRN_WARN("remote: clSVMAlloc with flags 0x%llx: only "
                     "coarse-grained SVM is remoted (NULL returned)",
                     (unsigned long long)flags);
        return NULL;
    }
    if (!size || (alignment & (alignment - 1)))
        return NULL;
    if (!(s = rc_obj_new(SHIM_MEM, sizeof(*s))))
        return NULL;
    s->mem.flags = flags;
    s->mem.size = size;
    pthread_mutex_init(&s->mem.lock, NULL);
    /* In the host-memory region while it has room: maps and copies of it
     * then go in place (hostmem.h); its pages are page-aligned. */
    s->host = align <= 4096 && shim_remote_host_on()
                  ? shim_hostmem_alloc(size)
                  : NULL;
    if (!s->host)
        s->host = aligned_alloc(align, (size + align - 1) / align * align);
    if (!s->host) {
        pthread_mutex_destroy(&s->mem.lock);
        rc_forget(&s->mem.obj);
        return NULL;
    }
    sa.id = s->mem.obj.id;
    sa.context = RC_ID(c);
    sa.flags = flags;
    sa.size = size;
    sa.alignment = alignment;
    RC_MSG(m, svm_alloc, SVM_ALLOC, &sa);
    struct rc_reply r;
    cl_int err = shim_remote_call(&m, NULL, 0, NULL, 0, &r);
    shim_remote_reply_free(&r);
    if (err != CL_SUCCESS) {
        CRN_WARN("remote: clSVMAlloc of %zu bytes failed on the proxy (%d)",
                 size, err);
        shim_hostmem_free(s->host);
        pthread_mutex_destroy(&s->mem.lock);
        rc_forget(&s->mem.obj);
        return NULL;
    }
    pthread_mutex_lock(&svm_lock);
    s->next = svm_list;
    svm_list = s;
    pthread_mutex_unlock(&svm_lock);
    return s->host;
}

/* Forgets S here and releases its proxy buffer. */
static void svm_drop(struct rc_svm *s)
{
    svm_unlink(s);
    rc_release(&s->mem.obj, SHIM_MEM);
    shim_hostmem_free(s->host);
    shim_remote_mem_free(&s->mem);
}

void CL_API_CALL rc_clSVMFree(cl_context c, void *p)
{
    size_t offset;
    struct rc_svm *s = shim_remote_svm_find(p, &offset);

    (void)c;
    if (s && offset == 0)
        svm_drop(s);
}

/* The shim refuses free callbacks (they would be handed the vendor's
 * queue), so the frees happen here once the wait list completed. */
cl_int CL_API_CALL rc_clEnqueueSVMFree(
    cl_command_queue q, cl_uint n, void *ptrs[],
    void(CL_CALLBACK *fn)(cl_command_queue, cl_uint, void *[], void *),
    void *data, cl_uint n_wait, const cl_event *wait, cl_event *event)
{
    cl_event done = NULL;
    size_t offset;
    cl_int err;

    (void)data;
    if (fn || !n || !ptrs)
        return CL_INVALID_VALUE;
    for (cl_uint i = 0; i < n; i++) {
        struct rc_svm *s = shim_remote_svm_find(ptrs[i], &offset);
        if (!s || offset)
            return CL_INVALID_VALUE;
    }
    err = rc_clEnqueueMarkerWithWaitList(q, n_wait, wait, &done);
    if (err == CL_SUCCESS)
        err = rc_clWaitForEvents(1, &done);
    if (err != CL_SUCCESS) {
        if (done)
            rc_clReleaseEvent(done);
        return err;
    }
    for (cl_uint i = 0; i < n; i++) {
        struct rc_svm *s = shim_remote_svm_find(ptrs[i], &offset);
        if (s)
            svm_drop(s);
    }
    if (event)
        *event = done;
    else
        rc_clReleaseEvent(done);
    return CL_SUCCESS;
}

/* A command with nothing to do but its wait list and event. */
static cl_int nothing(cl_command_queue q, cl_uint n_wait,
                      const cl_event *wait, cl_event *event)
{
    if (!event && !n_wait)
        return CL_SUCCESS;
    return rc_clEnqueueMarkerWithWaitList(q, n_wait, wait, event);
}

/* S and P's offset in it when SIZE bytes from P lie inside one allocation. */
static struct rc_svm *span(const void *p, size_t size, size_t *offset)
{
    struct rc_svm *s = shim_remote_svm_find(p, offset);

    return s && size <= s->mem.size - *offset ? s : NULL;
}

cl_int CL_API_CALL rc_clEnqueueSVMMemcpy(cl_command_queue q, cl_bool blocking,
                                         void *dst, const void *src,
                                         size_t size, cl_uint n_wait,
                                         const cl_event *wait,
                                         cl_event *event)
{
    size_t doff = 0, soff = 0;
    struct rc_svm *d = span(dst, size, &doff), *s = span(src, size, &soff);
    cl_int err;

    if (!dst || !src || !size)
        return CL_INVALID_VALUE;
    if (d && s)
        return rc_clEnqueueCopyBuffer(q, (cl_mem)&s->mem, (cl_mem)&d->mem,
                                      soff, doff, size, n_wait, wait, event);
    if (d)
        return rc_clEnqueueWriteBuffer(q, (cl_mem)&d->mem, blocking, doff,
                                       size, src, n_wait, wait, event);
    if (s)
        return rc_clEnqueueReadBuffer(q, (cl_mem)&s->mem, blocking, soff,
                                      size, dst, n_wait, wait, event);
    /* Host to host: after the wait list, here. */
    cl_event done = NULL;
    err = rc_clEnqueueMarkerWithWaitList(q, n_wait, wait, &done);
    if (err == CL_SUCCESS)
        err = rc_clWaitForEvents(1, &done);
    if (err == CL_SUCCESS)
        memmove(dst, src, size);
    if (done && (err != CL_SUCCESS || !event))
        rc_clReleaseEvent(done);
    else if (done)
        *event = done;
    return err;
}

cl_int CL_API_CALL rc_clEnqueueSVMMemFill(cl_command_queue q, void *p,
                                          const void *pattern,
                                          size_t pattern_size, size_t size,
                                          cl_uint n_wait, const cl_event *wait,
                                          cl_event *event)
{
    size_t offset;
    struct rc_svm *s = span(p, size, &offset);

    if (!s)
        return CL_INVALID_VALUE;
    return rc_clEnqueueFillBuffer(q, (cl_mem)&s->mem, pattern, pattern_size,
                                  offset, size, n_wait, wait, event);
}

/* A map brings the proxy's bytes into the program's (unless it will
 * overwrite them); the unmap of a writing map sends them back. */
cl_int CL_API_CALL rc_clEnqueueSVMMap(cl_command_queue q, cl_bool blocking,
                                      cl_map_flags flags, void *p,
                                      size_t size, cl_uint n_wait,
                                      const cl_event *wait, cl_event *event)
{
    size_t offset;
    struct rc_svm *s = span(p, size, &offset);
    struct rc_map *mp;
    cl_int err;

    if (!s || !size)
        return CL_INVALID_VALUE;
    if (!(mp = calloc(1, sizeof(*mp))))
        return CL_OUT_OF_HOST_MEMORY;
    if (flags & CL_MAP_WRITE_INVALIDATE_REGION)
        err = nothing(q, n_wait, wait, event);
    else
        err = rc_clEnqueueReadBuffer(q, (cl_mem)&s->mem, blocking, offset,
                                     size, p, n_wait, wait, event);
    if (err != CL_SUCCESS) {
        free(mp);
        return err;
    }
    mp->ptr = p;
    mp->offset = offset;
    mp->size = size;
    mp->writes = flags & (CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION);
    pthread_mutex_lock(&s->mem.lock);
    mp->next = s->mem.maps;
    s->mem.maps = mp;
    pthread_mutex_unlock(&s->mem.lock);
    return CL_SUCCESS;
}

cl_int CL_API_CALL rc_clEnqueueSVMUnmap(cl_command_queue q, void *p,
                                        cl_uint n_wait, const cl_event *wait,
                                        cl_event *event)
{
    size_t offset;
    struct rc_svm *s = shim_remote_svm_find(p, &offset);
    struct rc_map *mp = NULL;

    if (!s)
        return CL_INVALID_VALUE;
    pthread_mutex_lock(&s->mem.lock);
    for (struct rc_map **pp = &s->mem.maps; *pp; pp = &(*pp)->next)
        if ((*pp)->ptr == p) {
            mp = *pp;
            *pp = mp->next;
            break;
        }
    pthread_mutex_unlock(&s->mem.lock);
    if (!mp)
        return CL_INVALID_VALUE;
    cl_int err = mp->writes
                     ? rc_clEnqueueWriteBuffer(q, (cl_mem)&s->mem, CL_FALSE,
                                               mp->offset, mp->size, p,
                                               n_wait, wait, event)
                     : nothing(q, n_wait, wait, event);
    free(mp);
    return err;
}

/* A placement hint: the proxy's buffer is where the device wants it. */
cl_int CL_API_CALL rc_clEnqueueSVMMigrateMem(cl_command_queue q, cl_uint n,
                                             const void **ptrs,
                                             const size_t *sizes,
                                             cl_mem_migration_flags flags,
                                             cl_uint n_wait,
                                             const cl_event *wait,
                                             cl_event *event)
{
    size_t offset;

    (void)flags;
    if (!n || !ptrs)
        return CL_INVALID_VALUE;
    for (cl_uint i = 0; i < n; i++)
        if (!span(ptrs[i], sizes && sizes[i] ? sizes[i] : 1, &offset))
            return CL_INVALID_VALUE;
    return nothing(q, n_wait, wait, event);
}
