/* The libvirt backend's typed parameters: a migration's flags and
 * parameters from its arguments, a job's stats from libvirt's. */
#include "hv_libvirt_int.h"

#include "proto/log.h"

#include <errno.h>
#include <string.h>

/* Adds the string VALUE as NAME when it is set. */
static int add_string(virTypedParameterPtr *params, int *n, int *max,
                      const char *name, const char *value)
{
    if (value == NULL || value[0] == '\0')
        return 0;
    return virTypedParamsAddString(params, n, max, name, value) < 0
               ? -ENOMEM
               : 0;
}

int hv_libvirt__migrate_params(const struct hv_migrate_args *a,
                               virTypedParameterPtr *params, int *n)
{
    int max = 0;
    int rc = 0;

    rc |= add_string(params, n, &max, VIR_MIGRATE_PARAM_URI, a->migrate_uri);
    rc |= add_string(params, n, &max, VIR_MIGRATE_PARAM_DEST_XML,
                     a->dest_xml);
    rc |= add_string(params, n, &max, VIR_MIGRATE_PARAM_LISTEN_ADDRESS,
                     a->listen_address);
    rc |= add_string(params, n, &max, VIR_MIGRATE_PARAM_DEST_NAME, a->dname);
    rc |= add_string(params, n, &max, VIR_MIGRATE_PARAM_DISKS_URI,
                     a->disks_uri);
    rc |= add_string(params, n, &max, VIR_MIGRATE_PARAM_TLS_DESTINATION,
                     a->tls_destination);
    for (size_t i = 0; i < a->n_migrate_disks; i++)
        if (virTypedParamsAddString(params, n, &max,
                                    VIR_MIGRATE_PARAM_MIGRATE_DISKS,
                                    a->migrate_disks[i]) < 0)
            rc = -ENOMEM;
    if (a->bandwidth_mib &&
        virTypedParamsAddULLong(params, n, &max, VIR_MIGRATE_PARAM_BANDWIDTH,
                                a->bandwidth_mib) < 0)
        rc = -ENOMEM;
    if (a->parallel_connections &&
        virTypedParamsAddInt(params, n, &max,
                             VIR_MIGRATE_PARAM_PARALLEL_CONNECTIONS,
                             (int)a->parallel_connections) < 0)
        rc = -ENOMEM;
    if (a->disks_port &&
        virTypedParamsAddInt(params, n, &max, VIR_MIGRATE_PARAM_DISKS_PORT,
                             (int)a->disks_port) < 0)
        rc = -ENOMEM;
    if (rc < 0)
        CRN_ERROR("libvirt: out of memory for the migration's parameters");
    return rc < 0 ? -ENOMEM : 0;
}

unsigned int hv_libvirt__migrate_flags(const struct hv_migrate_args *a)
{
    const struct {
        bool on;
        unsigned int flag;
    } map[] = {
        {a->live, VIR_MIGRATE_LIVE},
        {a->p2p, VIR_MIGRATE_PEER2PEER},
        {a->persistent, VIR_MIGRATE_PERSIST_DEST},
        {a->undefine_source, VIR_MIGRATE_UNDEFINE_SOURCE},
        {a->tls, VIR_MIGRATE_TLS},
        {a->copy_storage_all, VIR_MIGRATE_NON_SHARED_DISK},
        {a->copy_storage_inc, VIR_MIGRATE_NON_SHARED_INC},
        {a->copy_storage_sync, VIR_MIGRATE_NON_SHARED_SYNCHRONOUS_WRITES},
        {a->auto_converge, VIR_MIGRATE_AUTO_CONVERGE},
        {a->abort_on_error, VIR_MIGRATE_ABORT_ON_ERROR},
        {a->compressed, VIR_MIGRATE_COMPRESSED},
        {a->unsafe, VIR_MIGRATE_UNSAFE},
        {a->change_protection, VIR_MIGRATE_CHANGE_PROTECTION},
        {a->tunnelled, VIR_MIGRATE_TUNNELLED},
        {a->zerocopy, VIR_MIGRATE_ZEROCOPY},
        {a->parallel, VIR_MIGRATE_PARALLEL},
    };
    unsigned int flags = 0;

    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        flags |= map[i].on ? map[i].flag : 0;
    return flags;
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

/* Milliseconds NAME as seconds into *OUT, if there. */
static void job_ms(virTypedParameterPtr params, int nparams,
                   const char *name, double *out)
{
    uint64_t ms;

    if (job_field(params, nparams, name, &ms))
        *out = (double)ms / 1000.0;
}

void hv_libvirt__job_from_params(virTypedParameterPtr params, int nparams,
                                 struct hv_job *out)
{
    const struct {
        const char *name;
        uint64_t *out;
    } fields[] = {
        {VIR_DOMAIN_JOB_DATA_TOTAL, &out->data_total},
        {VIR_DOMAIN_JOB_DATA_PROCESSED, &out->data_processed},
        {VIR_DOMAIN_JOB_DATA_REMAINING, &out->data_remaining},
        {VIR_DOMAIN_JOB_MEMORY_TOTAL, &out->memory_total},
        {VIR_DOMAIN_JOB_MEMORY_PROCESSED, &out->memory_processed},
        {VIR_DOMAIN_JOB_MEMORY_REMAINING, &out->memory_remaining},
        {VIR_DOMAIN_JOB_MEMORY_BPS, &out->memory_bps},
        {VIR_DOMAIN_JOB_MEMORY_DIRTY_RATE, &out->dirty_rate},
        {VIR_DOMAIN_JOB_MEMORY_PAGE_SIZE, &out->page_size},
        {VIR_DOMAIN_JOB_MEMORY_ITERATION, &out->iterations},
        {VIR_DOMAIN_JOB_DISK_TOTAL, &out->disk_total},
        {VIR_DOMAIN_JOB_DISK_PROCESSED, &out->disk_processed},
        {VIR_DOMAIN_JOB_DISK_REMAINING, &out->disk_remaining},
        {VIR_DOMAIN_JOB_DISK_BPS, &out->disk_bps},
    };

    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
        job_field(params, nparams, fields[i].name, fields[i].out);
    job_ms(params, nparams, VIR_DOMAIN_JOB_TIME_ELAPSED, &out->elapsed);
    job_ms(params, nparams, VIR_DOMAIN_JOB_DOWNTIME, &out->downtime);
    job_ms(params, nparams, VIR_DOMAIN_JOB_SETUP_TIME, &out->setup_time);
    /* One field: the expected downtime while the job runs, the real one
     * once it completed.  hv_libvirt__job keeps the one that applies. */
    out->expected_downtime = out->downtime;
}
