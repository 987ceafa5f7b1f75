/* The GPU pool as schedulers read it: crane's own JSON, an OpenStack
 * Placement provider view, a Kubernetes Node patch (docs/fleet.md). */
#ifndef HD_POOL_REPORT_H
#define HD_POOL_REPORT_H

#include "host-daemon/history/backlog.h"
#include "buf.h"

#include <stdbool.h>
#include <stddef.h>

/* The resource class, trait and names the views use. */
#define HD_POOL_RC "CUSTOM_CRANE_GPU"
#define HD_POOL_TRAIT "CUSTOM_CRANE_LIVE_MIGRATABLE"
#define HD_POOL_K8S_RESOURCE "crane.io/gpu"
#define HD_POOL_K8S_PREFIX "crane.io/"

/* One GPU of the pool: NAME (the `gpu` line's), ALIAS, PCI ("" for a
 * stand-in), HOLDER (the running domain holding it, "" when none),
 * RESERVED (being attached right now). */
struct hd_pool_gpu_state {
    const char *name, *alias, *pci, *holder;
    bool reserved;
};

/* A VM that arrived without a free GPU and waits for one. */
struct hd_pool_waiter_state {
    const char *domain, *migration_id;
    double since;                 /* its migration's start, epoch seconds */
    unsigned gpus;                /* how many it waits for (0: one) */
};

/* A VM prepared here for a migration another tool performs. */
struct hd_pool_prepared_state {
    const char *domain, *migration_id;
    double since;                 /* its migration's start, epoch seconds */
    unsigned lease_s;             /* the lease granted, 0: none */
    double lease_left;            /* seconds left, negative: no lease */
};

/* What crane-hostd reports of its pool.  ERROR not "" when the hypervisor
 * could not be read: no GPU's holder is known then. */
struct hd_pool_state {
    const char *host;
    const struct hd_pool_gpu_state *gpus;
    size_t n_gpus;
    const struct hd_pool_waiter_state *waiting;
    size_t n_waiting;
    const char *error;
    const struct hd_pool_prepared_state *prepared;
    size_t n_prepared;
    /* The migration history's health, NULL when not known (JSON only:
     * "history", an object). */
    const struct hd_history_health *history;
};

enum hd_pool_format {
    HD_POOL_JSON,       /* crane's own view (every field) */
    HD_POOL_PLACEMENT,  /* one child resource provider per GPU */
    HD_POOL_KUBERNETES, /* a merge patch of the Node: labels, capacity */
};

/* "json", "placement", "kubernetes": 0, or -EINVAL. */
int hd_pool_format_parse(const char *name, enum hd_pool_format *out);

/* Counts: held (a running domain has it), reserved (being attached, held
 * by none), free (neither); all zero-or-more, summing to n_gpus.  With an
 * error nothing is known free: every GPU counts as reserved. */
void hd_pool_count(const struct hd_pool_state *s, size_t *held,
                   size_t *reserved, size_t *free_count);

/* Appends S rendered as FORMAT (one JSON document and a newline) to OUT.
 * 0, -EINVAL (a NULL or over-long name: Kubernetes labels and Placement
 * names have bounds), or OUT's error. */
int hd_pool_render(struct hd_buf *out, const struct hd_pool_state *s,
                   enum hd_pool_format format);

#endif /* HD_POOL_REPORT_H */
