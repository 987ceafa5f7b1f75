/* What the libvirt backend's files share: libvirt's errors as -errno and
 * logged once, a name copied within bounds, a domain looked up by name. */
#include "hv_libvirt_int.h"

#include "proto/log.h"

#include <errno.h>
#include <string.h>

int hv_libvirt__errno(const virError *err)
{
    if (err == NULL)
        return -EIO;
    switch (err->code) {
    case VIR_ERR_NO_DOMAIN:
    case VIR_ERR_DEVICE_MISSING:
        return -ENOENT;
    case VIR_ERR_OPERATION_TIMEOUT:
        return -ETIMEDOUT;
    case VIR_ERR_NO_MEMORY:
        return -ENOMEM;
    case VIR_ERR_NO_SUPPORT:
    case VIR_ERR_OPERATION_UNSUPPORTED:
    case VIR_ERR_ARGUMENT_UNSUPPORTED:
        return -ENOTSUP;
    case VIR_ERR_INVALID_ARG:
    case VIR_ERR_XML_ERROR:
    case VIR_ERR_XML_DETAIL:
    case VIR_ERR_CONFIG_UNSUPPORTED:
        return -EINVAL;
    case VIR_ERR_OPERATION_INVALID: /* e.g. the domain is not running */
        return -EBUSY;
    case VIR_ERR_OPERATION_ABORTED:
        return -ECANCELED;
    case VIR_ERR_AUTH_FAILED:
    case VIR_ERR_AUTH_CANCELLED:
    case VIR_ERR_AUTH_UNAVAILABLE:
    case VIR_ERR_ACCESS_DENIED:
        return -EACCES;
    case VIR_ERR_NO_CONNECT:
        return -ECONNREFUSED;
    case VIR_ERR_SYSTEM_ERROR:
        /* libvirt keeps the errno of a failed system call in int1. */
        return err->int1 > 0 ? -err->int1 : -EIO;
    default:
        return -EIO;
    }
}

/*
 * The -errno of the libvirt call that just failed on this thread (libvirt
 * keeps the last error per thread), logged with WHAT and DOMAIN.  A missing
 * domain or device is an answer, not a fault: logged as info.
 */
int hv_libvirt__failed(const char *what, const char *domain)
{
    const virError *err = virGetLastError();
    int rc = hv_libvirt__errno(err);

    hv_set_last_error(err != NULL ? err->message : NULL);
    crn_log(rc == -ENOENT ? CRN_LOG_INFO : CRN_LOG_ERROR, "libvirt: %s%s%s: %s",
           what, domain != NULL ? " " : "", domain != NULL ? domain : "",
           err != NULL && err->message != NULL ? err->message
                                               : "unknown error");
    return rc;
}

int hv_libvirt__copy_name(const char *s, char *out, size_t size)
{
    size_t len = strlen(s);

    if (len >= size)
        return -ENAMETOOLONG;
    memcpy(out, s, len + 1);
    return 0;
}

int hv_libvirt__lookup(struct hv *hv, const char *name, virDomainPtr *out)
{
    if (name == NULL || name[0] == '\0')
        return -EINVAL;
    *out = virDomainLookupByName(hv->conn, name);
    return *out != NULL ? 0 : hv_libvirt__failed("looking up domain", name);
}
