/* The VMs prepared here for a migration another tool performs, each with
 * the lease that bounds how long it may stay so. */
#ifndef HD_PREPARED_H
#define HD_PREPARED_H

#include "pool.h"
#include "host-daemon/history/history.h"
#include "host-daemon/hv/hv.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HD_PREPARED_MAX 64

/* A VM prepared here whose migration the hypervisor has yet to carry out:
 * its history row is running. */
struct hd_prepared {
    char id[HD_ID_MAX + 1];
    char domain[HV_NAME_MAX + 1];
    double start_wall;            /* the migration's start, epoch seconds */
    uint32_t lease_s;             /* as granted; 0: none */
    double lease_end;             /* hd_now() when it runs out; 0: none */
    bool expiring;                /* handed to hd_prepared_due's caller */
    unsigned gone_checks;         /* lease checks in a row that did not
                                     find the VM */
    struct hd_gpu_want want;      /* the GPUs it held: an abort plugs as
                                     many back */
};

/* A prepared VM as hd_prepared_list shows it. */
struct hd_prepared_entry {
    char domain[HV_NAME_MAX + 1];
    char id[HD_ID_MAX + 1];
    double start_wall;
    uint32_t lease_s;             /* as granted; 0: none */
    double lease_left;            /* seconds; -1: no lease */
};

/* DOMAIN was prepared for migration ID (begun at START_WALL) with a lease
 * of LEASE_S seconds from now (0: none), its GPUs WANT unplugged; an older
 * entry of DOMAIN goes. */
void hd_prepared_add(const char *id, const char *domain, double start_wall,
                     uint32_t lease_s, const struct hd_gpu_want *want);

/* Takes DOMAIN's entry (and, with ID not "", only that migration's) out
 * of the list into *OUT.  false when there is none.  Taking it is what
 * ends its lease: an abort, a resume, the VM leaving, the lease's expiry. */
bool hd_prepared_take(const char *domain, const char *id,
                      struct hd_prepared *out);

/* Whether DOMAIN (and, with ID not "", that migration) is prepared. */
bool hd_prepared_has(const char *domain, const char *id);

/* Copies up to MAX entries whose lease ran out and that are not being
 * handled yet into OUT, marking them handled (expiring); how many. */
size_t hd_prepared_due(struct hd_prepared *out, size_t max);

/* Entry P (if still in the list: no newer prepare of its VM took its
 * place) has its lease checked again in SECONDS, no longer handled;
 * GONE: this check did not find the VM (counted), else the count starts
 * again. */
void hd_prepared_rearm(const struct hd_prepared *p, double seconds,
                       bool gone);

/* Copies up to MAX entries into OUT; how many. */
size_t hd_prepared_list(struct hd_prepared_entry *out, size_t max);

#endif /* HD_PREPARED_H */
