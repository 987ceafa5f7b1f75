/* Unit tests of the remote backend: its object maps (shim/remote_map.c),
 * and its dispatch table from cl_api.def (shim/remote_dispatch.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim/remote/remote.h"
#include "tests/unit/runner.h"

void shim_remote_maps_clear(void);

static struct rc_obj make(uint64_t id, enum shim_kind kind)
{
    return (struct rc_obj){&shim_remote_dispatch, id, kind, false};
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

/* The names docs/remoting.md lists as refused ("- `clX`: reason" lines
 * under its "## Entry points not remoted" heading), NUL-separated in OUT. */
static size_t documented_refusals(char *out, size_t room)
{
    FILE *f = fopen("docs/remoting.md", "r");
    char line[512];
    bool in = false;
    size_t used = 0;

    if (!f)
        return SIZE_MAX;
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, "## ", 3) == 0)
            in = strncmp(line, "## Entry points not remoted", 27) == 0;
        if (!in || strncmp(line, "- `cl", 5) != 0)
            continue;
        char *end = strchr(line + 3, '`');
        size_t len = end ? (size_t)(end - (line + 3)) : 0;
        if (len && used + len + 1 < room) {
            memcpy(out + used, line + 3, len);
            out[used + len] = '\0';
            used += len + 1;
        }
    }
    fclose(f);
    return used;
}

static bool listed(const char *names, size_t len, const char *name)
{
    for (size_t at = 0; at < len; at += strlen(names + at) + 1)
        if (strcmp(names + at, name) == 0)
            return true;
    return false;
}

/* Every row of cl_api.def has a remote implementation or an explicit
 * refusal (with its reason, documented), and the table holds no NULL. */
TEST(remote_table_every_row)
{
    static char docs[8192];
    size_t docs_len = documented_refusals(docs, sizeof(docs));
    size_t refused = 0;

    ASSERT(docs_len != SIZE_MAX); /* run from the source tree's root */
    /* Every exported entry point but clIcdGetPlatformIDsKHR is a row. */
    ASSERT_EQ(shim_remote_n_rows + 1, shim_entry_count());
    for (size_t i = 0; i < shim_remote_n_rows; i++) {
        const struct shim_remote_row *r = &shim_remote_rows[i];
        void *fn;

        memcpy(&fn, (const char *)&shim_remote_dispatch + r->slot,
               sizeof(fn));
        if (!fn || !shim_lookup_entry(r->name))
            fprintf(stderr, "row %s: no remote entry\n", r->name);
        ASSERT(fn != NULL);
        ASSERT(shim_lookup_entry(r->name) != NULL);
        switch (r->kind) {
        case SHIM_REMOTE_IMPL:
            ASSERT(!listed(docs, docs_len, r->name));
            break;
        case SHIM_REMOTE_LOCAL:
            ASSERT(r->reason[0] != '\0');
            break;
        case SHIM_REMOTE_REFUSED:
            if (!listed(docs, docs_len, r->name))
                fprintf(stderr, "row %s: refused but not in "
                                "docs/remoting.md\n", r->name);
            ASSERT(listed(docs, docs_len, r->name));
            ASSERT(strlen(r->reason) > 10);
            refused++;
            break;
        default:
            ASSERT(!"a row with neither an implementation nor a refusal");
        }
    }
    /* And the documentation lists nothing else. */
    size_t documented = 0;
    for (size_t at = 0; at < docs_len; at += strlen(docs + at) + 1)
        documented++;
    ASSERT_EQ(documented, refused);
}

/* A refused row answers CL_INVALID_OPERATION the way its signature can:
 * result, errcode_ret, or both. */
TEST(remote_table_refusals_answer)
{
    cl_int err = CL_SUCCESS;

    ASSERT(shim_remote_dispatch.clCreatePipe(NULL, 0, 16, 16, NULL, &err) ==
           NULL);
    ASSERT_EQ(err, CL_INVALID_OPERATION);
    ASSERT(shim_remote_dispatch.clCreatePipe(NULL, 0, 16, 16, NULL, NULL) ==
           NULL);
    ASSERT_EQ(shim_remote_dispatch.clEnqueueNativeKernel(
                  NULL, NULL, NULL, 0, 0, NULL, NULL, 0, NULL, NULL),
              CL_INVALID_OPERATION);
    /* A LOCAL row reaching the backend is a bug, answered the same way. */
    ASSERT_EQ(shim_remote_dispatch.clRetainContext(NULL),
              CL_INVALID_OPERATION);
}
