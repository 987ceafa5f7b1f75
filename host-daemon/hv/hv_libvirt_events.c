/* The libvirt backend's domain events, on the daemon's loop thread: handed
 * to the daemon as hv_events, and the last job-completed event kept for
 * hv_libvirt__job (a migrated-away domain's stats are only there). */
#include "hv_libvirt_int.h"

#include "hv_event.h"
#include "proto/log.h"

#include <stdio.h>
#include <string.h>

/* Builds an hv_event for DOM (and ALIAS) and hands it to the daemon. */
static void deliver(struct hv *hv, enum hv_event_kind kind, virDomainPtr dom,
                    const char *alias)
{
    struct hv_event ev = {.kind = kind};
    const char *name = virDomainGetName(dom);

    if (!hv_event_on_loop_thread())
        CRN_WARN("libvirt: domain event off the loop thread");
    if (name == NULL ||
        hv_libvirt__copy_name(name, ev.domain, sizeof(ev.domain)) < 0 ||
        (alias != NULL &&
         hv_libvirt__copy_name(alias, ev.alias, sizeof(ev.alias)) < 0)) {
        /* No pool alias or usable domain name is that long. */
        CRN_WARN("libvirt: event %d with an over-long name dropped", kind);
        return;
    }
    hv->fn(hv->arg, &ev);
}

static int on_lifecycle(virConnectPtr conn, virDomainPtr dom, int event,
                        int detail, void *opaque)
{
    (void)conn;
    CRN_DEBUG("libvirt: domain %s lifecycle event %d detail %d",
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
    CRN_WARN("libvirt: domain %s refused to release device %s",
            virDomainGetName(dom), alias);
}

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
    hv_libvirt__job_from_params(params, nparams, &c->job);
    c->job.active = false;
    c->job.expected_downtime = 0;
    c->seq++;
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
    CRN_DEBUG("libvirt: domain %s job completed: %.3f s, downtime %.3f s",
             name, c->job.elapsed, c->job.downtime);
}

static void on_connection_closed(virConnectPtr conn, int reason, void *opaque)
{
    static const char *const reasons[] = {"error", "end of file",
                                          "keepalive timeout", "client"};
    struct hv *hv = opaque;

    (void)conn;
    CRN_ERROR("libvirt: connection to %s lost (%s)", hv->uri,
             reason >= 0 && reason < 4 ? reasons[reason] : "unknown");
    if (reason != VIR_CONNECT_CLOSE_REASON_CLIENT) {
        struct hv_event ev = {.kind = HV_EV_CONNECTION_LOST};
        hv->fn(hv->arg, &ev);
    }
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
            return hv_libvirt__failed("registering for domain events on",
                                      hv->uri);
    }
    return 0;
}

int hv_libvirt__watch(struct hv *hv)
{
    if (virConnectRegisterCloseCallback(hv->conn, on_connection_closed, hv,
                                        NULL) < 0)
        return hv_libvirt__failed("watching the connection to", hv->uri);
    hv->close_cb_registered = true;
    return register_events(hv);
}

void hv_libvirt__unwatch(struct hv *hv)
{
    for (int i = 0; i < CB_COUNT; i++)
        if (hv->callback_ids[i] >= 0)
            virConnectDomainEventDeregisterAny(hv->conn, hv->callback_ids[i]);
    if (hv->close_cb_registered)
        virConnectUnregisterCloseCallback(hv->conn, on_connection_closed);
}
