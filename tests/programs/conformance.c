/* Conformance test: the info queries, refusals and corner cases where the
 * Khronos CTS saw crane answer otherwise than the vendor (issue 21). */
#define TEST_NAME "conformance"
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include "clcheck.h"
#include "conform.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

/* Rounds of everything (re-homes every N calls land at many points). */
#define ROUNDS 6

static const char *kernel_source =
    "__kernel __attribute__((reqd_work_group_size(4, 2, 1)))\n"
    "void fixed(__global int *out)\n"
    "{\n"
    "    out[get_global_id(1) * get_global_size(0) + get_global_id(0)] =\n"
    "        (int)get_local_size(0) * 10 + (int)get_local_size(1);\n"
    "}\n"
    "__kernel __attribute__((work_group_size_hint(8, 1, 1)))\n"
    "__attribute__((vec_type_hint(float4)))\n"
    "void hinted(__global int *out, int v, __local int *scratch)\n"
    "{\n"
    "    scratch[get_local_id(0)] = v;\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    out[get_global_id(0)] = scratch[get_local_id(0)] + 1;\n"
    "}\n"
    "__kernel void a_kernel_with_a_rather_long_name_for_kernel_name_size(\n"
    "    __global int *out)\n"
    "{\n"
    "    out[get_global_id(0)] = 7;\n"
    "}\n";

struct env {
    cl_platform_id platform;
    cl_device_id device;
    cl_context ctx;
    cl_command_queue q;
    int version;
};

/* Bytes a zero-sized read or write names. */
static char s_buf[64];

#include "conform_api.h"
#include "conform_kernels.h"

/* --- samplers ------------------------------------------------------------ */

static void samplers(struct env *e)
{
    const cl_sampler_properties props[] = {
        CL_SAMPLER_NORMALIZED_COORDS, CL_TRUE,
        CL_SAMPLER_ADDRESSING_MODE, CL_ADDRESS_REPEAT,
        CL_SAMPLER_FILTER_MODE, CL_FILTER_LINEAR, 0};
    cl_sampler_properties got[16];
    cl_sampler s[3];
    cl_int err;
    size_t size;

    s[0] = clCreateSampler(e->ctx, CL_FALSE, CL_ADDRESS_CLAMP_TO_EDGE,
                           CL_FILTER_NEAREST, &err);
    CHECK(err);
    /* PoCL 3.1 refuses a NULL list (CL_INVALID_VALUE), as crane must. */
    s[1] = clCreateSamplerWithProperties(e->ctx, NULL, &err);
    rec("sampler1.create", "err %d", (int)err);
    s[2] = clCreateSamplerWithProperties(e->ctx, props, &err);
    CHECK(err);
    for (int i = 0; i < 3; i++) {
        if (!s[i])
            continue;
        char name[64];
        cl_uint u = 0;
        cl_context c = NULL;

        /* The specification: 0 bytes for clCreateSampler and a NULL list,
         * the list as given otherwise (with its final 0). */
        size = 99;
        err = clGetSamplerInfo(s[i], CL_SAMPLER_PROPERTIES, sizeof(got), got,
                               &size);
        snprintf(name, sizeof(name), "sampler%d.properties", i);
        rec_info(name, err, size, NULL);
        if (err == CL_SUCCESS && i < 2)
            EXPECT(size == 0, "sampler %d: CL_SAMPLER_PROPERTIES is %zu "
                   "bytes, expected 0", i, size);
        if (err == CL_SUCCESS && i == 2) {
            EXPECT(size == sizeof(props), "sampler 2: %zu bytes, expected "
                   "%zu", size, sizeof(props));
            expect_bytes(got, props, sizeof(props), "CL_SAMPLER_PROPERTIES");
        }
        const cl_sampler_info params[] = {CL_SAMPLER_NORMALIZED_COORDS,
                                          CL_SAMPLER_ADDRESSING_MODE,
                                          CL_SAMPLER_FILTER_MODE,
                                          CL_SAMPLER_REFERENCE_COUNT};
        for (int p = 0; p < 4; p++) {
            u = 0;
            err = clGetSamplerInfo(s[i], params[p], sizeof(u), &u, &size);
            snprintf(name, sizeof(name), "sampler%d.0x%x", i,
                     (unsigned)params[p]);
            rec_info(name, err, size, &u);
        }
        CHECK(clGetSamplerInfo(s[i], CL_SAMPLER_CONTEXT, sizeof(c), &c,
                               NULL));
        EXPECT(c == e->ctx, "CL_SAMPLER_CONTEXT is not the program's");
        snprintf(name, sizeof(name), "sampler%d.bad-param", i);
        REC_ERR(name, clGetSamplerInfo(s[i], 0x7fffffff, sizeof(u), &u,
                                       NULL));
        snprintf(name, sizeof(name), "sampler%d.small", i);
        REC_ERR(name, clGetSamplerInfo(s[i], CL_SAMPLER_FILTER_MODE, 1, &u,
                                       NULL));
    }
    for (int i = 0; i < 3; i++)
        if (s[i])
            CHECK(clReleaseSampler(s[i]));
}

