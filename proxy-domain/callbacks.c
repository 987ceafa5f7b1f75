/* OpenCL event callbacks that may fire after their tenant is gone, or never. */
#include "callbacks.h"

#include "proto/log.h"
#include "outq.h"
#include "proto/map.h"

#include <pthread.h>
#include <stdlib.h>

enum cb_kind { CB_WATCH, CB_POKE, CB_FREE };

struct cb_rec {
    enum cb_kind kind;
    struct px_tenant *t;
    cl_event ev;                 /* CB_FREE: retained, to wait for */
    uint64_t event_id, cookie;   /* CB_WATCH */
    void *data;                  /* CB_FREE */
    struct cb_rec *next;         /* CB_FREE, on the reaper's list */
};

/*
 * The registry: record number -> struct cb_rec *.  Process-wide because
 * the implementation hands callbacks nothing but their data pointer.  Its
 * lock is taken before a tenant's, never after.
 */
static pthread_mutex_t cb_lock = PTHREAD_MUTEX_INITIALIZER;
static struct crn_map cb_recs;
static uint64_t cb_next;

/*
 * A completed CB_FREE record's event is released, and its bytes freed, by
 * a reaper thread rather than in the callback: releasing the last
 * reference of an event from its own callback, on the implementation's
 * callback thread, is where NVIDIA's workers were seen stuck (three of its
 * threads waiting for one lock, no more callbacks, the tenant's stream
 * stalled until the client's watchdog gave up after 20 s).
 */
static pthread_mutex_t reap_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t reap_cond = PTHREAD_COND_INITIALIZER;
static struct cb_rec *reap_list;
static pthread_once_t reap_once = PTHREAD_ONCE_INIT;
static bool reap_running;

static void reap(struct cb_rec *r)
{
    clReleaseEvent(r->ev);
    px_chunk_free(r->data);
    free(r);
}

static void *reaper_main(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&reap_lock);
        while (!reap_list)
            pthread_cond_wait(&reap_cond, &reap_lock);
        struct cb_rec *r = reap_list;
        reap_list = NULL;
        pthread_mutex_unlock(&reap_lock);
        while (r) {
            struct cb_rec *next = r->next;
            reap(r);
            r = next;
        }
    }
    return NULL;
}

static void reaper_start(void)
{
    pthread_attr_t a;
    pthread_t tid;

    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&a, 256u << 10);
    reap_running = pthread_create(&tid, &a, reaper_main, NULL) == 0;
    pthread_attr_destroy(&a);
    if (!reap_running)
        CRN_WARN("no thread to release written events: they are released "
                "in their callbacks");
}

static void reap_later(struct cb_rec *r)
{
    if (!reap_running) {
        reap(r);
        return;
    }
    pthread_mutex_lock(&reap_lock);
    r->next = reap_list;
    reap_list = r;
    pthread_cond_signal(&reap_cond);
    pthread_mutex_unlock(&reap_lock);
}

static void fire(cl_event ev, cl_int status, void *data)
{
    uint64_t id = (uint64_t)(uintptr_t)data;
    struct cb_rec *r;

    (void)ev;
    pthread_mutex_lock(&cb_lock);
    r = (struct cb_rec *)(uintptr_t)crn_map_del(&cb_recs, id);
    if (r && r->t && r->kind == CB_WATCH) {
        Crane__ServerMessage m = CRANE__SERVER_MESSAGE__INIT;
        Crane__Notify n = CRANE__NOTIFY__INIT;
        struct px_out *o;
        n.event = r->event_id;
        n.status = status;
        n.cookie = r->cookie;
        m.msg_case = CRANE__SERVER_MESSAGE__MSG_NOTIFY;
        m.notify = &n;
        o = px_out_pack(&m);
        if (o)
            px_tenant_send(r->t, o, true);
    } else if (r && r->t && r->kind == CB_POKE) {
        px_tenant_poke(r->t);
    }
    pthread_mutex_unlock(&cb_lock);
    if (r && r->kind == CB_FREE)
        reap_later(r);
    else
        free(r);
}

