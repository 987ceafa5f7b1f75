/* Before a switch from the proxy back to the vendor: load the vendor and
 * make every context while the program still computes through the proxy,
 * so that neither (~100 ms each on NVIDIA) is part of the stoppage. */
#include <stdlib.h>

#include "log.h"
#include "shim.h"

/* The vendor's device for shadow D, where the device rule puts it
 * (devmatch.c, as bind will); NULL for sub-devices (made later, from their
 * parent). */
static cl_device_id native_device(struct shim_device *d,
                                  const struct shim_plan *plan)
{
    if (d->parent)
        return NULL;
    return plan->devices[d->platform->index][d->index];
}

static void premake(struct shim_context *c, const struct shim_plan *plan)
{
    cl_device_id devs[64];
    cl_context_properties props[64];
    size_t np = 0;
    cl_int err;

    if (c->premade || c->n_devices == 0 || c->n_devices > 64)
        return;
    for (cl_uint i = 0; i < c->n_devices; i++)
        if (!(devs[i] = native_device(c->devices[i], plan)))
            return;
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
    c->premade = VENDOR(devs[0])->clCreateContext(
        c->props ? props : NULL, c->n_devices, devs, c->notify,
        c->notify_data, &err);
    if (!c->premade)
        LOG_DEBUG("prewarm: context not made ahead (%d)", err);
}

void shim_prewarm_native(void)
{
    struct shim_plan plan;
    char why[400];
    double t0 = shim_now();

    if (shim_native_ops.load() < 0 ||
        shim_plan_make(&shim_native_ops, &plan, why, sizeof(why)) < 0)
        return;  /* the switch itself will report it */
    shim_store_lock();
    for (struct shim_obj *o = shim_store_first(); o; o = o->next)
        if (o->kind == SHIM_CONTEXT)
            premake((struct shim_context *)o, &plan);
    shim_store_unlock();
    shim_plan_free(&plan);
    LOG_INFO("prewarm: vendor loaded and contexts made in %.3f ms, before "
             "the gate closes",
             (shim_now() - t0) * 1e3);
}
