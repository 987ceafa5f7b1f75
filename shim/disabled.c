/* CRANE_DISABLE=1: libcrane, loaded by the ICD loader from crane.icd, hands
 * the loader the vendors' own platforms and stays out of the program.
 *
 * The loader then calls the vendor through each platform's own dispatch
 * table: no shadow, no gate, no link to crane-guestd (the shim never
 * starts), so the program is not covered by migrations.  Only the vendors
 * are loaded here, from the same folders a started shim would read. */
#include <pthread.h>
#include <string.h>

#include "config.h"
#include "proto/log.h"
#include "shim.h"

static pthread_once_t disabled_once = PTHREAD_ONCE_INIT;
static int disabled_err;

static void disabled_load(void)
{
    crn_log_init_env("crane-shim");
    shim_config_load();
    disabled_err = shim_vendor_backend()->load();
    if (disabled_err == 0)
        CRN_INFO("CRANE_DISABLE: the program runs on its vendors directly, "
                 "not under crane (no migration covers it)");
    else
        CRN_ERROR("CRANE_DISABLE: no vendor could be loaded (%d)",
                  disabled_err);
}

cl_int shim_disabled_platforms(cl_uint num_entries, cl_platform_id *platforms,
                               cl_uint *num_platforms)
{
    cl_platform_id *real = NULL;
    cl_uint n = 0;

    if ((num_entries == 0 && platforms) || (!platforms && !num_platforms))
        return CL_INVALID_VALUE;
    pthread_once(&disabled_once, disabled_load);
    if (disabled_err || shim_vendor_backend()->platforms(&real, &n) < 0) {
        if (num_platforms)
            *num_platforms = 0;
        return CL_PLATFORM_NOT_FOUND_KHR;
    }
    if (num_platforms)
        *num_platforms = n;
    for (cl_uint i = 0; platforms && i < num_entries && i < n; i++)
        platforms[i] = real[i];
    return CL_SUCCESS;
}

void *shim_disabled_extension(const char *name)
{
    pthread_once(&disabled_once, disabled_load);
    if (disabled_err || !name)
        return NULL;
    return shim_vendor_backend()->extension(NULL, name);
}
