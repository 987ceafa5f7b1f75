/* A tenant: one client's objects (id -> real handle), quota, and outbox. */
#include "tenant.h"

#include "proto/log.h"
#include "proto/auth.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The values of a tenant's uevents map: the table's reference, or one the
 * list holds itself once the client released the event unset. */
#define UEV_TABLE 1
#define UEV_OWN 2

struct px_tenant *px_tenant_new(const struct px_devices *devs, uint64_t num,
                                uint64_t quota)
{
    struct px_tenant *t = calloc(1, sizeof(*t));
    int rc;

    if (!t) {
        CRN_ERROR("tenant %llu: out of memory", (unsigned long long)num);
        return NULL;
    }
    rc = crn_random_bytes(t->token, sizeof(t->token));
    if (rc < 0) {
        CRN_ERROR("tenant %llu: no random token: %s", (unsigned long long)num,
                 strerror(-rc));
        free(t);
        return NULL;
    }
    atomic_init(&t->refs, 1);
    atomic_init(&t->stat_objects, 0);
    atomic_init(&t->stat_bytes, 0);
    t->num = num;
    t->quota = quota;
    t->devs = devs;
    pthread_mutex_init(&t->lock, NULL);
    return t;
}

void px_tenant_ref(struct px_tenant *t)
{
    atomic_fetch_add(&t->refs, 1);
}

void px_tenant_unref(struct px_tenant *t)
{
    if (!t || atomic_fetch_sub(&t->refs, 1) != 1)
        return;
    if (t->objs.count)
        CRN_ERROR("tenant %llu freed with %zu objects",
                 (unsigned long long)t->num, t->objs.count);
    crn_map_free(&t->objs);
    crn_map_free(&t->rev);
    px_tenant_abort_user_events(t);
    px_out_free_list(t->held_head);
    pthread_mutex_destroy(&t->lock);
    free(t);
}

cl_int px_kind_error(enum px_kind kind)
{
    switch (kind) {
    case PX_PLATFORM: return CL_INVALID_PLATFORM;
    case PX_DEVICE: return CL_INVALID_DEVICE;
    case PX_CONTEXT: return CL_INVALID_CONTEXT;
    case PX_QUEUE: return CL_INVALID_COMMAND_QUEUE;
    case PX_MEM: return CL_INVALID_MEM_OBJECT;
    case PX_SAMPLER: return CL_INVALID_SAMPLER;
    case PX_PROGRAM: return CL_INVALID_PROGRAM;
    case PX_KERNEL: return CL_INVALID_KERNEL;
    case PX_EVENT: return CL_INVALID_EVENT;
    }
    return CL_INVALID_VALUE;
}

const char *px_kind_name(enum px_kind kind)
{
    static const char *const names[] = {
        "none", "platform", "device", "context", "queue",
        "memory object", "sampler", "program", "kernel", "event",
    };

    return (unsigned)kind < sizeof(names) / sizeof(names[0]) ? names[kind]
                                                             : "object";
}

static void release_handle(enum px_kind kind, void *h)
{
    switch (kind) {
    case PX_PLATFORM: break;
    case PX_DEVICE: clReleaseDevice(h); break;
    case PX_CONTEXT: clReleaseContext(h); break;
    case PX_QUEUE: clReleaseCommandQueue(h); break;
    case PX_MEM: clReleaseMemObject(h); break;
    case PX_SAMPLER: clReleaseSampler(h); break;
    case PX_PROGRAM: clReleaseProgram(h); break;
    case PX_KERNEL: clReleaseKernel(h); break;
    case PX_EVENT: clReleaseEvent(h); break;
    }
}

struct px_obj *px_tenant_obj(struct px_tenant *t, uint64_t id,
                             enum px_kind kind)
{
    struct px_obj *o = (struct px_obj *)(uintptr_t)crn_map_get(&t->objs, id);

    return o && o->kind == kind ? o : NULL;
}

cl_mem_object_type px_tenant_mem_type(struct px_tenant *t, uint64_t id)
{
    struct px_obj *o = px_tenant_obj(t, id, PX_MEM);

    if (o && !o->mem_type &&
        clGetMemObjectInfo(o->handle, CL_MEM_TYPE, sizeof(o->mem_type),
                           &o->mem_type, NULL) != CL_SUCCESS)
        o->mem_type = 0;
    return o ? o->mem_type : 0;
}

void *px_tenant_handle(struct px_tenant *t, uint64_t id, enum px_kind kind,
                       cl_int *err)
{
    struct px_obj *o;
    void *h = NULL;

    if (id & PX_PROXY_ID_BIT) {
        if (kind == PX_DEVICE)
            h = px_devices_device(t->devs, id);
        else if (kind == PX_PLATFORM)
            h = px_devices_platform(t->devs, id);
    } else if ((o = px_tenant_obj(t, id, kind)) != NULL) {
        h = o->handle;
    }
    if (!h)
        *err = px_kind_error(kind);
    return h;
}

