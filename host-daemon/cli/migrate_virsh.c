/* crane-migrate's further options of virsh migrate: their table, values,
 * the ones refused with their reason, and the checks between them. */
#include "migrate_cli.h"

#include "proto/log.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

enum {
    V_TLS = MIG_VIRSH_BASE, V_COPY_ALL, V_COPY_INC, V_COPY_SYNC, V_DISKS,
    V_AUTO_CONVERGE, V_BANDWIDTH, V_ABORT_ON_ERROR, V_PARALLEL,
    V_PARALLEL_CONNS, V_MIGRATEURI, V_LISTEN, V_DNAME, V_DOMAIN, V_DESTURI,
    V_COMPRESSED, V_DISKS_URI, V_DISKS_PORT, V_UNSAFE, V_CHANGE_PROTECTION,
    V_TUNNELLED, V_ZEROCOPY, V_TLS_DEST, V_TIMEOUT_SUSPEND,
    V_REFUSED,                   /* from here: refused, with a reason */
    V_POSTCOPY = V_REFUSED, V_POSTCOPY_AFTER, V_POSTCOPY_BW,
    V_POSTCOPY_RESUME, V_TIMEOUT_POSTCOPY, V_SUSPEND, V_DIRECT,
    V_END,
};

const struct option mig_virsh_options[] = {
    {"tls", no_argument, NULL, V_TLS},
    {"copy-storage-all", no_argument, NULL, V_COPY_ALL},
    {"copy-storage-inc", no_argument, NULL, V_COPY_INC},
    {"copy-storage-synchronous-writes", no_argument, NULL, V_COPY_SYNC},
    {"migrate-disks", required_argument, NULL, V_DISKS},
    {"auto-converge", no_argument, NULL, V_AUTO_CONVERGE},
    {"bandwidth", required_argument, NULL, V_BANDWIDTH},
    {"abort-on-error", no_argument, NULL, V_ABORT_ON_ERROR},
    {"parallel", no_argument, NULL, V_PARALLEL},
    {"parallel-connections", required_argument, NULL, V_PARALLEL_CONNS},
    {"migrateuri", required_argument, NULL, V_MIGRATEURI},
    {"listen-address", required_argument, NULL, V_LISTEN},
    {"dname", required_argument, NULL, V_DNAME},
    {"domain", required_argument, NULL, V_DOMAIN},
    {"desturi", required_argument, NULL, V_DESTURI},
    {"compressed", no_argument, NULL, V_COMPRESSED},
    {"disks-uri", required_argument, NULL, V_DISKS_URI},
    {"disks-port", required_argument, NULL, V_DISKS_PORT},
    {"unsafe", no_argument, NULL, V_UNSAFE},
    {"change-protection", no_argument, NULL, V_CHANGE_PROTECTION},
    {"tunnelled", no_argument, NULL, V_TUNNELLED},
    {"zerocopy", no_argument, NULL, V_ZEROCOPY},
    {"tls-destination", required_argument, NULL, V_TLS_DEST},
    {"timeout-suspend", no_argument, NULL, V_TIMEOUT_SUSPEND},
    {"postcopy", no_argument, NULL, V_POSTCOPY},
    {"postcopy-after-precopy", no_argument, NULL, V_POSTCOPY_AFTER},
    {"postcopy-bandwidth", required_argument, NULL, V_POSTCOPY_BW},
    {"postcopy-resume", no_argument, NULL, V_POSTCOPY_RESUME},
    {"timeout-postcopy", no_argument, NULL, V_TIMEOUT_POSTCOPY},
    {"suspend", no_argument, NULL, V_SUSPEND},
    {"direct", no_argument, NULL, V_DIRECT},
    {NULL, 0, NULL, 0},
};

/* Why crane-migrate refuses option ID (>= V_REFUSED). */
static const char *refusal(int id)
{
    switch (id) {
    case V_POSTCOPY:
    case V_POSTCOPY_AFTER:
    case V_POSTCOPY_BW:
    case V_TIMEOUT_POSTCOPY:
        return "post-copy is refused: once it switches over, the VM runs "
               "at the destination while part of its memory is still at "
               "the source, so a failure of either host or of the link "
               "loses the VM, and neither a cancel nor crane's rollback "
               "(the VM on at the source, GPU back, programs back in "
               "passthrough) can bring it back.  The GPU is not the "
               "obstacle (it is unplugged before the copy starts); "
               "--auto-converge or --timeout make a busy VM converge";
    case V_POSTCOPY_RESUME:
        return "crane never starts a post-copy migration, so there is "
               "none to resume";
    case V_SUSPEND:
        return "the VM must run at the destination: its programs get a "
               "GPU back from the guest daemon there";
    case V_DIRECT:
        return "direct migration is for hypervisors that manage it "
               "themselves (not QEMU); crane-migrate needs libvirt's "
               "migration job to follow and cancel it";
    default: return "not supported";
    }
}

/* A whole number LO..HI. */
static int whole(const char *s, unsigned long long lo, unsigned long long hi,
                 unsigned long long *out)
{
    char *end;

    if (*s < '0' || *s > '9')
        return -EINVAL;
    errno = 0;
    *out = strtoull(s, &end, 10);
    return errno || *end || *out < lo || *out > hi ? -EINVAL : 0;
}

