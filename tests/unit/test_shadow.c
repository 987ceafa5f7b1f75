/* Unit tests of the shim's shadow store, argument tracking and dirty rules,
 * on shadow objects alone (no OpenCL implementation involved). */
#include <string.h>

#include "shim/shim.h"
#include "tests/unit/runner.h"

static struct shim_context *fake_context(void)
{
    return shim_obj_new(&shim_context_kind, sizeof(struct shim_context),
                        NULL);
}

static struct shim_mem *fake_buffer(struct shim_context *c, size_t size)
{
    struct shim_mem *m = shim_obj_new(&shim_mem_kind, sizeof(*m), NULL);

    m->context = c;
    m->type = SHIM_BUFFER;
    m->size = size;
    atomic_init(&m->dirty_lo, SIZE_MAX);
    atomic_init(&m->dirty_hi, 0);
    pthread_mutex_init(&m->dirty_lock, NULL);
    shim_obj_retain_child(&c->obj);
    /* As after a first extraction: from now on ranges are tracked. */
    m->shadow_valid = true;
    return m;
}

static struct shim_mem *fake_sub_buffer(struct shim_mem *parent,
                                        size_t origin, size_t size)
{
    struct shim_mem *m = shim_obj_new(&shim_mem_kind, sizeof(*m), NULL);

    m->context = parent->context;
    m->type = SHIM_SUB_BUFFER;
    m->parent = parent;
    m->origin = origin;
    m->size = size;
    pthread_mutex_init(&m->dirty_lock, NULL);
    shim_obj_retain_child(&parent->context->obj);
    shim_obj_retain_child(&parent->obj);
    return m;
}

TEST(shadow_refcounts)
{
    struct shim_context *c = fake_context();
    cl_uint refs;

    ASSERT(shim_obj_is(c, SHIM_CONTEXT));
    ASSERT(!shim_obj_is(c, SHIM_MEM));
    ASSERT_EQ(clRetainContext((cl_context)c), CL_SUCCESS);
    ASSERT_EQ(clGetContextInfo((cl_context)c, CL_CONTEXT_REFERENCE_COUNT,
                               sizeof(refs), &refs, NULL),
              CL_SUCCESS);
    ASSERT_EQ(refs, 2);
    ASSERT_EQ(clReleaseContext((cl_context)c), CL_SUCCESS);
    ASSERT_EQ(clReleaseContext((cl_context)c), CL_SUCCESS);
    /* Released: every use is an error, never a crash. */
    ASSERT(!shim_obj_is(c, SHIM_CONTEXT));
    ASSERT_EQ(clReleaseContext((cl_context)c), CL_INVALID_CONTEXT);
    ASSERT_EQ(clRetainContext((cl_context)c), CL_INVALID_CONTEXT);
    ASSERT_EQ(clGetContextInfo((cl_context)c, CL_CONTEXT_REFERENCE_COUNT,
                               sizeof(refs), &refs, NULL),
              CL_INVALID_CONTEXT);
}

TEST(shadow_children_keep_parents)
{
    struct shim_context *c = fake_context();
    struct shim_mem *m = fake_buffer(c, 4096);
    size_t before = shim_store_count(SHIM_CONTEXT);

    /* The program lets go of the context; its buffer still needs it to be
     * rebuilt, so the shadow stays in the store, unusable by the program. */
    ASSERT_EQ(clReleaseContext((cl_context)c), CL_SUCCESS);
    ASSERT(!shim_obj_is(c, SHIM_CONTEXT));
    ASSERT_EQ(shim_store_count(SHIM_CONTEXT), before);
    ASSERT_EQ(clReleaseMemObject((cl_mem)m), CL_SUCCESS);
    ASSERT_EQ(shim_store_count(SHIM_CONTEXT), before - 1);
}

TEST(shadow_creation_order)
{
    struct shim_context *c = fake_context();
    struct shim_mem *a = fake_buffer(c, 16), *b = fake_buffer(c, 16);
    struct shim_obj *o;
    int seen_c = 0, seen_a = 0;

    /* Re-home rebuilds in store order: parents before children. */
    shim_store_lock();
    for (o = shim_store_first(); o; o = o->next) {
        if (o == &c->obj)
            seen_c = 1;
        if (o == &a->obj)
            seen_a = seen_c;
        if (o == &b->obj)
            ASSERT(seen_a);
    }
    shim_store_unlock();
    ASSERT(c->obj.seq < a->obj.seq && a->obj.seq < b->obj.seq);
    clReleaseMemObject((cl_mem)a);
    clReleaseMemObject((cl_mem)b);
    clReleaseContext((cl_context)c);
}

TEST(shadow_find_live)
{
    struct shim_context *c = fake_context();
    struct shim_mem *m = fake_buffer(c, 64);
    int not_a_handle = 42;

    ASSERT(shim_obj_find_live(m) == &m->obj);
    ASSERT(shim_obj_find_live(&not_a_handle) == NULL);
    ASSERT(shim_obj_find_live(c) == NULL); /* only mems and samplers */
    clReleaseMemObject((cl_mem)m);
    ASSERT(shim_obj_find_live(m) == NULL);
    clReleaseContext((cl_context)c);
}

