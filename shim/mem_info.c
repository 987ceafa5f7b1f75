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

SHIM_EXPORT CL_API_ENTRY cl_int CL_API_CALL clGetMemObjectInfo(
    cl_mem memobj, cl_mem_info param_name, size_t param_value_size,
    void *param_value, size_t *param_value_size_ret)
{
    struct shim_mem *m = SHIM_AS(shim_mem, SHIM_MEM, memobj);
    cl_int err;

    if (!m)
        return CL_INVALID_MEM_OBJECT;
    struct shim_info_own own = {
        CL_MEM_REFERENCE_COUNT, atomic_load(&m->obj.app_refs),
        {CL_MEM_CONTEXT, CL_MEM_ASSOCIATED_MEMOBJECT},
        {m->context, m->parent}};
    if (shim_info_own(&own, param_name, param_value_size, param_value,
                      param_value_size_ret, &err))
        return err;
    switch (param_name) {
    case CL_MEM_FLAGS:
        return shim_info_return(&m->reported_flags, sizeof(m->reported_flags),
                                param_value_size, param_value,
                                param_value_size_ret);
    case CL_MEM_HOST_PTR: {
        /* The program's own pointer only, never the shim's memory. */
        void *p = m->own_host ? NULL : m->host_ptr;
        return shim_info_return(&p, sizeof(p), param_value_size, param_value,
                                param_value_size_ret);
    }
    case CL_MEM_PROPERTIES:
        return shim_info_return(m->props,
                                shim_props_len(m->props, sizeof(*m->props)) *
                                    sizeof(cl_mem_properties),
                                param_value_size, param_value,
                                param_value_size_ret);
    default:
        break;
    }
    shim_enter();
    err = VENDOR(m->obj.real)->clGetMemObjectInfo(m->obj.real, param_name,
                                                  param_value_size,
                                                  param_value,
                                                  param_value_size_ret);
    shim_leave();
    return err;
}

SHIM_EXPORT CL_API_ENTRY cl_int CL_API_CALL clGetImageInfo(
    cl_mem image, cl_image_info param_name, size_t param_value_size,
    void *param_value, size_t *param_value_size_ret)
{
    struct shim_mem *m = SHIM_AS(shim_mem, SHIM_MEM, image);
    cl_int err;

    if (!m)
        return CL_INVALID_MEM_OBJECT;
    if (param_name == CL_IMAGE_BUFFER) {
        cl_mem p = (cl_mem)m->parent;
        return shim_info_return(&p, sizeof(p), param_value_size, param_value,
                                param_value_size_ret);
    }
    shim_enter();
    err = VENDOR(m->obj.real)->clGetImageInfo(m->obj.real, param_name,
                                              param_value_size, param_value,
                                              param_value_size_ret);
    shim_leave();
    /* A CL_MEM_USE_HOST_PTR image's pitches are the program's memory's, as
     * its vendor reports them natively; a twin elsewhere (the proxy's,
     * made from packed rows) has its own. */
    size_t given = param_name == CL_IMAGE_ROW_PITCH ? m->desc.image_row_pitch
                   : param_name == CL_IMAGE_SLICE_PITCH
                       ? m->desc.image_slice_pitch
                       : 0;
    if (err == CL_SUCCESS && given && (m->flags & CL_MEM_USE_HOST_PTR) &&
        param_value && param_value_size >= sizeof(size_t))
        *(size_t *)param_value = given;
    return err;
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
