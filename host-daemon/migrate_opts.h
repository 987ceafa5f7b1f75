/* crane-hostd's side of virsh migrate's options: checks, hypervisor
 * arguments, the TLS decision. */
#ifndef HD_MIGRATE_OPTS_H
#define HD_MIGRATE_OPTS_H

#include "config.h"
#include "host-daemon/hv/hv.h"
#include "proto/hostd.pb-c.h"

#include <stdbool.h>

#define HD_MIGRATE_DISKS_MAX 64   /* --migrate-disks targets */

/* Why the request's MigrateOptions (untrusted) cannot be used, or NULL. */
const char *hd_migrate_opts_check(const Crane__Hostd__MigrateOptions *o);

/* Fills A's options from O (NULL: none) and CFG's migrate_tls; A points
 * into O, which must outlive it. */
void hd_migrate_opts_apply(const struct hd_config *cfg,
                           const Crane__Hostd__MigrateOptions *o,
                           struct hv_migrate_args *a);

/* Whether the qemu.conf at PATH sets migrate_tls_force = 1 (a missing or
 * unreadable file: no). */
bool hd_qemu_conf_forces_tls(const char *path);

#endif /* HD_MIGRATE_OPTS_H */
