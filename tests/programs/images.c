/* Image test: 2D images, image copies to and from buffers, samplers made
 * both ways, and a 1D image over a buffer. */
#define TEST_NAME "images"
#define CL_TARGET_OPENCL_VERSION 300
/* clCreateSampler is deprecated since OpenCL 2.0 but is still what most
 * programs call, so it is tested alongside clCreateSamplerWithProperties. */
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include "clcheck.h"

#include <stdint.h>

/* Image size in pixels (powers of two keep normalized coordinates exact),
 * loop rounds, and the length of the 1D image buffer. */
#define W 128
#define H 64
#define ROUNDS 60
#define LEN1D 1024

static const char *kernel_source =
    "uint pack(uint4 v)\n"
    "{\n"
    "    return v.x | (v.y << 8) | (v.z << 16) | (v.w << 24);\n"
    "}\n"
    "__kernel void sample_int(read_only image2d_t img, sampler_t s,\n"
    "                         __global uint *out, int ox, int oy)\n"
    "{\n"
    "    int x = get_global_id(0);\n"
    "    int y = get_global_id(1);\n"
    "    uint4 v = read_imageui(img, s, (int2)(x + ox, y + oy));\n"
    "    out[y * get_global_size(0) + x] = pack(v);\n"
    "}\n"
    "__kernel void sample_norm(read_only image2d_t img, sampler_t s,\n"
    "                          __global uint *out, int ox, int oy,\n"
    "                          float inv_w, float inv_h)\n"
    "{\n"
    "    int x = get_global_id(0);\n"
    "    int y = get_global_id(1);\n"
    "    float2 c = (float2)(((float)(x + ox) + 0.5f) * inv_w,\n"
    "                        ((float)(y + oy) + 0.5f) * inv_h);\n"
    "    uint4 v = read_imageui(img, s, c);\n"
    "    out[y * get_global_size(0) + x] = pack(v);\n"
    "}\n"
    "__kernel void invert(read_only image2d_t src, write_only image2d_t dst)\n"
    "{\n"
    "    int2 p = (int2)(get_global_id(0), get_global_id(1));\n"
    "    write_imageui(dst, p, (uint4)(255) - read_imageui(src, p));\n"
    "}\n"
    "__kernel void read_1d(read_only image1d_buffer_t img,\n"
    "                      __global uint *out)\n"
    "{\n"
    "    int i = get_global_id(0);\n"
    "    out[i] = pack(read_imageui(img, i));\n"
    "}\n";

/* How a sampler maps coordinates outside the image. */
enum addr { ADDR_EDGE, ADDR_BORDER, ADDR_REPEAT };

static uint32_t rng_state = 0xdeadbeefu;

/* Returns the next number of a fixed xorshift sequence. */
static uint32_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return rng_state;
}

/* The objects and mirrors every step uses; pixels are RGBA8 packed into a
 * little-endian word, the same bytes the image holds. */
struct state {
    cl_context context;
    cl_command_queue queue;
    cl_device_id device;
    cl_image_format fmt;
    cl_mem img[3];
    cl_uint mirror[3][H][W];
    cl_mem buf;
    cl_uint buf_mirror[W * H + 64];
    cl_mem out;
    cl_kernel sample_int;
    cl_kernel sample_norm;
    cl_kernel invert;
};

/* Returns whether a format is in the device's list for an image type. */
static int format_supported(struct state *st, cl_mem_object_type type,
                            const cl_image_format *want)
{
    cl_image_format fmts[512];
    cl_uint n = 0;

    CHECK(clGetSupportedImageFormats(st->context, CL_MEM_READ_WRITE, type,
                                     512, fmts, &n));
    for (cl_uint i = 0; i < n && i < 512; i++) {
        if (fmts[i].image_channel_order == want->image_channel_order &&
            fmts[i].image_channel_data_type == want->image_channel_data_type)
            return 1;
    }
    return 0;
}

