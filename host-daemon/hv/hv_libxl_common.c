/* What the libxl backend's files share: libxl's errors as -errno and as
 * text, the event machinery's health, a domain's id by name. */
#include "hv_libxl_int.h"

#include <errno.h>
#include <string.h>

#include "proto/log.h"

int hv_libxl__errno(int rc)
{
    switch (rc) {
    case 0:
        return 0;
    case ERROR_NOMEM:
        return -ENOMEM;
    case ERROR_INVAL:
    case ERROR_JSON_CONFIG_EMPTY:
        return -EINVAL;
    case ERROR_NI:
    case ERROR_FEATURE_REMOVED:
        return -EOPNOTSUPP;
    case ERROR_GUEST_TIMEDOUT:
    case ERROR_TIMEDOUT:
        return -ETIMEDOUT;
    case ERROR_NOT_READY:
        return -EAGAIN;
    case ERROR_LOCK_FAIL:
        return -EBUSY;
    case ERROR_DEVICE_EXISTS:
        return -EEXIST;
    case ERROR_DOMAIN_NOTFOUND:
    case ERROR_DOMAIN_DESTROYED:
    case ERROR_NOTFOUND:
    case ERROR_QMP_DEVICE_NOT_FOUND:
        return -ENOENT;
    case ERROR_ABORTED:
        return -ECANCELED;
    default:
        return -EIO;
    }
}

const char *hv_libxl__strerror(int rc)
{
    const char *s = libxl_error_to_string(rc);

    return s ? s : "unknown libxl error";
}

int hv_libxl__check(struct hv *hv, const char *what)
{
    if (!atomic_load(&hv->broken))
        return 0;
    CRN_ERROR("libxl: %s: libxl's event machinery has failed; restart "
             "crane-hostd",
             what);
    return -EIO;
}

int hv_libxl__domid(struct hv *hv, const char *name, uint32_t *domid)
{
    int xrc;

    if (strlen(name) > HV_NAME_MAX)
        return -ENOENT;
    xrc = libxl_name_to_domid(hv->ctx, name, domid);
    if (xrc == ERROR_INVAL) /* what libxl says for "no such name" */
        return -ENOENT;
    if (xrc) {
        CRN_ERROR("libxl: cannot look up domain %s: %s", name,
                 hv_libxl__strerror(xrc));
        return hv_libxl__errno(xrc);
    }
    return 0;
}
