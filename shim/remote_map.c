/* The remote backend's object maps: client id -> object, and the set of
 * object addresses (to recognise a memory object among kernel arguments). */
#include <errno.h>
#include <stdlib.h>

#include "remote.h"

/* Open addressing over 64-bit keys; key 0 is empty, key 1 a tombstone
 * (neither is a valid id or object address). */
struct u64_map {
    uint64_t *keys;
    void **vals;
    size_t cap, used;            /* used counts tombstones too */
};

#define EMPTY 0u
#define GONE 1u

static size_t slot_of(uint64_t key, size_t cap)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    return (size_t)key & (cap - 1);
}

static int map_grow(struct u64_map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 256;
    uint64_t *keys = calloc(cap, sizeof(*keys));
    void **vals = calloc(cap, sizeof(*vals));

    if (!keys || !vals) {
        free(keys);
        free(vals);
        return -ENOMEM;
    }
    size_t used = 0;
    for (size_t i = 0; i < m->cap; i++) {
        if (m->keys[i] <= GONE)
            continue;
        size_t s = slot_of(m->keys[i], cap);
        while (keys[s] != EMPTY)
            s = (s + 1) & (cap - 1);
        keys[s] = m->keys[i];
        vals[s] = m->vals[i];
        used++;
    }
    free(m->keys);
    free(m->vals);
    m->keys = keys;
    m->vals = vals;
    m->cap = cap;
    m->used = used;
    return 0;
}

static int map_put(struct u64_map *m, uint64_t key, void *val)
{
    if ((m->used + 1) * 2 > m->cap && map_grow(m) < 0)
        return -ENOMEM;
    size_t s = slot_of(key, m->cap);
    while (m->keys[s] > GONE && m->keys[s] != key)
        s = (s + 1) & (m->cap - 1);
    if (m->keys[s] <= GONE)
        m->used += m->keys[s] == EMPTY;
    m->keys[s] = key;
    m->vals[s] = val;
    return 0;
}

static void **map_find(struct u64_map *m, uint64_t key)
{
    if (!m->cap || key <= GONE)
        return NULL;
    size_t s = slot_of(key, m->cap);
    while (m->keys[s] != EMPTY) {
        if (m->keys[s] == key)
            return &m->vals[s];
        s = (s + 1) & (m->cap - 1);
    }
    return NULL;
}

static void map_del(struct u64_map *m, uint64_t key)
{
    void **v = map_find(m, key);
    if (v)
        m->keys[v - m->vals] = GONE;
}

static void map_clear(struct u64_map *m)
{
    free(m->keys);
    free(m->vals);
    *m = (struct u64_map){0};
}

static pthread_mutex_t maps_lock = PTHREAD_MUTEX_INITIALIZER;
static struct u64_map by_id, by_addr, watches;
static uint64_t next_cookie = 2;  /* 0 and 1 are the map's marks */

int shim_remote_track(struct rc_obj *o)
{
    int rc;

    pthread_mutex_lock(&maps_lock);
    rc = map_put(&by_id, o->id, o);
    if (rc == 0 && (o->kind == SHIM_MEM || o->kind == SHIM_SAMPLER)) {
        rc = map_put(&by_addr, (uint64_t)(uintptr_t)o, o);
        if (rc < 0)
            map_del(&by_id, o->id);
    }
    pthread_mutex_unlock(&maps_lock);
    return rc;
}

void shim_remote_untrack(struct rc_obj *o)
{
    pthread_mutex_lock(&maps_lock);
    map_del(&by_id, o->id);
    map_del(&by_addr, (uint64_t)(uintptr_t)o);
    pthread_mutex_unlock(&maps_lock);
}

struct rc_obj *shim_remote_by_id(uint64_t id)
{
    pthread_mutex_lock(&maps_lock);
    void **v = map_find(&by_id, id);
    struct rc_obj *o = v ? *v : NULL;
    pthread_mutex_unlock(&maps_lock);
    return o;
}

struct rc_obj *shim_remote_by_addr(const void *p)
{
    pthread_mutex_lock(&maps_lock);
    void **v = map_find(&by_addr, (uint64_t)(uintptr_t)p);
    struct rc_obj *o = v ? *v : NULL;
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
    if (map_put(&watches, cookie, w) < 0)
        cookie = 0;
    pthread_mutex_unlock(&maps_lock);
    return cookie;
}

struct rc_watch *shim_remote_watch_take(uint64_t cookie)
{
    pthread_mutex_lock(&maps_lock);
    void **v = map_find(&watches, cookie);
    struct rc_watch *w = v ? *v : NULL;
    if (v)
        map_del(&watches, cookie);
    pthread_mutex_unlock(&maps_lock);
    return w;
}

/* Forgets everything: the connection is gone and with it every object and
 * every callback still waiting. */
void shim_remote_maps_clear(void)
{
    pthread_mutex_lock(&maps_lock);
    map_clear(&by_id);
    map_clear(&by_addr);
    for (size_t i = 0; i < watches.cap; i++)
        if (watches.keys[i] > GONE)
            free(watches.vals[i]);
    map_clear(&watches);
    pthread_mutex_unlock(&maps_lock);
}