/* Reads a whole image back and compares it with its mirror. */
static void verify_image(struct state *st, int i, const char *step)
{
    static cl_uint got[H][W];
    size_t origin[3] = {0, 0, 0};
    size_t region[3] = {W, H, 1};
    char what[128];

    memset(got, 0x77, sizeof(got));
    CHECK(clEnqueueReadImage(st->queue, st->img[i], CL_TRUE, origin, region,
                             0, 0, got, 0, NULL, NULL));
    snprintf(what, sizeof(what), "image %d after %s", i, step);
    expect_uints(&got[0][0], &st->mirror[i][0][0], W * H, what);
}

/* Returns the pixel a nearest-filter sampler reads at (x, y). */
static cl_uint sample_model(struct state *st, int i, int x, int y,
                            enum addr addr)
{
    switch (addr) {
    case ADDR_EDGE:
        x = x < 0 ? 0 : x >= W ? W - 1 : x;
        y = y < 0 ? 0 : y >= H ? H - 1 : y;
        break;
    case ADDR_BORDER:
        /* The border colour of CL_RGBA is transparent black. */
        if (x < 0 || x >= W || y < 0 || y >= H)
            return 0;
        break;
    case ADDR_REPEAT:
        x = ((x % W) + W) % W;
        y = ((y % H) + H) % H;
        break;
    }
    return st->mirror[i][y][x];
}

/* Runs one sampling kernel over a whole image and checks every pixel. */
static void run_sampler(struct state *st, int i, cl_sampler s,
                        enum addr addr, int ox, int oy)
{
    static cl_uint got[W * H];
    size_t global[2] = {W, H};
    cl_kernel k = addr == ADDR_REPEAT ? st->sample_norm : st->sample_int;
    char what[128];

    CHECK(clSetKernelArg(k, 0, sizeof(cl_mem), &st->img[i]));
    CHECK(clSetKernelArg(k, 1, sizeof(cl_sampler), &s));
    CHECK(clSetKernelArg(k, 2, sizeof(cl_mem), &st->out));
    CHECK(clSetKernelArg(k, 3, sizeof(ox), &ox));
    CHECK(clSetKernelArg(k, 4, sizeof(oy), &oy));
    if (addr == ADDR_REPEAT) {
        cl_float inv_w = 1.0f / W;
        cl_float inv_h = 1.0f / H;

        CHECK(clSetKernelArg(k, 5, sizeof(inv_w), &inv_w));
        CHECK(clSetKernelArg(k, 6, sizeof(inv_h), &inv_h));
    }
    CHECK(clEnqueueNDRangeKernel(st->queue, k, 2, NULL, global, NULL, 0,
                                 NULL, NULL));
    CHECK(clEnqueueReadBuffer(st->queue, st->out, CL_TRUE, 0, sizeof(got),
                              got, 0, NULL, NULL));
    for (int y = 0; y < H; y++) {
        for (int x = 0; x < W; x++) {
            cl_uint want = sample_model(st, i, x + ox, y + oy, addr);

            if (got[y * W + x] != want) {
                snprintf(what, sizeof(what),
                         "sampler mode %d on image %d offset (%d,%d)",
                         (int)addr, i, ox, oy);
                fail("%s: pixel (%d,%d) is 0x%08x, expected 0x%08x", what, x,
                     y, got[y * W + x], want);
            }
        }
    }
}

/* Checks that a sampler reports the properties it was made with. */
static void check_sampler(cl_sampler s, cl_context context, cl_bool norm,
                          cl_addressing_mode addr)
{
    cl_context c = NULL;
    cl_bool n = 2;
    cl_addressing_mode a = 0;
    cl_filter_mode f = 0;

    CHECK(clGetSamplerInfo(s, CL_SAMPLER_CONTEXT, sizeof(c), &c, NULL));
    EXPECT(c == context, "sampler context %p, expected %p", (void *)c,
           (void *)context);
    CHECK(clGetSamplerInfo(s, CL_SAMPLER_NORMALIZED_COORDS, sizeof(n), &n,
                           NULL));
    EXPECT(n == norm, "sampler normalized coords %u", n);
    CHECK(clGetSamplerInfo(s, CL_SAMPLER_ADDRESSING_MODE, sizeof(a), &a,
                           NULL));
    EXPECT(a == addr, "sampler addressing mode 0x%x", (unsigned)a);
    CHECK(clGetSamplerInfo(s, CL_SAMPLER_FILTER_MODE, sizeof(f), &f, NULL));
    EXPECT(f == CL_FILTER_NEAREST, "sampler filter mode 0x%x", (unsigned)f);
}

