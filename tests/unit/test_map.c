/* Unit tests of proto/map.c: the one hash map, against plain arrays. */
#include "runner.h"

#include "proto/map.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Random puts, deletes and gets on clustered keys, against a plain array:
 * deletion must keep every other key findable (backward shift). */
TEST(map_random)
{
    enum { N = 3000 };
    static uint64_t ref[N];
    struct crn_map m = {0};
    size_t live = 0;

    memset(ref, 0, sizeof(ref));
    srand(7);
    for (int it = 0; it < 300000; it++) {
        int k = rand() % N;
        uint64_t key = (uint64_t)k * 0x10000 + 1;
        switch (rand() % 3) {
        case 0: {
            uint64_t v = (uint64_t)rand() + 1;
            ASSERT_EQ(crn_map_put(&m, key, v), 0);
            ref[k] = v;
            break;
        }
        case 1:
            ASSERT_EQ(crn_map_del(&m, key), ref[k]);
            ref[k] = 0;
            break;
        default:
            ASSERT_EQ(crn_map_get(&m, key), ref[k]);
        }
    }
    for (int k = 0; k < N; k++)
        live += ref[k] != 0;
    ASSERT_EQ(m.count, live);
    ASSERT_EQ(crn_map_put(&m, 0, 1), -EINVAL);
    ASSERT_EQ(crn_map_get(&m, 0), 0);
    crn_map_free(&m);
    ASSERT_EQ(crn_map_get(&m, 1), 0);
    ASSERT_EQ(crn_map_del(&m, 1), 0);
}

/* Pointers as keys (aligned, so their low bits are all zero) and as values,
 * the way the shim keeps its address sets: every one found until removed. */
TEST(map_pointers)
{
    enum { N = 5000 };
    static uint64_t *blocks[N];
    struct crn_map m = {0};

    for (int i = 0; i < N; i++) {
        blocks[i] = malloc(64);
        ASSERT(blocks[i] != NULL);
        ASSERT_EQ(crn_map_put(&m, (uintptr_t)blocks[i], (uintptr_t)blocks[i]),
                  0);
    }
    ASSERT_EQ(m.count, N);
    ASSERT(m.count * 2 <= m.cap);
    for (int i = 0; i < N; i += 2)
        ASSERT_EQ(crn_map_del(&m, (uintptr_t)blocks[i]), (uintptr_t)blocks[i]);
    for (int i = 0; i < N; i++)
        ASSERT_EQ(crn_map_get(&m, (uintptr_t)blocks[i]),
                  i % 2 ? (uintptr_t)blocks[i] : 0);
    ASSERT_EQ(m.count, N / 2);
    for (int i = 0; i < N; i++)
        free(blocks[i]);
    crn_map_free(&m);
}

struct seen {
    uint64_t sum_keys, sum_vals;
    size_t n;
};

static void add_up(uint64_t key, uint64_t val, void *arg)
{
    struct seen *s = arg;

    s->sum_keys += key;
    s->sum_vals += val;
    s->n++;
}

/* crn_map_each visits every entry once; replacing a value keeps one entry;
 * churn (put and delete of ever new keys) leaves no tombstones behind, so
 * the table does not grow past what its live entries need. */
TEST(map_each_replace_churn)
{
    struct crn_map m = {0};
    struct seen s = {0};
    size_t cap;

    crn_map_each(&m, add_up, &s);
    ASSERT_EQ(s.n, 0);
    for (uint64_t k = 1; k <= 100; k++)
        ASSERT_EQ(crn_map_put(&m, k, k * 10), 0);
    ASSERT_EQ(crn_map_put(&m, 7, 1000), 0);
    ASSERT_EQ(m.count, 100);
    ASSERT_EQ(crn_map_get(&m, 7), 1000);
    crn_map_each(&m, add_up, &s);
    ASSERT_EQ(s.n, 100);
    ASSERT_EQ(s.sum_keys, 5050);
    ASSERT_EQ(s.sum_vals, 50500 - 70 + 1000);
    cap = m.cap;
    for (uint64_t k = 1000; k < 200000; k++) {
        ASSERT_EQ(crn_map_put(&m, k, k), 0);
        ASSERT_EQ(crn_map_del(&m, k), k);
    }
    ASSERT_EQ(m.count, 100);
    ASSERT_EQ(m.cap, cap);
    for (uint64_t k = 1; k <= 100; k++)
        ASSERT_EQ(crn_map_get(&m, k), k == 7 ? 1000 : k * 10);
    crn_map_free(&m);
}
