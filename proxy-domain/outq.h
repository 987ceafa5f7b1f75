/* Frames waiting to leave for one connection, and how they are packed. */
#ifndef PX_OUTQ_H
#define PX_OUTQ_H

#include "proto/remote.pb-c.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

/*
 * One frame for the wire, with optional bulk bytes after it.  Whoever
 * holds a px_out owns it; px_out_free() releases the frame and
 * BULK_OWNER (px_chunk_free).  BULK points into BULK_OWNER, or into memory that a later
 * px_out of the same stream owns (a read's data leaves in order, so the
 * last chunk's entry can own the whole staging buffer).
 */
struct px_out {
    struct px_out *next;
    uv_write_t wreq;             /* the connection's write, while in flight */
    uint8_t *frame;              /* header and packed message */
    size_t frame_len;
    const uint8_t *bulk;
    size_t bulk_len;
    void *bulk_owner;            /* px_chunk_free()d with the entry */
    bool close_after;            /* close the stream once this is written */
};

/*
 * Buffers for bytes on their way out (a read's chunks): up to
 * PX_CHUNKS_KEPT of at most PX_CHUNK_BYTES come from one mapping that
 * stays, so that every read reuses memory already faulted in (the heap of
 * a pool thread's malloc arena is handed back to the system as soon as it
 * is all free, and touching it again costs a page fault per 4 KiB: most of
 * a read's time over TCP, measured), the others from the heap.
 * px_chunk_free takes either kind, and heap memory from anywhere.
 */
#define PX_CHUNK_BYTES (4u << 20)
#define PX_CHUNKS_KEPT 16
/* Smaller buffers are not worth a kept chunk. */
#define PX_CHUNK_MIN (64u << 10)
void *px_chunk_alloc(size_t len);
void px_chunk_free(void *p);

/* Packs M into a new entry; returns NULL when out of memory (logged). */
struct px_out *px_out_pack(const Crane__ServerMessage *m);
struct px_out *px_out_pack_reply(const Crane__Reply *r);
void px_out_free(struct px_out *o);
/* Frees a whole list linked through next. */
void px_out_free_list(struct px_out *o);

/* A FIFO of entries that any thread may push to; one consumer takes all. */
struct px_outq {
    pthread_mutex_t lock;
    struct px_out *head, *tail;
};

void px_outq_init(struct px_outq *q);
/* Frees whatever is still queued. */
void px_outq_destroy(struct px_outq *q);
void px_outq_push(struct px_outq *q, struct px_out *o);
/* Puts O before everything queued (a Welcome ahead of held notices). */
void px_outq_push_front(struct px_outq *q, struct px_out *o);
/* Takes the whole queue, oldest first; NULL when empty. */
struct px_out *px_outq_take(struct px_outq *q);

#endif /* PX_OUTQ_H */
