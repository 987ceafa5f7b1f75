/* The libvirt backend of crane-hostd's hypervisor interface (hv.h). */
#include "hv.h"

#include "hv_event.h"
#include "hv_xml.h"
#include "log.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

/* The domain events crane-hostd listens to, one callback id each. */
enum {
    CB_LIFECYCLE,
    CB_DEVICE_REMOVED,
    CB_DEVICE_ADDED,
    CB_DEVICE_REMOVAL_FAILED,
    CB_JOB_COMPLETED,
    CB_COUNT,
};

/* How long lv_job waits for the job-completed event of a domain that has
 * just left (the event and the migration's answer race on the wire). */
#define COMPLETED_WAIT_MS 3000

/* The last job-completed event: a migrated-away domain is gone from the
 * source (undefined, or transient) before anyone can ask for its stats,
 * and the event is the only place that still has them (downtime above
 * all).  Written on the loop thread, read by migration threads. */
struct completed_job {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    char domain[HV_NAME_MAX + 1];  /* "" until the first event */
    unsigned long seq;             /* events seen */
    struct hv_job job;
};

/* Set by open, read-only afterwards: every entry may use it from any
 * thread (a virConnectPtr is thread-safe). */
struct hv {
    virConnectPtr conn;
    char *uri;
    char *channel_name;         /* NULL: domains have no guest channel */
    hv_event_fn *fn;
    void *arg;
    int callback_ids[CB_COUNT]; /* -1: not registered */
    bool close_cb_registered;
    struct completed_job completed;
};

/* --- errors ----------------------------------------------------------------- */

static int errno_of(const virError *err)
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
static int failed(const char *what, const char *domain)
{
    const virError *err = virGetLastError();
    int rc = errno_of(err);

    hv_set_last_error(err != NULL ? err->message : NULL);
    crn_log(rc == -ENOENT ? CRN_LOG_INFO : CRN_LOG_ERROR, "libvirt: %s%s%s: %s",
           what, domain != NULL ? " " : "", domain != NULL ? domain : "",
           err != NULL && err->message != NULL ? err->message
                                               : "unknown error");
    return rc;
}

/* libvirt prints every error to stderr unless told otherwise; each failing
 * call is logged once, by failed(). */
static void ignore_libvirt_error(void *opaque, virErrorPtr err)
{
    (void)opaque;
    (void)err;
}

/* Copies S into OUT (SIZE bytes); -ENAMETOOLONG when it does not fit. */
static int copy_name(const char *s, char *out, size_t size)
{
    size_t len = strlen(s);

    if (len >= size)
        return -ENAMETOOLONG;
    memcpy(out, s, len + 1);
    return 0;
}

/* --- events (loop thread) --------------------------------------------------- */

/* Builds an hv_event for DOM (and ALIAS) and hands it to the daemon. */
static void deliver(struct hv *hv, enum hv_event_kind kind, virDomainPtr dom,
                    const char *alias)
{
    struct hv_event ev = {.kind = kind};
    const char *name = virDomainGetName(dom);

    if (!hv_event_on_loop_thread())
        HD_WARN("libvirt: domain event off the loop thread");
    if (name == NULL || copy_name(name, ev.domain, sizeof(ev.domain)) < 0 ||
        (alias != NULL && copy_name(alias, ev.alias, sizeof(ev.alias)) < 0)) {
        /* No pool alias or usable domain name is that long. */
        HD_WARN("libvirt: event %d with an over-long name dropped", kind);
        return;
    }
    hv->fn(hv->arg, &ev);
}

static int on_lifecycle(virConnectPtr conn, virDomainPtr dom, int event,
                        int detail, void *opaque)
{
    (void)conn;
    HD_DEBUG("libvirt: domain %s lifecycle event %d detail %d",
             virDomainGetName(dom), event, detail);
    switch (event) {
    case VIR_DOMAIN_EVENT_STARTED: /* booted, restored, or migrated in */
    case VIR_DOMAIN_EVENT_RESUMED:
        deliver(opaque, HV_EV_DOMAIN_STARTED, dom, NULL);
        break;
    case VIR_DOMAIN_EVENT_STOPPED: /* shut off, destroyed, migrated away */
        /* An outgoing migration ends with SHUTDOWN (host) and then
         * STOPPED (migrated): only STOPPED's detail tells them apart. */
        deliver(opaque, detail == VIR_DOMAIN_EVENT_STOPPED_MIGRATED
                            ? HV_EV_DOMAIN_MIGRATED_OUT
                            : HV_EV_DOMAIN_SHUT_OFF,
                dom, NULL);
        /* fall through */
    case VIR_DOMAIN_EVENT_SHUTDOWN: /* every detail means "finished" */
    case VIR_DOMAIN_EVENT_CRASHED:
        deliver(opaque, HV_EV_DOMAIN_STOPPED, dom, NULL);
        break;
    default:
        break;
    }
    return 0;
}

