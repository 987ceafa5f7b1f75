/* The libvirt backend's migrations and their jobs' stats (downtime, bytes),
 * read from libvirt or from the job-completed event once the domain left. */
#include "hv_libvirt_int.h"

#include "proto/log.h"

#include "proto/deadline.h"

#include <errno.h>
#include <string.h>
#include <time.h>

/* How long hv_libvirt__job waits for the job-completed event of a domain
 * that has just left (the event and the migration's answer race on the
 * wire). */
#define COMPLETED_WAIT_MS 3000

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
        return hv_libvirt__failed("connecting to the destination",
                                  args->dest_uri);
    arrived = virDomainMigrate3(dom, dest, params, (unsigned int)nparams,
                                flags);
    if (arrived == NULL)
        rc = hv_libvirt__failed("migrating domain", domain);
    else
        virDomainFree(arrived);
    virConnectClose(dest);
    return rc;
}

/* One try, peer to peer or driven from here. */
static int migrate_once(virDomainPtr dom, const char *domain,
                        const struct hv_migrate_args *args,
                        virTypedParameterPtr params, int nparams,
                        unsigned int flags)
{
    CRN_INFO("libvirt: migrating domain %s to %s (flags 0x%x%s%s)", domain,
            args->dest_uri, flags, args->p2p ? ", peer to peer" : "",
            flags & VIR_MIGRATE_TLS ? ", TLS" : "");
    if (!args->p2p)
        return migrate_direct(dom, domain, args, params, nparams, flags);
    if (virDomainMigrateToURI3(dom, args->dest_uri, params,
                               (unsigned int)nparams, flags) < 0)
        return hv_libvirt__failed("migrating domain", domain);
    return 0;
}

/* libvirt's refusal of a migration without VIR_MIGRATE_TLS where
 * migrate_tls_force is set: "this libvirtd instance allows migration only
 * with VIR_MIGRATE_TLS flag". */
static bool wants_tls(const virError *e)
{
    return e != NULL && e->code == VIR_ERR_OPERATION_INVALID &&
           e->message != NULL && strstr(e->message, "VIR_MIGRATE_TLS");
}

int hv_libvirt__abort_job(struct hv *hv, const char *domain)
{
    virDomainPtr dom;
    int rc = hv_libvirt__lookup(hv, domain, &dom);

    if (rc < 0)
        return rc;
    CRN_INFO("libvirt: aborting the job of domain %s", domain);
    if (virDomainAbortJob(dom) < 0)
        rc = hv_libvirt__failed("aborting the job of domain", domain);
    virDomainFree(dom);
    return rc;
}

int hv_libvirt__migrate(struct hv *hv, const char *domain,
                        const struct hv_migrate_args *args)
{
    virTypedParameterPtr params = NULL;
    unsigned int flags = 0;
    int nparams = 0;
    virDomainPtr dom;
    int rc;

    if (args == NULL || args->dest_uri == NULL)
        return -EINVAL;
    rc = hv_libvirt__lookup(hv, domain, &dom);
    if (rc < 0)
        return rc;
    /* Forget an earlier migration's stats: this one's event replaces them. */
    pthread_mutex_lock(&hv->completed.lock);
    if (strcmp(hv->completed.domain, domain) == 0)
        hv->completed.domain[0] = '\0';
    pthread_mutex_unlock(&hv->completed.lock);
    rc = hv_libvirt__migrate_params(args, &params, &nparams);
    if (rc < 0)
        goto out;
    flags = hv_libvirt__migrate_flags(args);
    rc = migrate_once(dom, domain, args, params, nparams, flags);
    if (rc < 0 && !(flags & VIR_MIGRATE_TLS) && args->tls_if_refused &&
        wants_tls(virGetLastError())) {
        /* migrate_tls = auto: this libvirtd forces TLS (qemu.conf's
         * migrate_tls_force), said only by its refusal. */
        CRN_WARN("libvirt: %s: migrating again with TLS",
                virGetLastErrorMessage());
        rc = migrate_once(dom, domain, args, params, nparams,
                          flags | VIR_MIGRATE_TLS);
    }
out:
    virTypedParamsFree(params, nparams);
    virDomainFree(dom);
    return rc;
}

/* The stats of DOMAIN's last completed job from its event, waiting up to
 * COMPLETED_WAIT_MS for one.  -ENOENT when none came. */
static int completed_job(struct hv *hv, const char *domain,
                         struct hv_job *out)
{
    struct completed_job *c = &hv->completed;
    struct timespec until;
    int rc = 0;

    crn_deadline_in(CLOCK_REALTIME, COMPLETED_WAIT_MS, &until);
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

/*
 * The running job of DOMAIN, else its last completed one.  A domain that
 * migrated away is gone here (or inactive) by the time the migration call
 * returns: its stats then come from the job-completed event libvirt sent
 * just before (completed_job).
 */
int hv_libvirt__job(struct hv *hv, const char *domain, struct hv_job *out)
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
                   : hv_libvirt__failed("looking up domain", domain);
    rc = 0;
    if (virDomainGetJobStats(dom, &type, &params, &nparams, 0) < 0) {
        rc = hv_libvirt__failed("reading the job of domain", domain);
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
                     : hv_libvirt__failed("reading the last job of domain",
                                          domain);
            goto out;
        }
    }
    hv_libvirt__job_from_params(params, nparams, out);
    out->active = type == VIR_DOMAIN_JOB_BOUNDED ||
                  type == VIR_DOMAIN_JOB_UNBOUNDED;
    if (out->active)
        out->downtime = 0;
    else
        out->expected_downtime = 0;
out:
    virTypedParamsFree(params, nparams);
    virDomainFree(dom);
    return rc;
}

