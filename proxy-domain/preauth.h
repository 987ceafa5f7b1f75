/* Bounds on connections not yet authenticated: per peer and in all. */
#ifndef PX_PREAUTH_H
#define PX_PREAUTH_H

#include <stdbool.h>
#include <stdint.h>

struct px_server;

/*
 * A connection that holds no tenant yet and may belong to anyone: a TCP
 * connection in its TLS handshake (conn_tls.c), or one in Hello,
 * Challenge and Auth (conn.c).  Its owner embeds this entry and lists it
 * from its accept until it is authenticated or closed.
 */
struct px_preauth {
    struct px_preauth *prev, *next;
    uint64_t order;              /* accept order: smaller is older */
    const char *peer;            /* the owner's peer name (its address) */
    /* Closes the owner, which is no longer listed, saying WHY. */
    void (*evict)(struct px_preauth *pa, const char *why);
    bool listed;
};

/* The order a connection accepted now gets. */
uint64_t px_preauth_order(struct px_server *srv);

/*
 * Lists PA (order, peer and evict set) and keeps the bounds: past
 * --max-unauthenticated-per-peer entries of PA's peer the oldest of that
 * peer is evicted, past --max-unauthenticated in all the oldest of all.
 * Only the oldest ever goes, so connections that idle or trickle their
 * handshake cannot keep out one that completes it within a moment: the
 * newcomers push the oldest out, and a peer's own flood pushes out its
 * own connections first.  PA itself may be evicted (it is the oldest when
 * it came from a TLS handshake that began before the others).
 */
void px_preauth_add(struct px_server *srv, struct px_preauth *pa);
/* Unlists PA if it is listed (authenticated or closed). */
void px_preauth_remove(struct px_server *srv, struct px_preauth *pa);

#endif /* PX_PREAUTH_H */
