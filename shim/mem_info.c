/* Memory objects' info (clGetMemObjectInfo, clGetImageInfo) and their
 * destructor callbacks, kept by the shim so that a switch fires none. */
#include <errno.h>
#include <stdlib.h>

#include "callbacks.h"
#include "mem_int.h"
#include "entry.h"

static pthread_mutex_t cb_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mem_cb {
    struct shim_mem *mem;
    struct shim_callback *list;
    struct mem_cb *next;
} *mem_cbs;

/* clGetMemObjectInfo (cl_api.def): the shim's handles, the flags and
 * properties the program gave and its own host pointer. */
bool shim_mem_info_own(struct shim_mem *m, const struct shim_info_ask *ask,
                       cl_int *err)
{
    struct shim_info_own own = {
        CL_MEM_REFERENCE_COUNT, atomic_load(&m->obj.app_refs),
        {CL_MEM_CONTEXT, CL_MEM_ASSOCIATED_MEMOBJECT},
        {m->context, m->parent}};
    /* The program's own pointer only, never the shim's memory. */
    void *host_ptr = m->own_host ? NULL : m->host_ptr;
    size_t n_props = shim_props_len(m->props, sizeof(*m->props));

    if (shim_info_own(&own, ask, err))
        return true;
    if (ask->param == CL_MEM_FLAGS)
        *err = shim_info_give(ask, &m->reported_flags,
                              sizeof(m->reported_flags));
    else if (ask->param == CL_MEM_HOST_PTR)
        *err = shim_info_give(ask, &host_ptr, sizeof(host_ptr));
    else if (ask->param == CL_MEM_PROPERTIES)
        *err = shim_info_give(ask, m->props,
                              n_props * sizeof(cl_mem_properties));
    else
        return false;
    return true;
}

/* clGetImageInfo (cl_api.def): an image's buffer is the shim's handle. */
bool shim_image_info_own(struct shim_mem *m, const struct shim_info_ask *ask,
                         cl_int *err)
{
    cl_mem parent = (cl_mem)m->parent;

    if (ask->param != CL_IMAGE_BUFFER)
        return false;
    *err = shim_info_give(ask, &parent, sizeof(parent));
    return true;
}

/* A CL_MEM_USE_HOST_PTR image's pitches are the program's memory's, as its
 * vendor reports them natively; a twin elsewhere (the proxy's, made from
 * packed rows) has its own. */
void shim_image_info_after(struct shim_mem *m,
                           const struct shim_info_ask *ask, cl_int err)
{
    size_t given = ask->param == CL_IMAGE_ROW_PITCH ? m->desc.image_row_pitch
                   : ask->param == CL_IMAGE_SLICE_PITCH
                       ? m->desc.image_slice_pitch
                       : 0;

    if (err == CL_SUCCESS && given && (m->flags & CL_MEM_USE_HOST_PTR) &&
        ask->value && ask->size >= sizeof(size_t))
        *(size_t *)ask->value = given;
}

SHIM_EXPORT CL_API_ENTRY cl_int CL_API_CALL clSetMemObjectDestructorCallback(
    cl_mem memobj, void(CL_CALLBACK *pfn_notify)(cl_mem, void *),
    void *user_data)
{
    struct shim_mem *m = SHIM_AS(shim_mem, SHIM_MEM, memobj);
    struct mem_cb *e;
    int rc;

    if (!m)
        return CL_INVALID_MEM_OBJECT;
    if (!pfn_notify)
        return CL_INVALID_VALUE;
    pthread_mutex_lock(&cb_lock);
    for (e = mem_cbs; e && e->mem != m; e = e->next)
        ;
    if (!e && (e = calloc(1, sizeof(*e)))) {
        e->mem = m;
        e->next = mem_cbs;
        mem_cbs = e;
    }
    rc = e ? shim_callback_push(&e->list, (shim_destructor_fn)pfn_notify,
                                user_data)
           : -ENOMEM;
    pthread_mutex_unlock(&cb_lock);
    return rc < 0 ? CL_OUT_OF_HOST_MEMORY : CL_SUCCESS;
}

/* The destructor callbacks of M, run and forgotten (its destruction). */
void shim_mem_callbacks_fire(struct shim_mem *m)
{
    struct mem_cb **pp, *e = NULL;

    pthread_mutex_lock(&cb_lock);
    for (pp = &mem_cbs; *pp; pp = &(*pp)->next)
        if ((*pp)->mem == m) {
            e = *pp;
            *pp = e->next;
            break;
        }
    pthread_mutex_unlock(&cb_lock);
    if (e) {
        shim_callback_fire(&e->list, m);
        free(e);
    }
}
