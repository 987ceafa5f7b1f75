/* Host access flags (CL_MEM_HOST_*) and sub-buffer flags as OpenCL defines
 * them: the errors, the reported flags, and buffers and images the host may
 * not read or write keeping their bytes while the device works on them
 * (a switch moves them through the device): a no-access sub-buffer changed
 * by kernels, a no-access image and a 1D image over a no-access buffer, a
 * host-write-only buffer and image mapped for writing in part. */
#define TEST_NAME "hostaccess"
#include "clcheck.h"

#include <stdbool.h>

#define N 4096
#define ROUNDS 40

static const char *source =
    "__kernel void bump(__global uint *a, uint k) {\n"
    "    size_t i = get_global_id(0);\n"
    "    a[i] = a[i] * 3u + k;\n"
    "}\n";

static const char *source_1d =
    "__kernel void from_image(__read_only image1d_buffer_t im,\n"
    "                         __global uint4 *out) {\n"
    "    int i = get_global_id(0);\n"
    "    out[i] = read_imageui(im, i);\n"
    "}\n";

static cl_mem make(cl_context c, cl_mem_flags flags, void *host)
{
    cl_int err;
    cl_mem m = clCreateBuffer(c, flags, N * sizeof(cl_uint), host, &err);

    if (err != CL_SUCCESS)
        fail("clCreateBuffer(flags %#llx) returned %d",
             (unsigned long long)flags, (int)err);
    return m;
}

static cl_mem_flags flags_of(cl_mem m)
{
    cl_mem_flags f = 0;

    CHECK(clGetMemObjectInfo(m, CL_MEM_FLAGS, sizeof(f), &f, NULL));
    return f;
}

/* Every combination of two or three host access flags is invalid. */
static void invalid_combinations(cl_context c)
{
    static const cl_mem_flags bad[] = {
        CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_READ_ONLY,
        CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_NO_ACCESS,
        CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS,
        CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_READ_ONLY |
            CL_MEM_HOST_NO_ACCESS,
    };
    cl_int err;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cl_mem m = clCreateBuffer(c, bad[i] | CL_MEM_READ_WRITE, 64, NULL,
                                  &err);
        EXPECT(!m && err == CL_INVALID_VALUE,
               "flags %#llx gave %d", (unsigned long long)bad[i], (int)err);
    }
}

/* Reads, writes and maps the flags forbid are refused; the others work. */
static void refusals(cl_command_queue q, cl_mem wo, cl_mem ro, cl_mem na)
{
    static cl_uint tmp[N];
    cl_int err;
    void *p;

    CHECK_ERR(clEnqueueReadBuffer(q, wo, CL_TRUE, 0, 64, tmp, 0, NULL, NULL),
              CL_INVALID_OPERATION);
    CHECK_ERR(clEnqueueReadBuffer(q, na, CL_TRUE, 0, 64, tmp, 0, NULL, NULL),
              CL_INVALID_OPERATION);
    CHECK_ERR(clEnqueueWriteBuffer(q, ro, CL_TRUE, 0, 64, tmp, 0, NULL, NULL),
              CL_INVALID_OPERATION);
    CHECK_ERR(clEnqueueWriteBuffer(q, na, CL_TRUE, 0, 64, tmp, 0, NULL, NULL),
              CL_INVALID_OPERATION);
    p = clEnqueueMapBuffer(q, wo, CL_TRUE, CL_MAP_READ, 0, 64, 0, NULL, NULL,
                           &err);
    EXPECT(!p && err == CL_INVALID_OPERATION, "map for reading gave %d",
           (int)err);
    p = clEnqueueMapBuffer(q, ro, CL_TRUE, CL_MAP_WRITE, 0, 64, 0, NULL, NULL,
                           &err);
    EXPECT(!p && err == CL_INVALID_OPERATION, "map for writing gave %d",
           (int)err);
    p = clEnqueueMapBuffer(q, na, CL_TRUE, CL_MAP_WRITE_INVALIDATE_REGION, 0,
                           64, 0, NULL, NULL, &err);
    EXPECT(!p && err == CL_INVALID_OPERATION, "map to invalidate gave %d",
           (int)err);
}

