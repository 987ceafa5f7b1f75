/* The migrations running on this host, as crane-hostctl cancel and job
 * queries find them: a cancel flag, the step, the hypervisor's job. */
#ifndef HD_RUNNING_H
#define HD_RUNNING_H

#include "daemon.h"
#include "host-daemon/hv/hv.h"
#include "proto/hostd.pb-c.h"

#include <stdbool.h>

struct hd_running;

/* Registers the migration ID of DOMAIN (NULL when the table is full:
 * it then cannot be cancelled, and says so in the log). */
struct hd_running *hd_running_add(const char *domain, const char *id);
/* Takes it off the table (one that moved its VM is kept a while to answer
 * a late cancel: "already completed"); R may be NULL. */
void hd_running_remove(struct hd_running *r);
/* Whether a migration of DOMAIN runs here short of its last step (a
 * prepare that reached "ready" no longer counts: a cancel is its abort). */
bool hd_running_busy(const char *domain);
/* Whether a cancel was asked for (R NULL: no). */
bool hd_running_cancelled(const struct hd_running *r);
/* The hypervisor's copy ended: MOVED, the VM left (from here on a cancel
 * is refused: the destination has it), else it runs on here.  A cancel
 * asked during the copy waits for this to answer. */
void hd_running_copied(struct hd_running *r, bool moved);
/* The current step and, while the hypervisor copies, its job. */
void hd_running_set_phase(struct hd_running *r, const char *phase);
void hd_running_set_job(struct hd_running *r, const struct hv_job *job);

/* The hv_job as the wire has it. */
void hd_job_stats(const struct hv_job *j, Crane__Hostd__JobStats *out);

/* Why a HostCancel or JobQuery (untrusted) is malformed, or NULL. */
const char *hd_running_check(const Crane__Hostd__ClientRequest *q);

/* Answers a HostCancel or a JobQuery on FD (crane-hostctl, crane-migrate
 * interrupted): one MigrateDone, or one JobReport. */
void hd_running_serve(struct hd_daemon *d, int fd,
                      const Crane__Hostd__ClientRequest *q);

#endif /* HD_RUNNING_H */
