/* The VMs prepared here for a migration another tool performs, each with
 * the lease that bounds how long it may stay so. */
#include "prepared.h"

#include "daemon.h"
#include "proto/log.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_mutex_t prepared_lock = PTHREAD_MUTEX_INITIALIZER;
static struct hd_prepared prepared[HD_PREPARED_MAX];
static size_t n_prepared;

void hd_prepared_add(const char *id, const char *domain, double start_wall,
                     uint32_t lease_s, const struct hd_gpu_want *want)
{
    pthread_mutex_lock(&prepared_lock);
    for (size_t i = 0; i < n_prepared; i++)
        if (strcmp(prepared[i].domain, domain) == 0)
            prepared[i] = prepared[--n_prepared];
    if (n_prepared < HD_PREPARED_MAX) {
        struct hd_prepared *p = &prepared[n_prepared++];

        snprintf(p->id, sizeof(p->id), "%s", id);
        snprintf(p->domain, sizeof(p->domain), "%s", domain);
        p->start_wall = start_wall;
        p->lease_s = lease_s;
        p->lease_end = lease_s ? hd_now() + lease_s : 0;
        p->expiring = false;
        p->gone_checks = 0;
        p->want = *want;
    } else {
        CRN_WARN("%s: more than %d VMs prepared at once: migration %s is "
                "not followed (it stays running in the history, without a "
                "lease)", domain, HD_PREPARED_MAX, id);
    }
    pthread_mutex_unlock(&prepared_lock);
}

bool hd_prepared_take(const char *domain, const char *id,
                      struct hd_prepared *out)
{
    bool found = false;

    pthread_mutex_lock(&prepared_lock);
    for (size_t i = 0; i < n_prepared && !found; i++)
        if (strcmp(prepared[i].domain, domain) == 0 &&
            (!*id || strcmp(prepared[i].id, id) == 0)) {
            *out = prepared[i];
            prepared[i] = prepared[--n_prepared];
            found = true;
        }
    pthread_mutex_unlock(&prepared_lock);
    return found;
}

bool hd_prepared_has(const char *domain, const char *id)
{
    bool found = false;

    pthread_mutex_lock(&prepared_lock);
    for (size_t i = 0; i < n_prepared && !found; i++)
        found = strcmp(prepared[i].domain, domain) == 0 &&
                (!*id || strcmp(prepared[i].id, id) == 0);
    pthread_mutex_unlock(&prepared_lock);
    return found;
}

size_t hd_prepared_due(struct hd_prepared *out, size_t max)
{
    double now = hd_now();
    size_t n = 0;

    pthread_mutex_lock(&prepared_lock);
    for (size_t i = 0; i < n_prepared && n < max; i++) {
        struct hd_prepared *p = &prepared[i];

        if (!p->lease_end || p->expiring || p->lease_end > now)
            continue;
        p->expiring = true;
        out[n++] = *p;
    }
    pthread_mutex_unlock(&prepared_lock);
    return n;
}

void hd_prepared_rearm(const struct hd_prepared *p, double seconds,
                       bool gone)
{
    pthread_mutex_lock(&prepared_lock);
    for (size_t i = 0; i < n_prepared; i++)
        if (strcmp(prepared[i].id, p->id) == 0 &&
            strcmp(prepared[i].domain, p->domain) == 0) {
            prepared[i].lease_end = hd_now() + seconds;
            prepared[i].expiring = false;
            prepared[i].gone_checks = gone ? prepared[i].gone_checks + 1 : 0;
        }
    pthread_mutex_unlock(&prepared_lock);
}

size_t hd_prepared_list(struct hd_prepared_entry *out, size_t max)
{
    double now = hd_now();
    size_t n = 0;

    pthread_mutex_lock(&prepared_lock);
    for (size_t i = 0; i < n_prepared && n < max; i++, n++) {
        const struct hd_prepared *p = &prepared[i];

        snprintf(out[n].domain, sizeof(out[n].domain), "%s", p->domain);
        snprintf(out[n].id, sizeof(out[n].id), "%s", p->id);
        out[n].start_wall = p->start_wall;
        out[n].lease_s = p->lease_s;
        out[n].lease_left = !p->lease_end         ? -1
                            : p->lease_end > now ? p->lease_end - now
                                                 : 0;
    }
    pthread_mutex_unlock(&prepared_lock);
    return n;
}
