/* The shadow store: allocation, reference counts and the creation-ordered
 * list of every shim object.
 *
 * Shadows are never given back to malloc: a released one goes on its kind's
 * free list with its magic cleared.  Reading the magic of any handle the
 * program ever received is therefore always safe, and a released handle is
 * answered with the spec's CL_INVALID_* error instead of a crash.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "shim.h"

SHIM_TLS cl_int shim_vendor_err;

static pthread_mutex_t store_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shim_obj *store_head, *store_tail;
static struct shim_obj *free_lists[SHIM_KIND_COUNT];
static size_t live_count[SHIM_KIND_COUNT];
static uint64_t next_seq = 1;

/* Live memory objects and samplers by address, for kernels without argument
 * info: there an 8-byte argument may or may not be a handle.  Open
 * addressing with tombstones; guarded by store_lock. */
#define LIVE_EMPTY ((uintptr_t)0)
#define LIVE_GONE ((uintptr_t)1)
static uintptr_t *live_slots;
static size_t live_cap, live_used;

static size_t live_hash(uintptr_t p, size_t cap)
{
    p ^= p >> 17;
    p *= 0x9e3779b97f4a7c15ull;
    return (size_t)(p >> 20) & (cap - 1);
}

static int live_grow(void)
{
    size_t cap = live_cap ? live_cap * 2 : 256;
    uintptr_t *slots = calloc(cap, sizeof(*slots));

    if (!slots)
        return -ENOMEM;
    for (size_t i = 0; i < live_cap; i++) {
        uintptr_t p = live_slots[i];
        if (p == LIVE_EMPTY || p == LIVE_GONE)
            continue;
        size_t j = live_hash(p, cap);
        while (slots[j] != LIVE_EMPTY)
            j = (j + 1) & (cap - 1);
        slots[j] = p;
    }
    free(live_slots);
    live_slots = slots;
    live_cap = cap;
    return 0;
}

static int live_insert(uintptr_t p)
{
    if ((live_used + 1) * 2 > live_cap && live_grow() < 0)
        return -ENOMEM;
    size_t j = live_hash(p, live_cap);
    while (live_slots[j] != LIVE_EMPTY && live_slots[j] != LIVE_GONE)
        j = (j + 1) & (live_cap - 1);
    if (live_slots[j] == LIVE_EMPTY)
        live_used++;
    live_slots[j] = p;
    return 0;
}

static void live_remove(uintptr_t p)
{
    if (!live_cap)
        return;
    size_t j = live_hash(p, live_cap);
    while (live_slots[j] != LIVE_EMPTY) {
        if (live_slots[j] == p) {
            live_slots[j] = LIVE_GONE;
            return;
        }
        j = (j + 1) & (live_cap - 1);
    }
}

static bool tracked_by_address(uint32_t kind)
{
    return kind == SHIM_MEM || kind == SHIM_SAMPLER;
}

struct shim_obj *shim_obj_find_live(const void *value)
{
    struct shim_obj *found = NULL;
    uintptr_t p = (uintptr_t)value;

    if (p <= LIVE_GONE)
        return NULL;
    pthread_mutex_lock(&store_lock);
    if (live_cap) {
        size_t j = live_hash(p, live_cap);
        while (live_slots[j] != LIVE_EMPTY) {
            if (live_slots[j] == p) {
                found = (struct shim_obj *)p;
                break;
            }
            j = (j + 1) & (live_cap - 1);
        }
    }
    pthread_mutex_unlock(&store_lock);
    if (found && found->magic != SHIM_MAGIC + found->kind)
        found = NULL;
    return found;
}

void *shim_obj_new(enum shim_kind kind, size_t size, void *real)
{
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

    o->dispatch = &shim_icd_dispatch;
    o->kind = kind;
    o->real = real;
    atomic_init(&o->app_refs, 1);
    atomic_init(&o->child_refs, 0);

    pthread_mutex_lock(&store_lock);
    if (tracked_by_address(kind) && live_insert((uintptr_t)o) < 0) {
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

static void kind_destroy(struct shim_obj *o)
{
    switch (o->kind) {
    case SHIM_PLATFORM: shim_platform_destroy((void *)o); break;
    case SHIM_DEVICE: shim_device_destroy((void *)o); break;
    case SHIM_CONTEXT: shim_context_destroy((void *)o); break;
    case SHIM_QUEUE: shim_queue_destroy((void *)o); break;
    case SHIM_MEM: shim_mem_destroy((void *)o); break;
    case SHIM_SAMPLER: shim_sampler_destroy((void *)o); break;
    case SHIM_PROGRAM: shim_program_destroy((void *)o); break;
    case SHIM_KERNEL: shim_kernel_destroy((void *)o); break;
    case SHIM_EVENT: shim_event_destroy((void *)o); break;
    }
}

/* Last reference of any sort gone: release the vendor object, drop the
 * references this shadow held on others, recycle the memory. */
static void obj_final(struct shim_obj *o)
{
    shim_twin_release(o);
    if (o->real)
        shim_real_release(o);
    o->real = NULL;
    kind_destroy(o);

    pthread_mutex_lock(&store_lock);
    if (tracked_by_address(o->kind))
        live_remove((uintptr_t)o);
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
        atomic_load(&parent->app_refs) == 0)
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
    unsigned before = atomic_fetch_sub(&o->app_refs, 1);
    if (before == 0) {
        atomic_fetch_add(&o->app_refs, 1);
        return -EINVAL;
    }
    if (before > 1)
        return 0;
    /* The program can no longer name it; children may still need it. */
    o->magic = 0;
    if (atomic_load(&o->child_refs) == 0)
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
    if (!r)
        return;
    switch (o->kind) {
    case SHIM_DEVICE:
        if (((struct shim_device *)o)->parent)
            VENDOR(r)->clReleaseDevice(r);
        break;
    case SHIM_CONTEXT: VENDOR(r)->clReleaseContext(r); break;
    case SHIM_QUEUE: VENDOR(r)->clReleaseCommandQueue(r); break;
    case SHIM_MEM: VENDOR(r)->clReleaseMemObject(r); break;
    case SHIM_SAMPLER: VENDOR(r)->clReleaseSampler(r); break;
    case SHIM_PROGRAM: VENDOR(r)->clReleaseProgram(r); break;
    case SHIM_KERNEL: VENDOR(r)->clReleaseKernel(r); break;
    case SHIM_EVENT: VENDOR(r)->clReleaseEvent(r); break;
    default: break;
    }
}