/* Sub-buffers: the host pointer and host access rules of OpenCL 1.2. */
static void sub_buffers(cl_context c, cl_command_queue q, cl_uint *host)
{
    cl_buffer_region r = {1024, 1024};
    cl_mem parent = make(c, CL_MEM_USE_HOST_PTR | CL_MEM_READ_WRITE, host);
    cl_mem na = make(c, CL_MEM_HOST_NO_ACCESS, NULL);
    cl_mem sub;
    cl_int err;
    void *p = NULL;
    static cl_uint tmp[256];

    sub = clCreateSubBuffer(parent, 0, CL_BUFFER_CREATE_TYPE_REGION, &r,
                            &err);
    CHECK(err);
    CHECK(clGetMemObjectInfo(sub, CL_MEM_HOST_PTR, sizeof(p), &p, NULL));
    EXPECT(p == (char *)host + r.origin, "CL_MEM_HOST_PTR %p, host %p", p,
           (void *)host);
    EXPECT(flags_of(sub) & CL_MEM_USE_HOST_PTR,
           "sub-buffer flags %#llx lack the parent's USE_HOST_PTR",
           (unsigned long long)flags_of(sub));
    CHECK(clReleaseMemObject(sub));
    sub = clCreateSubBuffer(parent, CL_MEM_USE_HOST_PTR,
                            CL_BUFFER_CREATE_TYPE_REGION, &r, &err);
    EXPECT(!sub && err == CL_INVALID_VALUE,
           "a sub-buffer with CL_MEM_USE_HOST_PTR gave %d", (int)err);
    sub = clCreateSubBuffer(na, CL_MEM_HOST_READ_ONLY,
                            CL_BUFFER_CREATE_TYPE_REGION, &r, &err);
    EXPECT(!sub && err == CL_INVALID_VALUE,
           "a host-readable sub-buffer of a no-access one gave %d", (int)err);
    sub = clCreateSubBuffer(na, 0, CL_BUFFER_CREATE_TYPE_REGION, &r, &err);
    CHECK(err);
    EXPECT(flags_of(sub) & CL_MEM_HOST_NO_ACCESS,
           "sub-buffer flags %#llx lack the parent's HOST_NO_ACCESS",
           (unsigned long long)flags_of(sub));
    CHECK_ERR(clEnqueueReadBuffer(q, sub, CL_TRUE, 0, 64, tmp, 0, NULL, NULL),
              CL_INVALID_OPERATION);
    CHECK(clReleaseMemObject(sub));
    CHECK(clReleaseMemObject(na));
    CHECK(clReleaseMemObject(parent));
}

static const cl_image_format rgba32 = {CL_RGBA, CL_UNSIGNED_INT32};

static bool image_format_ok(cl_context c, cl_mem_object_type type)
{
    cl_image_format f[256];
    cl_uint n = 0;

    if (clGetSupportedImageFormats(c, CL_MEM_READ_WRITE, type, 256, f, &n) !=
        CL_SUCCESS)
        return false;
    for (cl_uint i = 0; i < n && i < 256; i++)
        if (f[i].image_channel_order == rgba32.image_channel_order &&
            f[i].image_channel_data_type == rgba32.image_channel_data_type)
            return true;
    return false;
}

/* Reads M (a buffer, or an image of N / 4 RGBA pixels in rows of ROW) back
 * through the plain buffer PLAIN and compares it with WANT. */
static void check_through(cl_command_queue q, cl_mem m, bool image,
                          size_t row, cl_mem plain, const cl_uint *want,
                          const char *what)
{
    static cl_uint got[N];
    size_t origin[3] = {0, 0, 0};
    size_t region[3] = {row, row ? N / 4 / row : 0, 1};

    if (image)
        CHECK(clEnqueueCopyImageToBuffer(q, m, plain, origin, region, 0, 0,
                                         NULL, NULL));
    else
        CHECK(clEnqueueCopyBuffer(q, m, plain, 0, 0, sizeof(got), 0, NULL,
                                  NULL));
    CHECK(clEnqueueReadBuffer(q, plain, CL_TRUE, 0, sizeof(got), got, 0, NULL,
                              NULL));
    expect_uints(got, want, N, what);
}

