/* A hash map from non-zero 64-bit keys to 64-bit values (open addressing). */
#ifndef PX_MAP_H
#define PX_MAP_H

#include <stddef.h>
#include <stdint.h>

/* Linear probing with backward-shift deletion, so no tombstones.  Key 0
 * marks an empty slot and cannot be stored.  Not thread-safe. */
struct px_map {
    uint64_t *keys;
    uint64_t *vals;
    size_t cap;                  /* a power of two, or 0 before first use */
    size_t count;
};

/* Returns the value stored under KEY, or 0 when there is none. */
uint64_t px_map_get(const struct px_map *m, uint64_t key);
/* Stores VAL under KEY (replacing any).  Returns 0, -EINVAL for key 0, or
 * -ENOMEM. */
int px_map_put(struct px_map *m, uint64_t key, uint64_t val);
/* Removes KEY; returns its value, or 0 when it was not there. */
uint64_t px_map_del(struct px_map *m, uint64_t key);
/* Calls FN for every entry, in no particular order; FN must not change M. */
void px_map_each(const struct px_map *m,
                 void (*fn)(uint64_t key, uint64_t val, void *arg), void *arg);
void px_map_free(struct px_map *m);

#endif /* PX_MAP_H */
