/* Unit tests of the shim's own checks of OpenCL's rules for commands the
 * remote backend batches (shim/check.c), on shadow objects alone. */
#include <stdint.h>

#include "shim/check.h"
#include "shim/remote/remote.h"
#include "tests/unit/runner.h"

/* A queue's real handle on the remote backend: only its dispatch table is
 * looked at. */
static struct rc_obj remote_real = {&shim_remote_dispatch, 2, SHIM_QUEUE,
                                    false};

/* What the remote backend's load does first: its table is the one whose
 * handles are the proxy's (shim_real_on_remote). */
static void remote_loaded(void)
{
    shim_proxy_table = &shim_remote_dispatch;
    /* Its row, as libcrane's constructors register it (an archive's
     * member is linked only when named). */
    if (!shim_proxy_backend())
        shim_backend_add(&shim_remote_ops);
}

struct world {
    struct shim_context *ctx, *other_ctx;
    struct shim_queue *q;
    struct shim_mem *buf, *sub, *img, *foreign;
    struct shim_event *ev, *foreign_ev;
};

static struct shim_mem *mem(struct shim_context *c, enum shim_mem_type type,
                            size_t size)
{
    struct shim_mem *m = shim_obj_new(&shim_mem_kind, sizeof(*m), NULL);

    m->context = c;
    m->type = type;
    m->size = size;
    pthread_mutex_init(&m->dirty_lock, NULL);
    shim_obj_retain_child(&c->obj);
    return m;
}

static struct shim_event *event(struct shim_context *c)
{
    struct shim_event *e = shim_obj_new(&shim_event_kind, sizeof(*e), NULL);

    e->context = c;
    e->user = true;
    shim_obj_retain_child(&c->obj);
    return e;
}

/* A 1024-byte buffer with a sub-buffer [512, 768), a 16x8 2D image of 4
 * bytes a pixel, a queue on the remote backend, and a buffer and an event
 * of another context. */
static void world_make(struct world *w, bool remote)
{
    remote_loaded();
    w->ctx =
        shim_obj_new(&shim_context_kind, sizeof(struct shim_context), NULL);
    w->other_ctx =
        shim_obj_new(&shim_context_kind, sizeof(struct shim_context), NULL);
    w->q = shim_obj_new(&shim_queue_kind, sizeof(*w->q),
                        remote ? &remote_real : NULL);
    w->q->context = w->ctx;
    w->buf = mem(w->ctx, SHIM_BUFFER, 1024);
    w->sub = mem(w->ctx, SHIM_SUB_BUFFER, 256);
    w->sub->parent = w->buf;
    w->sub->origin = 512;
    w->img = mem(w->ctx, SHIM_IMAGE, 16 * 8 * 4);
    w->img->desc.image_type = CL_MEM_OBJECT_IMAGE2D;
    w->img->desc.image_width = 16;
    w->img->desc.image_height = 8;
    w->foreign = mem(w->other_ctx, SHIM_BUFFER, 1024);
    w->ev = event(w->ctx);
    w->foreign_ev = event(w->other_ctx);
}

/* Shadows never return to malloc (objects.c) and these stay in the store;
 * the queue forgets its fake real handle, which no backend may see. */
static void world_free(struct world *w)
{
    w->q->obj.real = NULL;
}

#define Q(w) ((cl_command_queue)(w).q)
#define M(m) ((cl_mem)(m))

/* One call of a check and the answer OpenCL wants. */
struct io_case {
    int object;                  /* 0 buf, 1 sub, 2 img, 3 foreign, 4 junk */
    size_t offset, size;
    bool no_ptr, foreign_event;
    cl_map_flags access;
    cl_int want;
};

static cl_mem pick(struct world *w, int object)
{
    static char junk[64];
    cl_mem all[] = {M(w->buf), M(w->sub), M(w->img), M(w->foreign),
                    (cl_mem)junk};
    return all[object];
}

