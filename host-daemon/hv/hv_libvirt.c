/* The libvirt backend of crane-hostd's hypervisor interface (hv.h): the
 * connection, domains, who holds which GPU, hotplug, pause and start; its
 * events in hv_libvirt_events.c, migrations in hv_libvirt_migrate.c. */
#include "hv_libvirt_int.h"

#include "hv_event.h"
#include "hv_xml.h"
#include "proto/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* --- errors --------------------------------------------------------------- */

/* libvirt prints every error to stderr unless told otherwise; each failing
 * call is logged once, by hv_libvirt__failed(). */
static void ignore_libvirt_error(void *opaque, virErrorPtr err)
{
    (void)opaque;
    (void)err;
}

/* --- open and close (loop thread) ----------------------------------------- */

static void lv_close(struct hv *hv)
{
    if (hv == NULL)
        return;
    if (hv->conn != NULL) {
        hv_libvirt__unwatch(hv);
        virConnectClose(hv->conn);
    }
    pthread_mutex_destroy(&hv->completed.lock);
    pthread_cond_destroy(&hv->completed.cond);
    free(hv->uri);
    free(hv->channel_name);
    free(hv);
}

static int lv_open(const char *uri, const char *channel_name, uv_loop_t *loop,
                   hv_event_fn *fn, void *arg, struct hv **out)
{
    struct hv *hv;
    int rc;

    if (uri == NULL || loop == NULL || fn == NULL)
        return -EINVAL;
    rc = hv_event_register(loop);
    if (rc < 0)
        return rc;
    virSetErrorFunc(NULL, ignore_libvirt_error);

    hv = calloc(1, sizeof(*hv));
    if (hv == NULL)
        return -ENOMEM;
    for (int i = 0; i < CB_COUNT; i++)
        hv->callback_ids[i] = -1;
    pthread_mutex_init(&hv->completed.lock, NULL);
    pthread_cond_init(&hv->completed.cond, NULL);
    hv->fn = fn;
    hv->arg = arg;
    hv->uri = strdup(uri);
    hv->channel_name = channel_name != NULL ? strdup(channel_name) : NULL;
    if (hv->uri == NULL || (channel_name != NULL && hv->channel_name == NULL)) {
        rc = -ENOMEM;
        goto fail;
    }
    hv->conn = virConnectOpen(uri);
    if (hv->conn == NULL) {
        rc = hv_libvirt__failed("connecting to", uri);
        goto fail;
    }
    /* A dead peer is noticed within 5 s * (3 + 1).  Local drivers have no
     * keepalive: that is not an error. */
    if (virConnectSetKeepAlive(hv->conn, 5, 3) < 0) {
        rc = hv_libvirt__errno(virGetLastError());
        if (rc != -ENOTSUP) {
            rc = hv_libvirt__failed("setting keepalive on", uri);
            goto fail;
        }
    }
    rc = hv_libvirt__watch(hv);
    if (rc < 0)
        goto fail;
    CRN_INFO("libvirt: connected to %s", uri);
    *out = hv;
    return 0;

fail:
    lv_close(hv);
    return rc;
}

/* --- domains -------------------------------------------------------------- */

/* The live XML of DOM (the inactive one when it does not run), parsed. */
static int parse_domain(virDomainPtr dom, const char *name,
                        struct hv_xml **out)
{
    char *xml = virDomainGetXMLDesc(dom, 0);
    int rc;

    if (xml == NULL)
        return hv_libvirt__failed("reading the XML of domain", name);
    rc = hv_xml_parse(xml, out);
    free(xml);
    if (rc < 0)
        CRN_ERROR("libvirt: the XML of domain %s: %s", name, strerror(-rc));
    return rc;
}

/* Active in libvirt's sense: it has a QEMU (or Xen domain) here. */
static bool state_is_active(int state)
{
    return state == VIR_DOMAIN_RUNNING || state == VIR_DOMAIN_BLOCKED ||
           state == VIR_DOMAIN_PAUSED || state == VIR_DOMAIN_SHUTDOWN ||
           state == VIR_DOMAIN_PMSUSPENDED;
}

