/* The OpenCL platforms and devices crane-proxy offers, and their ids. */
#include "devices.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Most platforms and devices per platform looked at. */
#define MAX_PLATFORMS 64
#define MAX_DEVICES 256

struct selector {
    cl_device_type type;         /* 0: by index */
    long plat, dev;              /* -1: any */
};

static int parse_spec(const char *spec, struct selector *s)
{
    char *end;

    s->type = CL_DEVICE_TYPE_ALL;
    s->plat = s->dev = -1;
    if (!spec || strcmp(spec, "all") == 0)
        return 0;
    if (strcmp(spec, "gpu") == 0) {
        s->type = CL_DEVICE_TYPE_GPU;
        return 0;
    }
    if (strcmp(spec, "cpu") == 0) {
        s->type = CL_DEVICE_TYPE_CPU;
        return 0;
    }
    if (strcmp(spec, "accelerator") == 0) {
        s->type = CL_DEVICE_TYPE_ACCELERATOR;
        return 0;
    }
    errno = 0;
    s->plat = strtol(spec, &end, 10);
    if (errno || end == spec || s->plat < 0 || s->plat >= MAX_PLATFORMS)
        return -EINVAL;
    if (*end == '\0')
        return 0;
    if (*end != ':')
        return -EINVAL;
    spec = end + 1;
    s->dev = strtol(spec, &end, 10);
    if (errno || end == spec || *end || s->dev < 0 || s->dev >= MAX_DEVICES)
        return -EINVAL;
    return 0;
}

/* Adds the devices of platform index PI that S selects to P. */
static int add_platform(struct px_platform *p, cl_platform_id handle,
                        size_t pi, const struct selector *s)
{
    cl_device_id devs[MAX_DEVICES];
    cl_uint n = 0;

    p->handle = handle;
    p->id = PX_PROXY_ID_BIT | (uint64_t)(pi + 1);
    if (clGetDeviceIDs(handle, CL_DEVICE_TYPE_ALL, MAX_DEVICES, devs, &n) !=
        CL_SUCCESS)
        n = 0;
    if (n > MAX_DEVICES)
        n = MAX_DEVICES;
    p->devs = calloc(n ? n : 1, sizeof(*p->devs));
    if (!p->devs)
        return -ENOMEM;
    for (cl_uint di = 0; di < n; di++) {
        cl_device_type type = 0;
        clGetDeviceInfo(devs[di], CL_DEVICE_TYPE, sizeof(type), &type, NULL);
        if (s->plat >= 0 && (size_t)s->plat != pi)
            continue;
        if (s->dev >= 0 && s->dev != (long)di)
            continue;
        if (!(type & s->type))
            continue;
        p->devs[p->ndev].handle = devs[di];
        p->devs[p->ndev].type = type;
        p->devs[p->ndev].id =
            PX_PROXY_ID_BIT | (uint64_t)(pi + 1) << 32 | (uint64_t)(di + 1);
        p->ndev++;
    }
    return 0;
}

int px_devices_open(const char *spec, struct px_devices *d, char *why,
                    size_t why_len)
{
    cl_platform_id plats[MAX_PLATFORMS];
    struct selector s;
    cl_uint n = 0;
    cl_int err;
    size_t ndev = 0;

    memset(d, 0, sizeof(*d));
    if (parse_spec(spec, &s) < 0) {
        snprintf(why, why_len,
                 "bad --device '%s' (all, gpu, cpu, accelerator, P or P:D)",
                 spec);
        return -EINVAL;
    }
    err = clGetPlatformIDs(MAX_PLATFORMS, plats, &n);
    if (err != CL_SUCCESS || n == 0) {
        snprintf(why, why_len, "no OpenCL platform (clGetPlatformIDs: %d)",
                 err);
        return -ENODEV;
    }
    if (n > MAX_PLATFORMS)
        n = MAX_PLATFORMS;
    d->plats = calloc(n, sizeof(*d->plats));
    if (!d->plats) {
        snprintf(why, why_len, "out of memory");
        return -ENOMEM;
    }
    for (cl_uint pi = 0; pi < n; pi++) {
        struct px_platform *p = &d->plats[d->nplat];
        if (add_platform(p, plats[pi], pi, &s) < 0) {
            px_devices_close(d);
            snprintf(why, why_len, "out of memory");
            return -ENOMEM;
        }
        if (p->ndev == 0) {
            free(p->devs);
            memset(p, 0, sizeof(*p));
            continue;
        }
        ndev += p->ndev;
        d->nplat++;
    }
    if (ndev == 0) {
        px_devices_close(d);
        snprintf(why, why_len, "no OpenCL device matches --device %s",
                 spec ? spec : "all");
        return -ENODEV;
    }
    return 0;
}

void px_devices_close(struct px_devices *d)
{
    for (size_t i = 0; i < d->nplat; i++)
        free(d->plats[i].devs);
    free(d->plats);
    memset(d, 0, sizeof(*d));
}

cl_device_id px_devices_device(const struct px_devices *d, uint64_t id)
{
    for (size_t i = 0; i < d->nplat; i++)
        for (size_t j = 0; j < d->plats[i].ndev; j++)
            if (d->plats[i].devs[j].id == id)
                return d->plats[i].devs[j].handle;
    return NULL;
}

cl_platform_id px_devices_platform(const struct px_devices *d, uint64_t id)
{
    for (size_t i = 0; i < d->nplat; i++)
        if (d->plats[i].id == id)
            return d->plats[i].handle;
    return NULL;
}

uint64_t px_devices_id_of(const struct px_devices *d, const void *handle)
{
    for (size_t i = 0; i < d->nplat; i++) {
        if ((const void *)d->plats[i].handle == handle)
            return d->plats[i].id;
        for (size_t j = 0; j < d->plats[i].ndev; j++)
            if ((const void *)d->plats[i].devs[j].handle == handle)
                return d->plats[i].devs[j].id;
    }
    return 0;
}
