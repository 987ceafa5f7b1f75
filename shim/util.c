/* Small helpers: clocks, property lists, info replies, handle arrays. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "entry.h"
#include "shim.h"

double shim_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Property lists are key/value pairs ended by a 0 key. */
size_t shim_props_len(const void *props, size_t elem)
{
    size_t n = 0;
    const unsigned char *p = props;

    if (!p)
        return 0;
    for (;;) {
        uint64_t key = 0;
        memcpy(&key, p + n * elem, elem);
        n++;
        if (key == 0)
            return n;
        n++;
    }
}

void *shim_props_dup(const void *props, size_t elem)
{
    size_t n = shim_props_len(props, elem);
    void *copy;

    if (!n)
        return NULL;
    copy = malloc(n * elem);
    if (copy)
        memcpy(copy, props, n * elem);
    return copy;
}

char *shim_strdup(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* Answers an info query from shadow state, as the spec asks: the size is
 * always reported; a value buffer that is too small is CL_INVALID_VALUE. */
cl_int shim_info_return(const void *src, size_t size, size_t value_size,
                        void *value, size_t *size_ret)
{
    if (value) {
        if (value_size < size)
            return CL_INVALID_VALUE;
        memcpy(value, src, size);
    }
    if (size_ret)
        *size_ret = size;
    return CL_SUCCESS;
}

cl_int shim_info_give(const struct shim_info_ask *ask, const void *src,
                      size_t size)
{
    return shim_info_return(src, size, ask->size, ask->value, ask->size_ret);
}

bool shim_info_own(const struct shim_info_own *own,
                   const struct shim_info_ask *ask, cl_int *err)
{
    if (ask->param == own->refs_param) {
        *err = shim_info_give(ask, &own->refs, sizeof(own->refs));
        return true;
    }
    for (size_t i = 0; i < SHIM_INFO_OWN_MAX && own->params[i]; i++)
        if (ask->param == own->params[i]) {
            *err = shim_info_give(ask, &own->handles[i], sizeof(void *));
            return true;
        }
    return false;
}

static void **xlate_storage(struct shim_xlate *x, cl_uint n)
{
    x->real = n <= SHIM_XLATE_STACK ? x->stack : malloc(n * sizeof(void *));
    return x->real;
}

cl_int shim_xlate_events(struct shim_xlate *x, const cl_event *events,
                         cl_uint n)
{
    x->n = 0;
    x->real = NULL;
    if ((n == 0) != (events == NULL))
        return CL_INVALID_EVENT_WAIT_LIST;
    if (n == 0)
        return CL_SUCCESS;
    if (!xlate_storage(x, n))
        return CL_OUT_OF_HOST_MEMORY;
    for (cl_uint i = 0; i < n; i++) {
        const struct shim_event *e =
            SHIM_AS(shim_event, SHIM_EVENT, events[i]);
        if (!e) {
            shim_xlate_done(x);
            return CL_INVALID_EVENT_WAIT_LIST;
        }
        if (e->obj.real)
            x->real[x->n++] = e->obj.real;
    }
    if (x->n == 0) {
        shim_xlate_done(x);
        x->real = NULL;
    }
    return CL_SUCCESS;
}

cl_int shim_xlate_handles(struct shim_xlate *x, const void *const *handles,
                          cl_uint n, enum shim_kind kind, cl_int bad)
{
    x->n = n;
    x->real = NULL;
    if (n == 0 || !handles)
        return CL_SUCCESS;
    if (!xlate_storage(x, n))
        return CL_OUT_OF_HOST_MEMORY;
    for (cl_uint i = 0; i < n; i++) {
        const struct shim_obj *o = handles[i];
        if (!shim_obj_is(o, kind) || !o->real) {
            shim_xlate_done(x);
            return bad;
        }
        x->real[i] = o->real;
    }
    return CL_SUCCESS;
}

void shim_xlate_done(struct shim_xlate *x)
{
    if (x->real && x->real != x->stack)
        free(x->real);
    x->real = NULL;
}
