/* The one hash map: non-zero 64-bit keys to 64-bit values (open addressing). */
#include "proto/map.h"

#include <errno.h>
#include <stdlib.h>

static size_t slot_of(uint64_t key, size_t cap)
{
    /* Fibonacci hashing spreads ids and pointers alike. */
    return (size_t)((key * UINT64_C(0x9e3779b97f4a7c15)) >> 17) & (cap - 1);
}

uint64_t crn_map_get(const struct crn_map *m, uint64_t key)
{
    if (key == 0 || m->cap == 0)
        return 0;
    for (size_t i = slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == key)
            return m->vals[i];
        if (m->keys[i] == 0)
            return 0;
    }
}

static void put_slot(struct crn_map *m, uint64_t key, uint64_t val)
{
    size_t i = slot_of(key, m->cap);

    while (m->keys[i] != 0 && m->keys[i] != key)
        i = (i + 1) & (m->cap - 1);
    if (m->keys[i] == 0)
        m->count++;
    m->keys[i] = key;
    m->vals[i] = val;
}

static int grow(struct crn_map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    struct crn_map n = {calloc(cap, sizeof(uint64_t)),
                       calloc(cap, sizeof(uint64_t)), cap, 0};

    if (!n.keys || !n.vals) {
        free(n.keys);
        free(n.vals);
        return -ENOMEM;
    }
    for (size_t i = 0; i < m->cap; i++)
        if (m->keys[i])
            put_slot(&n, m->keys[i], m->vals[i]);
    crn_map_free(m);
    *m = n;
    return 0;
}

int crn_map_put(struct crn_map *m, uint64_t key, uint64_t val)
{
    if (key == 0)
        return -EINVAL;
    /* Keep the load at most 1/2. */
    if ((m->count + 1) * 2 > m->cap) {
        int rc = grow(m);
        if (rc < 0)
            return rc;
    }
    put_slot(m, key, val);
    return 0;
}

uint64_t crn_map_del(struct crn_map *m, uint64_t key)
{
    size_t mask = m->cap - 1;
    size_t i, j;
    uint64_t val;

    if (key == 0 || m->cap == 0)
        return 0;
    for (i = slot_of(key, m->cap); m->keys[i] != key; i = (i + 1) & mask)
        if (m->keys[i] == 0)
            return 0;
    val = m->vals[i];
    m->keys[i] = 0;
    m->count--;
    /* Backward shift: move later entries of the run into the hole when
     * their home slot is not between the hole and where they are. */
    for (j = (i + 1) & mask; m->keys[j] != 0; j = (j + 1) & mask) {
        size_t home = slot_of(m->keys[j], m->cap);
        if (((j - home) & mask) >= ((j - i) & mask)) {
            m->keys[i] = m->keys[j];
            m->vals[i] = m->vals[j];
            m->keys[j] = 0;
            i = j;
        }
    }
    return val;
}

void crn_map_each(const struct crn_map *m,
                 void (*fn)(uint64_t key, uint64_t val, void *arg), void *arg)
{
    for (size_t i = 0; i < m->cap; i++)
        if (m->keys[i])
            fn(m->keys[i], m->vals[i], arg);
}

void crn_map_free(struct crn_map *m)
{
    free(m->keys);
    free(m->vals);
    m->keys = m->vals = NULL;
    m->cap = m->count = 0;
}