static int lv_domain(struct hv *hv, const char *name, struct hv_domain *out)
{
    struct hv_xml *parsed = NULL;
    virDomainPtr dom;
    int state, reason;
    int rc;

    memset(out, 0, sizeof(*out));
    if (name == NULL ||
        hv_libvirt__copy_name(name, out->name, sizeof(out->name)) < 0)
        return -EINVAL;
    rc = hv_libvirt__lookup(hv, name, &dom);
    if (rc < 0)
        return rc;
    if (virDomainGetState(dom, &state, &reason, 0) < 0 ||
        virDomainGetUUIDString(dom, out->uuid) < 0) {
        rc = hv_libvirt__failed("reading the state of domain", name);
        goto out;
    }
    out->running = state_is_active(state);
    if (hv->channel_name == NULL)
        goto out;
    rc = parse_domain(dom, name, &parsed);
    if (rc < 0)
        goto out;
    rc = hv_xml_channel_path(parsed, hv->channel_name, out->channel,
                             sizeof(out->channel));
    if (rc == -ENOENT) {
        rc = 0; /* a domain without crane's channel */
    } else if (rc < 0) {
        CRN_ERROR("libvirt: domain %s: channel %s: %s", name,
                 hv->channel_name, strerror(-rc));
        out->channel[0] = '\0';
    }
out:
    hv_xml_free(parsed);
    virDomainFree(dom);
    return rc;
}

/*
 * Whether the domain PARSED describes holds GPU: it has the GPU's alias,
 * or, for a PCI GPU, a hostdev at its address (then the GPU is taken even
 * if someone attached it under another alias, which detach cannot name).
 */
static bool holds(const struct hv_xml *parsed, const char *name,
                  const struct hv_gpu *gpu)
{
    int rc;

    if (hv_xml_has_alias(parsed, gpu->alias) == 1)
        return true;
    if (gpu->pci[0] == '\0')
        return false;
    rc = hv_xml_has_pci_hostdev(parsed, gpu->pci);
    if (rc < 0)
        CRN_ERROR("libvirt: GPU %s: bad PCI address '%s'", gpu->name,
                 gpu->pci);
    else if (rc == 1)
        CRN_WARN("libvirt: domain %s holds GPU %s (%s) without its alias %s",
                name, gpu->name, gpu->pci, gpu->alias);
    return rc == 1;
}

/* Records in HOLDER which of the N GPUs DOM holds. */
static int note_holdings(virDomainPtr dom, const struct hv_gpu *gpus,
                         size_t n, char (*holder)[HV_NAME_MAX + 1])
{
    const char *name = virDomainGetName(dom);
    struct hv_xml *parsed;
    int rc;

    if (name == NULL)
        return hv_libvirt__failed("naming a domain", NULL);
    rc = parse_domain(dom, name, &parsed);
    if (rc == -ENOENT)
        return 0; /* it went away since the listing */
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < n; i++) {
        if (!holds(parsed, name, &gpus[i]))
            continue;
        if (holder[i][0] != '\0') {
            CRN_WARN("libvirt: GPU %s is in domains %s and %s", gpus[i].name,
                    holder[i], name);
            continue;
        }
        if (hv_libvirt__copy_name(name, holder[i], sizeof(holder[i])) < 0)
            CRN_WARN("libvirt: domain name too long: %.64s...", name);
    }
    hv_xml_free(parsed);
    return 0;
}

static int lv_holders(struct hv *hv, const struct hv_gpu *gpus, size_t n,
                      char (*holder)[HV_NAME_MAX + 1])
{
    virDomainPtr *doms = NULL;
    int count;
    int rc = 0;

    for (size_t i = 0; i < n; i++)
        holder[i][0] = '\0';
    count = virConnectListAllDomains(hv->conn, &doms,
                                     VIR_CONNECT_LIST_DOMAINS_ACTIVE);
    if (count < 0)
        return hv_libvirt__failed("listing the domains of", hv->uri);
    for (int d = 0; d < count; d++) {
        if (rc == 0)
            rc = note_holdings(doms[d], gpus, n, holder);
        virDomainFree(doms[d]);
    }
    free(doms);
    return rc;
}

static int lv_has_gpu(struct hv *hv, const char *domain,
                      const struct hv_gpu *gpu)
{
    struct hv_xml *parsed;
    virDomainPtr dom;
    int active;
    int rc;

    rc = hv_libvirt__lookup(hv, domain, &dom);
    if (rc < 0)
        return rc;
    active = virDomainIsActive(dom);
    if (active < 0)
        rc = hv_libvirt__failed("reading the state of domain", domain);
    else if (active == 0)
        rc = 0; /* its inactive XML names devices it does not hold now */
    else if ((rc = parse_domain(dom, domain, &parsed)) == 0) {
        rc = holds(parsed, domain, gpu) ? 1 : 0;
        hv_xml_free(parsed);
    }
    virDomainFree(dom);
    return rc;
}

