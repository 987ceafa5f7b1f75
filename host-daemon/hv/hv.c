/* Picks a hypervisor backend by name. */
#include "hv.h"

#include <string.h>

const struct hv_ops *hv_backend(const char *name)
{
    if (strcmp(name, hv_libvirt_ops.name) == 0)
        return &hv_libvirt_ops;
#ifdef HD_HAVE_LIBXL
    if (strcmp(name, hv_libxl_ops.name) == 0)
        return &hv_libxl_ops;
#endif
    return NULL;
}