static void on_device_removed(virConnectPtr conn, virDomainPtr dom,
                              const char *alias, void *opaque)
{
    (void)conn;
    deliver(opaque, HV_EV_DEVICE_REMOVED, dom, alias);
}

static void on_device_added(virConnectPtr conn, virDomainPtr dom,
                            const char *alias, void *opaque)
{
    (void)conn;
    deliver(opaque, HV_EV_DEVICE_ADDED, dom, alias);
}

static void on_device_removal_failed(virConnectPtr conn, virDomainPtr dom,
                                     const char *alias, void *opaque)
{
    (void)conn;
    (void)opaque;
    HD_WARN("libvirt: domain %s refused to release device %s",
            virDomainGetName(dom), alias);
}

static void job_from_params(virTypedParameterPtr params, int nparams,
                            struct hv_job *out);

static void on_job_completed(virConnectPtr conn, virDomainPtr dom,
                             virTypedParameterPtr params, int nparams,
                             void *opaque)
{
    struct hv *hv = opaque;
    struct completed_job *c = &hv->completed;
    const char *name = virDomainGetName(dom);

    (void)conn;
    if (name == NULL || strlen(name) > HV_NAME_MAX)
        return;
    pthread_mutex_lock(&c->lock);
    snprintf(c->domain, sizeof(c->domain), "%s", name);
    job_from_params(params, nparams, &c->job);
    c->job.active = false;
    c->seq++;
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
    HD_DEBUG("libvirt: domain %s job completed: %.3f s, downtime %.3f s",
             name, c->job.elapsed, c->job.downtime);
}

/* The stats of DOMAIN's last completed job from its event, waiting up to
 * COMPLETED_WAIT_MS for one.  -ENOENT when none came. */
static int completed_job(struct hv *hv, const char *domain,
                         struct hv_job *out)
{
    struct completed_job *c = &hv->completed;
    struct timespec until;
    int rc = 0;

    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += COMPLETED_WAIT_MS / 1000;
    until.tv_nsec += (COMPLETED_WAIT_MS % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&c->lock);
    while (strcmp(c->domain, domain) != 0 && rc == 0)
        rc = pthread_cond_timedwait(&c->cond, &c->lock, &until);
    if (strcmp(c->domain, domain) == 0) {
        *out = c->job;
        rc = 0;
    } else {
        rc = -ENOENT;
    }
    pthread_mutex_unlock(&c->lock);
    return rc;
}

static void on_connection_closed(virConnectPtr conn, int reason, void *opaque)
{
    static const char *const reasons[] = {"error", "end of file",
                                          "keepalive timeout", "client"};
    struct hv *hv = opaque;

    (void)conn;
    HD_ERROR("libvirt: connection to %s lost (%s)", hv->uri,
             reason >= 0 && reason < 4 ? reasons[reason] : "unknown");
    if (reason != VIR_CONNECT_CLOSE_REASON_CLIENT) {
        struct hv_event ev = {.kind = HV_EV_CONNECTION_LOST};
        hv->fn(hv->arg, &ev);
    }
}

/* --- open and close (loop thread) ------------------------------------------- */

static void lv_close(struct hv *hv)
{
    if (hv == NULL)
        return;
    if (hv->conn != NULL) {
        for (int i = 0; i < CB_COUNT; i++)
            if (hv->callback_ids[i] >= 0)
                virConnectDomainEventDeregisterAny(hv->conn,
                                                   hv->callback_ids[i]);
        if (hv->close_cb_registered)
            virConnectUnregisterCloseCallback(hv->conn, on_connection_closed);
        virConnectClose(hv->conn);
    }
    pthread_mutex_destroy(&hv->completed.lock);
    pthread_cond_destroy(&hv->completed.cond);
    free(hv->uri);
    free(hv->channel_name);
    free(hv);
}

