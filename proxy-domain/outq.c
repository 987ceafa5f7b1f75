/* Frames waiting to leave for one connection, and how they are packed. */
#include "outq.h"

#include "proto/log.h"

#include "proto/fastpack.h"

#include <stdlib.h>
#include <sys/mman.h>

static struct {
    pthread_mutex_t lock;
    unsigned char *base;         /* PX_CHUNKS_KEPT chunks, or NULL */
    bool failed;                 /* the mapping could not be made */
    uint32_t used;               /* a bit per chunk */
} kept = {.lock = PTHREAD_MUTEX_INITIALIZER};

_Static_assert(PX_CHUNKS_KEPT <= 32, "one bit per kept chunk");

void *px_chunk_alloc(size_t len)
{
    void *p = NULL;

    if (len && len <= PX_CHUNK_BYTES) {
        pthread_mutex_lock(&kept.lock);
        if (!kept.base && !kept.failed) {
            void *m = mmap(NULL, (size_t)PX_CHUNKS_KEPT * PX_CHUNK_BYTES,
                           PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                           -1, 0);
            if (m == MAP_FAILED)
                kept.failed = true;
            else
                kept.base = m;
        }
        for (unsigned i = 0; kept.base && i < PX_CHUNKS_KEPT; i++)
            if (!(kept.used & (1u << i))) {
                kept.used |= 1u << i;
                p = kept.base + (size_t)i * PX_CHUNK_BYTES;
                break;
            }
        pthread_mutex_unlock(&kept.lock);
    }
    return p ? p : malloc(len ? len : 1);
}

void px_chunk_free(void *p)
{
    unsigned char *c = p;

    if (kept.base && c >= kept.base &&
        c < kept.base + (size_t)PX_CHUNKS_KEPT * PX_CHUNK_BYTES) {
        size_t i = (size_t)(c - kept.base) / PX_CHUNK_BYTES;
        pthread_mutex_lock(&kept.lock);
        kept.used &= ~(1u << i);
        pthread_mutex_unlock(&kept.lock);
        return;
    }
    free(p);
}

struct px_out *px_out_pack(const Crane__ServerMessage *m)
{
    size_t len = crn_fastpack_server_size(m);
    struct px_out *o;

    if (len > UINT32_MAX) {
        CRN_ERROR("message of %zu bytes is too large to frame", len);
        return NULL;
    }
    o = calloc(1, sizeof(*o));
    if (o)
        o->frame = malloc(4 + len);
    if (!o || !o->frame) {
        CRN_ERROR("out of memory packing a %zu-byte message", len);
        free(o);
        return NULL;
    }
    o->frame[0] = (uint8_t)(len >> 24);
    o->frame[1] = (uint8_t)(len >> 16);
    o->frame[2] = (uint8_t)(len >> 8);
    o->frame[3] = (uint8_t)len;
    crn_fastpack_server(m, o->frame + 4);
    o->frame_len = 4 + len;
    return o;
}

struct px_out *px_out_pack_reply(const Crane__Reply *r)
{
    Crane__ServerMessage m = CRANE__SERVER_MESSAGE__INIT;

    m.msg_case = CRANE__SERVER_MESSAGE__MSG_REPLY;
    m.reply = (Crane__Reply *)r;
    return px_out_pack(&m);
}

void px_out_free(struct px_out *o)
{
    if (!o)
        return;
    free(o->frame);
    px_chunk_free(o->bulk_owner);
    free(o);
}

void px_out_free_list(struct px_out *o)
{
    while (o) {
        struct px_out *next = o->next;
        px_out_free(o);
        o = next;
    }
}

void px_outq_init(struct px_outq *q)
{
    pthread_mutex_init(&q->lock, NULL);
    q->head = q->tail = NULL;
}

void px_outq_destroy(struct px_outq *q)
{
    px_out_free_list(px_outq_take(q));
    pthread_mutex_destroy(&q->lock);
}

void px_outq_push(struct px_outq *q, struct px_out *o)
{
    o->next = NULL;
    pthread_mutex_lock(&q->lock);
    if (q->tail)
        q->tail->next = o;
    else
        q->head = o;
    q->tail = o;
    pthread_mutex_unlock(&q->lock);
}

void px_outq_push_front(struct px_outq *q, struct px_out *o)
{
    pthread_mutex_lock(&q->lock);
    o->next = q->head;
    q->head = o;
    if (!q->tail)
        q->tail = o;
    pthread_mutex_unlock(&q->lock);
}

struct px_out *px_outq_take(struct px_outq *q)
{
    struct px_out *o;

    pthread_mutex_lock(&q->lock);
    o = q->head;
    q->head = q->tail = NULL;
    pthread_mutex_unlock(&q->lock);
    return o;
}
