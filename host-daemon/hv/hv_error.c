/* The hypervisor's last error text, per thread, for the daemon's replies. */
#include "hv.h"

#include <stdio.h>

static _Thread_local char last_error[512];

const char *hv_last_error(void)
{
    return last_error;
}

void hv_set_last_error(const char *text)
{
    snprintf(last_error, sizeof(last_error), "%s", text ? text : "");
}
