/* crane-hostctl's views (list, history, jobinfo, the pool's table): what
 * its files share. */
#ifndef HD_HOSTCTL_H
#define HD_HOSTCTL_H

#include "host-daemon/web/pool_report.h"

#include "proto/hostd.pb-c.h"

#include <stdbool.h>
#include <stdio.h>

/* hostctl_table.c: each view as a table (the default) or JSON (--json),
 * every string from the daemon cleaned (tables) or escaped (JSON).
 * 0, or -ENOMEM. */
int ctl_print_pool_table(FILE *out, const struct hd_pool_state *s);
int ctl_print_history(FILE *out, const Crane__Hostd__CtlHistory *h,
                      bool json);
/* The domains this host knows: holding a GPU, waiting for one, prepared
 * (POOL), migrating (RUNNING, the running migrations). */
int ctl_print_list(FILE *out, const Crane__Hostd__PoolReport *pool,
                   const Crane__Hostd__CtlHistory *running, bool json);
int ctl_print_job(FILE *out, const Crane__Hostd__CtlJob *j,
                  const char *domain, bool json);

#endif /* HD_HOSTCTL_H */