/* Writes, copies, fills and maps image regions and samples them. */
static void step_loop(struct state *st, cl_sampler samplers[3])
{
    static cl_uint host[H][W + 16];
    static cl_uint got[H][W + 16];
    cl_int err;

    for (int round = 0; round < ROUNDS; round++) {
        int a = (int)(rng() % 2);
        int b = 1 - a;
        size_t w = 1 + rng() % W;
        size_t h = 1 + rng() % H;
        size_t o1[3] = {rng() % (W - w + 1), rng() % (H - h + 1), 0};
        size_t o2[3] = {rng() % (W - w + 1), rng() % (H - h + 1), 0};
        size_t region[3] = {w, h, 1};
        size_t pitch = (W + 16) * sizeof(cl_uint);

        /* A region written from padded host rows and read back. */
        for (size_t y = 0; y < h; y++) {
            for (size_t x = 0; x < w; x++) {
                host[y][x] = rng();
                st->mirror[a][o1[1] + y][o1[0] + x] = host[y][x];
            }
        }
        CHECK(clEnqueueWriteImage(st->queue, st->img[a], CL_FALSE, o1, region,
                                  pitch, 0, host, 0, NULL, NULL));
        CHECK(clEnqueueReadImage(st->queue, st->img[a], CL_TRUE, o1, region,
                                 pitch, 0, got, 0, NULL, NULL));
        for (size_t y = 0; y < h; y++)
            expect_uints(got[y], host[y], w, "image region read");

        /* An image to image copy. */
        CHECK(clEnqueueCopyImage(st->queue, st->img[a], st->img[b], o1, o2,
                                 region, 0, NULL, NULL));
        for (size_t y = 0; y < h; y++)
            for (size_t x = 0; x < w; x++)
                st->mirror[b][o2[1] + y][o2[0] + x] =
                    st->mirror[a][o1[1] + y][o1[0] + x];

        /* A fill of a small region with one colour. */
        if (round % 3 == 0) {
            cl_uint4 colour;
            size_t fr[3] = {1 + w / 4, 1 + h / 4, 1};

            for (int c = 0; c < 4; c++)
                colour.s[c] = rng() & 0xff;
            CHECK(clEnqueueFillImage(st->queue, st->img[b], &colour, o1, fr,
                                     0, NULL, NULL));
            for (size_t y = 0; y < fr[1]; y++)
                for (size_t x = 0; x < fr[0]; x++)
                    st->mirror[b][o1[1] + y][o1[0] + x] =
                        colour.s[0] | colour.s[1] << 8 | colour.s[2] << 16 |
                        colour.s[3] << 24;
        }

        /* Image to buffer and buffer back to another place in an image. */
        {
            size_t off = (rng() % 64) * sizeof(cl_uint);

            CHECK(clEnqueueCopyImageToBuffer(st->queue, st->img[b], st->buf,
                                             o2, region, off, 0, NULL, NULL));
            for (size_t y = 0; y < h; y++)
                for (size_t x = 0; x < w; x++)
                    st->buf_mirror[off / 4 + y * w + x] =
                        st->mirror[b][o2[1] + y][o2[0] + x];
            CHECK(clEnqueueCopyBufferToImage(st->queue, st->buf, st->img[2],
                                             off, o1, region, 0, NULL, NULL));
            for (size_t y = 0; y < h; y++)
                for (size_t x = 0; x < w; x++)
                    st->mirror[2][o1[1] + y][o1[0] + x] =
                        st->buf_mirror[off / 4 + y * w + x];
        }

        /* A map for reading then one for writing. */
        if (round % 4 == 1) {
            size_t row_pitch = 0;
            cl_uint *p;

            p = clEnqueueMapImage(st->queue, st->img[a], CL_TRUE, CL_MAP_READ,
                                  o1, region, &row_pitch, NULL, 0, NULL, NULL,
                                  &err);
            CHECK(err);
            EXPECT(row_pitch >= w * sizeof(cl_uint), "map row pitch %zu",
                   row_pitch);
            for (size_t y = 0; y < h; y++)
                expect_uints((cl_uint *)((char *)p + y * row_pitch),
                             &st->mirror[a][o1[1] + y][o1[0]], w,
                             "mapped image region");
            CHECK(clEnqueueUnmapMemObject(st->queue, st->img[a], p, 0, NULL,
                                          NULL));
            p = clEnqueueMapImage(st->queue, st->img[a], CL_TRUE, CL_MAP_WRITE,
                                  o2, region, &row_pitch, NULL, 0, NULL, NULL,
                                  &err);
            CHECK(err);
            for (size_t y = 0; y < h; y++) {
                cl_uint *row = (cl_uint *)((char *)p + y * row_pitch);

                for (size_t x = 0; x < w; x++) {
                    row[x] = rng();
                    st->mirror[a][o2[1] + y][o2[0] + x] = row[x];
                }
            }
            CHECK(clEnqueueUnmapMemObject(st->queue, st->img[a], p, 0, NULL,
                                          NULL));
        }

        /* Sample one image with each sampler in turn. */
        {
            int which = round % 3;
            int ox = (int)(rng() % 41) - 20;
            int oy = (int)(rng() % 41) - 20;

            if (which == 2) {
                ox = (int)(rng() % 401) - 200;
                oy = (int)(rng() % 401) - 200;
            }
            run_sampler(st, (int)(rng() % 3), samplers[which],
                        (enum addr)which, ox, oy);
        }

        /* The invert kernel writes one image from another. */
        if (round % 5 == 2) {
            size_t global[2] = {W, H};

            CHECK(clSetKernelArg(st->invert, 0, sizeof(cl_mem), &st->img[a]));
            CHECK(clSetKernelArg(st->invert, 1, sizeof(cl_mem), &st->img[2]));
            CHECK(clEnqueueNDRangeKernel(st->queue, st->invert, 2, NULL,
                                         global, NULL, 0, NULL, NULL));
            for (int y = 0; y < H; y++) {
                for (int x = 0; x < W; x++) {
                    cl_uint v = st->mirror[a][y][x];
                    cl_uint r = 0;

                    for (int c = 0; c < 4; c++)
                        r |= (255u - ((v >> (8 * c)) & 0xff)) << (8 * c);
                    st->mirror[2][y][x] = r;
                }
            }
        }
        if (round % 10 == 9) {
            for (int i = 0; i < 3; i++)
                verify_image(st, i, "loop");
        }
    }
    for (int i = 0; i < 3; i++)
        verify_image(st, i, "loop");
}

