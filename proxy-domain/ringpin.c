/* Clients' shared areas pinned for the vendor (ringpin.h). */
#include "ringpin.h"

#include "proto/log.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct pin {
    const void *base;            /* the area's mapping */
    size_t size;                 /* pinned bytes, 0 when not pinned */
    cl_mem mem;                  /* the wrapping buffer, once made */
    cl_context ctx;              /* its context */
    bool tried;                  /* made, or failed to be */
    struct pin *next;
};

static pthread_mutex_t pins_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pin *pins;
static size_t pinned_bytes;      /* of every pin made, under pins_lock */

/* Most bytes of clients' memory this process pins at once
 * (CRANE_PROXY_MAX_PINNED_MB, default 2048): pinned pages cannot be
 * swapped or reclaimed, and a client names the sizes.  An area beyond it
 * is used unpinned (staging), as where the vendor refuses. */
static size_t max_pinned(void)
{
    const char *e = getenv("CRANE_PROXY_MAX_PINNED_MB");
    char *end;
    long long mb = e ? strtoll(e, &end, 10) : 2048;

    if (e && (*end || mb < 0 || mb > (1ll << 30)))
        mb = 2048;
    return (size_t)mb << 20;
}

static bool enabled(void)
{
    const char *e = getenv("CRANE_PROXY_PIN_RING");

    return !(e && strcmp(e, "0") == 0);
}

/* The record of BASE; call with the lock held. */
static struct pin *find(const void *base, struct pin ***link)
{
    struct pin **l = &pins;

    for (; *l; l = &(*l)->next)
        if ((*l)->base == base)
            break;
    if (link)
        *link = l;
    return *l;
}

void px_ring_allow(const struct crn_shm *s)
{
    struct pin *p;

    if (!s || !s->base || !enabled() || !(p = calloc(1, sizeof(*p))))
        return;
    p->base = s->base;
    pthread_mutex_lock(&pins_lock);
    if (find(s->base, NULL)) {
        free(p);                 /* allowed already */
    } else {
        p->next = pins;
        pins = p;
    }
    pthread_mutex_unlock(&pins_lock);
}

bool px_ring_pinnable(const struct crn_shm *s)
{
    struct pin *p;
    bool ok;

    if (!s)
        return false;
    pthread_mutex_lock(&pins_lock);
    p = find(s->base, NULL);
    ok = p && (!p->tried || p->mem);
    pthread_mutex_unlock(&pins_lock);
    return ok;
}

/* Makes P's buffer over S in CTX; call with the lock held (once per
 * area, and px_shm_close cannot unmap the area meanwhile). */
static void pin_with(struct pin *p, const struct crn_shm *s, cl_context ctx)
{
    cl_int err = CL_SUCCESS;

    p->tried = true;
    p->ctx = ctx;
    if (s->size > max_pinned() - (pinned_bytes < max_pinned()
                                      ? pinned_bytes
                                      : max_pinned())) {
        CRN_INFO("shared area of %zu bytes not pinned: %zu bytes pinned "
                "already, CRANE_PROXY_MAX_PINNED_MB allows %zu; bulk bytes "
                "go through staging", s->size, pinned_bytes, max_pinned());
        return;
    }
    p->mem = clCreateBuffer(ctx, CL_MEM_USE_HOST_PTR | CL_MEM_READ_WRITE,
                            s->size, (void *)s->base, &err);
    if (p->mem) {
        p->size = s->size;
        pinned_bytes += s->size;
        CRN_DEBUG("shared area of %zu bytes pinned for the device", s->size);
    } else
        CRN_INFO("shared area of %zu bytes not pinned (%d): bulk bytes go "
                "through staging", s->size, err);
}

void px_ring_prepin(const struct crn_shm *s, cl_context ctx)
{
    struct pin *p;

    if (!s || !ctx)
        return;
    pthread_mutex_lock(&pins_lock);
    p = find(s->base, NULL);
    if (p && !p->tried)
        pin_with(p, s, ctx);
    pthread_mutex_unlock(&pins_lock);
}

bool px_ring_pinned(const struct crn_shm *s, cl_command_queue q)
{
    struct pin *p;
    cl_context ctx;
    bool pinned = false;

    if (!s || clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof(ctx), &ctx,
                                    NULL) != CL_SUCCESS)
        return false;
    pthread_mutex_lock(&pins_lock);
    p = find(s->base, NULL);
    if (p && !p->tried)
        pin_with(p, s, ctx);
    /* Pinned for its context; another context copies through staging. */
    pinned = p && p->mem && p->ctx == ctx;
    pthread_mutex_unlock(&pins_lock);
    return pinned;
}

void px_shm_close(struct crn_shm *s)
{
    struct pin *p, **link;

    if (!s)
        return;
    pthread_mutex_lock(&pins_lock);
    p = s->base ? find(s->base, &link) : NULL;
    if (p) {
        *link = p->next;
        pinned_bytes -= p->size;
    }
    pthread_mutex_unlock(&pins_lock);
    if (p && p->mem)
        clReleaseMemObject(p->mem);
    free(p);
    crn_shm_close(s);
}