/* Registers R (taking it) as the callback of EV for STATUS. */
static cl_int add(struct cb_rec *r, cl_event ev, cl_int status)
{
    uint64_t id;
    cl_int err;
    int rc;

    if (!r)
        return CL_OUT_OF_HOST_MEMORY;
    pthread_mutex_lock(&cb_lock);
    id = ++cb_next;
    rc = crn_map_put(&cb_recs, id, (uintptr_t)r);
    pthread_mutex_unlock(&cb_lock);
    if (rc < 0) {
        free(r);
        return CL_OUT_OF_HOST_MEMORY;
    }
    /* Not under the lock: the callback may run at once, right here. */
    err = clSetEventCallback(ev, status, fire, (void *)(uintptr_t)id);
    if (err != CL_SUCCESS) {
        pthread_mutex_lock(&cb_lock);
        crn_map_del(&cb_recs, id);
        pthread_mutex_unlock(&cb_lock);
        free(r);
    }
    return err;
}

cl_int px_cb_watch(struct px_tenant *t, cl_event ev, cl_int status,
                   uint64_t event_id, uint64_t cookie)
{
    struct cb_rec *r = calloc(1, sizeof(*r));

    if (r) {
        r->kind = CB_WATCH;
        r->t = t;
        r->event_id = event_id;
        r->cookie = cookie;
    }
    return add(r, ev, status);
}

cl_int px_cb_poke(struct px_tenant *t, cl_event ev)
{
    struct cb_rec *r = calloc(1, sizeof(*r));

    if (r) {
        r->kind = CB_POKE;
        r->t = t;
    }
    return add(r, ev, CL_COMPLETE);
}

cl_int px_cb_free(struct px_tenant *t, cl_event ev, void *data)
{
    struct cb_rec *r = calloc(1, sizeof(*r));
    cl_int err;

    if (!r)
        return CL_OUT_OF_HOST_MEMORY;
    pthread_once(&reap_once, reaper_start);
    r->kind = CB_FREE;
    r->t = t;
    r->ev = ev;
    r->data = data;
    clRetainEvent(ev);
    err = add(r, ev, CL_COMPLETE);
    if (err != CL_SUCCESS)
        clReleaseEvent(ev);
    return err;
}

struct forget {
    struct px_tenant *t;
    struct cb_rec **v;
    size_t n, cap;
};

static void collect(uint64_t id, uint64_t val, void *arg)
{
    struct forget *f = arg;
    struct cb_rec *r = (struct cb_rec *)(uintptr_t)val;

    if (r->t != f->t)
        return;
    if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 16;
        struct cb_rec **v = realloc(f->v, cap * sizeof(*v));
        if (!v) {
            /* Out of memory: left registered, but cut off from the
             * tenant; its callback frees it, if it ever comes. */
            r->t = NULL;
            return;
        }
        f->v = v;
        f->cap = cap;
    }
    f->v[f->n++] = r;
    r->event_id = id;           /* remembered for the removal below */
}

void px_cb_forget(struct px_tenant *t)
{
    struct forget f = {.t = t};

    pthread_mutex_lock(&cb_lock);
    crn_map_each(&cb_recs, collect, &f);
    for (size_t i = 0; i < f.n; i++)
        crn_map_del(&cb_recs, f.v[i]->event_id);
    if (cb_recs.count == 0)
        crn_map_free(&cb_recs);
    pthread_mutex_unlock(&cb_lock);
    for (size_t i = 0; i < f.n; i++) {
        struct cb_rec *r = f.v[i];
        if (r->kind == CB_FREE) {
            /* The device may still be copying from it. */
            clWaitForEvents(1, &r->ev);
            clReleaseEvent(r->ev);
            px_chunk_free(r->data);
        }
        free(r);
    }
    free(f.v);
}
