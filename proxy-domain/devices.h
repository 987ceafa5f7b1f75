/* The OpenCL platforms and devices crane-proxy offers, and their ids. */
#ifndef PX_DEVICES_H
#define PX_DEVICES_H

#include "cl.h"

#include <stddef.h>
#include <stdint.h>

struct px_device {
    uint64_t id;                 /* proxy-chosen, PX_PROXY_ID_BIT set */
    cl_device_id handle;
    cl_device_type type;
};

struct px_platform {
    uint64_t id;                 /* proxy-chosen, PX_PROXY_ID_BIT set */
    cl_platform_id handle;
    size_t ndev;
    struct px_device *devs;
};

/* Filled once at start-up and read-only afterwards, so every thread may
 * read it without locking. */
struct px_devices {
    size_t nplat;
    struct px_platform *plats;
};

/*
 * Finds the devices SPEC selects: "all" (or NULL), "gpu", "cpu",
 * "accelerator", "P" (every device of platform index P) or "P:D" (device D
 * of platform P), indices as clinfo -l lists them.  Only platforms with a
 * selected device are offered.  Returns 0, -EINVAL for a malformed SPEC, or
 * -ENODEV when nothing matches; WHY then says what went wrong.
 */
int px_devices_open(const char *spec, struct px_devices *d, char *why,
                    size_t why_len);
void px_devices_close(struct px_devices *d);

/* The offered device or platform with proxy id ID, or NULL. */
cl_device_id px_devices_device(const struct px_devices *d, uint64_t id);
cl_platform_id px_devices_platform(const struct px_devices *d, uint64_t id);
/* The proxy id of an offered platform or device HANDLE, or 0. */
uint64_t px_devices_id_of(const struct px_devices *d, const void *handle);

#endif /* PX_DEVICES_H */