static int register_events(struct hv *hv)
{
    static const struct {
        int id;
        virConnectDomainEventGenericCallback cb;
    } events[CB_COUNT] = {
        [CB_LIFECYCLE] = {VIR_DOMAIN_EVENT_ID_LIFECYCLE,
                          VIR_DOMAIN_EVENT_CALLBACK(on_lifecycle)},
        [CB_DEVICE_REMOVED] = {VIR_DOMAIN_EVENT_ID_DEVICE_REMOVED,
                               VIR_DOMAIN_EVENT_CALLBACK(on_device_removed)},
        [CB_DEVICE_ADDED] = {VIR_DOMAIN_EVENT_ID_DEVICE_ADDED,
                             VIR_DOMAIN_EVENT_CALLBACK(on_device_added)},
        [CB_DEVICE_REMOVAL_FAILED] =
            {VIR_DOMAIN_EVENT_ID_DEVICE_REMOVAL_FAILED,
             VIR_DOMAIN_EVENT_CALLBACK(on_device_removal_failed)},
        [CB_JOB_COMPLETED] = {VIR_DOMAIN_EVENT_ID_JOB_COMPLETED,
                              VIR_DOMAIN_EVENT_CALLBACK(on_job_completed)},
    };

    for (int i = 0; i < CB_COUNT; i++) {
        hv->callback_ids[i] = virConnectDomainEventRegisterAny(
            hv->conn, NULL, events[i].id, events[i].cb, hv, NULL);
        if (hv->callback_ids[i] < 0)
            return failed("registering for domain events on", hv->uri);
    }
    return 0;
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
        rc = failed("connecting to", uri);
        goto fail;
    }
    /* A dead peer is noticed within 5 s * (3 + 1).  Local drivers have no
     * keepalive: that is not an error. */
    if (virConnectSetKeepAlive(hv->conn, 5, 3) < 0) {
        rc = errno_of(virGetLastError());
        if (rc != -ENOTSUP) {
            rc = failed("setting keepalive on", uri);
            goto fail;
        }
    }
    if (virConnectRegisterCloseCallback(hv->conn, on_connection_closed, hv,
                                        NULL) < 0) {
        rc = failed("watching the connection to", uri);
        goto fail;
    }
    hv->close_cb_registered = true;
    rc = register_events(hv);
    if (rc < 0)
        goto fail;
    HD_INFO("libvirt: connected to %s", uri);
    *out = hv;
    return 0;

fail:
    lv_close(hv);
    return rc;
}

/* --- domains ---------------------------------------------------------------- */

static int lookup(struct hv *hv, const char *name, virDomainPtr *out)
{
    if (name == NULL || name[0] == '\0')
        return -EINVAL;
    *out = virDomainLookupByName(hv->conn, name);
    return *out != NULL ? 0 : failed("looking up domain", name);
}

/* The live XML of DOM (the inactive one when it does not run), parsed. */
static int parse_domain(virDomainPtr dom, const char *name,
                        struct hv_xml **out)
{
    char *xml = virDomainGetXMLDesc(dom, 0);
    int rc;