/* --- buffers ------------------------------------------------------------- */

/* Records every clGetMemObjectInfo answer that is no handle (but the
 * reference count: PoCL counts a sub-buffer's hold on its parent, the
 * shim the program's own references, tests/programs/introspect). */
static void mem_info(const char *what, cl_mem m)
{
    const cl_mem_info params[] = {
        CL_MEM_TYPE, CL_MEM_FLAGS, CL_MEM_SIZE, CL_MEM_MAP_COUNT,
        CL_MEM_OFFSET, CL_MEM_USES_SVM_POINTER};
    unsigned char v[64];
    char name[96];
    size_t size;
    cl_int err;

    for (size_t p = 0; p < sizeof(params) / sizeof(params[0]); p++) {
        memset(v, 0, sizeof(v));
        size = 0;
        err = clGetMemObjectInfo(m, params[p], sizeof(v), v, &size);
        snprintf(name, sizeof(name), "%s.0x%x", what, (unsigned)params[p]);
        rec_info(name, err, size, v);
    }
    size = 99;
    err = clGetMemObjectInfo(m, CL_MEM_PROPERTIES, sizeof(v), v, &size);
    snprintf(name, sizeof(name), "%s.properties", what);
    rec_info(name, err, size, NULL);
    snprintf(name, sizeof(name), "%s.bad-param", what);
    REC_ERR(name, clGetMemObjectInfo(m, 0x7fffffff, sizeof(v), v, NULL));
    snprintf(name, sizeof(name), "%s.small", what);
    REC_ERR(name, clGetMemObjectInfo(m, CL_MEM_SIZE, 1, v, NULL));
}

/* A handle-valued answer checked against the program's own handle. */
static void expect_ptr(cl_mem m, cl_mem_info param, const void *want,
                       const char *what)
{
    void *got = (void *)1;
    size_t size = 0;

    CHECK(clGetMemObjectInfo(m, param, sizeof(got), &got, &size));
    EXPECT(size == sizeof(got), "%s: %zu bytes", what, size);
    EXPECT(got == want, "%s is %p, expected %p", what, got, want);
}

static void buffers(struct env *e)
{
    static cl_int host[1024];
    cl_buffer_region region = {256, 512};
    cl_mem b[5];
    cl_int err;

    b[0] = clCreateBuffer(e->ctx, CL_MEM_READ_WRITE, sizeof(host), NULL,
                          &err);
    CHECK(err);
    b[1] = clCreateBuffer(e->ctx, CL_MEM_USE_HOST_PTR | CL_MEM_READ_ONLY,
                          sizeof(host), host, &err);
    CHECK(err);
    b[2] = clCreateBuffer(e->ctx, CL_MEM_ALLOC_HOST_PTR | CL_MEM_HOST_READ_ONLY,
                          sizeof(host), NULL, &err);
    CHECK(err);
    b[3] = clCreateSubBuffer(b[1], 0, CL_BUFFER_CREATE_TYPE_REGION, &region,
                             &err);
    CHECK(err);
    b[4] = clCreateBuffer(e->ctx, CL_MEM_COPY_HOST_PTR | CL_MEM_WRITE_ONLY,
                          sizeof(host), host, &err);
    CHECK(err);
    const char *names[] = {"buffer.plain", "buffer.use-host", "buffer.alloc",
                           "buffer.sub", "buffer.copy"};
    for (int i = 0; i < 5; i++)
        mem_info(names[i], b[i]);
    expect_ptr(b[0], CL_MEM_HOST_PTR, NULL, "plain CL_MEM_HOST_PTR");
    expect_ptr(b[1], CL_MEM_HOST_PTR, host, "USE_HOST_PTR CL_MEM_HOST_PTR");
    expect_ptr(b[2], CL_MEM_HOST_PTR, NULL, "ALLOC_HOST_PTR CL_MEM_HOST_PTR");
    expect_ptr(b[3], CL_MEM_HOST_PTR, (char *)host + region.origin,
               "sub-buffer CL_MEM_HOST_PTR");
    expect_ptr(b[4], CL_MEM_HOST_PTR, NULL, "COPY_HOST_PTR CL_MEM_HOST_PTR");
    expect_ptr(b[0], CL_MEM_ASSOCIATED_MEMOBJECT, NULL, "plain parent");
    expect_ptr(b[3], CL_MEM_ASSOCIATED_MEMOBJECT, b[1], "sub-buffer parent");
    for (int i = 4; i >= 0; i--)
        CHECK(clReleaseMemObject(b[i]));
}

