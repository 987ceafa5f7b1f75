/* crane-hostd's view of what it depends on, for the metrics' gauges: the
 * proxy domain's reachability and the peers', probed with bounds. */
/*
 * A scrape must not wait on a proxy or a peer that does not answer, so
 * the gauges are what the last probe found: the daemon's timer starts a
 * probe on a job thread (one at a time), each connection bounded by its
 * timeout, and the scrape only copies the state under the lock.  Peers
 * are the crane-hostd a migration of this host connected to (no setting
 * lists them): remembered with the outcome, probed again from then on.
 */
#include "health.h"

#include "daemon.h"
#include "proto/log.h"
#include "peer.h"
#include "proxy.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct hd_health {
    pthread_mutex_t lock;
    struct hd_gauges g;          /* hv_* unused here */
    unsigned next;               /* the slot a new peer takes when full */
    bool probing;
};

int hd_health_new(struct hd_health **out)
{
    struct hd_health *h = calloc(1, sizeof(*h));

    if (h == NULL)
        return -ENOMEM;
    pthread_mutex_init(&h->lock, NULL);
    *out = h;
    return 0;
}

void hd_health_free(struct hd_health *h)
{
    if (h == NULL)
        return;
    pthread_mutex_destroy(&h->lock);
    free(h);
}

void hd_health_peer(struct hd_health *h, const char *endpoint, bool up)
{
    size_t i;

    if (h == NULL || endpoint == NULL || !*endpoint)
        return;
    pthread_mutex_lock(&h->lock);
    for (i = 0; i < h->g.n_peers; i++)
        if (!strcmp(h->g.peers[i].name, endpoint))
            break;
    if (i == h->g.n_peers) {
        if (h->g.n_peers < HD_GAUGE_PEERS)
            h->g.n_peers++;
        else
            i = h->next++ % HD_GAUGE_PEERS;
        snprintf(h->g.peers[i].name, sizeof(h->g.peers[i].name), "%s",
                 endpoint);
    }
    h->g.peers[i].up = up;
    pthread_mutex_unlock(&h->lock);
}

static void probe(void *arg)
{
    struct hd_daemon *d = arg;
    struct hd_health *h = d->health;
    struct hd_gauges now = {0};
    char why[400];

    hd_health_read(h, &now);
    if (*d->cfg.proxy) {
        int rc = hd_proxy_probe(d, d->cfg.proxy, d->cfg.proxy_timeout_ms,
                                NULL, why, sizeof(why));

        if (rc < 0)
            CRN_DEBUG("health: proxy %s: %s", d->cfg.proxy, why);
        pthread_mutex_lock(&h->lock);
        h->g.proxy_known = true;
        h->g.proxy_up = rc == 0;
        pthread_mutex_unlock(&h->lock);
    }
    for (size_t i = 0; i < now.n_peers; i++) {
        struct hd_peer *p = NULL;
        int rc = hd_peer_open(now.peers[i].name, d->tls, d->key, d->key_len,
                              d->cfg.host_name, &p, why, sizeof(why));

        if (rc < 0)
            CRN_DEBUG("health: peer %s: %s", now.peers[i].name, why);
        hd_peer_close(p);
        hd_health_peer(h, now.peers[i].name, rc == 0);
    }
    pthread_mutex_lock(&h->lock);
    h->probing = false;
    pthread_mutex_unlock(&h->lock);
}

void hd_health_tick(struct hd_daemon *d)
{
    struct hd_health *h = d->health;
    bool start;

    if (h == NULL)
        return;
    pthread_mutex_lock(&h->lock);
    start = !h->probing && (*d->cfg.proxy || h->g.n_peers);
    if (start)
        h->probing = true;
    pthread_mutex_unlock(&h->lock);
    if (start && hd_job_start(d, probe, d) < 0) {
        pthread_mutex_lock(&h->lock);
        h->probing = false;
        pthread_mutex_unlock(&h->lock);
    }
}

void hd_health_read(struct hd_health *h, struct hd_gauges *out)
{
    bool hv_known = out->hv_known, hv_connected = out->hv_connected;

    if (h == NULL)
        return;
    pthread_mutex_lock(&h->lock);
    *out = h->g;
    pthread_mutex_unlock(&h->lock);
    out->hv_known = hv_known;
    out->hv_connected = hv_connected;
}

void hd_daemon_gauges(void *arg, struct hd_gauges *out)
{
    hd_health_read(((struct hd_daemon *)arg)->health, out);
}