TEST(dirty_ranges)
{
    struct shim_context *c = fake_context();
    struct shim_mem *m = fake_buffer(c, 1000);

    ASSERT(atomic_load(&m->dirty_lo) >= atomic_load(&m->dirty_hi));
    shim_mem_dirty((cl_mem)m, 100, 50);
    ASSERT_EQ(atomic_load(&m->dirty_lo), 100);
    ASSERT_EQ(atomic_load(&m->dirty_hi), 150);
    shim_mem_dirty((cl_mem)m, 120, 10); /* inside: unchanged */
    ASSERT_EQ(atomic_load(&m->dirty_lo), 100);
    ASSERT_EQ(atomic_load(&m->dirty_hi), 150);
    shim_mem_dirty((cl_mem)m, 900, 500); /* clamped to the size */
    ASSERT_EQ(atomic_load(&m->dirty_hi), 1000);
    shim_mem_dirty_map((cl_mem)m, CL_MAP_READ, 0, 10); /* reads: clean */
    ASSERT_EQ(atomic_load(&m->dirty_lo), 100);
    shim_mem_dirty_map((cl_mem)m, CL_MAP_WRITE, 0, 10);
    ASSERT_EQ(atomic_load(&m->dirty_lo), 0);
    clReleaseMemObject((cl_mem)m);
    clReleaseContext((cl_context)c);
}

TEST(dirty_sub_buffer_marks_parent)
{
    struct shim_context *c = fake_context();
    struct shim_mem *p = fake_buffer(c, 4096);
    struct shim_mem *s = fake_sub_buffer(p, 1024, 512);

    shim_mem_dirty((cl_mem)s, 0, 100);
    ASSERT_EQ(atomic_load(&p->dirty_lo), 1024);
    ASSERT_EQ(atomic_load(&p->dirty_hi), 1124);
    shim_mem_dirty_all((cl_mem)s);
    ASSERT_EQ(atomic_load(&p->dirty_lo), 1024);
    ASSERT_EQ(atomic_load(&p->dirty_hi), 1536);
    clReleaseMemObject((cl_mem)s);
    clReleaseMemObject((cl_mem)p);
    clReleaseContext((cl_context)c);
}

TEST(dirty_rect)
{
    struct shim_context *c = fake_context();
    struct shim_mem *m = fake_buffer(c, 100 * 100);
    size_t origin[3] = {10, 20, 0}, region[3] = {5, 3, 1};

    shim_mem_dirty_rect((cl_mem)m, origin, region, 100, 0);
    ASSERT_EQ(atomic_load(&m->dirty_lo), 20 * 100 + 10);
    ASSERT_EQ(atomic_load(&m->dirty_hi), 22 * 100 + 10 + 5);
    clReleaseMemObject((cl_mem)m);
    clReleaseContext((cl_context)c);
}

TEST(args_only_writable_buffers_get_dirty)
{
    struct shim_context *c = fake_context();
    struct shim_mem *in = fake_buffer(c, 256), *out = fake_buffer(c, 256);
    struct shim_arg args[3];
    struct shim_kernel k = {.n_args = 3, .args = args};

    memset(args, 0, sizeof(args));
    args[0] = (struct shim_arg){.cls = SHIM_ARG_MEM_RO, .set = true,
                                .obj = &in->obj, .writes = false};
    args[1] = (struct shim_arg){.cls = SHIM_ARG_MEM_RW, .set = true,
                                .obj = &out->obj, .writes = true};
    args[2] = (struct shim_arg){.cls = SHIM_ARG_VALUE, .set = true};
    shim_kernel_dirty_args(&k);
    ASSERT(atomic_load(&in->dirty_lo) >= atomic_load(&in->dirty_hi));
    ASSERT_EQ(atomic_load(&out->dirty_lo), 0);
    ASSERT_EQ(atomic_load(&out->dirty_hi), 256);
    clReleaseMemObject((cl_mem)in);
    clReleaseMemObject((cl_mem)out);
    clReleaseContext((cl_context)c);
}

TEST(args_bad_handles_are_errors)
{
    /* No vendor needed: validation happens before any vendor call. */
    ASSERT_EQ(clSetKernelArg(NULL, 0, 4, NULL), CL_INVALID_KERNEL);
    ASSERT_EQ(clReleaseMemObject(NULL), CL_INVALID_MEM_OBJECT);
    ASSERT_EQ(clEnqueueNDRangeKernel(NULL, NULL, 1, NULL, NULL, NULL, 0,
                                     NULL, NULL),
              CL_INVALID_COMMAND_QUEUE);
    ASSERT_EQ(clFinish(NULL), CL_INVALID_COMMAND_QUEUE);
    ASSERT_EQ(clGetMemObjectInfo(NULL, CL_MEM_SIZE, 0, NULL, NULL),
              CL_INVALID_MEM_OBJECT);
    ASSERT_EQ(clWaitForEvents(0, NULL), CL_INVALID_VALUE);
}

TEST(entry_table_complete)
{
    /* Every row of cl_api.def is reachable by name and in the dispatch
     * table that ICD loaders use. */
    ASSERT(shim_lookup_entry("clEnqueueNDRangeKernel") ==
           (void *)shim_icd_dispatch.clEnqueueNDRangeKernel);
    ASSERT(shim_lookup_entry("clCreateBufferWithProperties") != NULL);
    ASSERT(shim_lookup_entry("clIcdGetPlatformIDsKHR") != NULL);
    ASSERT(shim_lookup_entry("clNoSuchFunction") == NULL);
    ASSERT_EQ(shim_entry_count(), 115);
}