/* A 1D image over a buffer: both views share the same bytes. */
static void step_image1d_buffer(struct state *st, cl_program program)
{
    static cl_uint data[LEN1D];
    static cl_uint got[LEN1D];
    cl_image_desc desc;
    cl_mem buf, img, back = NULL;
    cl_kernel k;
    size_t global = LEN1D;
    size_t origin[3] = {0, 0, 0};
    size_t region[3] = {LEN1D, 1, 1};
    cl_int err;

    if (!format_supported(st, CL_MEM_OBJECT_IMAGE1D_BUFFER, &st->fmt)) {
        fprintf(stderr, "note: RGBA/UNSIGNED_INT8 1D image buffers not "
                        "supported, skipped\n");
        return;
    }
    for (int i = 0; i < LEN1D; i++)
        data[i] = rng();
    buf = clCreateBuffer(st->context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                         sizeof(data), data, &err);
    CHECK(err);
    memset(&desc, 0, sizeof(desc));
    desc.image_type = CL_MEM_OBJECT_IMAGE1D_BUFFER;
    desc.image_width = LEN1D;
    desc.buffer = buf;
    img = clCreateImage(st->context, CL_MEM_READ_ONLY, &st->fmt, &desc, NULL,
                        &err);
    CHECK(err);
    CHECK(clGetImageInfo(img, CL_IMAGE_BUFFER, sizeof(back), &back, NULL));
    EXPECT(back == buf, "CL_IMAGE_BUFFER is %p, expected %p", (void *)back,
           (void *)buf);
    k = make_kernel(program, "read_1d");

    for (int round = 0; round < 20; round++) {
        /* Change the buffer, then read it through the image two ways. */
        size_t n = 1 + rng() % LEN1D;
        size_t off = rng() % (LEN1D - n + 1);

        for (size_t i = 0; i < n; i++)
            data[off + i] = rng();
        CHECK(clEnqueueWriteBuffer(st->queue, buf, CL_TRUE,
                                   off * sizeof(cl_uint), n * sizeof(cl_uint),
                                   data + off, 0, NULL, NULL));
        CHECK(clEnqueueReadImage(st->queue, img, CL_TRUE, origin, region, 0, 0,
                                 got, 0, NULL, NULL));
        expect_uints(got, data, LEN1D, "1D image buffer read");
        CHECK(clSetKernelArg(k, 0, sizeof(cl_mem), &img));
        CHECK(clSetKernelArg(k, 1, sizeof(cl_mem), &st->out));
        CHECK(clEnqueueNDRangeKernel(st->queue, k, 1, NULL, &global, NULL, 0,
                                     NULL, NULL));
        CHECK(clEnqueueReadBuffer(st->queue, st->out, CL_TRUE, 0, sizeof(got),
                                  got, 0, NULL, NULL));
        expect_uints(got, data, LEN1D, "1D image buffer kernel read");
    }
    CHECK(clReleaseKernel(k));
    CHECK(clReleaseMemObject(img));
    CHECK(clReleaseMemObject(buf));
}