TEST(check_buffer_io)
{
    static const struct io_case cases[] = {
        {0, 0, 1024, false, false, CL_MAP_READ, CL_SUCCESS},
        {0, 1, 1024, false, false, CL_MAP_READ, CL_INVALID_VALUE},
        {0, SIZE_MAX, 2, false, false, CL_MAP_WRITE, CL_INVALID_VALUE},
        {0, 0, 0, false, false, CL_MAP_READ, CL_INVALID_VALUE},
        {0, 0, 4, true, false, CL_MAP_READ, CL_INVALID_VALUE},
        /* A sub-buffer is judged by its own size. */
        {1, 0, 256, false, false, CL_MAP_READ, CL_SUCCESS},
        {1, 0, 257, false, false, CL_MAP_READ, CL_INVALID_VALUE},
        {2, 0, 4, false, false, CL_MAP_READ, CL_INVALID_MEM_OBJECT},
        {4, 0, 4, false, false, CL_MAP_READ, CL_INVALID_MEM_OBJECT},
        {3, 0, 4, false, false, CL_MAP_READ, CL_INVALID_CONTEXT},
        {0, 0, 4, false, true, CL_MAP_READ, CL_INVALID_CONTEXT},
    };
    struct world w;
    char host[1024];

    world_make(&w, true);
    ASSERT(shim_on_remote(Q(w)));
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct io_case *c = &cases[i];
        cl_event ev = (cl_event)(c->foreign_event ? w.foreign_ev : w.ev);
        ASSERT_EQ(shim_check_buffer_io(Q(w), pick(&w, c->object), c->offset,
                                       c->size, c->no_ptr ? NULL : host, 1,
                                       &ev, c->access),
                  c->want);
    }
    /* Host access flags still rule (the proxy's object has none). */
    w.buf->flags = CL_MEM_HOST_WRITE_ONLY;
    w.buf->obj.real = &remote_real;
    ASSERT_EQ(shim_check_buffer_io(Q(w), M(w.buf), 0, 4, host, 0, NULL,
                                   CL_MAP_READ),
              CL_INVALID_OPERATION);
    ASSERT_EQ(shim_check_buffer_io(Q(w), M(w.buf), 0, 4, host, 0, NULL,
                                   CL_MAP_WRITE),
              CL_SUCCESS);
    w.buf->obj.real = NULL;
    world_free(&w);
}

/* On the vendor the vendor judges, host access included (its objects
 * carry the flags). */
TEST(check_passthrough_leaves_it_to_the_vendor)
{
    struct world w;
    char host[8];
    static const char pattern[3] = {0};

    world_make(&w, false);
    ASSERT(!shim_on_remote(Q(w)));
    ASSERT_EQ(shim_check_buffer_io(Q(w), M(w.buf), 4096, 4, host, 0, NULL,
                                   CL_MAP_READ),
              CL_SUCCESS);
    ASSERT_EQ(shim_check_fill_buffer(Q(w), M(w.foreign), pattern, 3, 0, 3,
                                     0, NULL),
              CL_SUCCESS);
    ASSERT_EQ(shim_check_migrate(Q(w), 1, (cl_mem *)&w.foreign, 0x100, 0,
                                 NULL),
              CL_SUCCESS);
    w.buf->flags = CL_MEM_HOST_NO_ACCESS;
    ASSERT_EQ(shim_check_buffer_io(Q(w), M(w.buf), 0, 4, host, 0, NULL,
                                   CL_MAP_WRITE),
              CL_SUCCESS);
    world_free(&w);
}

