/* The libxl backend's migration receiver: hv_libxl_receive (wire format
 * in hv_libxl.h). */
#ifdef HD_HAVE_LIBXL

#include "hv_libxl_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hv_libxl.h"
#include "proto/log.h"

#include "proto/frame.h"
#include "proto/hostd.pb-c.h"

/* Reads and checks the XenConfig frame: the configuration into CFG. */
static int receive_config(struct hv *hv, int fd, libxl_domain_config *cfg)
{
    uint8_t hdr[CRN_FRAME_HEADER_LEN];
    int64_t deadline = hv_libxl__now_ms() + HV_LIBXL_HEADER_TIMEOUT_MS;
    Crane__Hostd__XenConfig *msg = NULL;
    uint8_t *body = NULL;
    uint32_t len;
    size_t json_len;
    int rc, xrc;

    rc = hv_libxl__read_full(fd, hdr, sizeof(hdr), deadline);
    if (rc) {
        CRN_ERROR("libxl: receive: no configuration: %s", strerror(-rc));
        return rc;
    }
    len = hv_libxl__get_be32(hdr);
    if (len == 0 || len > HV_LIBXL_WIRE_FRAME_MAX) {
        CRN_ERROR("libxl: receive: a first frame of %u bytes (1..%u): not a "
                 "crane libxl migration stream", len,
                 HV_LIBXL_WIRE_FRAME_MAX);
        return -EMSGSIZE;
    }
    body = malloc(len);
    if (!body)
        return -ENOMEM;
    rc = hv_libxl__read_full(fd, body, len, deadline);
    if (rc) {
        CRN_ERROR("libxl: receive: configuration cut short: %s",
                 strerror(-rc));
        goto out;
    }
    msg = crane__hostd__xen_config__unpack(NULL, len, body);
    if (!msg) {
        CRN_ERROR("libxl: receive: not a crane libxl migration stream");
        rc = -EPROTO;
        goto out;
    }
    if (msg->version != HV_LIBXL_WIRE_VERSION) {
        CRN_ERROR("libxl: receive: stream version %u, this host speaks %u",
                 msg->version, HV_LIBXL_WIRE_VERSION);
        rc = -EPROTONOSUPPORT;
        goto out;
    }
    json_len = strlen(msg->config_json);
    if (json_len == 0 || json_len > HV_LIBXL_CONFIG_MAX) {
        CRN_ERROR("libxl: receive: configuration of %zu bytes (1..%u)",
                 json_len, HV_LIBXL_CONFIG_MAX);
        rc = -EMSGSIZE;
        goto out;
    }
    xrc = libxl_domain_config_from_json(hv->ctx, cfg, msg->config_json);
    if (xrc) {
        CRN_ERROR("libxl: receive: configuration is not libxl's JSON: %s",
                 hv_libxl__strerror(xrc));
        rc = -EPROTO;
    }
out:
    if (msg)
        crane__hostd__xen_config__free_unpacked(msg, NULL);
    free(body);
    return rc;
}

/* The answer byte for RC: 0, or its errno value. */
static unsigned char errno_byte(int rc)
{
    return rc ? (unsigned char)(-rc > 0 && -rc < 256 ? -rc : EIO) : 0;
}

/* Sends one answer byte, within the time the sender waits for a header. */
static int send_byte(int fd, unsigned char byte)
{
    return hv_libxl__write_full(fd, &byte, 1,
                                hv_libxl__now_ms() +
                                    HV_LIBXL_HEADER_TIMEOUT_MS);
}

/* What the sender may ask of this host. */
static int check_config(struct hv *hv, const libxl_domain_config *cfg)
{
    const char *name = cfg->c_info.name;
    uint32_t other;

    if (!name || !name[0] || strlen(name) > HV_NAME_MAX) {
        CRN_ERROR("libxl: receive: the domain has no name or a long one");
        return -EINVAL;
    }
    for (const char *p = name; *p; p++) {
        if ((unsigned char)*p < 0x20 || *p == 0x7f) {
            CRN_ERROR("libxl: receive: the domain's name has control "
                     "characters");
            return -EINVAL;
        }
    }
    if (cfg->num_pcidevs > 0 || cfg->num_dtdevs > 0) {
        CRN_ERROR("libxl: receive: %s comes with passthrough devices; "
                 "refused (crane attaches the GPU after the migration)",
                 name);
        return -EPERM;
    }
    if (libxl_name_to_domid(hv->ctx, name, &other) == 0) {
        CRN_ERROR("libxl: receive: a domain %s runs here already (domain %u)",
                 name, (unsigned)other);
        return -EEXIST;
    }
    return 0;
}