int main(void)
{
    static struct state st;
    cl_platform_id platform;
    cl_bool images = CL_FALSE;
    cl_program program;
    cl_sampler samplers[3];
    cl_image_desc desc;
    cl_int err;

    pick_device(&platform, &st.device);
    CHECK(clGetDeviceInfo(st.device, CL_DEVICE_IMAGE_SUPPORT, sizeof(images),
                          &images, NULL));
    if (!images)
        skip("device has no image support");
    st.context = clCreateContext(NULL, 1, &st.device, NULL, NULL, &err);
    CHECK(err);
    st.queue = clCreateCommandQueueWithProperties(st.context, st.device, NULL,
                                                  &err);
    CHECK(err);
    st.fmt.image_channel_order = CL_RGBA;
    st.fmt.image_channel_data_type = CL_UNSIGNED_INT8;
    if (!format_supported(&st, CL_MEM_OBJECT_IMAGE2D, &st.fmt))
        skip("RGBA/UNSIGNED_INT8 2D images not supported");

    program = build_source(st.context, st.device, kernel_source, "");
    st.sample_int = make_kernel(program, "sample_int");
    st.sample_norm = make_kernel(program, "sample_norm");
    st.invert = make_kernel(program, "invert");

    /* Image 0 starts from host memory; 1 and 2 are written before use. */
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            st.mirror[0][y][x] = rng();
    memset(&desc, 0, sizeof(desc));
    desc.image_type = CL_MEM_OBJECT_IMAGE2D;
    desc.image_width = W;
    desc.image_height = H;
    st.img[0] = clCreateImage(st.context,
                              CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                              &st.fmt, &desc, st.mirror[0], &err);
    CHECK(err);
    for (int i = 1; i < 3; i++) {
        size_t origin[3] = {0, 0, 0};
        size_t region[3] = {W, H, 1};

        st.img[i] = clCreateImage(st.context, CL_MEM_READ_WRITE, &st.fmt,
                                  &desc, NULL, &err);
        CHECK(err);
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++)
                st.mirror[i][y][x] = rng();
        CHECK(clEnqueueWriteImage(st.queue, st.img[i], CL_TRUE, origin,
                                  region, 0, 0, st.mirror[i], 0, NULL, NULL));
    }
    for (int i = 0; i < 3; i++)
        verify_image(&st, i, "creation");
    {
        size_t width = 0, height = 0, elem = 0;

        CHECK(clGetImageInfo(st.img[0], CL_IMAGE_WIDTH, sizeof(width), &width,
                             NULL));
        CHECK(clGetImageInfo(st.img[0], CL_IMAGE_HEIGHT, sizeof(height),
                             &height, NULL));
        CHECK(clGetImageInfo(st.img[0], CL_IMAGE_ELEMENT_SIZE, sizeof(elem),
                             &elem, NULL));
        EXPECT(width == W && height == H && elem == 4,
               "image info %zux%zu element %zu", width, height, elem);
    }
    st.buf = clCreateBuffer(st.context, CL_MEM_READ_WRITE,
                            sizeof(st.buf_mirror), NULL, &err);
    CHECK(err);
    CHECK(clEnqueueWriteBuffer(st.queue, st.buf, CL_TRUE, 0,
                               sizeof(st.buf_mirror), st.buf_mirror, 0, NULL,
                               NULL));
    st.out = clCreateBuffer(st.context, CL_MEM_READ_WRITE,
                            W * H * sizeof(cl_uint), NULL, &err);
    CHECK(err);

    /* Two samplers the old way, one with a property list. */
    samplers[ADDR_EDGE] = clCreateSampler(st.context, CL_FALSE,
                                          CL_ADDRESS_CLAMP_TO_EDGE,
                                          CL_FILTER_NEAREST, &err);
    CHECK(err);
    samplers[ADDR_BORDER] = clCreateSampler(st.context, CL_FALSE,
                                            CL_ADDRESS_CLAMP,
                                            CL_FILTER_NEAREST, &err);
    CHECK(err);
    {
        cl_sampler_properties props[] = {
            CL_SAMPLER_NORMALIZED_COORDS, CL_TRUE,
            CL_SAMPLER_ADDRESSING_MODE, CL_ADDRESS_REPEAT,
            CL_SAMPLER_FILTER_MODE, CL_FILTER_NEAREST,
            0,
        };

        samplers[ADDR_REPEAT] = clCreateSamplerWithProperties(st.context,
                                                              props, &err);
        CHECK(err);
    }
    check_sampler(samplers[ADDR_EDGE], st.context, CL_FALSE,
                  CL_ADDRESS_CLAMP_TO_EDGE);
    check_sampler(samplers[ADDR_BORDER], st.context, CL_FALSE,
                  CL_ADDRESS_CLAMP);
    check_sampler(samplers[ADDR_REPEAT], st.context, CL_TRUE,
                  CL_ADDRESS_REPEAT);

    step_loop(&st, samplers);
    step_image1d_buffer(&st, program);

    /* The samplers still behave as made after all that. */
    check_sampler(samplers[ADDR_REPEAT], st.context, CL_TRUE,
                  CL_ADDRESS_REPEAT);
    for (int i = 0; i < 3; i++)
        CHECK(clReleaseSampler(samplers[i]));
    for (int i = 0; i < 3; i++)
        CHECK(clReleaseMemObject(st.img[i]));
    CHECK(clReleaseMemObject(st.buf));
    CHECK(clReleaseMemObject(st.out));
    CHECK(clReleaseKernel(st.sample_int));
    CHECK(clReleaseKernel(st.sample_norm));
    CHECK(clReleaseKernel(st.invert));
    CHECK(clReleaseProgram(program));
    CHECK(clReleaseCommandQueue(st.queue));
    CHECK(clReleaseContext(st.context));
    pass();
}
