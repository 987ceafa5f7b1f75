/* One block of memory per decoded frame: protobuf-c's allocations for the
 * message, freed all at once (arena.h). */
#include "arena.h"

#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>

struct px_arena {
    ProtobufCAllocator pb;
    size_t used, cap;
    size_t spilled;             /* allocations that went to the heap */
    alignas(max_align_t) unsigned char data[];
};

/* Decoded structs take 13-15 times the bytes of their encoding (a launch
 * of 16 bytes 232, one with eight arguments in 86 bytes 1124: a 4-byte
 * argument value is a struct of some 60 bytes).  Small frames' blocks stay
 * small enough for malloc's per-thread cache. */
static size_t arena_cap(size_t frame_len)
{
    return 128 + 16 * frame_len;
}

static void *arena_alloc(void *d, size_t n)
{
    struct px_arena *a = d;
    size_t at = (a->used + alignof(max_align_t) - 1) &
                ~(alignof(max_align_t) - 1);

    if (at <= a->cap && n <= a->cap - at) {
        a->used = at + n;
        return a->data + at;
    }
    a->spilled++;
    return malloc(n);
}

static void arena_free(void *d, void *p)
{
    struct px_arena *a = d;
    uintptr_t at = (uintptr_t)p, lo = (uintptr_t)a->data;

    if (at < lo || at >= lo + a->cap)
        free(p);
}

Crane__ClientMessage *px_arena_unpack(const uint8_t *data, size_t len,
                                      struct px_arena **arena)
{
    struct px_arena *a = NULL;
    Crane__ClientMessage *m;

    *arena = NULL;
    if (len <= PX_ARENA_FRAME_MAX &&
        (a = malloc(sizeof(*a) + arena_cap(len)))) {
        a->pb.alloc = arena_alloc;
        a->pb.free = arena_free;
        a->pb.allocator_data = a;
        a->used = a->spilled = 0;
        a->cap = arena_cap(len);
    }
    m = crane__client_message__unpack(a ? &a->pb : NULL, len, data);
    if (!m) {
        free(a);
        return NULL;
    }
    *arena = a;
    return m;
}

void px_arena_prefetch(const struct px_arena *a)
{
    if (!a)
        return;
    __builtin_prefetch(a);
    for (size_t at = 0; at < a->used; at += 64)
        __builtin_prefetch(a->data + at);
}

void px_arena_free(Crane__ClientMessage *m, struct px_arena *a)
{
    if (!a) {
        if (m)
            crane__client_message__free_unpacked(m, NULL);
        return;
    }
    /* Only what spilled to the heap needs the walk. */
    if (m && a->spilled)
        crane__client_message__free_unpacked(m, &a->pb);
    free(a);
}
