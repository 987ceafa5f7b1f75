/* The shadows of platforms and devices: made at the first load, bound to
 * each backend's real ones (where devmatch.c puts them), and their kind
 * rows.  Their entry points: platform.c. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proto/log.h"
#include "shim.h"

/* The first bind: a shadow for every platform and root device the backend
 * offers, in its order, each device's identity recorded. */
static int platforms_create(cl_platform_id *real, cl_uint n)
{
    shim.platforms = calloc(n ? n : 1, sizeof(*shim.platforms));
    if (!shim.platforms)
        return -ENOMEM;
    for (cl_uint i = 0; i < n; i++) {
        struct shim_platform *p = shim_obj_new(
            &shim_platform_kind, sizeof(struct shim_platform), NULL);
        cl_uint nd = 0;
        cl_device_id devs[64];

        if (!p)
            return -ENOMEM;
        shim.platforms[i] = p;
        shim.n_platforms = i + 1;
        p->index = i;
        p->obj.real = real[i];
        if (VENDOR(real[i])->clGetDeviceIDs(real[i], CL_DEVICE_TYPE_ALL, 64,
                                            devs, &nd) != CL_SUCCESS)
            nd = 0;
        if (nd > 64)
            nd = 64;
        p->devices = calloc(nd ? nd : 1, sizeof(*p->devices));
        if (!p->devices)
            return -ENOMEM;
        for (cl_uint d = 0; d < nd; d++) {
            struct shim_device *sd = shim_obj_new(
                &shim_device_kind, sizeof(struct shim_device), NULL);
            if (!sd)
                return -ENOMEM;
            sd->platform = p;
            sd->index = d;
            sd->obj.real = devs[d];
            shim_device_ident_read(devs[d], &sd->ident);
            sd->type = sd->ident.type;
            p->devices[d] = sd;
            p->n_devices = d + 1;
        }
    }
    return 0;
}

/* Gives every shadow platform and root device its real handle, creating the
 * shadows on the first call.  After a reload, each lands where the device
 * rule (devmatch.c) says; the program's platforms and devices themselves
 * never change. */
int shim_platforms_bind(void)
{
    struct shim_plan plan;
    cl_platform_id *real;
    cl_uint n;
    char why[400] = "";
    int rc = shim.backend->platforms(&real, &n);

    if (rc < 0)
        return rc;
    shim.bindings++;  /* a new profiling timebase (timebase.c) */
    if (!shim.platforms)
        return platforms_create(real, n);
    if (!shim_plan_take(shim.backend, &plan) &&
        (rc = shim_plan_make(shim.backend, &plan, why, sizeof(why))) < 0) {
        CRN_ERROR("bind: %s: %s", shim.backend->name,
                  why[0] ? why : strerror(-rc));
        return rc;
    }
    for (cl_uint i = 0; i < shim.n_platforms; i++) {
        struct shim_platform *p = shim.platforms[i];
        p->obj.real = plan.platforms[i];
        for (cl_uint d = 0; d < p->n_devices; d++)
            p->devices[d]->obj.real = plan.devices[i][d];
    }
    shim_plan_free(&plan);
    return 0;
}

/* Sub-devices: recorded with their partition so a re-home can recreate them
 * in the same order.  Root devices get theirs from shim_platforms_bind. */
static int device_realize(struct shim_obj *o)
{
    struct shim_device *d = (void *)o;

    if (!d->parent)
        return 0;
    cl_uint n = 0;
    cl_device_id *out;
    void *parent = d->parent->obj.real;
    cl_int err = VENDOR(parent)->clCreateSubDevices(parent, d->partition, 0,
                                                     NULL, &n);

    if (err != CL_SUCCESS || d->index >= n)
        return -ENODEV;
    out = calloc(n, sizeof(*out));
    if (!out)
        return -ENOMEM;
    err = VENDOR(parent)->clCreateSubDevices(parent, d->partition, n, out,
                                             NULL);
    if (err == CL_SUCCESS) {
        d->obj.real = out[d->index];
        for (cl_uint i = 0; i < n; i++)
            if (i != d->index)
                VENDOR(out[i])->clReleaseDevice(out[i]);
    }
    free(out);
    return err == CL_SUCCESS ? 0 : -ENODEV;
}

static void platform_destroy(struct shim_obj *o)
{
    free(((struct shim_platform *)o)->devices);
}

const struct shim_kind_ops shim_platform_kind = {
    .kind = SHIM_PLATFORM, .name = "platform", .destroy = platform_destroy,
};

static void device_destroy(struct shim_obj *o)
{
    struct shim_device *d = (void *)o;

    free(d->partition);
    if (d->parent)
        shim_obj_release_child(&d->parent->obj);
}

/* Only sub-devices are the program's to release; root devices are the
 * backend's. */
static void device_release_real(const struct shim_obj *o, void *real)
{
    if (((const struct shim_device *)o)->parent)
        VENDOR(real)->clReleaseDevice(real);
}

const struct shim_kind_ops shim_device_kind = {
    .kind = SHIM_DEVICE, .name = "sub-device",
    .destroy = device_destroy, .realize = device_realize,
    .release_real = device_release_real,
};