/* --- images -------------------------------------------------------------- */

static void image_info(const char *what, cl_mem img)
{
    const cl_image_info params[] = {
        CL_IMAGE_ELEMENT_SIZE, CL_IMAGE_ROW_PITCH, CL_IMAGE_SLICE_PITCH,
        CL_IMAGE_WIDTH, CL_IMAGE_HEIGHT, CL_IMAGE_DEPTH,
        CL_IMAGE_ARRAY_SIZE, CL_IMAGE_NUM_MIP_LEVELS, CL_IMAGE_NUM_SAMPLES};
    unsigned char v[64];
    char name[96];
    size_t size;
    cl_int err;
    cl_image_format fmt;
    cl_mem buf = (cl_mem)1;

    for (size_t p = 0; p < sizeof(params) / sizeof(params[0]); p++) {
        memset(v, 0, sizeof(v));
        size = 0;
        err = clGetImageInfo(img, params[p], sizeof(v), v, &size);
        snprintf(name, sizeof(name), "%s.0x%x", what, (unsigned)params[p]);
        rec_info(name, err, size, v);
    }
    err = clGetImageInfo(img, CL_IMAGE_FORMAT, sizeof(fmt), &fmt, &size);
    snprintf(name, sizeof(name), "%s.format", what);
    rec(name, "err %d size %zu order 0x%x type 0x%x", (int)err, size,
        err ? 0 : (unsigned)fmt.image_channel_order,
        err ? 0 : (unsigned)fmt.image_channel_data_type);
    CHECK(clGetImageInfo(img, CL_IMAGE_BUFFER, sizeof(buf), &buf, &size));
    EXPECT(buf == NULL && size == sizeof(buf), "%s: CL_IMAGE_BUFFER %p",
           what, (void *)buf);
    snprintf(name, sizeof(name), "%s.bad-param", what);
    REC_ERR(name, clGetImageInfo(img, 0x7fffffff, sizeof(v), v, NULL));
    snprintf(name, sizeof(name), "%s.small", what);
    REC_ERR(name, clGetImageInfo(img, CL_IMAGE_WIDTH, 1, v, NULL));
    mem_info(what, img);
}

/* Reads, writes and maps of an image with host access flags: refused
 * (CL_INVALID_OPERATION) where the flags forbid them, done elsewhere. */
static void host_flags_image(struct env *e, const char *what, cl_mem img,
                             cl_mem_flags flags, const cl_image_desc *d)
{
    static unsigned char data[64 * 32 * 4 * 4 * 2];
    size_t origin[3] = {0, 0, 0};
    size_t region[3] = {d->image_width, d->image_height ? d->image_height : 1,
                        d->image_depth ? d->image_depth : 1};
    char name[96];
    cl_int err, want_r, want_w;
    size_t pitch, slice;
    void *p;

    if (d->image_type == CL_MEM_OBJECT_IMAGE1D_ARRAY)
        region[1] = d->image_array_size;
    if (d->image_type == CL_MEM_OBJECT_IMAGE2D_ARRAY)
        region[2] = d->image_array_size;
    want_r = flags & (CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_NO_ACCESS)
                 ? CL_INVALID_OPERATION : CL_SUCCESS;
    want_w = flags & (CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS)
                 ? CL_INVALID_OPERATION : CL_SUCCESS;
    err = clEnqueueReadImage(e->q, img, CL_TRUE, origin, region, 0, 0, data,
                             0, NULL, NULL);
    snprintf(name, sizeof(name), "%s.read", what);
    rec(name, "err %d", (int)err);
    EXPECT(err == want_r, "%s: read %d, expected %d", what, err, want_r);
    err = clEnqueueWriteImage(e->q, img, CL_TRUE, origin, region, 0, 0, data,
                              0, NULL, NULL);
    snprintf(name, sizeof(name), "%s.write", what);
    rec(name, "err %d", (int)err);
    EXPECT(err == want_w, "%s: write %d, expected %d", what, err, want_w);
    p = clEnqueueMapImage(e->q, img, CL_TRUE, CL_MAP_READ, origin, region,
                          &pitch, &slice, 0, NULL, NULL, &err);
    snprintf(name, sizeof(name), "%s.map-read", what);
    rec(name, "err %d", (int)err);
    EXPECT(err == want_r, "%s: map for reading %d, expected %d", what, err,
           want_r);
    if (p) {
        CHECK(clEnqueueUnmapMemObject(e->q, img, p, 0, NULL, NULL));
        CHECK(clFinish(e->q));
    }
    p = clEnqueueMapImage(e->q, img, CL_TRUE, CL_MAP_WRITE, origin, region,
                          &pitch, &slice, 0, NULL, NULL, &err);
    snprintf(name, sizeof(name), "%s.map-write", what);
    rec(name, "err %d", (int)err);
    EXPECT(err == want_w, "%s: map for writing %d, expected %d", what, err,
           want_w);
    if (p) {
        CHECK(clEnqueueUnmapMemObject(e->q, img, p, 0, NULL, NULL));
        CHECK(clFinish(e->q));
    }
}

