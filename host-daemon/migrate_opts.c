/* crane-hostd's side of virsh migrate's options: checks of the request's
 * (untrusted), the hypervisor's arguments, the TLS decision. */
#include "migrate_opts.h"

#include "proto/log.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* A disk target as libvirt names it (vda, sdb, hdc, nvme0n1): 1..32 of
 * [A-Za-z0-9_-]. */
static bool disk_target(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n > 32)
        return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-')
            return false;
    return true;
}

/* Text that is at most MAX bytes without control characters. */
static bool plain(const char *s, size_t max)
{
    if (strlen(s) > max)
        return false;
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return false;
    return true;
}

const char *hd_migrate_opts_check(const Crane__Hostd__MigrateOptions *o)
{
    if (o == NULL)
        return NULL;
    if (o->copy_storage_all && o->copy_storage_inc)
        return "copy_storage_all and copy_storage_inc exclude each other";
    if (o->n_migrate_disks > HD_MIGRATE_DISKS_MAX)
        return "over 64 migrate_disks";
    for (size_t i = 0; i < o->n_migrate_disks; i++)
        if (!disk_target(o->migrate_disks[i]))
            return "bad migrate_disks target (1..32 of [A-Za-z0-9_-])";
    if (o->n_migrate_disks && !o->copy_storage_all && !o->copy_storage_inc)
        return "migrate_disks needs copy_storage_all or copy_storage_inc";
    if (o->parallel_connections > 255)
        return "parallel_connections over 255";
    if (o->parallel_connections && !o->parallel)
        return "parallel_connections needs parallel";
    if (o->zerocopy && !o->parallel)
        return "zerocopy needs parallel";
    if (o->disks_port > 65535)
        return "bad disks_port";
    if (o->bandwidth_mib > (1ull << 40))
        return "bandwidth_mib out of range";
    if (!plain(o->listen_address, 255) || !plain(o->dname, 255) ||
        !plain(o->disks_uri, 1024) || !plain(o->tls_destination, 255))
        return "bad listen_address, dname, disks_uri or tls_destination";
    if (*o->dname && strchr(o->dname, '/'))
        return "bad dname (no '/')";
    return NULL;
}

bool hd_qemu_conf_forces_tls(const char *path)
{
    char line[512];
    bool forced = false;
    FILE *f = fopen(path, "re");

    if (f == NULL)
        return false;
    while (fgets(line, sizeof(line), f)) {
        char *p = line;
        unsigned v;

        while (isspace((unsigned char)*p))
            p++;
        if (strncmp(p, "migrate_tls_force", 17) != 0)
            continue;
        p += 17;
        if (sscanf(p, " = %u", &v) == 1)
            forced = v != 0;       /* the last line wins, as in libvirt */
    }
    fclose(f);
    return forced;
}

void hd_migrate_opts_apply(const struct hd_config *cfg,
                           const Crane__Hostd__MigrateOptions *o,
                           struct hv_migrate_args *a)
{
    bool on = strcmp(cfg->migrate_tls, "on") == 0;
    bool autodetect = strcmp(cfg->migrate_tls, "auto") == 0;

    if (autodetect && hd_qemu_conf_forces_tls(cfg->qemu_conf)) {
        CRN_INFO("%s sets migrate_tls_force: migrating with TLS",
                cfg->qemu_conf);
        on = true;
    }
    a->tls = on;
    a->tls_if_refused = autodetect;
    if (o == NULL)
        return;
    a->tls |= o->tls;
    a->copy_storage_all = o->copy_storage_all;
    a->copy_storage_inc = o->copy_storage_inc;
    a->copy_storage_sync = o->copy_storage_synchronous_writes;
    a->migrate_disks = (const char *const *)o->migrate_disks;
    a->n_migrate_disks = o->n_migrate_disks;
    a->auto_converge = o->auto_converge;
    a->abort_on_error = o->abort_on_error;
    a->compressed = o->compressed;
    a->unsafe = o->unsafe;
    a->change_protection = o->change_protection;
    a->tunnelled = o->tunnelled;
    a->zerocopy = o->zerocopy;
    a->parallel = o->parallel;
    a->parallel_connections = o->parallel_connections;
    a->bandwidth_mib = o->bandwidth_mib;
    a->listen_address = o->listen_address;
    a->dname = o->dname;
    a->disks_uri = o->disks_uri;
    a->tls_destination = o->tls_destination;
    a->disks_port = o->disks_port;
}
