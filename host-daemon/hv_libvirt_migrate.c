/* The libvirt backend's migrations and their jobs' stats (downtime, bytes),
 * read from libvirt or from the job-completed event once the domain left. */
#include "hv_libvirt_int.h"

#include "log.h"

#include "proto/deadline.h"

#include <errno.h>
#include <string.h>
#include <time.h>

/* How long hv_libvirt__job waits for the job-completed event of a domain
 * that has just left (the event and the migration's answer race on the
 * wire). */
#define COMPLETED_WAIT_MS 3000

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
            rc = hv_libvirt__failed("migrating domain", domain);
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

void hv_libvirt__job_from_params(virTypedParameterPtr params, int nparams,
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
out:
    virTypedParamsFree(params, nparams);
    virDomainFree(dom);
    return rc;
}

