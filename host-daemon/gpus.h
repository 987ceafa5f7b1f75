/* A VM's GPUs unplugged and plugged as one set: a failure at any one of
 * them undoes the others, so that no VM is left with half its GPUs. */
#ifndef HD_GPUS_H
#define HD_GPUS_H

#include "daemon.h"
#include "pool.h"

#include <stddef.h>

/* Unplugs every GPU of SET from DOMAIN: all asked at once, each waited
 * for within detach_timeout_ms.  When one does not go (the guest keeps
 * it, the hypervisor refuses), the ones that went are plugged back in and
 * -errno comes back with WHY naming it. */
int hd_gpus_detach(struct hd_daemon *d, const char *domain,
                   const struct hd_gpu_set *set, char *why, size_t why_len);

/* Plugs every GPU of SET into DOMAIN, each waited for within
 * attach_timeout_ms.  When one fails, the ones plugged are unplugged
 * again and -errno comes back with WHY naming it. */
int hd_gpus_attach(struct hd_daemon *d, const char *domain,
                   const struct hd_gpu_set *set, char *why, size_t why_len);

/* SET's names, "g0, g1", into OUT ("none" for an empty set). */
void hd_gpus_names(const struct hd_gpu_set *set, char *out, size_t len);

#endif /* HD_GPUS_H */
