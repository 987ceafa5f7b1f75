/* The one hash map: non-zero 64-bit keys to 64-bit values (open addressing). */
#ifndef CRN_MAP_H
#define CRN_MAP_H

#include <stddef.h>
#include <stdint.h>

/* Every map of crane (crane-proxy's id tables, the shim's object and
 * address sets) is one of these: ids, pointers and cookies as keys, ids
 * or pointers as values.  Linear probing with backward-shift deletion, so
 * no tombstones and no slowdown after churn; the load stays at most 1/2.
 * Key 0 marks an empty slot and cannot be stored; a value of 0 reads the
 * same as no entry, so store values that are never 0.  Not thread-safe:
 * its owner locks.  A zeroed struct is an empty map. */
struct crn_map {
    uint64_t *keys;
    uint64_t *vals;
    size_t cap;                  /* a power of two, or 0 before first use */
    size_t count;
};

/* Returns the value stored under KEY, or 0 when there is none. */
uint64_t crn_map_get(const struct crn_map *m, uint64_t key);
/* Stores VAL under KEY (replacing any).  Returns 0, -EINVAL for key 0, or
 * -ENOMEM. */
int crn_map_put(struct crn_map *m, uint64_t key, uint64_t val);
/* Removes KEY; returns its value, or 0 when it was not there. */
uint64_t crn_map_del(struct crn_map *m, uint64_t key);
/* Calls FN for every entry, in no particular order; FN must not change M. */
void crn_map_each(const struct crn_map *m,
                 void (*fn)(uint64_t key, uint64_t val, void *arg), void *arg);
void crn_map_free(struct crn_map *m);

#endif /* CRN_MAP_H */