TEST(check_fill_buffer)
{
    /* object, offset, size; the pattern's size in `access`. */
    static const struct io_case cases[] = {
        {0, 8, 16, false, false, 4, CL_SUCCESS},
        {0, 0, 1024, false, false, 128, CL_SUCCESS},
        {0, 0, 16, true, false, 4, CL_INVALID_VALUE},
        {0, 2, 16, false, false, 4, CL_INVALID_VALUE},
        {0, 0, 18, false, false, 4, CL_INVALID_VALUE},
        {0, 1020, 8, false, false, 4, CL_INVALID_VALUE},
        {2, 0, 4, false, false, 4, CL_INVALID_MEM_OBJECT},
        {3, 0, 4, false, false, 4, CL_INVALID_CONTEXT},
    };
    static const char pattern[256] = {0};
    struct world w;

    world_make(&w, true);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct io_case *c = &cases[i];
        ASSERT_EQ(shim_check_fill_buffer(Q(w), pick(&w, c->object),
                                         c->no_ptr ? NULL : pattern,
                                         c->access, c->offset, c->size, 0,
                                         NULL),
                  c->want);
    }
    for (size_t bad = 0; bad <= 256; bad++)
        if (bad == 0 || bad > 128 || (bad & (bad - 1)))
            ASSERT_EQ(shim_check_fill_buffer(Q(w), M(w.buf), pattern, bad, 0,
                                             256, 0, NULL),
                      CL_INVALID_VALUE);
    world_free(&w);
}

/* The copy test's table names objects of this world by address. */
static struct world cw;

TEST(check_copy_buffer)
{
    /* From the buffer to the buffer or to its sub-buffer, [512, 768) of
     * the same storage. */
    static const struct {
        size_t src_offset;
        struct shim_mem *const *dst;
        size_t dst_offset, size;
        cl_int want;
    } cases[] = {
        {0, &cw.buf, 512, 512, CL_SUCCESS},
        {0, &cw.buf, 511, 512, CL_MEM_COPY_OVERLAP},
        {0, &cw.sub, 0, 256, CL_SUCCESS},
        {600, &cw.sub, 0, 100, CL_MEM_COPY_OVERLAP},
        {0, &cw.sub, 0, 257, CL_INVALID_VALUE},
        {0, &cw.foreign, 0, 4, CL_INVALID_CONTEXT},
    };

    world_make(&cw, true);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        ASSERT_EQ(shim_check_copy_buffer(Q(cw), M(cw.buf), M(*cases[i].dst),
                                         cases[i].src_offset,
                                         cases[i].dst_offset, cases[i].size,
                                         0, NULL),
                  cases[i].want);
    world_free(&cw);
}

TEST(check_buffer_rect)
{
    /* In the 1024-byte buffer (or the 256-byte sub-buffer): rows of 32
     * bytes, slices of 128 unless said; 8 x 4 x 2 from (4, 3, 0) ends at
     * 3 * 32 + 4 + 128 + 3 * 32 + 8 = 332. */
    static const struct {
        int object;
        size_t origin[3], region[3], row, slice, host_slice;
        cl_int want;
    } cases[] = {
        {0, {4, 3, 0}, {8, 4, 2}, 32, 128, 0, CL_SUCCESS},
        {1, {4, 3, 0}, {8, 4, 2}, 64, 256, 0, CL_INVALID_VALUE},
        {0, {0, 0, 0}, {8, 0, 1}, 0, 0, 0, CL_INVALID_VALUE},
        /* A row pitch under the region's width, a slice pitch no multiple
         * of the row pitch, a host slice pitch under a slice. */
        {0, {0, 0, 0}, {8, 4, 2}, 4, 0, 0, CL_INVALID_VALUE},
        {0, {0, 0, 0}, {8, 4, 2}, 32, 129, 0, CL_INVALID_VALUE},
        {0, {0, 0, 0}, {8, 4, 2}, 32, 128, 5, CL_INVALID_VALUE},
    };
    static const size_t host_origin[3] = {0, 0, 0};
    struct world w;
    char host[1024];

    world_make(&w, true);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        ASSERT_EQ(shim_check_buffer_rect_io(
                      Q(w), pick(&w, cases[i].object), cases[i].origin,
                      host_origin, cases[i].region, cases[i].row,
                      cases[i].slice, 0, cases[i].host_slice, host, 0, NULL,
                      CL_MAP_READ),
                  cases[i].want);
    world_free(&w);
}

