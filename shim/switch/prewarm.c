/* Before a switch from the proxy back to the vendor: load the vendor and
 * make every context while the program still computes through the proxy,
 * so that neither (~100 ms each on NVIDIA) is part of the stoppage. */
#include <stdlib.h>

#include "proto/log.h"
#include "shim.h"

/* The backend's device for shadow D, where the device rule puts it
 * (devmatch.c, as bind will); NULL for sub-devices (made later, from their
 * parent). */
cl_device_id shim_plan_device(const struct shim_device *d,
                              const struct shim_plan *plan)
{
    if (d->parent)
        return NULL;
    return plan->devices[d->platform->index][d->index];
}

/* C's context on the backend PLAN was made for; NULL if not made. */
static void *make_context(struct shim_context *c, const struct shim_plan *plan)
{
    cl_device_id devs[64];
    cl_context_properties props[64];
    size_t np = 0;
    cl_int err;

    if (c->n_devices == 0 || c->n_devices > 64)
        return NULL;
    for (cl_uint i = 0; i < c->n_devices; i++)
        if (!(devs[i] = shim_plan_device(c->devices[i], plan)))
            return NULL;
    for (size_t i = 0; c->props && c->props[i] && np < 62; i += 2) {
        props[np] = c->props[i];
        props[np + 1] = c->props[i + 1];
        if (c->props[i] == CL_CONTEXT_PLATFORM) {
            const struct shim_platform *sp = (const void *)c->props[i + 1];
            props[np + 1] = (cl_context_properties)plan->platforms[sp->index];
        }
        np += 2;
    }
    props[np] = 0;
    void *made = VENDOR(devs[0])->clCreateContext(
        c->props ? props : NULL, c->n_devices, devs, c->notify,
        c->notify_data, &err);
    if (!made)
        CRN_DEBUG("prewarm: context not made ahead (%d)", err);
    return made;
}

static void premake(struct shim_context *c, const struct shim_plan *plan)
{
    if (!c->premade)
        c->premade = make_context(c, plan);
}

/* Before a switch to the proxy (prebuild.c, precopy.c): every context
 * that has no twin there gets one, made now on the proxy the switch goes
 * to (connection CONN, matched by PLAN), so that pre-copy rounds can write
 * into buffers made ahead in it and the rebuild takes it like any twin.
 * A switch that does not happen leaves it as a twin, which goes with the
 * connection or with the context.  How many were made. */
unsigned shim_prewarm_remote_contexts_on(const struct shim_plan *plan,
                                         unsigned long conn)
{
    unsigned n = 0;

    shim_store_lock();
    for (struct shim_obj *o = shim_store_first(); o; o = o->next) {
        if (o->kind != SHIM_CONTEXT)
            continue;
        void *t = atomic_load(&o->twin);
        if (t && o->twin_conn == conn)
            continue;
        void *made = make_context((struct shim_context *)o, plan);
        if (!made)
            continue;
        /* A twin of a connection that is gone went with it. */
        o->twin_conn = conn;
        atomic_store(&o->twin, made);
        n++;
    }
    shim_store_unlock();
    if (n)
        CRN_INFO("prewarm: %u context(s) made on the proxy ahead of the "
                 "switch", n);
    return n;
}

void shim_prewarm_remote_contexts(void)
{
    struct shim_plan plan;
    char why[400];
    unsigned long conn = shim_twin_generation();

    if (!conn ||
        shim_plan_make(shim_proxy_backend(), &plan, why, sizeof(why)) < 0)
        return;
    shim_prewarm_remote_contexts_on(&plan, conn);
    shim_plan_free(&plan);
}

void shim_prewarm_native(const struct shim_backend_ops *vendor)
{
    struct shim_plan plan;
    char why[400];
    double t0 = shim_now();

    if (vendor->load() < 0 ||
        shim_plan_make(vendor, &plan, why, sizeof(why)) < 0)
        return;  /* the switch itself will report it */
    shim_store_lock();
    for (struct shim_obj *o = shim_store_first(); o; o = o->next)
        if (o->kind == SHIM_CONTEXT)
            premake((struct shim_context *)o, &plan);
    shim_store_unlock();
    shim_plan_free(&plan);
    CRN_INFO("prewarm: vendor loaded and contexts made in %.3f ms, before "
             "the gate closes",
             (shim_now() - t0) * 1e3);
}
