/* bench/maps: a program that keeps its staging buffer mapped for its whole
 * run (x264's lookahead), against the same work staged through plain host
 * memory, timed per frame: run natively, under the shim, and switched by
 * run.sh.
 *
 *   maps kept|unmapped [--frames N] [--frame-kb K] [--stage-mb M]
 *
 * kept: a CL_MEM_ALLOC_HOST_PTR buffer of M MiB mapped once, each frame's
 * input written into it, sent from it, the kernel's output read back
 * into it, checked there; unmapped: the same through malloc'd memory.
 * Prints "RESULT <mode> <seconds> <frames/s>"; exit 0 when every word
 * checked, 1 when one differs, 2 on a usage or OpenCL error. */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *source =
    "__kernel void frame(__global const uint *in, __global uint *out,\n"
    "                    uint k)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    uint v = in[i];\n"
    "    for (int r = 0; r < 8; r++)\n"
    "        v = v * 1664525u + 1013904223u + k;\n"
    "    out[i] = v;\n"
    "}\n";

#define DIE(...)                                                           \
    do {                                                                   \
        fprintf(stderr, "maps: " __VA_ARGS__);                             \
        fputc('\n', stderr);                                               \
        exit(2);                                                           \
    } while (0)
#define CK(call)                                                           \
    do {                                                                   \
        cl_int e_ = (call);                                                \
        if (e_ != CL_SUCCESS)                                              \
            DIE("%s failed: %d", #call, e_);                               \
    } while (0)

static cl_uint expect(cl_uint v, cl_uint k)
{
    for (int r = 0; r < 8; r++)
        v = v * 1664525u + 1013904223u + k;
    return v;
}

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

struct bench {
    cl_context ctx;
    cl_command_queue q;
    cl_kernel kernel;
    cl_mem in, out, stage;
    cl_uint *host;               /* the map, or malloc'd */
    size_t words, stage_words;
};

static void setup(struct bench *b, int kept)
{
    cl_platform_id platform;
    cl_device_id device;
    cl_int err;

    CK(clGetPlatformIDs(1, &platform, NULL));
    CK(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL));
    b->ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    CK(err);
    b->q = clCreateCommandQueueWithProperties(b->ctx, device, NULL, &err);
    CK(err);
    cl_program p = clCreateProgramWithSource(b->ctx, 1, &source, NULL, &err);
    CK(err);
    CK(clBuildProgram(p, 1, &device, "", NULL, NULL));
    b->kernel = clCreateKernel(p, "frame", &err);
    CK(err);
    CK(clReleaseProgram(p));
    size_t bytes = b->words * sizeof(cl_uint);
    b->in = clCreateBuffer(b->ctx, CL_MEM_READ_ONLY, bytes, NULL, &err);
    CK(err);
    b->out = clCreateBuffer(b->ctx, CL_MEM_WRITE_ONLY, bytes, NULL, &err);
    CK(err);
    if (!kept) {
        b->host = malloc(b->stage_words * sizeof(cl_uint));
        if (!b->host)
            DIE("no memory");
        return;
    }
    b->stage = clCreateBuffer(b->ctx, CL_MEM_WRITE_ONLY |
                              CL_MEM_ALLOC_HOST_PTR,
                              b->stage_words * sizeof(cl_uint), NULL, &err);
    CK(err);
    b->host = clEnqueueMapBuffer(b->q, b->stage, CL_TRUE,
                                 CL_MAP_READ | CL_MAP_WRITE, 0,
                                 b->stage_words * sizeof(cl_uint), 0, NULL,
                                 NULL, &err);
    CK(err);
}

/* One frame through the staging memory at the frame's place in it. */
static int frame(struct bench *b, unsigned f)
{
    size_t at = (size_t)f * 2 * b->words % (b->stage_words - 2 * b->words + 1);
    cl_uint *src = b->host + at, *dst = src + b->words, k = f;
    size_t global = b->words, bytes = b->words * sizeof(cl_uint);

    for (size_t i = 0; i < b->words; i++)
        src[i] = (cl_uint)(i * 2654435761u) ^ f;
    CK(clEnqueueWriteBuffer(b->q, b->in, CL_FALSE, 0, bytes, src, 0, NULL,
                            NULL));
    CK(clSetKernelArg(b->kernel, 0, sizeof(b->in), &b->in));
    CK(clSetKernelArg(b->kernel, 1, sizeof(b->out), &b->out));
    CK(clSetKernelArg(b->kernel, 2, sizeof(k), &k));
    CK(clEnqueueNDRangeKernel(b->q, b->kernel, 1, NULL, &global, NULL, 0,
                              NULL, NULL));
    CK(clEnqueueReadBuffer(b->q, b->out, CL_TRUE, 0, bytes, dst, 0, NULL,
                           NULL));
    for (size_t i = 0; i < b->words; i++)
        if (dst[i] != expect(src[i], k)) {
            fprintf(stderr, "maps: frame %u word %zu is %u, expected %u\n",
                    f, i, dst[i], expect(src[i], k));
            return -1;
        }
    return 0;
}

int main(int argc, char **argv)
{
    struct bench b = {0};
    unsigned frames = 200;
    size_t frame_kb = 256, stage_mb = 32;

    if (argc < 2 || (strcmp(argv[1], "kept") && strcmp(argv[1], "unmapped")))
        DIE("usage: maps kept|unmapped [--frames N] [--frame-kb K] "
            "[--stage-mb M]");
    int kept = strcmp(argv[1], "kept") == 0;
    for (int i = 2; i + 1 < argc; i += 2) {
        unsigned long v = strtoul(argv[i + 1], NULL, 10);
        if (strcmp(argv[i], "--frames") == 0 && v > 0 && v <= 1000000)
            frames = (unsigned)v;
        else if (strcmp(argv[i], "--frame-kb") == 0 && v > 0 && v <= 65536)
            frame_kb = v;
        else if (strcmp(argv[i], "--stage-mb") == 0 && v > 0 && v <= 4096)
            stage_mb = v;
        else
            DIE("bad option %s %s", argv[i], argv[i + 1]);
    }
    b.words = frame_kb * 1024 / sizeof(cl_uint);
    b.stage_words = stage_mb * 1024 * 1024 / sizeof(cl_uint);
    if (b.stage_words < 2 * b.words)
        DIE("the staging buffer is smaller than two frames");
    setup(&b, kept);
    if (frame(&b, 0) < 0)  /* warm-up */
        return 1;
    CK(clFinish(b.q));
    double t0 = now();
    for (unsigned f = 1; f <= frames; f++)
        if (frame(&b, f) < 0)
            return 1;
    CK(clFinish(b.q));
    double t = now() - t0;
    if (kept)
        CK(clEnqueueUnmapMemObject(b.q, b.stage, b.host, 0, NULL, NULL));
    else
        free(b.host);
    CK(clFinish(b.q));
    printf("RESULT %s %.6f %.2f\n", argv[1], t, frames / t);
    return 0;
}
