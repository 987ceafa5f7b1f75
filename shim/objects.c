/* The shadow store: allocation, reference counts and the creation-ordered
 * list of every shim object.
 *
 * Shadows are never given back to malloc: a released one goes on its kind's
 * free list with its magic cleared.  Reading the magic of any handle the
 * program ever received is therefore always safe, and a released handle is
 * answered with the spec's CL_INVALID_* error instead of a crash.
 *
 * What depends on a shadow's kind (what to free, how to release its real
 * handle) comes from its kind's row (struct shim_kind_ops), so the store
 * calls into no kind's file.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proto/log.h"
#include "shim.h"

#include "proto/map.h"

SHIM_TLS cl_int shim_vendor_err;

static pthread_mutex_t store_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shim_obj *store_head, *store_tail;
static struct shim_obj *free_lists[SHIM_KIND_COUNT];
static size_t live_count[SHIM_KIND_COUNT];
static uint64_t next_seq = 1;

/* Handed over by the files above (shim.h): the ICD table and the twins'
 * release. */
static const struct _cl_icd_dispatch *icd_table;
static void (*twin_release)(struct shim_obj *o);

void shim_store_set_dispatch(const struct _cl_icd_dispatch *table)
{
    icd_table = table;
}

void shim_store_set_twin_release(void (*release)(struct shim_obj *o))
{
    twin_release = release;
}

/* Live memory objects and samplers by address (key and value the same),
 * for kernels without argument info: there an 8-byte argument may or may
 * not be a handle.  Guarded by store_lock. */
static struct crn_map live_by_addr;

struct shim_obj *shim_obj_find_live(const void *value)
{
    struct shim_obj *found;
    uintptr_t p = (uintptr_t)value;

    if (p == 0)
        return NULL;
    pthread_mutex_lock(&store_lock);
    found = (struct shim_obj *)(uintptr_t)crn_map_get(&live_by_addr, p);
    pthread_mutex_unlock(&store_lock);
    if (found && found->magic != SHIM_MAGIC + found->kind)
        found = NULL;
    return found;
}

void *shim_obj_new(const struct shim_kind_ops *ops, size_t size, void *real)
{
    enum shim_kind kind = ops->kind;
    struct shim_obj *o;

    pthread_mutex_lock(&store_lock);
    o = free_lists[kind];
    if (o)
        free_lists[kind] = o->free_next;
    pthread_mutex_unlock(&store_lock);
    if (o)
        memset(o, 0, size);
    else if (!(o = calloc(1, size)))
        return NULL;

    o->dispatch = icd_table;
    o->kind = kind;
    o->ops = ops;
    o->real = real;
    atomic_init(&o->app_refs, 1);
    atomic_init(&o->child_refs, 0);

    pthread_mutex_lock(&store_lock);
    if (ops->by_address &&
        crn_map_put(&live_by_addr, (uintptr_t)o, (uintptr_t)o) < 0) {
        o->free_next = free_lists[kind];
        free_lists[kind] = o;
        pthread_mutex_unlock(&store_lock);
        return NULL;
    }
    o->seq = next_seq++;
    o->prev = store_tail;
    if (store_tail)
        store_tail->next = o;
    else
        store_head = o;
    store_tail = o;
    live_count[kind]++;
    /* Valid only once fully linked: another thread may look it up. */
    o->magic = SHIM_MAGIC + kind;
    pthread_mutex_unlock(&store_lock);
    return o;
}

/* Last reference of any sort gone: release the vendor object, drop the
 * references this shadow held on others, recycle the memory. */
static void obj_final(struct shim_obj *o)
{
    if (twin_release)
        twin_release(o);
    if (o->real)
        shim_real_release(o);
    o->real = NULL;
    if (o->ops->destroy)
        o->ops->destroy(o);

    pthread_mutex_lock(&store_lock);
    if (o->ops->by_address)
        crn_map_del(&live_by_addr, (uintptr_t)o);
    if (o->prev)
        o->prev->next = o->next;
    else
        store_head = o->next;
    if (o->next)
        o->next->prev = o->prev;
    else
        store_tail = o->prev;
    live_count[o->kind]--;
    o->magic = 0;
    o->free_next = free_lists[o->kind];
    free_lists[o->kind] = o;
    pthread_mutex_unlock(&store_lock);
}

void shim_obj_retain_child(struct shim_obj *parent)
{
    if (parent)
        atomic_fetch_add(&parent->child_refs, 1);
}

void shim_obj_release_child(struct shim_obj *parent)
{
    if (!parent)
        return;
    if (atomic_fetch_sub(&parent->child_refs, 1) == 1 &&
        atomic_load(&parent->app_refs) == 0 &&
        !atomic_exchange(&parent->finalizing, true))
        obj_final(parent);
}

bool shim_obj_is(const void *handle, enum shim_kind kind)
{
    const struct shim_obj *o = handle;
    return o && o->magic == SHIM_MAGIC + kind;
}

int shim_obj_retain(void *handle, enum shim_kind kind)
{
    struct shim_obj *o = handle;

    if (!shim_obj_is(o, kind))
        return -EINVAL;
    atomic_fetch_add(&o->app_refs, 1);
    return 0;
}

int shim_obj_release(void *handle, enum shim_kind kind)
{
    struct shim_obj *o = handle;

    if (!shim_obj_is(o, kind))
        return -EINVAL;
    /* A kind told of the program's last release holds the object while it
     * is told: another thread's last child release cannot destroy it
     * meanwhile (the hold's own release below destroys it if due). */
    bool tell = o->ops->unnamed != NULL;
    if (tell)
        shim_obj_retain_child(o);
    unsigned before = atomic_fetch_sub(&o->app_refs, 1);
    if (before == 0) {
        atomic_fetch_add(&o->app_refs, 1);
        if (tell)
            atomic_fetch_sub(&o->child_refs, 1);
        return -EINVAL;
    }
    if (before > 1) {
        if (tell)
            shim_obj_release_child(o);
        return 0;
    }
    /* The program can no longer name it; children may still need it. */
    o->magic = 0;
    if (tell) {
        o->ops->unnamed(o);
        shim_obj_release_child(o);
        return 0;
    }
    if (atomic_load(&o->child_refs) == 0 &&
        !atomic_exchange(&o->finalizing, true))
        obj_final(o);
    return 0;
}

void shim_store_lock(void)
{
    pthread_mutex_lock(&store_lock);
}

void shim_store_unlock(void)
{
    pthread_mutex_unlock(&store_lock);
}

struct shim_obj *shim_store_first(void)
{
    return store_head;
}

struct shim_obj *shim_store_last(void)
{
    return store_tail;
}

size_t shim_store_count(enum shim_kind kind)
{
    size_t n;

    pthread_mutex_lock(&store_lock);
    n = live_count[kind];
    pthread_mutex_unlock(&store_lock);
    return n;
}

void shim_real_release(struct shim_obj *o)
{
    shim_real_release_handle(o, o->real);
}

void shim_real_release_handle(const struct shim_obj *o, void *r)
{
    if (r && o->ops->release_real)
        o->ops->release_real(o, r);
}