cl_int px_tenant_check_new(struct px_tenant *t, uint64_t id,
                           enum px_kind kind)
{
    if (id == 0 || (id & PX_PROXY_ID_BIT))
        return CL_INVALID_VALUE;
    if (crn_map_get(&t->objs, id))
        return px_kind_error(kind);
    if (t->max_objects && t->objs.count >= t->max_objects)
        return CL_OUT_OF_RESOURCES;
    return CL_SUCCESS;
}

cl_int px_tenant_charge(struct px_tenant *t, uint64_t bytes)
{
    if (t->quota && (bytes > t->quota || t->mem_bytes > t->quota - bytes))
        return CL_MEM_OBJECT_ALLOCATION_FAILURE;
    return CL_SUCCESS;
}

cl_int px_tenant_add(struct px_tenant *t, uint64_t id, enum px_kind kind,
                     void *handle, uint64_t bytes, bool user_event)
{
    struct px_obj *o = calloc(1, sizeof(*o));

    if (!o || crn_map_put(&t->objs, id, (uintptr_t)o) < 0)
        goto oom;
    if (crn_map_put(&t->rev, (uintptr_t)handle, id) < 0) {
        crn_map_del(&t->objs, id);
        goto oom;
    }
    if (user_event) {
        pthread_mutex_lock(&t->lock);
        int rc = crn_map_put(&t->uevents, (uintptr_t)handle, UEV_TABLE);
        pthread_mutex_unlock(&t->lock);
        if (rc < 0) {
            crn_map_del(&t->objs, id);
            crn_map_del(&t->rev, (uintptr_t)handle);
            goto oom;
        }
    }
    o->id = id;
    o->handle = handle;
    o->kind = kind;
    o->bytes = bytes;
    o->order = ++t->next_order;
    o->user_event = user_event;
    t->mem_bytes += bytes;
    atomic_fetch_add(&t->stat_objects, 1);
    atomic_fetch_add(&t->stat_bytes, bytes);
    return CL_SUCCESS;
oom:
    CRN_ERROR("tenant %llu: out of memory recording %s %llu",
             (unsigned long long)t->num, px_kind_name(kind),
             (unsigned long long)id);
    free(o);
    release_handle(kind, handle);
    return CL_OUT_OF_HOST_MEMORY;
}

/* Forgets O and releases its handle. */
static void drop(struct px_tenant *t, struct px_obj *o)
{
    crn_map_del(&t->objs, o->id);
    if (crn_map_get(&t->rev, (uintptr_t)o->handle) == o->id)
        crn_map_del(&t->rev, (uintptr_t)o->handle);
    if (o->user_event) {
        /* Never set, it may still hold commands back: it stays on the list
         * (with a reference of its own) so that teardown can end them. */
        pthread_mutex_lock(&t->lock);
        if (crn_map_get(&t->uevents, (uintptr_t)o->handle) == UEV_TABLE &&
            crn_map_put(&t->uevents, (uintptr_t)o->handle, UEV_OWN) == 0)
            clRetainEvent(o->handle);
        pthread_mutex_unlock(&t->lock);
    }
    t->mem_bytes -= o->bytes;
    atomic_fetch_sub(&t->stat_objects, 1);
    atomic_fetch_sub(&t->stat_bytes, o->bytes);
    release_handle(o->kind, o->handle);
    free(o->info);
    free(o);
}

cl_int px_tenant_adopt(struct px_tenant *t, const uint64_t *ids,
                       size_t n_ids, enum px_kind kind, void **handles,
                       size_t n)
{
    cl_int err = CL_SUCCESS;

    for (size_t i = 0; i < n; i++) {
        if (err == CL_SUCCESS && i < n_ids)
            err = px_tenant_add(t, ids[i], kind, handles[i], 0, false);
        else
            release_handle(kind, handles[i]);
    }
    return err;
}

cl_int px_tenant_remove(struct px_tenant *t, uint64_t id, enum px_kind kind)
{
    struct px_obj *o = px_tenant_obj(t, id, kind);

    if (!o)
        return px_kind_error(kind);
    drop(t, o);
    return CL_SUCCESS;
}

uint64_t px_tenant_id_of(struct px_tenant *t, const void *handle)
{
    uint64_t id;

    if (!handle)
        return 0;
    id = crn_map_get(&t->rev, (uintptr_t)handle);
    return id ? id : px_devices_id_of(t->devs, handle);
}