TEST(check_images)
{
    struct world w;
    static const float color[4];
    char host[16 * 8 * 4];
    static const size_t zero[3] = {0, 0, 0}, whole[3] = {16, 8, 1};
    static const size_t corner[3] = {15, 7, 0}, one[3] = {1, 1, 1};
    /* A 16x8 2D image: origin[2] must be 0 and region[2] 1, every region
     * value at least 1, the box inside the image. */
    static const struct {
        size_t origin[3], region[3];
        cl_int want;
    } boxes[] = {
        {{0, 0, 0}, {16, 8, 1}, CL_SUCCESS},
        {{15, 7, 0}, {1, 1, 1}, CL_SUCCESS},
        {{0, 0, 1}, {1, 1, 1}, CL_INVALID_VALUE},
        {{0, 0, 0}, {16, 8, 2}, CL_INVALID_VALUE},
        {{0, 0, 0}, {17, 1, 1}, CL_INVALID_VALUE},
        {{0, 0, 0}, {0, 8, 1}, CL_INVALID_VALUE},
        {{15, 7, 0}, {16, 8, 1}, CL_INVALID_VALUE},
        {{SIZE_MAX, 0, 0}, {2, 1, 1}, CL_INVALID_VALUE},
    };

    world_make(&w, true);
    for (size_t i = 0; i < sizeof(boxes) / sizeof(boxes[0]); i++) {
        ASSERT_EQ(shim_check_fill_image(Q(w), M(w.img), color,
                                        boxes[i].origin, boxes[i].region, 0,
                                        NULL),
                  boxes[i].want);
        ASSERT_EQ(shim_check_image_io(Q(w), M(w.img), boxes[i].origin,
                                      boxes[i].region, host, 0, NULL,
                                      CL_MAP_READ),
                  boxes[i].want);
    }
    ASSERT_EQ(shim_check_fill_image(Q(w), M(w.img), NULL, zero, one, 0,
                                    NULL),
              CL_INVALID_VALUE);
    ASSERT_EQ(shim_check_image_io(Q(w), M(w.img), corner, NULL, host, 0,
                                  NULL, CL_MAP_WRITE),
              CL_INVALID_VALUE);
    ASSERT_EQ(shim_check_fill_image(Q(w), M(w.buf), color, zero, one, 0,
                                    NULL),
              CL_INVALID_MEM_OBJECT);
    w.img->context = w.other_ctx;
    ASSERT_EQ(shim_check_image_io(Q(w), M(w.img), zero, whole, host, 0, NULL,
                                  CL_MAP_READ),
              CL_INVALID_CONTEXT);
    w.img->context = w.ctx;
    world_free(&w);
}

TEST(check_migrate)
{
    struct world w;
    cl_mem mine[2], mixed[2];

    world_make(&w, true);
    mine[0] = M(w.buf);
    mine[1] = M(w.img);
    mixed[0] = M(w.buf);
    mixed[1] = M(w.foreign);
    ASSERT_EQ(shim_check_migrate(Q(w), 2, mine,
                                 CL_MIGRATE_MEM_OBJECT_HOST |
                                     CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED,
                                 0, NULL),
              CL_SUCCESS);
    ASSERT_EQ(shim_check_migrate(Q(w), 2, mixed, 0, 0, NULL),
              CL_INVALID_CONTEXT);
    ASSERT_EQ(shim_check_migrate(Q(w), 2, mine, 4, 0, NULL),
              CL_INVALID_VALUE);
    world_free(&w);
}

