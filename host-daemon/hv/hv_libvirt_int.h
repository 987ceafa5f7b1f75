/* The libvirt backend's shared state and helpers, for its own files only. */
#ifndef HD_HV_LIBVIRT_INT_H
#define HD_HV_LIBVIRT_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include "hv.h"

/* The domain events crane-hostd listens to, one callback id each. */
enum {
    CB_LIFECYCLE,
    CB_DEVICE_REMOVED,
    CB_DEVICE_ADDED,
    CB_DEVICE_REMOVAL_FAILED,
    CB_JOB_COMPLETED,
    CB_COUNT,
};

/* The last job-completed event: a migrated-away domain is gone from the
 * source (undefined, or transient) before anyone can ask for its stats,
 * and the event is the only place that still has them (downtime above
 * all).  Written on the loop thread, read by migration threads. */
struct completed_job {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    char domain[HV_NAME_MAX + 1];  /* "" until the first event */
    unsigned long seq;             /* events seen */
    struct hv_job job;
};

/* Set by open, read-only afterwards: every entry may use it from any
 * thread (a virConnectPtr is thread-safe). */
struct hv {
    virConnectPtr conn;
    char *uri;
    char *channel_name;         /* NULL: domains have no guest channel */
    hv_event_fn *fn;
    void *arg;
    int callback_ids[CB_COUNT]; /* -1: not registered */
    bool close_cb_registered;
    struct completed_job completed;
};

/* --- errors and names (hv_libvirt.c) ------------------------------------- */

/* The -errno that stands for libvirt's error ERR (NULL: -EIO). */
int hv_libvirt__errno(const virError *err);
/* The -errno of the libvirt call that just failed on this thread, logged
 * with WHAT and DOMAIN (NULL: none). */
int hv_libvirt__failed(const char *what, const char *domain);
/* Copies S into OUT (SIZE bytes); -ENAMETOOLONG when it does not fit. */
int hv_libvirt__copy_name(const char *s, char *out, size_t size);
/* The domain called NAME; the caller frees it (virDomainFree). */
int hv_libvirt__lookup(struct hv *hv, const char *name, virDomainPtr *out);

/* --- events (hv_libvirt_events.c, the loop thread) ----------------------- */

/* Watches the connection and registers every domain event crane-hostd
 * listens to; what was registered is undone by hv_libvirt__unwatch. */
int hv_libvirt__watch(struct hv *hv);
void hv_libvirt__unwatch(struct hv *hv);

/* --- migrations and their jobs (hv_libvirt_migrate.c) -------------------- */

/* --- typed parameters (hv_libvirt_params.c) ----------------------------- */

/* A job's stats from libvirt's typed parameters. */
void hv_libvirt__job_from_params(virTypedParameterPtr params, int nparams,
                                 struct hv_job *out);
/* A migration's typed parameters (freed with virTypedParamsFree) and
 * flags from its arguments. */
int hv_libvirt__migrate_params(const struct hv_migrate_args *a,
                               virTypedParameterPtr *params, int *n);
unsigned int hv_libvirt__migrate_flags(const struct hv_migrate_args *a);
int hv_libvirt__migrate(struct hv *hv, const char *domain,
                        const struct hv_migrate_args *args);
int hv_libvirt__job(struct hv *hv, const char *domain, struct hv_job *out);
int hv_libvirt__abort_job(struct hv *hv, const char *domain);

#endif
