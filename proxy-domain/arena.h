/* One block of memory per decoded frame: protobuf-c's allocations for the
 * message, freed all at once. */
#ifndef PX_ARENA_H
#define PX_ARENA_H

#include "proto/remote.pb-c.h"

#include <stddef.h>

/*
 * A frame's message unpacked into one block instead of a heap allocation
 * per field, array and sub-message (a launch with eight arguments made
 * some 25, and freeing them walked the message again): what does not fit
 * the block goes to the heap, and only then is the message walked when it
 * is freed.  Only frames up to PX_ARENA_FRAME_MAX bytes get one.
 */
#define PX_ARENA_FRAME_MAX 4096u

struct px_arena;

/* Decodes the LEN bytes at DATA into a new arena (*ARENA, or NULL where
 * the frame is too big for one: then the heap as before).  NULL when the
 * bytes do not decode (nothing is kept then). */
Crane__ClientMessage *px_arena_unpack(const uint8_t *data, size_t len,
                                      struct px_arena **arena);
/* Asks the CPU to fetch A's decoded bytes ahead (A may be NULL): the
 * loop thread wrote them on another core, and the executor's walk of the
 * message would otherwise wait for them line by line. */
void px_arena_prefetch(const struct px_arena *a);
/* Frees M, decoded by px_arena_unpack into A (or the heap: A NULL). */
void px_arena_free(Crane__ClientMessage *m, struct px_arena *a);

#endif /* PX_ARENA_H */