/* Above every device's largest allocation: refused before it leaves. */
TEST(check_buffer_size)
{
    static struct rc_obj ctx_real = {&shim_remote_dispatch, 3, SHIM_CONTEXT,
                                     false};
    static struct rc_device small = {{&shim_remote_dispatch, 4, SHIM_DEVICE,
                                      false},
                                     CL_DEVICE_TYPE_CPU, 1024};
    static struct rc_device large = {{&shim_remote_dispatch, 5, SHIM_DEVICE,
                                      false},
                                     CL_DEVICE_TYPE_GPU, 4096};
    struct shim_device *devs[2];
    struct shim_context *c =
        shim_obj_new(&shim_context_kind, sizeof(struct shim_context), NULL);

    remote_loaded();
    for (int i = 0; i < 2; i++) {
        devs[i] = shim_obj_new(&shim_device_kind, sizeof(struct shim_device),
                               i ? (void *)&large : (void *)&small);
    }
    c->devices = devs;
    c->n_devices = 1;
    /* Passthrough: the vendor judges. */
    ASSERT_EQ(shim_check_buffer_size(c, 1 << 20), CL_SUCCESS);
    c->obj.real = &ctx_real;
    ASSERT_EQ(shim_check_buffer_size(c, 1024), CL_SUCCESS);
    ASSERT_EQ(shim_check_buffer_size(c, 1025), CL_INVALID_BUFFER_SIZE);
    /* Allowed if any device of the context can hold it. */
    c->n_devices = 2;
    ASSERT_EQ(shim_check_buffer_size(c, 4096), CL_SUCCESS);
    ASSERT_EQ(shim_check_buffer_size(c, 4097), CL_INVALID_BUFFER_SIZE);
    c->obj.real = NULL;
    c->n_devices = 0;
    c->devices = NULL;
    for (int i = 0; i < 2; i++)
        devs[i]->obj.real = NULL;
}

/* A launch: the kernel's program in the queue's context, every argument
 * set (a kernel given SVM pointers is left to the vendor). */
TEST(check_launch)
{
    struct world w;
    struct shim_arg args[2] = {{.set = true}, {.set = false}};

    world_make(&w, true);
    struct shim_program *p = shim_obj_new(&shim_program_kind, sizeof(*p), NULL);
    struct shim_kernel *k = shim_obj_new(&shim_kernel_kind, sizeof(*k), NULL);
    p->context = w.ctx;
    k->program = p;
    k->args = args;
    k->n_args = 2;
    cl_event foreign = (cl_event)w.foreign_ev;
    ASSERT_EQ(shim_check_launch(Q(w), (cl_kernel)k, 0, NULL),
              CL_INVALID_KERNEL_ARGS);
    k->uses_svm = true;
    ASSERT_EQ(shim_check_launch(Q(w), (cl_kernel)k, 0, NULL), CL_SUCCESS);
    k->uses_svm = false;
    args[1].set = true;
    ASSERT_EQ(shim_check_launch(Q(w), (cl_kernel)k, 0, NULL), CL_SUCCESS);
    ASSERT_EQ(shim_check_launch(Q(w), (cl_kernel)k, 1, &foreign),
              CL_INVALID_CONTEXT);
    ASSERT_EQ(shim_check_wait_list(Q(w), 1, &foreign), CL_INVALID_CONTEXT);
    ASSERT_EQ(shim_check_wait_list(Q(w), 0, NULL), CL_SUCCESS);
    ASSERT_EQ(shim_check_launch(Q(w), (cl_kernel)w.buf, 0, NULL),
              CL_INVALID_KERNEL);
    p->context = w.other_ctx;
    ASSERT_EQ(shim_check_launch(Q(w), (cl_kernel)k, 0, NULL),
              CL_INVALID_CONTEXT);
    k->args = NULL;
    k->n_args = 0;
    world_free(&w);
}