/* --migrate-disks vda,vdb: each target kept, at most 64. */
static int disks(const char *arg, struct mig_opts *o)
{
    Crane__Hostd__MigrateOptions *v = &o->vopts;
    char *copy, *tok, *save = NULL;

    if (!*arg)
        return -EINVAL;
    if (!(copy = strdup(arg)))
        return -ENOMEM;
    for (tok = strtok_r(copy, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        if (v->n_migrate_disks >= MIG_MAX_DISKS ||
            strlen(tok) > 32) {
            free(copy);
            return -EINVAL;
        }
        o->disks[v->n_migrate_disks++] = strdup(tok);
        if (!o->disks[v->n_migrate_disks - 1]) {
            v->n_migrate_disks--;
            free(copy);
            return -ENOMEM;
        }
    }
    free(copy);
    v->migrate_disks = o->disks;
    return v->n_migrate_disks ? 0 : -EINVAL;
}

int mig_virsh_option(int id, const char *arg, struct mig_opts *o)
{
    Crane__Hostd__MigrateOptions *v = &o->vopts;
    unsigned long long n;

    if (id >= V_REFUSED && id < V_END)
        return crn_usage_error("%s", refusal(id));
    o->req.options = v;
    switch (id) {
    case V_TLS: v->tls = true; break;
    case V_COPY_ALL: v->copy_storage_all = true; break;
    case V_COPY_INC: v->copy_storage_inc = true; break;
    case V_COPY_SYNC: v->copy_storage_synchronous_writes = true; break;
    case V_AUTO_CONVERGE: v->auto_converge = true; break;
    case V_ABORT_ON_ERROR: v->abort_on_error = true; break;
    case V_PARALLEL: v->parallel = true; break;
    case V_COMPRESSED: v->compressed = true; break;
    case V_UNSAFE: v->unsafe = true; break;
    case V_CHANGE_PROTECTION: v->change_protection = true; break;
    case V_TUNNELLED: v->tunnelled = true; break;
    case V_ZEROCOPY: v->zerocopy = true; break;
    case V_TIMEOUT_SUSPEND: break;  /* what --timeout does anyway */
    case V_DISKS:
        if (disks(arg, o) < 0)
            return crn_usage_error("bad --migrate-disks '%s' (targets such "
                                   "as vda,vdb; at most 64)", arg);
        break;
    case V_BANDWIDTH:
        if (whole(arg, 1, 1ull << 40, &n) < 0)
            return crn_usage_error("bad --bandwidth '%s' (MiB/s, a whole "
                                   "number, 1 or more)", arg);
        v->bandwidth_mib = n;
        break;
    case V_PARALLEL_CONNS:
        if (whole(arg, 1, 255, &n) < 0)
            return crn_usage_error("bad --parallel-connections '%s' (1 to "
                                   "255)", arg);
        v->parallel_connections = (uint32_t)n;
        break;
    case V_DISKS_PORT:
        if (whole(arg, 1, 65535, &n) < 0)
            return crn_usage_error("bad --disks-port '%s' (1 to 65535)",
                                   arg);
        v->disks_port = (uint32_t)n;
        break;
    case V_MIGRATEURI: o->named_migrateuri = arg; break;
    case V_DOMAIN: o->named_domain = arg; break;
    case V_DESTURI: o->named_desturi = arg; break;
    case V_LISTEN: v->listen_address = (char *)arg; break;
    case V_DNAME: v->dname = (char *)arg; break;
    case V_DISKS_URI: v->disks_uri = (char *)arg; break;
    case V_TLS_DEST: v->tls_destination = (char *)arg; break;
    default: return crn_usage_error("%s", "unknown option");
    }
    return -1;
}

int mig_virsh_check(const struct mig_opts *o)
{
    const Crane__Hostd__MigrateOptions *v = &o->vopts;

    if (v->copy_storage_all && v->copy_storage_inc)
        return crn_usage_error("%s", "--copy-storage-all and "
                                     "--copy-storage-inc exclude each other");
    if ((v->n_migrate_disks || v->disks_port || *v->disks_uri ||
         v->copy_storage_synchronous_writes) &&
        !v->copy_storage_all && !v->copy_storage_inc)
        return crn_usage_error("%s", "--migrate-disks, --disks-port, "
                               "--disks-uri and "
                               "--copy-storage-synchronous-writes need "
                               "--copy-storage-all or --copy-storage-inc");
    if (v->parallel_connections && !v->parallel)
        return crn_usage_error("%s", "--parallel-connections needs "
                                     "--parallel");
    if (v->zerocopy && !v->parallel)
        return crn_usage_error("%s", "--zerocopy needs --parallel");
    if (v->tunnelled && !o->req.p2p)
        return crn_usage_error("%s", "--tunnelled needs --p2p");
    if (*v->dname && strchr(v->dname, '/'))
        return crn_usage_error("bad --dname '%s'", v->dname);
    return -1;
}
