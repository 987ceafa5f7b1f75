/* crane-hostctl's read-only views served by crane-hostd: the history's
 * newest migrations (list, history) and a domain's running job. */
#ifndef HD_CTL_SERVE_H
#define HD_CTL_SERVE_H

#include "daemon.h"

#include "proto/hostd.pb-c.h"

/* NULL when Q (a CtlHistoryQuery or CtlJobQuery) is well formed, else why
 * not; other requests: NULL. */
const char *hd_ctl_check(const Crane__Hostd__ClientRequest *q);

/* Answers Q on FD with one CtlHistory or CtlJob; 1 when Q was one of
 * these, 0 when it is another request. */
int hd_ctl_serve(struct hd_daemon *d, int fd,
                 const Crane__Hostd__ClientRequest *q);

#endif /* HD_CTL_SERVE_H */