bool px_tenant_has_unset_user_events(struct px_tenant *t)
{
    bool any;

    pthread_mutex_lock(&t->lock);
    any = t->uevents.count > 0;
    pthread_mutex_unlock(&t->lock);
    return any;
}

void px_tenant_user_event_set(struct px_tenant *t, cl_event ev)
{
    uint64_t val;

    pthread_mutex_lock(&t->lock);
    val = crn_map_del(&t->uevents, (uintptr_t)ev);
    pthread_mutex_unlock(&t->lock);
    if (val == UEV_OWN)
        clReleaseEvent(ev);
}

static void retain_one(uint64_t key, uint64_t val, void *arg)
{
    struct crn_map *out = arg;

    /* The list's own reference moves to OUT; others are taken here. */
    if (crn_map_put(out, key, 1) == 0) {
        if (val != UEV_OWN)
            clRetainEvent((cl_event)(uintptr_t)key);
    } else if (val == UEV_OWN) {
        clReleaseEvent((cl_event)(uintptr_t)key);
    }
}

static void abort_one(uint64_t key, uint64_t val, void *arg)
{
    cl_event ev = (cl_event)(uintptr_t)key;

    (void)val;
    (void)arg;
    clSetUserEventStatus(ev, CL_OUT_OF_RESOURCES);
    clReleaseEvent(ev);
}

void px_tenant_abort_user_events(struct px_tenant *t)
{
    struct crn_map events = {0};

    /* Retained under the lock, set outside it: setting a status may run
     * callbacks at once, and those send through the tenant's lock. */
    pthread_mutex_lock(&t->lock);
    crn_map_each(&t->uevents, retain_one, &events);
    crn_map_free(&t->uevents);
    pthread_mutex_unlock(&t->lock);
    crn_map_each(&events, abort_one, NULL);
    crn_map_free(&events);
}

struct collect {
    struct px_obj **v;
    size_t n;
};

static void collect_one(uint64_t key, uint64_t val, void *arg)
{
    struct collect *c = arg;

    (void)key;
    c->v[c->n++] = (struct px_obj *)(uintptr_t)val;
}

static int newer_first(const void *a, const void *b)
{
    const struct px_obj *x = *(struct px_obj *const *)a;
    const struct px_obj *y = *(struct px_obj *const *)b;

    return x->order < y->order ? 1 : x->order > y->order ? -1 : 0;
}

size_t px_tenant_release_all(struct px_tenant *t)
{
    struct collect c = {calloc(t->objs.count + 1, sizeof(*c.v)), 0};
    size_t n;

    if (!c.v) {
        /* Without room to sort, release in table order: still correct for
         * OpenCL, whose objects keep what they need alive. */
        size_t count = 0;
        while (t->objs.count) {
            for (size_t i = 0; i < t->objs.cap; i++) {
                if (t->objs.keys[i]) {
                    drop(t, (struct px_obj *)(uintptr_t)t->objs.vals[i]);
                    count++;
                    break;
                }
            }
        }
        return count;
    }
    crn_map_each(&t->objs, collect_one, &c);
    qsort(c.v, c.n, sizeof(*c.v), newer_first);
    for (size_t i = 0; i < c.n; i++)
        drop(t, c.v[i]);
    n = c.n;
    free(c.v);
    return n;
}

void px_tenant_attach(struct px_tenant *t, const struct px_sink *sink,
                      struct px_out *first)
{
    struct px_out *held;

    pthread_mutex_lock(&t->lock);
    t->sink = *sink;
    held = t->held_head;
    t->held_head = t->held_tail = NULL;
    if (first)
        sink->push(sink->ctx, first);
    while (held) {
        struct px_out *next = held->next;
        sink->push(sink->ctx, held);
        held = next;
    }
    pthread_mutex_unlock(&t->lock);
}

void px_tenant_detach(struct px_tenant *t)
{
    pthread_mutex_lock(&t->lock);
    memset(&t->sink, 0, sizeof(t->sink));
    pthread_mutex_unlock(&t->lock);
}

void px_tenant_send(struct px_tenant *t, struct px_out *o, bool hold)
{
    pthread_mutex_lock(&t->lock);
    if (t->sink.push) {
        t->sink.push(t->sink.ctx, o);
    } else if (hold) {
        o->next = NULL;
        if (t->held_tail)
            t->held_tail->next = o;
        else
            t->held_head = o;
        t->held_tail = o;
    } else {
        px_out_free(o);
    }
    pthread_mutex_unlock(&t->lock);
}

void px_tenant_poke(struct px_tenant *t)
{
    pthread_mutex_lock(&t->lock);
    if (t->sink.poke)
        t->sink.poke(t->sink.ctx);
    pthread_mutex_unlock(&t->lock);
}
