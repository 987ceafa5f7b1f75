/* Picks a hypervisor backend by name. */
#include "hv.h"

#include <stdio.h>
#include <string.h>

static _Thread_local char last_error[512];

const char *hv_last_error(void)
{
    return last_error;
}

void hv_set_last_error(const char *text)
{
    snprintf(last_error, sizeof(last_error), "%s", text ? text : "");
}

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
