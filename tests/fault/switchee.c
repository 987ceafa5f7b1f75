/* The fault suite's program: state of every kind a switch must move
 * (device-only buffers, a USE_HOST_PTR buffer, a sub-buffer, an image read
 * through a sampler, kernel arguments set once: a large __local, a NULL
 * buffer, a sampler), switched with crane_rehome() every round and checked
 * byte for byte against a CPU model after each switch.
 *
 *   switchee [ROUNDS] [--map | --user-event | --again]   (default 6 rounds)
 *
 * With --again, a switch that fails is tried once more at once, before any
 * other OpenCL call: a reload that failed with the old side gone left the
 * program on errors (shim/dead.c), and the second try must bring it back
 * from its state in RAM, every byte right.
 * With --map, two buffers stay mapped across every switch: a plain one
 * the program writes through its pointer only after the switch, and the
 * CL_MEM_USE_HOST_PTR one, read through its pointer after the switch.
 * With --user-event, a user event stays pending across every switch; in
 * the last round a copy waits on it over the switch (which must be
 * refused, not hang); then it is set and the copy checked.
 *
 * Prints "PASS switchee: D switches done, F failed" (exit 0) when every
 * byte was right; "FAIL switchee: ..." (exit 1) for a wrong byte, which
 * must never happen; "ERROR switchee: ..." (exit 2) when an OpenCL call
 * failed, which is the right outcome when the side holding the data died.
 */
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N (64 * 1024)       /* words per buffer */
#define LOCAL 64            /* work-group size */
#define SUB_OFF (16 * 1024) /* the sub-buffer's offset in its parent, words */
#define IMG 64              /* the image is IMG x IMG RGBA8 */

static const char *source =
    "__kernel void advance(__global uint *a, __global uint *h,\n"
    "                   __global uint *s, __local uint *scratch,\n"
    "                   __global uint *opt, uint round)\n"
    "{\n"
    "    uint i = get_global_id(0), l = get_local_id(0);\n"
    "    scratch[l] = a[i] ^ round;\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    uint v = scratch[(l + 1) % get_local_size(0)];\n"
    "    a[i] = a[i] * 1664525u + 1013904223u + v;\n"
    "    h[i] = h[i] * 22695477u + 1u + round;\n"
    "    s[i] = s[i] ^ (a[i] >> 3);\n"
    "    if (opt) opt[i] = 0;\n"
    "}\n"
    "__kernel void sample(__read_only image2d_t img, sampler_t smp,\n"
    "                     __global uint *out, uint round)\n"
    "{\n"
    "    int x = get_global_id(0), y = get_global_id(1);\n"
    "    uint4 p = read_imageui(img, smp, (int2)(x + (int)round, y));\n"
    "    out[y * get_global_size(0) + x] =\n"
    "        p.x | p.y << 8 | p.z << 16 | p.w << 24;\n"
    "}\n";

static uint32_t a_m[N], h_m[N], s_m[N], o_m[IMG * IMG], pix[IMG * IMG];
static uint32_t *host_h;    /* the USE_HOST_PTR buffer's own memory */
static uint32_t got[N], a_w[N];

static void error(const char *what, cl_int err) __attribute__((noreturn));
static void error(const char *what, cl_int err)
{
    printf("ERROR switchee: %s: %d\n", what, err);
    fflush(stdout);
    exit(2);
}

