/* The host-memory region of the shared area and its allocations
 * (hostmem.h). */
#include "hostmem.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "proto/log.h"
#include "proto/shm.h"

#define PAGE 4096u

/* One allocation: [off, off + len) of the region, in address order. */
struct piece {
    size_t off, len;
    unsigned refs;
    struct piece *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct crn_shm region = {.fd = -1};
static int made;                 /* 0: not tried, 1: made, < 0: failed */
/* A child of fork shares the parent's region (MAP_SHARED) but not its
 * bookkeeping: it never allocates from it, nor names it to a proxy. */
static bool inherited;
static struct piece *pieces;
static size_t used;

static void forked_child(void)
{
    __atomic_store_n(&inherited, true, __ATOMIC_RELEASE);
}

int shim_hostmem_region(int *fd, size_t *size)
{
    int rc;

    pthread_mutex_lock(&lock);
    if (inherited) {
        pthread_mutex_unlock(&lock);
        return -ECHILD;
    }
    if (!made) {
        size_t want = (size_t)shim_config.shm_host_mb << 20;
        rc = want ? crn_shm_create_plain(want, &region) : -EOPNOTSUPP;
        /* Published last: shim_hostmem_find looks without the lock. */
        __atomic_store_n(&made, rc == 0 ? 1 : rc, __ATOMIC_RELEASE);
        if (rc == 0) {
            pthread_atfork(NULL, NULL, forked_child);
            CRN_DEBUG("remote: %zu MiB of host memory in the shared area",
                      region.size >> 20);
        } else if (made != -EOPNOTSUPP) {
            CRN_WARN("remote: no host-memory region (%s): mapped pointers "
                     "live in the heap", strerror(-made));
        }
    }
    rc = made < 0 ? made : 0;
    if (rc == 0) {
        *fd = region.fd;
        *size = region.size;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

void *shim_hostmem_alloc(size_t len)
{
    struct piece *p, **link;
    size_t at = 0;
    void *out = NULL;

    len = ((len ? len : 1) + PAGE - 1) / PAGE * PAGE;
    pthread_mutex_lock(&lock);
    if (made != 1 || inherited || len > region.size)
        goto out;
    /* First fit between the pieces, in address order. */
    for (link = &pieces; *link; link = &(*link)->next) {
        if ((*link)->off - at >= len)
            break;
        at = (*link)->off + (*link)->len;
    }
    if (region.size - at < len || !(p = calloc(1, sizeof(*p))))
        goto out;
    p->off = at;
    p->len = len;
    p->refs = 1;
    p->next = *link;
    *link = p;
    used += len;
    out = region.base + at;
out:
    pthread_mutex_unlock(&lock);
    return out;
}

/* The piece starting at P, and the link to it; call with the lock held. */
static struct piece *find_piece(const void *p, struct piece ***link)
{
    const unsigned char *c = p;
    struct piece **l = &pieces;

    if (made != 1 || c < region.base || c >= region.base + region.size)
        return NULL;
    for (; *l; l = &(*l)->next)
        if (region.base + (*l)->off == c)
            break;
    if (link)
        *link = l;
    return *l;
}

bool shim_hostmem_owns(const void *p)
{
    pthread_mutex_lock(&lock);
    bool yes = find_piece(p, NULL) != NULL;
    pthread_mutex_unlock(&lock);
    return yes;
}

void shim_hostmem_retain(void *p)
{
    pthread_mutex_lock(&lock);
    struct piece *x = find_piece(p, NULL);
    if (x)
        x->refs++;
    pthread_mutex_unlock(&lock);
}

void shim_hostmem_free(void *p)
{
    const unsigned char *c = p;
    struct piece *x, **link;
    bool inside;

    if (!p)
        return;
    pthread_mutex_lock(&lock);
    inside = made == 1 && c >= region.base && c < region.base + region.size;
    /* A child's inherited pointers: the parent's memory, not ours. */
    x = inside && !inherited ? find_piece(p, &link) : NULL;
    if (x && --x->refs == 0) {
        *link = x->next;
        used -= x->len;
        free(x);
    }
    pthread_mutex_unlock(&lock);
    if (!inside)
        free(p);
    else if (!x && !inherited)
        CRN_ERROR("remote: freeing %p, no allocation of the host-memory "
                  "region", p);
}

bool shim_hostmem_find(const void *p, size_t len, uint64_t *off)
{
    const unsigned char *c = p;

    /* The region never moves once made: no lock needed to look. */
    if (__atomic_load_n(&made, __ATOMIC_ACQUIRE) != 1 ||
        __atomic_load_n(&inherited, __ATOMIC_ACQUIRE) || !c ||
        c < region.base || len > region.size ||
        (size_t)(c - region.base) > region.size - len)
        return false;
    *off = (uint64_t)(c - region.base);
    return true;
}

size_t shim_hostmem_used(void)
{
    pthread_mutex_lock(&lock);
    size_t n = used;
    pthread_mutex_unlock(&lock);
    return n;
}
