/* The remote backend's object maps: client id -> object, and the set of
 * object addresses (to recognise a memory object among kernel arguments). */
#include <stdlib.h>

#include "remote.h"

#include "proto/map.h"

static pthread_mutex_t maps_lock = PTHREAD_MUTEX_INITIALIZER;
static struct crn_map by_id, by_addr, watches;  /* values: pointers */
static uint64_t next_cookie = 1;  /* 0 is no cookie */

int shim_remote_track(struct rc_obj *o)
{
    int rc;

    pthread_mutex_lock(&maps_lock);
    rc = crn_map_put(&by_id, o->id, (uintptr_t)o);
    if (rc == 0 && (o->kind == SHIM_MEM || o->kind == SHIM_SAMPLER)) {
        rc = crn_map_put(&by_addr, (uintptr_t)o, (uintptr_t)o);
        if (rc < 0)
            crn_map_del(&by_id, o->id);
    }
    pthread_mutex_unlock(&maps_lock);
    return rc;
}

void shim_remote_untrack(struct rc_obj *o)
{
    pthread_mutex_lock(&maps_lock);
    crn_map_del(&by_id, o->id);
    crn_map_del(&by_addr, (uintptr_t)o);
    pthread_mutex_unlock(&maps_lock);
}

struct rc_obj *shim_remote_by_id(uint64_t id)
{
    pthread_mutex_lock(&maps_lock);
    struct rc_obj *o = (struct rc_obj *)(uintptr_t)crn_map_get(&by_id, id);
    pthread_mutex_unlock(&maps_lock);
    return o;
}

struct rc_obj *shim_remote_by_addr(const void *p)
{
    pthread_mutex_lock(&maps_lock);
    struct rc_obj *o =
        (struct rc_obj *)(uintptr_t)crn_map_get(&by_addr, (uintptr_t)p);
    pthread_mutex_unlock(&maps_lock);
    return o;
}

/* Event callbacks travel as cookies, never as addresses: a Notify naming
 * a cookie we did not hand out (or one already used) finds nothing. */
uint64_t shim_remote_watch_add(struct rc_watch *w)
{
    uint64_t cookie;

    pthread_mutex_lock(&maps_lock);
    cookie = next_cookie++;
    if (crn_map_put(&watches, cookie, (uintptr_t)w) < 0)
        cookie = 0;
    pthread_mutex_unlock(&maps_lock);
    return cookie;
}

struct rc_watch *shim_remote_watch_take(uint64_t cookie)
{
    pthread_mutex_lock(&maps_lock);
    struct rc_watch *w =
        (struct rc_watch *)(uintptr_t)crn_map_del(&watches, cookie);
    pthread_mutex_unlock(&maps_lock);
    return w;
}

static void free_watch(uint64_t cookie, uint64_t w, void *arg)
{
    (void)cookie;
    (void)arg;
    free((void *)(uintptr_t)w);
}

/* Forgets everything: the connection is gone and with it every object and
 * every callback still waiting. */
void shim_remote_maps_clear(void)
{
    pthread_mutex_lock(&maps_lock);
    crn_map_free(&by_id);
    crn_map_free(&by_addr);
    crn_map_each(&watches, free_watch, NULL);
    crn_map_free(&watches);
    pthread_mutex_unlock(&maps_lock);
}