#define CK(call)                        \
    do {                                \
        cl_int e_ = (call);             \
        if (e_ != CL_SUCCESS)           \
            error(#call, e_);           \
    } while (0)

static void model_round(uint32_t round)
{
    uint32_t old[N];

    memcpy(old, a_m, sizeof(old));
    for (uint32_t i = 0; i < N; i++) {
        uint32_t g = i / LOCAL * LOCAL, l = i % LOCAL;
        uint32_t v = old[g + (l + 1) % LOCAL] ^ round;
        a_m[i] = a_m[i] * 1664525u + 1013904223u + v;
        h_m[i] = h_m[i] * 22695477u + 1u + round;
        s_m[i] ^= a_m[i] >> 3;
    }
    for (uint32_t y = 0; y < IMG; y++)
        for (uint32_t x = 0; x < IMG; x++) {
            uint32_t sx = x + round < IMG ? x + round : IMG - 1;
            o_m[y * IMG + x] = pix[y * IMG + sx];
        }
}

static void check(const char *name, const uint32_t *want, const uint32_t *have,
                  size_t n, unsigned round)
{
    for (size_t i = 0; i < n; i++)
        if (want[i] != have[i]) {
            printf("FAIL switchee: round %u: %s word %zu is %08x, want "
                   "%08x\n", round, name, i, have[i], want[i]);
            fflush(stdout);
            exit(1);
        }
}

int main(int argc, char **argv)
{
    unsigned rounds = argc > 1 ? (unsigned)atoi(argv[1]) : 6;
    int with_maps = argc > 2 && strcmp(argv[2], "--map") == 0;
    int with_uev = argc > 2 && strcmp(argv[2], "--user-event") == 0;
    int again = argc > 2 && strcmp(argv[2], "--again") == 0;
    int (*rehome)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "crane_rehome");
    cl_platform_id plat;
    cl_device_id dev;
    cl_ulong local_mem = 0;
    cl_int err;
    unsigned done = 0, failed = 0;

    if (!rehome) {
        printf("SKIP switchee: not under crane-run (no crane_rehome)\n");
        return 77;
    }
    CK(clGetPlatformIDs(1, &plat, NULL));
    CK(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL));
    CK(clGetDeviceInfo(dev, CL_DEVICE_LOCAL_MEM_SIZE, sizeof(local_mem),
                       &local_mem, NULL));
    /* More than 64 KiB of __local where the device has it: a size, not
     * bytes, that every backend must take back after a switch. */
    size_t local_bytes = local_mem >= 128 * 1024 ? 128 * 1024
                                                 : LOCAL * sizeof(cl_uint);
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CK(err);
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, dev, NULL,
                                                            &err);
    CK(err);

    for (uint32_t i = 0; i < N; i++) {
        a_m[i] = i * 2654435761u;
        h_m[i] = ~i;
        s_m[i] = i ^ 0x5a5a5a5au;
    }
    for (uint32_t i = 0; i < IMG * IMG; i++)
        pix[i] = i * 0x01010101u ^ 0x80402010u;
    host_h = aligned_alloc(4096, sizeof(h_m));
    memcpy(host_h, h_m, sizeof(h_m));

    cl_mem a = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                              sizeof(a_m), a_m, &err);
    CK(err);
    cl_mem h = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR,
                              sizeof(h_m), host_h, &err);
    CK(err);
    cl_mem parent = clCreateBuffer(ctx, CL_MEM_READ_WRITE,
                                   (SUB_OFF + N) * sizeof(cl_uint), NULL,
                                   &err);
    CK(err);
    cl_buffer_region reg = {SUB_OFF * sizeof(cl_uint), sizeof(s_m)};
    cl_mem s = clCreateSubBuffer(parent, CL_MEM_READ_WRITE,
                                 CL_BUFFER_CREATE_TYPE_REGION, &reg, &err);
    CK(err);
    CK(clEnqueueWriteBuffer(q, s, CL_TRUE, 0, sizeof(s_m), s_m, 0, NULL,
                            NULL));
    cl_image_format fmt = {CL_RGBA, CL_UNSIGNED_INT8};
    cl_image_desc desc = {.image_type = CL_MEM_OBJECT_IMAGE2D,
                          .image_width = IMG, .image_height = IMG};
    cl_mem img = clCreateImage(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                               &fmt, &desc, pix, &err);
    CK(err);
    cl_mem out = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, sizeof(o_m), NULL,
                                &err);
    CK(err);
    cl_mem mbuf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, N * sizeof(cl_uint),
                                 NULL, &err);
    CK(err);
    cl_sampler smp = clCreateSampler(ctx, CL_FALSE, CL_ADDRESS_CLAMP_TO_EDGE,
                                     CL_FILTER_NEAREST, &err);
    CK(err);

    cl_program prog = clCreateProgramWithSource(ctx, 1, &source, NULL, &err);
    CK(err);
    CK(clBuildProgram(prog, 1, &dev, "", NULL, NULL));
    cl_kernel step = clCreateKernel(prog, "advance", &err);
    CK(err);
    cl_kernel sample = clCreateKernel(prog, "sample", &err);
    CK(err);
    /* Set once: a switch must carry them to the other side. */
    CK(clSetKernelArg(step, 0, sizeof(a), &a));
    CK(clSetKernelArg(step, 1, sizeof(h), &h));
    CK(clSetKernelArg(step, 2, sizeof(s), &s));
    CK(clSetKernelArg(step, 3, local_bytes, NULL));
    CK(clSetKernelArg(step, 4, sizeof(cl_mem), NULL));
    CK(clSetKernelArg(sample, 0, sizeof(img), &img));
    CK(clSetKernelArg(sample, 1, sizeof(smp), &smp));
    CK(clSetKernelArg(sample, 2, sizeof(out), &out));

    cl_event uev = NULL;
    cl_mem ucopy = NULL;
    if (with_uev) {
        uev = clCreateUserEvent(ctx, &err);
        CK(err);
        ucopy = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof(a_m), NULL,
                               &err);
        CK(err);
    }

    for (unsigned r = 1; r <= rounds; r++) {
        size_t gsz = N, lsz = LOCAL, g2[2] = {IMG, IMG};
        cl_uint round = r;
        CK(clSetKernelArg(step, 5, sizeof(round), &round));
        /* Every third round with the large __local, else the small. */
        CK(clSetKernelArg(step, 3, r % 3 ? LOCAL * sizeof(cl_uint)
                                         : local_bytes, NULL));
        CK(clSetKernelArg(sample, 3, sizeof(round), &round));
        CK(clEnqueueNDRangeKernel(q, step, 1, NULL, &gsz, &lsz, 0, NULL,
                                  NULL));
        CK(clEnqueueNDRangeKernel(q, sample, 2, NULL, g2, NULL, 0, NULL,
                                  NULL));
        model_round(r);
        cl_uint *mp = NULL, *hp = NULL;
        if (with_maps) {
            mp = clEnqueueMapBuffer(q, mbuf, CL_TRUE,
                                    CL_MAP_READ | CL_MAP_WRITE, 0,
                                    N * sizeof(cl_uint), 0, NULL, NULL, &err);
            CK(err);
            hp = clEnqueueMapBuffer(q, h, CL_TRUE, CL_MAP_READ, 0,
                                    sizeof(h_m), 0, NULL, NULL, &err);
            CK(err);
        }
        if (with_uev && r == rounds) {
            /* A copy of the plain buffer held back by the user event. */
            CK(clEnqueueCopyBuffer(q, a, ucopy, 0, 0, sizeof(a_m), 1, &uev,
                                   NULL));
            CK(clFlush(q));
        }
        /* The switch comes with the device's results not yet read. */
        if (rehome() == 0)
            done++;
        else if (failed++, again && rehome() == 0)
            done++;
        if (with_maps) {
            /* Both pointers still hold, after the switch. */
            check("mapped host-pointer buffer", h_m, hp, N, r);
            for (uint32_t i = 0; i < N; i++)
                mp[i] = i * 0x01000193u + r;
            CK(clEnqueueUnmapMemObject(q, h, hp, 0, NULL, NULL));
            CK(clEnqueueUnmapMemObject(q, mbuf, mp, 0, NULL, NULL));
            CK(clEnqueueReadBuffer(q, mbuf, CL_TRUE, 0, N * sizeof(cl_uint),
                                   got, 0, NULL, NULL));
            for (uint32_t i = 0; i < N; i++)
                a_w[i] = i * 0x01000193u + r;
            check("buffer written through its map", a_w, got, N, r);
        }
        if (with_uev && r == rounds) {
            CK(clSetUserEventStatus(uev, CL_COMPLETE));
            CK(clEnqueueReadBuffer(q, ucopy, CL_TRUE, 0, sizeof(a_m), got, 0,
                                   NULL, NULL));
            check("copy after the user event", a_m, got, N, r);
        }
        CK(clEnqueueReadBuffer(q, a, CL_TRUE, 0, sizeof(a_m), got, 0, NULL,
                               NULL));
        check("plain buffer", a_m, got, N, r);
        CK(clEnqueueReadBuffer(q, s, CL_TRUE, 0, sizeof(s_m), got, 0, NULL,
                               NULL));
        check("sub-buffer", s_m, got, N, r);
        CK(clEnqueueReadBuffer(q, h, CL_TRUE, 0, sizeof(h_m), got, 0, NULL,
                               NULL));
        check("host-pointer buffer", h_m, got, N, r);
        CK(clEnqueueReadBuffer(q, out, CL_TRUE, 0, sizeof(o_m), got, 0, NULL,
                               NULL));
        check("sampled image", o_m, got, IMG * IMG, r);
    }
    CK(clFinish(q));
    printf("PASS switchee: %u switches done, %u failed\n", done, failed);
    return 0;
}
