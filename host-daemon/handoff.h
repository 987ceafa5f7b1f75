/* The steps of a migration another tool performs (an orchestrator's own
 * virDomainMigrate): crane-hostctl's prepare, abort, resume and pool. */
#ifndef HD_HANDOFF_H
#define HD_HANDOFF_H

#include "daemon.h"
#include "history.h"
#include "hv.h"
#include "proto/hostd.pb-c.h"

/* Why request Q (not a MigrateRequest) is refused before anything starts,
 * or NULL when it may run.  Its domain, if it names one, in *DOMAIN. */
const char *hd_handoff_check(const Crane__Hostd__ClientRequest *q,
                             const char **domain);

/* Serves request Q on CLIENT_FD (a job thread; blocks for the step):
 * prepare (migration.c), abort, resume, pool. */
void hd_handoff_serve(struct hd_daemon *d, int client_fd,
                      const Crane__Hostd__ClientRequest *q);

/* DOMAIN was prepared here for migration ID (begun at START_WALL, epoch
 * seconds): the history row stays running until the VM leaves or an
 * abort or resume takes it up, or its lease of LEASE_S seconds (0: none)
 * runs out (hd_handoff_tick). */
void hd_handoff_prepared(struct hd_daemon *d, const char *id,
                         const char *domain, double start_wall,
                         uint32_t lease_s);

/* Loop thread, about once a second: each prepared VM whose lease ran out
 * is aborted on a job thread (step "lease-expired"), unless the
 * hypervisor is migrating it right then (checked again a little later) or
 * it left this host. */
void hd_handoff_tick(struct hd_daemon *d);

/* A VM prepared here, as hd_handoff_list copies it. */
struct hd_prepared_entry {
    char domain[HV_NAME_MAX + 1];
    char id[HD_ID_MAX + 1];
    double start_wall;            /* the migration's start, epoch seconds */
    uint32_t lease_s;             /* as granted; 0: none */
    double lease_left;            /* seconds; -1: no lease */
};

/* Copies up to MAX of the VMs prepared here into OUT; how many. */
size_t hd_handoff_list(struct hd_prepared_entry *out, size_t max);

/* Loop thread, every hypervisor event: a prepared VM that migrated away
 * (HV_EV_DOMAIN_MIGRATED_OUT) ends its migration ok; one whose process
 * ended otherwise (HV_EV_DOMAIN_SHUT_OFF) ends it failed. */
void hd_handoff_event(struct hd_daemon *d, const struct hv_event *ev);

#endif /* HD_HANDOFF_H */