/* Builds the domain of CFG from the stream on FD and lets it run; on
 * failure, what was built is gone again (*DOMID tells what it was). */
static int restore(struct hv *hv, int fd, libxl_domain_config *cfg,
                   uint32_t *domid)
{
    libxl_domain_restore_params params;
    const char *name = cfg->c_info.name;
    int xrc;

    /* libxl picks the domid (the sender zeroes it too, but this is network
     * input). */
    cfg->c_info.domid = 0;
    libxl_domain_restore_params_init(&params);
    params.checkpointed_stream = LIBXL_CHECKPOINTED_STREAM_NONE;
    params.stream_version = HV_LIBXL_STREAM_VERSION;
    CRN_INFO("libxl: receiving domain %s", name);
    xrc = libxl_domain_create_restore(hv->ctx, cfg, domid, fd, -1, &params,
                                      NULL, NULL);
    libxl_domain_restore_params_dispose(&params);
    if (xrc) {
        CRN_ERROR("libxl: receive %s: restore failed: %s", name,
                 hv_libxl__strerror(xrc));
    } else {
        xrc = libxl_domain_unpause(hv->ctx, *domid, NULL);
        if (xrc)
            CRN_ERROR("libxl: receive %s: cannot unpause it: %s", name,
                     hv_libxl__strerror(xrc));
    }
    if (!xrc)
        return 0;
    /* Our copy goes before the sender hears "no" and resumes its own, so
     * that the domain never runs twice.  libxl destroys a domain whose
     * restore failed itself: only what is still there goes. */
    if (*domid != (uint32_t)INVALID_DOMID &&
        libxl_domain_info(hv->ctx, NULL, *domid) == 0) {
        int drc = libxl_domain_destroy(hv->ctx, *domid, NULL);

        if (drc) {
            CRN_ERROR("libxl: receive %s: cannot destroy the failed copy "
                     "(domain %u): %s",
                     name, (unsigned)*domid, hv_libxl__strerror(drc));
            return -EADDRINUSE; /* see hv_libxl_receive */
        }
    }
    return hv_libxl__errno(xrc);
}

int hv_libxl_receive(struct hv *hv, int fd)
{
    libxl_domain_config cfg;
    uint32_t domid = (uint32_t)INVALID_DOMID;
    unsigned char byte;
    int rc, wrc;

    if (!hv || hv->magic != HV_LIBXL_MAGIC || fd < 0)
        return -EINVAL;
    libxl_domain_config_init(&cfg);
    rc = hv_libxl__check(hv, "receive");
    if (!rc)
        rc = receive_config(hv, fd, &cfg);
    if (!rc)
        rc = check_config(hv, &cfg);
    /* The verdict on the configuration, before the sender suspends. */
    byte = errno_byte(rc);
    wrc = send_byte(fd, byte);
    if (!rc && wrc) {
        CRN_ERROR("libxl: receive %s: the sender went away: %s",
                 cfg.c_info.name, strerror(-wrc));
        rc = wrc;
    }
    if (rc)
        goto out;

    rc = restore(hv, fd, &cfg, &domid);
    /* A failed copy that could not be destroyed may still come to run:
     * no answer, so that the sender keeps its own suspended. */
    if (rc == -EADDRINUSE)
        goto out;
    byte = errno_byte(rc);
    wrc = send_byte(fd, byte);
    if (!rc) {
        if (wrc)
            CRN_WARN("libxl: receive %s: it runs here, but the sender was "
                    "not told (%s) and keeps its copy suspended",
                    cfg.c_info.name, strerror(-wrc));
        CRN_INFO("libxl: received %s (domain %u)", cfg.c_info.name,
                (unsigned)domid);
        hv_libxl__rescan_soon(hv);
    }
out:
    libxl_domain_config_dispose(&cfg);
    return rc;
}

#endif /* HD_HAVE_LIBXL */
