/* This host's GPU pool: which GPU each domain holds, which are free. */
#ifndef HD_POOL_H
#define HD_POOL_H

#include "config.h"
#include "host-daemon/hv/hv.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hd_pool;

/* Builds the pool from CFG's gpu lines: a PCI address becomes a managed
 * <hostdev> aliased ua-crane-NAME; a device XML file must carry its own
 * ua- alias.  -EINVAL with WHY for a bad file. */
int hd_pool_new(const struct hd_config *cfg, struct hd_pool **out,
                char *why, size_t why_len);
void hd_pool_free(struct hd_pool *pool);

size_t hd_pool_size(const struct hd_pool *pool);

/* The GPUs a VM holds, or the ones it needs: one model per GPU ("" for
 * any; a pool GPU without a model matches any) and the memory it had (a
 * pool GPU fits with as much or more; 0 on either side: any), at most
 * HD_MAX_GPUS.  A want with N 0 stands for one GPU of any model (a peer
 * that says none). */
struct hd_gpu_want {
    char model[HD_MAX_GPUS][64];
    uint32_t mem_gib[HD_MAX_GPUS];
    size_t n;
};

/* A set of pool GPUs: a VM's, or the ones reserved for it. */
struct hd_gpu_set {
    const struct hv_gpu *gpu[HD_MAX_GPUS];
    size_t n;
};

/* Every pool GPU DOMAIN holds now, in pool order; -ENOENT when none. */
int hd_pool_held_set(struct hd_pool *pool, const struct hv_ops *ops,
                     struct hv *hv, const char *domain,
                     struct hd_gpu_set *out);

/* The want of a VM holding SET: each GPU's model. */
void hd_pool_want_of(const struct hd_gpu_set *set, struct hd_gpu_want *out);

/* Reserves one free GPU for each GPU of WANT, all or none, for DOMAIN
 * until hd_pool_unreserve_set.  -EBUSY: fewer free GPUs of those models
 * than WANT has (nothing reserved). */
int hd_pool_reserve_set(struct hd_pool *pool, const struct hv_ops *ops,
                        struct hv *hv, const char *domain,
                        const struct hd_gpu_want *want,
                        struct hd_gpu_set *out);
void hd_pool_unreserve_set(struct hd_pool *pool, const struct hd_gpu_set *s);

/* How many of WANT's GPUs the free ones could take now (at most its N). */
int hd_pool_free_matching(struct hd_pool *pool, const struct hv_ops *ops,
                          struct hv *hv, const struct hd_gpu_want *want,
                          unsigned *matching);

/* The pool GPU DOMAIN holds now into *OUT; -ENOENT when none. */
int hd_pool_held_by(struct hd_pool *pool, const struct hv_ops *ops,
                    struct hv *hv, const char *domain,
                    const struct hv_gpu **out);

/* How many GPUs are free now (not held, not reserved). */
int hd_pool_free_count(struct hd_pool *pool, const struct hv_ops *ops,
                       struct hv *hv, unsigned *free_count);

/* One pool GPU as the hypervisor has it now. */
struct hd_pool_entry {
    const struct hv_gpu *gpu;
    char holder[HV_NAME_MAX + 1]; /* the running domain holding it, or "" */
    bool reserved;                /* being attached right now */
};

/* Fills OUT[0..n) (N is the pool's size, at most MAX) with every GPU and
 * who holds it; *N is set even on failure, with holders then empty.
 * 0 or -errno (the hypervisor could not be read). */
int hd_pool_view(struct hd_pool *pool, const struct hv_ops *ops,
                 struct hv *hv, struct hd_pool_entry *out, size_t max,
                 size_t *n);

#endif /* HD_POOL_H */