/* --- hotplug -------------------------------------------------------------- */

/* Whether the running DOM has ALIAS now: 1, 0, or -errno. */
static int live_has_alias(virDomainPtr dom, const char *name,
                          const char *alias)
{
    struct hv_xml *parsed;
    int rc;

    rc = virDomainIsActive(dom);
    if (rc < 0)
        return hv_libvirt__failed("reading the state of domain", name);
    if (rc == 0)
        return 0;
    rc = parse_domain(dom, name, &parsed);
    if (rc < 0)
        return rc;
    rc = hv_xml_has_alias(parsed, alias);
    hv_xml_free(parsed);
    return rc;
}

static int lv_detach(struct hv *hv, const char *domain,
                     const struct hv_gpu *gpu)
{
    virDomainPtr dom;
    int rc;

    if (gpu->alias[0] == '\0')
        return -EINVAL;
    rc = hv_libvirt__lookup(hv, domain, &dom);
    if (rc < 0)
        return rc;
    /* QEMU's driver reports a missing alias as an internal error: look
     * first, so that -ENOENT means what hv.h says. */
    rc = live_has_alias(dom, domain, gpu->alias);
    if (rc == 0) {
        CRN_INFO("libvirt: domain %s does not hold %s", domain, gpu->alias);
        rc = -ENOENT;
    }
    if (rc < 0)
        goto out;
    /* Returns once the unplug is asked for; the guest lets go later and
     * VIR_DOMAIN_EVENT_ID_DEVICE_REMOVED says so. */
    rc = 0;
    if (virDomainDetachDeviceAlias(dom, gpu->alias, VIR_DOMAIN_AFFECT_LIVE) <
        0)
        rc = hv_libvirt__failed("detaching the GPU from domain", domain);
    else
        CRN_DEBUG("libvirt: domain %s: unplug of %s asked", domain,
                 gpu->alias);
out:
    virDomainFree(dom);
    return rc;
}

static int lv_attach(struct hv *hv, const char *domain,
                     const struct hv_gpu *gpu)
{
    virDomainPtr dom;
    int rc;

    if (gpu->xml == NULL)
        return -EINVAL;
    rc = hv_libvirt__lookup(hv, domain, &dom);
    if (rc < 0)
        return rc;
    if (virDomainAttachDeviceFlags(dom, gpu->xml, VIR_DOMAIN_AFFECT_LIVE) < 0)
        rc = hv_libvirt__failed("attaching the GPU to domain", domain);
    virDomainFree(dom);
    return rc;
}

/* Pauses DOMAIN (PAUSE) or lets it run again. */
static int set_paused(struct hv *hv, const char *domain, bool pause)
{
    virDomainPtr dom;
    int rc;

    rc = hv_libvirt__lookup(hv, domain, &dom);
    if (rc < 0)
        return rc;
    if ((pause ? virDomainSuspend(dom) : virDomainResume(dom)) < 0)
        rc = hv_libvirt__failed(pause ? "suspending domain"
                                      : "resuming domain", domain);
    virDomainFree(dom);
    return rc;
}

static int lv_suspend(struct hv *hv, const char *domain)
{
    return set_paused(hv, domain, true);
}

static int lv_unpause(struct hv *hv, const char *domain)
{
    return set_paused(hv, domain, false);
}

static int lv_start(struct hv *hv, const char *domain)
{
    virDomainPtr dom;
    int rc;

    rc = hv_libvirt__lookup(hv, domain, &dom);
    if (rc < 0)
        return rc;
    if (virDomainCreate(dom) < 0)
        rc = hv_libvirt__failed("starting domain", domain);
    virDomainFree(dom);
    return rc;
}

const struct hv_ops hv_libvirt_ops = {
    .name = "libvirt",
    .open = lv_open,
    .close = lv_close,
    .domain = lv_domain,
    .holders = lv_holders,
    .detach = lv_detach,
    .attach = lv_attach,
    .has_gpu = lv_has_gpu,
    .migrate = hv_libvirt__migrate,
    .job = hv_libvirt__job,
    .suspend = lv_suspend,
    .unpause = lv_unpause,
    .start = lv_start,
    .abort_job = hv_libvirt__abort_job,
};

