/* Bounds on connections not yet authenticated: the oldest goes first. */
#include "preauth.h"

#include "proto/log.h"
#include "server_state.h"

#include <string.h>

uint64_t px_preauth_order(struct px_server *srv)
{
    return ++srv->preauth_order;
}

void px_preauth_remove(struct px_server *srv, struct px_preauth *pa)
{
    if (!pa->listed)
        return;
    if (pa->prev)
        pa->prev->next = pa->next;
    else
        srv->preauth = pa->next;
    if (pa->next)
        pa->next->prev = pa->prev;
    pa->prev = pa->next = NULL;
    pa->listed = false;
    srv->preauth_count--;
}

/* The oldest entry, of PEER only when it is not NULL; with it the number
 * of PEER's entries in *COUNT. */
static struct px_preauth *oldest(struct px_server *srv, const char *peer,
                                 size_t *count)
{
    struct px_preauth *old = NULL;
    size_t n = 0;

    for (struct px_preauth *o = srv->preauth; o; o = o->next) {
        if (peer && strcmp(o->peer, peer) != 0)
            continue;
        n++;
        if (!old || o->order < old->order)
            old = o;
    }
    if (count)
        *count = n;
    return old;
}

static void evict(struct px_server *srv, struct px_preauth *pa,
                  const char *why)
{
    px_preauth_remove(srv, pa);
    pa->evict(pa, why);
}

void px_preauth_add(struct px_server *srv, struct px_preauth *pa)
{
    uint64_t per_peer = srv->limits.max_unauth_peer;
    uint64_t all = srv->limits.max_unauth;
    struct px_preauth *old;
    size_t n;

    pa->prev = NULL;
    pa->next = srv->preauth;
    if (srv->preauth)
        srv->preauth->prev = pa;
    srv->preauth = pa;
    pa->listed = true;
    srv->preauth_count++;
    while (per_peer && (old = oldest(srv, pa->peer, &n)) && n > per_peer) {
        CRN_WARN("connection from %s closed in its handshake: more than "
                "%llu connections of that peer in their handshake "
                "(--max-unauthenticated-per-peer)",
                old->peer, (unsigned long long)per_peer);
        evict(srv, old, "evicted: too many of its peer in their handshake");
    }
    while (all && srv->preauth_count > all && (old = oldest(srv, NULL, NULL))) {
        CRN_WARN("connection from %s closed in its handshake: more than "
                "%llu connections in their handshake "
                "(--max-unauthenticated)",
                old->peer, (unsigned long long)all);
        evict(srv, old, "evicted: too many in their handshake");
    }
}