int main(void)
{
    cl_platform_id platform;
    cl_device_id device;
    cl_int err;
    static cl_uint init[N], want[N], got[N], host[N];

    pick_device(&platform, &device);
    cl_context c = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    CHECK(err);
    cl_command_queue q = clCreateCommandQueueWithProperties(c, device, NULL,
                                                            &err);
    CHECK(err);
    cl_program prog = build_source(c, device, source, "");
    cl_kernel k = make_kernel(prog, "bump");

    for (cl_uint i = 0; i < N; i++)
        init[i] = want[i] = i * 2654435761u;
    invalid_combinations(c);

    /* The device alone changes these; the host sees them only through a
     * plain buffer they are copied to. */
    cl_mem na = make(c, CL_MEM_HOST_NO_ACCESS | CL_MEM_COPY_HOST_PTR, init);
    cl_mem wo = make(c, CL_MEM_HOST_WRITE_ONLY | CL_MEM_READ_WRITE, NULL);
    cl_mem ro = make(c, CL_MEM_HOST_READ_ONLY | CL_MEM_COPY_HOST_PTR, init);
    cl_mem plain = make(c, CL_MEM_READ_WRITE, NULL);
    EXPECT((flags_of(na) & ~(cl_mem_flags)CL_MEM_READ_WRITE) ==
               (CL_MEM_HOST_NO_ACCESS | CL_MEM_COPY_HOST_PTR),
           "CL_MEM_FLAGS %#llx", (unsigned long long)flags_of(na));
    EXPECT(flags_of(wo) == (CL_MEM_HOST_WRITE_ONLY | CL_MEM_READ_WRITE),
           "CL_MEM_FLAGS %#llx", (unsigned long long)flags_of(wo));
    refusals(q, wo, ro, na);
    sub_buffers(c, q, host);

    CHECK(clEnqueueWriteBuffer(q, wo, CL_TRUE, 0, sizeof(init), init, 0, NULL,
                               NULL));

    /* A no-access buffer whose second half, a sub-buffer, kernels change;
     * a no-access image that gets the no-access buffer's bytes each round;
     * a 1D image over the first buffer, where the device offers one. */
    static cl_uint nb_want[N], img_want[N], wo_want[N], wimg_want[N];
    cl_image_desc d2 = {.image_type = CL_MEM_OBJECT_IMAGE2D,
                        .image_width = 32, .image_height = N / 4 / 32};
    cl_image_desc d1 = {.image_type = CL_MEM_OBJECT_IMAGE1D_BUFFER,
                        .image_width = N / 4};
    cl_bool images = CL_FALSE;
    cl_mem nb = make(c, CL_MEM_HOST_NO_ACCESS | CL_MEM_COPY_HOST_PTR, init);
    cl_buffer_region half = {N / 2 * sizeof(cl_uint), N / 2 * sizeof(cl_uint)};
    cl_mem nbs = clCreateSubBuffer(nb, 0, CL_BUFFER_CREATE_TYPE_REGION, &half,
                                   &err);
    CHECK(err);
    cl_mem img = NULL, img1d = NULL, wimg = NULL;
    cl_program prog1d = NULL;
    cl_kernel k1d = NULL;
    memcpy(nb_want, init, sizeof(nb_want));
    memcpy(wo_want, init, sizeof(wo_want));
    memcpy(wimg_want, init, sizeof(wimg_want));
    memcpy(img_want, init, sizeof(img_want));
    CHECK(clGetDeviceInfo(device, CL_DEVICE_IMAGE_SUPPORT, sizeof(images),
                          &images, NULL));
    if (images && image_format_ok(c, CL_MEM_OBJECT_IMAGE2D)) {
        img = clCreateImage(c, CL_MEM_HOST_NO_ACCESS | CL_MEM_COPY_HOST_PTR,
                            &rgba32, &d2, init, &err);
        CHECK(err);
        wimg = clCreateImage(c, CL_MEM_HOST_WRITE_ONLY | CL_MEM_COPY_HOST_PTR,
                             &rgba32, &d2, init, &err);
        CHECK(err);
    } else {
        fprintf(stderr, "note: no RGBA/UNSIGNED_INT32 2D images, the image "
                        "part is left out\n");
    }
    if (images && image_format_ok(c, CL_MEM_OBJECT_IMAGE1D_BUFFER)) {
        d1.buffer = nb;
        img1d = clCreateImage(c, 0, &rgba32, &d1, NULL, &err);
        CHECK(err);
        prog1d = build_source(c, device, source_1d, "");
        k1d = make_kernel(prog1d, "from_image");
        EXPECT(flags_of(img1d) & CL_MEM_HOST_NO_ACCESS,
               "image flags %#llx lack its buffer's HOST_NO_ACCESS",
               (unsigned long long)flags_of(img1d));
    }

    size_t gsize = N, hsize = N / 2;
    for (cl_uint round = 0; round < ROUNDS; round++) {
        /* What the image got last round, before it gets more. */
        if (img) {
            check_through(q, img, true, 32, plain, img_want,
                          "no-access image");
            size_t origin[3] = {0, 0, 0}, region[3] = {32, N / 4 / 32, 1};
            CHECK(clEnqueueCopyBufferToImage(q, nb, img, 0, origin, region, 0,
                                             NULL, NULL));
            memcpy(img_want, nb_want, sizeof(img_want));
        }
        CHECK(clSetKernelArg(k, 0, sizeof(cl_mem), &nbs));
        CHECK(clSetKernelArg(k, 1, sizeof(cl_uint), &round));
        CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &hsize, NULL, 0, NULL,
                                     NULL));
        for (cl_uint i = N / 2; i < N; i++)
            nb_want[i] = nb_want[i] * 3u + round;
        check_through(q, nb, false, 0, plain, nb_want,
                      "no-access buffer with a sub-buffer");
        if (img1d) {
            /* Through a kernel: PoCL 3 crashes copying such an image. */
            size_t px = N / 4;
            CHECK(clSetKernelArg(k1d, 0, sizeof(cl_mem), &img1d));
            CHECK(clSetKernelArg(k1d, 1, sizeof(cl_mem), &plain));
            CHECK(clEnqueueNDRangeKernel(q, k1d, 1, NULL, &px, NULL, 0, NULL,
                                         NULL));
            CHECK(clEnqueueReadBuffer(q, plain, CL_TRUE, 0, sizeof(got), got,
                                      0, NULL, NULL));
            expect_uints(got, nb_want, N, "1D image over a no-access buffer");
        }
        /* Every fourth round the host writes the even words of a part of
         * the host-write-only buffer through a map: the odd ones must keep
         * what the device gave them. */
        if (round % 4 == 3) {
            cl_uint *p = clEnqueueMapBuffer(q, wo, CL_TRUE, CL_MAP_WRITE, 0,
                                            256 * sizeof(cl_uint), 0, NULL,
                                            NULL, &err);
            CHECK(err);
            for (cl_uint i = 0; i < 256; i += 2)
                p[i] = wo_want[i] = round * 1000u + i;
            CHECK(clEnqueueUnmapMemObject(q, wo, p, 0, NULL, NULL));
        }
        /* The same with eight rows of a host-write-only image. */
        if (wimg && round % 4 == 1) {
            size_t origin[3] = {0, 0, 0}, region[3] = {32, 8, 1}, pitch = 0;
            cl_uint *p = clEnqueueMapImage(q, wimg, CL_TRUE, CL_MAP_WRITE,
                                           origin, region, &pitch, NULL, 0,
                                           NULL, NULL, &err);
            CHECK(err);
            for (cl_uint y = 0; y < 8; y++)
                for (cl_uint x = 0; x < 32 * 4; x += 2)
                    p[y * pitch / 4 + x] = wimg_want[y * 32 * 4 + x] =
                        round * 7000u + y * 128 + x;
            CHECK(clEnqueueUnmapMemObject(q, wimg, p, 0, NULL, NULL));
        }
        if (wimg)
            check_through(q, wimg, true, 32, plain, wimg_want,
                          "host-write-only image");
        cl_mem targets[2] = {na, wo};
        cl_uint *wants[2] = {want, wo_want};
        for (int t = 0; t < 2; t++) {
            CHECK(clSetKernelArg(k, 0, sizeof(cl_mem), &targets[t]));
            CHECK(clSetKernelArg(k, 1, sizeof(cl_uint), &round));
            CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &gsize, NULL, 0, NULL,
                                         NULL));
            for (cl_uint i = 0; i < N; i++)
                wants[t][i] = wants[t][i] * 3u + round;
        }
        for (int t = 0; t < 2; t++)
            check_through(q, targets[t], false, 0, plain, wants[t],
                          t ? "host-write-only buffer" : "no-access buffer");
        CHECK(clEnqueueReadBuffer(q, ro, CL_TRUE, 0, sizeof(got), got, 0,
                                  NULL, NULL));
        expect_uints(got, init, N, "host-read-only buffer");
    }

    if (img1d) {
        CHECK(clReleaseKernel(k1d));
        CHECK(clReleaseProgram(prog1d));
        CHECK(clReleaseMemObject(img1d));
    }
    if (img) {
        CHECK(clReleaseMemObject(wimg));
        CHECK(clReleaseMemObject(img));
    }
    CHECK(clReleaseMemObject(nbs));
    CHECK(clReleaseMemObject(nb));
    CHECK(clReleaseMemObject(plain));
    CHECK(clReleaseMemObject(ro));
    CHECK(clReleaseMemObject(wo));
    CHECK(clReleaseMemObject(na));
    CHECK(clReleaseKernel(k));
    CHECK(clReleaseProgram(prog));
    CHECK(clReleaseCommandQueue(q));
    CHECK(clReleaseContext(c));
    pass();
}