static void images(struct env *e)
{
    static unsigned char host[64 * 32 * 4 * 4 * 2];
    const cl_image_format fmt = {CL_RGBA, CL_UNSIGNED_INT8};
    const struct {
        const char *name;
        cl_mem_object_type type;
        size_t w, h, d, a;
        cl_mem_flags flags;
    } shapes[] = {
        {"image.1d", CL_MEM_OBJECT_IMAGE1D, 64, 0, 0, 0, CL_MEM_READ_WRITE},
        {"image.1d-array", CL_MEM_OBJECT_IMAGE1D_ARRAY, 64, 0, 0, 5,
         CL_MEM_READ_ONLY | CL_MEM_HOST_READ_ONLY},
        {"image.2d", CL_MEM_OBJECT_IMAGE2D, 64, 32, 0, 0,
         CL_MEM_USE_HOST_PTR},
        {"image.2d-array", CL_MEM_OBJECT_IMAGE2D_ARRAY, 32, 16, 0, 3,
         CL_MEM_WRITE_ONLY | CL_MEM_HOST_WRITE_ONLY},
        {"image.3d", CL_MEM_OBJECT_IMAGE3D, 16, 8, 4, 0,
         CL_MEM_COPY_HOST_PTR},
    };
    cl_bool has = CL_FALSE;

    CHECK(clGetDeviceInfo(e->device, CL_DEVICE_IMAGE_SUPPORT, sizeof(has),
                          &has, NULL));
    rec("device.image-support", "%u", (unsigned)has);
    if (!has)
        return;
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
        cl_image_desc d = {.image_type = shapes[i].type,
                           .image_width = shapes[i].w,
                           .image_height = shapes[i].h,
                           .image_depth = shapes[i].d,
                           .image_array_size = shapes[i].a};
        bool hp = shapes[i].flags & (CL_MEM_USE_HOST_PTR |
                                     CL_MEM_COPY_HOST_PTR);
        cl_int err;
        cl_mem img;

        if (shapes[i].flags & CL_MEM_USE_HOST_PTR)
            d.image_row_pitch = shapes[i].w * 4 + 64;
        img = clCreateImage(e->ctx, shapes[i].flags, &fmt, &d,
                            hp ? host : NULL, &err);
        CHECK(err);
        image_info(shapes[i].name, img);
        expect_ptr(img, CL_MEM_HOST_PTR,
                   shapes[i].flags & CL_MEM_USE_HOST_PTR ? host : NULL,
                   "an image's CL_MEM_HOST_PTR");
        host_flags_image(e, shapes[i].name, img, shapes[i].flags, &d);
        CHECK(clReleaseMemObject(img));
    }
}

int main(int argc, char **argv)
{
    struct env e;
    cl_int err;

    bool dump = argc > 1 && strcmp(argv[1], "--dump") == 0;

    conform_no_native = argc > 2 && strcmp(argv[2], "--no-native") == 0;

    setvbuf(stdout, NULL, _IOLBF, 0);

    pick_device(&e.platform, &e.device);
    e.version = device_version(e.device);
    e.ctx = clCreateContext(NULL, 1, &e.device, NULL, NULL, &err);
    CHECK(err);
    e.q = clCreateCommandQueueWithProperties(e.ctx, e.device, NULL, &err);
    CHECK(err);
    for (int r = 0; r < ROUNDS; r++) {
        conform_dump = dump && r == 0;
        samplers(&e);
        buffers(&e);
        images(&e);
        kernels(&e);
        programs(&e);
        negatives(&e);
        enqueues(&e);
    }
    CHECK(clReleaseCommandQueue(e.q));
    CHECK(clReleaseContext(e.ctx));
    pass();
}
