/* Unit tests of the remote backend's object maps (shim/remote_map.c): ids
 * to objects, and which addresses count as memory objects or samplers. */
#include <stdlib.h>

#include "shim/remote.h"
#include "tests/unit/runner.h"

void shim_remote_maps_clear(void);

static struct rc_obj make(uint64_t id, enum shim_kind kind)
{
    return (struct rc_obj){&shim_remote_dispatch, id, kind};
}

TEST(remote_map_ids)
{
    struct rc_obj a = make(7, SHIM_CONTEXT), b = make(8, SHIM_MEM);

    ASSERT_EQ(shim_remote_track(&a), 0);
    ASSERT_EQ(shim_remote_track(&b), 0);
    ASSERT(shim_remote_by_id(7) == &a);
    ASSERT(shim_remote_by_id(8) == &b);
    ASSERT(shim_remote_by_id(9) == NULL);
    shim_remote_untrack(&a);
    ASSERT(shim_remote_by_id(7) == NULL);
    ASSERT(shim_remote_by_id(8) == &b);
    /* Ids 0 and 1 are the map's empty and deleted marks: never found. */
    ASSERT(shim_remote_by_id(0) == NULL);
    ASSERT(shim_remote_by_id(1) == NULL);
    shim_remote_maps_clear();
    ASSERT(shim_remote_by_id(8) == NULL);
}

TEST(remote_map_addresses)
{
    struct rc_obj mem = make(10, SHIM_MEM), smp = make(11, SHIM_SAMPLER);
    struct rc_obj krn = make(12, SHIM_KERNEL);

    ASSERT_EQ(shim_remote_track(&mem), 0);
    ASSERT_EQ(shim_remote_track(&smp), 0);
    ASSERT_EQ(shim_remote_track(&krn), 0);
    /* Only memory objects and samplers may be kernel arguments. */
    ASSERT(shim_remote_by_addr(&mem) == &mem);
    ASSERT(shim_remote_by_addr(&smp) == &smp);
    ASSERT(shim_remote_by_addr(&krn) == NULL);
    ASSERT(shim_remote_by_addr(NULL) == NULL);
    shim_remote_untrack(&mem);
    ASSERT(shim_remote_by_addr(&mem) == NULL);
    shim_remote_maps_clear();
}

/* Growth with tombstones: many objects come and go, every live one is
 * still found. */
TEST(remote_map_churn)
{
    enum { N = 20000 };
    struct rc_obj *objs = calloc(N, sizeof(*objs));

    ASSERT(objs != NULL);
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < N; i++) {
            objs[i] = make((uint64_t)round * N + i + 2, SHIM_MEM);
            ASSERT_EQ(shim_remote_track(&objs[i]), 0);
        }
        for (int i = 0; i < N; i += 2)
            shim_remote_untrack(&objs[i]);
        for (int i = 0; i < N; i++) {
            struct rc_obj *want = i % 2 ? &objs[i] : NULL;
            ASSERT(shim_remote_by_id(objs[i].id) == want);
            ASSERT(shim_remote_by_addr(&objs[i]) == want);
        }
        for (int i = 1; i < N; i += 2)
            shim_remote_untrack(&objs[i]);
    }
    shim_remote_maps_clear();
    free(objs);
}