    if (xml == NULL)
        return failed("reading the XML of domain", name);
    rc = hv_xml_parse(xml, out);
    free(xml);
    if (rc < 0)
        HD_ERROR("libvirt: the XML of domain %s: %s", name, strerror(-rc));
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
    if (name == NULL || copy_name(name, out->name, sizeof(out->name)) < 0)
        return -EINVAL;
    rc = lookup(hv, name, &dom);
    if (rc < 0)
        return rc;
    if (virDomainGetState(dom, &state, &reason, 0) < 0 ||
        virDomainGetUUIDString(dom, out->uuid) < 0) {
        rc = failed("reading the state of domain", name);
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
        HD_ERROR("libvirt: domain %s: channel %s: %s", name,
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
        HD_ERROR("libvirt: GPU %s: bad PCI address '%s'", gpu->name,
                 gpu->pci);
    else if (rc == 1)
        HD_WARN("libvirt: domain %s holds GPU %s (%s) without its alias %s",
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
        return failed("naming a domain", NULL);
    rc = parse_domain(dom, name, &parsed);
    if (rc == -ENOENT)
        return 0; /* it went away since the listing */
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < n; i++) {
        if (!holds(parsed, name, &gpus[i]))
            continue;
        if (holder[i][0] != '\0') {
            HD_WARN("libvirt: GPU %s is in domains %s and %s", gpus[i].name,
                    holder[i], name);
            continue;
        }
        if (copy_name(name, holder[i], sizeof(holder[i])) < 0)
            HD_WARN("libvirt: domain name too long: %.64s...", name);
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
        return failed("listing the domains of", hv->uri);
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

    rc = lookup(hv, domain, &dom);
    if (rc < 0)
        return rc;
    active = virDomainIsActive(dom);
    if (active < 0)
        rc = failed("reading the state of domain", domain);
    else if (active == 0)
        rc = 0; /* its inactive XML names devices it does not hold now */
    else if ((rc = parse_domain(dom, domain, &parsed)) == 0) {
        rc = holds(parsed, domain, gpu) ? 1 : 0;
        hv_xml_free(parsed);
    }
    virDomainFree(dom);
    return rc;
}

/* --- hotplug ---------------------------------------------------------------- */

/* Whether the running DOM has ALIAS now: 1, 0, or -errno. */
static int live_has_alias(virDomainPtr dom, const char *name,
                          const char *alias)
{
    struct hv_xml *parsed;
    int rc;

    rc = virDomainIsActive(dom);
    if (rc < 0)
        return failed("reading the state of domain", name);
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
    rc = lookup(hv, domain, &dom);
    if (rc < 0)
        return rc;
    /* QEMU's driver reports a missing alias as an internal error: look
     * first, so that -ENOENT means what hv.h says. */
    rc = live_has_alias(dom, domain, gpu->alias);
    if (rc == 0) {
        HD_INFO("libvirt: domain %s does not hold %s", domain, gpu->alias);
        rc = -ENOENT;
    }
    if (rc < 0)
        goto out;
    /* Returns once the unplug is asked for; the guest lets go later and
     * VIR_DOMAIN_EVENT_ID_DEVICE_REMOVED says so. */
    rc = 0;
    if (virDomainDetachDeviceAlias(dom, gpu->alias, VIR_DOMAIN_AFFECT_LIVE) <
        0)
        rc = failed("detaching the GPU from domain", domain);
    else
        HD_DEBUG("libvirt: domain %s: unplug of %s asked", domain,
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
    rc = lookup(hv, domain, &dom);
    if (rc < 0)
        return rc;
    if (virDomainAttachDeviceFlags(dom, gpu->xml, VIR_DOMAIN_AFFECT_LIVE) < 0)
        rc = failed("attaching the GPU to domain", domain);
    virDomainFree(dom);
    return rc;
}

/* --- migration -------------------------------------------------------------- */

static int migrate_params(const struct hv_migrate_args *args,
                          virTypedParameterPtr *params, int *nparams)
{
    int max = 0;

    if (args->migrate_uri != NULL &&
        virTypedParamsAddString(params, nparams, &max, VIR_MIGRATE_PARAM_URI,
                                args->migrate_uri) < 0)
        return -ENOMEM;
    if (args->dest_xml != NULL &&
        virTypedParamsAddString(params, nparams, &max,
                                VIR_MIGRATE_PARAM_DEST_XML,
                                args->dest_xml) < 0)
        return -ENOMEM;
    return 0;
}

/* Without peer-to-peer the client drives both ends: a connection of its
 * own to the destination, for this one migration. */
static int migrate_direct(virDomainPtr dom, const char *domain,
                          const struct hv_migrate_args *args,
                          virTypedParameterPtr params, int nparams,
                          unsigned int flags)
{
    virConnectPtr dest;
    virDomainPtr arrived;
    int rc = 0;

    dest = virConnectOpen(args->dest_uri);
    if (dest == NULL)
        return failed("connecting to the destination", args->dest_uri);
    arrived = virDomainMigrate3(dom, dest, params, (unsigned int)nparams,
                                flags);
    if (arrived == NULL)
        rc = failed("migrating domain", domain);
    else
        virDomainFree(arrived);
    virConnectClose(dest);
    return rc;
}

static int lv_migrate(struct hv *hv, const char *domain,
                      const struct hv_migrate_args *args)
{
    virTypedParameterPtr params = NULL;
    unsigned int flags = 0;
    int nparams = 0;
    virDomainPtr dom;
    int rc;

    if (args == NULL || args->dest_uri == NULL)
        return -EINVAL;
    rc = lookup(hv, domain, &dom);
    if (rc < 0)
        return rc;
    /* Forget an earlier migration's stats: this one's event replaces them. */
    pthread_mutex_lock(&hv->completed.lock);
    if (strcmp(hv->completed.domain, domain) == 0)
        hv->completed.domain[0] = '\0';
    pthread_mutex_unlock(&hv->completed.lock);
    rc = migrate_params(args, &params, &nparams);
    if (rc < 0)
        goto out;
    flags |= args->live ? VIR_MIGRATE_LIVE : 0;
    flags |= args->p2p ? VIR_MIGRATE_PEER2PEER : 0;
    flags |= args->persistent ? VIR_MIGRATE_PERSIST_DEST : 0;
    flags |= args->undefine_source ? VIR_MIGRATE_UNDEFINE_SOURCE : 0;
    HD_INFO("libvirt: migrating domain %s to %s%s", domain, args->dest_uri,
            args->p2p ? " (peer to peer)" : "");
    if (args->p2p) {
        if (virDomainMigrateToURI3(dom, args->dest_uri, params,
                                   (unsigned int)nparams, flags) < 0)
            rc = failed("migrating domain", domain);
    } else {
        rc = migrate_direct(dom, domain, args, params, nparams, flags);
    }
out:
    virTypedParamsFree(params, nparams);
    virDomainFree(dom);
    return rc;
}

/* Reads the unsigned field NAME of a job's stats, if there. */
static bool job_field(virTypedParameterPtr params, int nparams,
                      const char *name, uint64_t *out)
{
    unsigned long long v;

    if (virTypedParamsGetULLong(params, nparams, name, &v) != 1)
        return false;
    *out = v;
    return true;
}

static void job_from_params(virTypedParameterPtr params, int nparams,
                            struct hv_job *out)
{
    uint64_t ms;

    memset(out, 0, sizeof(*out));
    if (job_field(params, nparams, VIR_DOMAIN_JOB_TIME_ELAPSED, &ms))
        out->elapsed = (double)ms / 1000.0;
    job_field(params, nparams, VIR_DOMAIN_JOB_DATA_TOTAL, &out->data_total);
    job_field(params, nparams, VIR_DOMAIN_JOB_DATA_PROCESSED,
              &out->data_processed);
    job_field(params, nparams, VIR_DOMAIN_JOB_DATA_REMAINING,
              &out->data_remaining);
    if (job_field(params, nparams, VIR_DOMAIN_JOB_DOWNTIME, &ms))
        out->downtime = (double)ms / 1000.0;
}

/*
 * The running job of DOMAIN, else its last completed one.  A domain that
 * migrated away is gone here (or inactive) by the time the migration call
 * returns: its stats then come from the job-completed event libvirt sent
 * just before (completed_job).
 */
static int lv_job(struct hv *hv, const char *domain, struct hv_job *out)
{
    virTypedParameterPtr params = NULL;
    int nparams = 0;
    virDomainPtr dom;
    int type;
    int rc;

    memset(out, 0, sizeof(*out));
    if (domain == NULL || domain[0] == '\0')
        return -EINVAL;
    if ((dom = virDomainLookupByName(hv->conn, domain)) == NULL)
        return completed_job(hv, domain, out) == 0
                   ? 0
                   : failed("looking up domain", domain);
    rc = 0;
    if (virDomainGetJobStats(dom, &type, &params, &nparams, 0) < 0) {
        rc = failed("reading the job of domain", domain);
        goto out;
    }
    if (type == VIR_DOMAIN_JOB_NONE) {
        /* The last job's numbers, kept for the next caller too. */
        virTypedParamsFree(params, nparams);
        params = NULL;
        nparams = 0;
        if (virDomainGetJobStats(dom, &type, &params, &nparams,
                                 VIR_DOMAIN_JOB_STATS_COMPLETED |
                                     VIR_DOMAIN_JOB_STATS_KEEP_COMPLETED) <
            0) {
            /* Inactive now (migrated away, kept defined). */
            rc = completed_job(hv, domain, out) == 0
                     ? 0
                     : failed("reading the last job of domain", domain);
            goto out;
        }
    }
    job_from_params(params, nparams, out);
    out->active = type == VIR_DOMAIN_JOB_BOUNDED ||
                  type == VIR_DOMAIN_JOB_UNBOUNDED;
out:
    virTypedParamsFree(params, nparams);
    virDomainFree(dom);
    return rc;
}

/* Pauses DOMAIN (PAUSE) or lets it run again. */
static int set_paused(struct hv *hv, const char *domain, bool pause)
{
    virDomainPtr dom;
    int rc;

    rc = lookup(hv, domain, &dom);
    if (rc < 0)
        return rc;
    if ((pause ? virDomainSuspend(dom) : virDomainResume(dom)) < 0)
        rc = failed(pause ? "suspending domain" : "resuming domain", domain);
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

    rc = lookup(hv, domain, &dom);
    if (rc < 0)
        return rc;
    if (virDomainCreate(dom) < 0)
        rc = failed("starting domain", domain);
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
    .migrate = lv_migrate,
    .job = lv_job,
    .suspend = lv_suspend,
    .unpause = lv_unpause,
    .start = lv_start,
};
