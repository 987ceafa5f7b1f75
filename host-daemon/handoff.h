/* The steps of a migration another tool performs (an orchestrator's own
 * virDomainMigrate): crane-hostctl's prepare, abort, resume and pool, and
 * the end of a prepare's lease (prepared.c keeps the prepared VMs). */
#ifndef HD_HANDOFF_H
#define HD_HANDOFF_H

#include "daemon.h"
#include "host-daemon/hv/hv.h"
#include "proto/hostd.pb-c.h"

#include <stdbool.h>

/* Why request Q (not a MigrateRequest) is refused before anything starts,
 * or NULL when it may run.  Its domain, if it names one, in *DOMAIN. */
const char *hd_handoff_check(const Crane__Hostd__ClientRequest *q,
                             const char **domain);

/* Serves request Q on CLIENT_FD (a job thread; blocks for the step):
 * prepare (migration.c), abort, resume, pool. */
void hd_handoff_serve(struct hd_daemon *d, int client_fd,
                      const Crane__Hostd__ClientRequest *q);

/* Whether cancel C names a VM that waits prepared here (the prepare
 * ended "ready", no migration step of it runs): then the cancel is its
 * abort, hd_handoff_cancel (which a caller runs as a step of C's domain). */
bool hd_handoff_cancels(const Crane__Hostd__HostCancel *c);
void hd_handoff_cancel(struct hd_daemon *d, int client_fd,
                       const Crane__Hostd__HostCancel *c);

/* Loop thread, about once a second: each prepared VM whose lease ran out
 * is aborted on a job thread (step "lease-expired"), unless the
 * hypervisor is migrating it right then (checked again a little later) or
 * it left this host. */
void hd_handoff_tick(struct hd_daemon *d);

/* Loop thread, every hypervisor event: a prepared VM that migrated away
 * (HV_EV_DOMAIN_MIGRATED_OUT) ends its migration ok; one whose process
 * ended otherwise (HV_EV_DOMAIN_SHUT_OFF) ends it failed. */
void hd_handoff_event(struct hd_daemon *d, const struct hv_event *ev);

#endif /* HD_HANDOFF_H */