/* Copies with images, rectangles between buffers, maps. */
TEST(check_copies_and_maps)
{
    struct world w;
    static const size_t zero[3] = {0, 0, 0}, half[3] = {8, 8, 1};
    static const size_t right[3] = {8, 0, 0}, third[3] = {4, 0, 0};
    static const size_t rect[3] = {16, 4, 1}, far[3] = {0, 61, 0};

    world_make(&w, true);
    struct shim_mem *img2 = mem(w.ctx, SHIM_IMAGE, 16 * 8 * 4);
    img2->desc = w.img->desc;
    img2->format.image_channel_order = CL_RGBA;
    img2->format.image_channel_data_type = CL_UNSIGNED_INT8;
    w.img->format = img2->format;
    cl_command_queue q = Q(w);
    /* Between images: the same format, inside both, no overlap in one. */
    const struct {
        struct shim_mem *dst;
        const size_t *src_at, *dst_at;
        cl_int want;
    } copies[] = {
        {img2, zero, right, CL_SUCCESS},
        {w.img, zero, right, CL_SUCCESS},
        {w.img, zero, third, CL_MEM_COPY_OVERLAP},
        {img2, far, right, CL_INVALID_VALUE},
        {w.buf, zero, zero, CL_INVALID_MEM_OBJECT},
    };
    for (size_t i = 0; i < sizeof(copies) / sizeof(copies[0]); i++)
        ASSERT_EQ(shim_check_copy_image(q, M(w.img), M(copies[i].dst),
                                        copies[i].src_at, copies[i].dst_at,
                                        half, 0, NULL),
                  copies[i].want);
    img2->format.image_channel_data_type = CL_FLOAT;
    ASSERT_EQ(shim_check_copy_image(q, M(w.img), M(img2), zero, zero, half,
                                    0, NULL),
              CL_IMAGE_FORMAT_MISMATCH);
    /* 8 x 8 pixels of 4 bytes: 256 bytes from the offset. */
    ASSERT_EQ(shim_check_copy_image_buffer(q, M(w.img), M(w.buf), zero, half,
                                           768, 0, NULL),
              CL_SUCCESS);
    ASSERT_EQ(shim_check_copy_image_buffer(q, M(w.img), M(w.buf), zero, half,
                                           769, 0, NULL),
              CL_INVALID_VALUE);
    ASSERT_EQ(shim_check_copy_image_buffer(q, M(w.buf), M(w.img), zero, half,
                                           0, 0, NULL),
              CL_INVALID_MEM_OBJECT);
    /* Rows of 16 bytes: 4 rows from row 61 end at byte 1040 > 1024. */
    ASSERT_EQ(shim_check_copy_buffer_rect(q, M(w.buf), M(w.sub), zero, zero,
                                          rect, 0, 0, 0, 0, 0, NULL),
              CL_SUCCESS);
    ASSERT_EQ(shim_check_copy_buffer_rect(q, M(w.buf), M(w.buf), far, zero,
                                          rect, 0, 0, 0, 0, 0, NULL),
              CL_INVALID_VALUE);
    /* Maps: a range inside, flags OpenCL defines, INVALIDATE alone. */
    ASSERT_EQ(shim_check_map(q, M(w.buf), false, 512, 512, NULL, NULL, 0,
                             NULL, CL_MAP_WRITE_INVALIDATE_REGION),
              CL_SUCCESS);
    ASSERT_EQ(shim_check_map(q, M(w.buf), false, 512, 513, NULL, NULL, 0,
                             NULL, CL_MAP_READ),
              CL_INVALID_VALUE);
    ASSERT_EQ(shim_check_map(q, M(w.buf), false, 0, 4, NULL, NULL, 0, NULL,
                             CL_MAP_READ | CL_MAP_WRITE_INVALIDATE_REGION),
              CL_INVALID_VALUE);
    ASSERT_EQ(shim_check_map(q, M(w.buf), false, 0, 4, NULL, NULL, 0, NULL,
                             1 << 7),
              CL_INVALID_VALUE);
    ASSERT_EQ(shim_check_map(q, M(w.img), true, 0, 0, right, half, 0, NULL,
                             CL_MAP_READ),
              CL_SUCCESS);
    ASSERT_EQ(shim_check_map(q, M(w.img), true, 0, 0, third, rect, 0, NULL,
                             CL_MAP_READ),
              CL_INVALID_VALUE);
    world_free(&w);
}
