/* The ivshmem path for a VM that remotes to the proxy domain on this host:
 * plugged into both, used, given up and unplugged. */
#ifndef HD_SHM_H
#define HD_SHM_H

#include "daemon.h"

#include <stdbool.h>
#include <stddef.h>

struct hd_run;

/*
 * When this host runs the proxy domain (proxy_domain, running) and
 * proxy_shm_mb is set: plugs a <shmem> of that size (ivshmem-plain,
 * alias ua-crane-shm-...) into the proxy domain and DOMAIN, and has the
 * guest's remoting programs move their bulk bytes through it (Shm).  Each
 * step goes into RUN (NULL: logged only).  1 when DOMAIN has its area now,
 * 0 when there is none to give (no proxy domain here, proxy_shm_mb 0),
 * -errno with WHY: what was plugged is unplugged again, unless the guest
 * may have handed parts of it out and cannot say they were given up (no
 * answer, a failed release): then it stays for a later release.
 */
int hd_shm_attach(struct hd_daemon *d, struct hd_run *run,
                  const char *domain, char *why, size_t why_len);

/*
 * When DOMAIN holds its area: the guest's programs give it up (bulk bytes
 * back on TCP, calls in flight finished), then it is unplugged from DOMAIN
 * and the proxy domain.  0 when done or nothing was held; -errno with WHY
 * (a guest that could not give it up keeps it: unplugging it would pull
 * memory from under a program).
 */
int hd_shm_release(struct hd_daemon *d, struct hd_run *run,
                   const char *domain, char *why, size_t why_len);

#endif /* HD_SHM_H */
