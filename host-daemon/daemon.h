/* crane-hostd's shared state: settings, hypervisor, GPU pool, event waits. */
#ifndef HD_DAEMON_H
#define HD_DAEMON_H

#include "config.h"
#include "host-daemon/hv/hv.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

struct crn_tls_config;

struct hd_backlog;
struct hd_health;
struct hd_pool;
struct hd_waits;
struct hd_waiting;

struct hd_daemon {
    struct hd_config cfg;
    uv_loop_t *loop;
    const struct hv_ops *hv_ops;
    struct hv *hv;
    struct hd_pool *pool;
    struct hd_waits *waits;       /* threads waiting for hypervisor events */
    struct hd_waiting *waiting;   /* arrived VMs waiting for a free GPU */
    struct hd_backlog *backlog;   /* migrations the history did not take */
    struct hd_health *health;     /* the proxy's and peers' gauges */
    struct crn_tls_config *tls;   /* peers' TLS (tls, pki_dir), or NULL */
    struct crn_tls_config *proxy_tls; /* to the proxy (tls, proxy_key) */
    uint8_t *key;                 /* peers' shared key, or NULL */
    size_t key_len;
    uint8_t *proxy_key;           /* the proxy domain's key, or NULL */
    size_t proxy_key_len;

    /* Jobs (migrations, peer connections) run on threads of their own;
     * shutdown waits for them. */
    pthread_mutex_t jobs_lock;
    pthread_cond_t jobs_done;
    unsigned jobs;
    bool stopping;
};

/* Runs FN(ARG) on a new detached thread counted in D's jobs.  -EAGAIN
 * while stopping. */
int hd_job_start(struct hd_daemon *d, void (*fn)(void *), void *arg);
/* Waits until every job has ended. */
void hd_jobs_wait(struct hd_daemon *d);

/* Seconds on the monotonic clock, and since the Unix epoch. */
double hd_now(void);
double hd_wall(void);

#endif /* HD_DAEMON_H */
