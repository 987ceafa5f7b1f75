/* Kernel test: build options, kernel enumeration, cloning and every kind of
 * kernel argument, over many launches with changing arguments. */
#define TEST_NAME "kernels"
#define CL_TARGET_OPENCL_VERSION 300
#include "clcheck.h"

#include <stdint.h>

/* Words per buffer, buffers per pool, and launches in the main loop. */
#define N 4096
#define POOL 6
#define LAUNCHES 400
#define TABLE_SIZE 16

/* The -D values the program is built with; the CPU model uses them too. */
#define SCALE 3
#define OFFSET 7
#define BUILD_OPTIONS "-DSCALE=3 -DOFFSET=7 -DTABLE_SIZE=16 -cl-kernel-arg-info"

static const char *kernel_source =
    "struct params {\n"
    "    ulong base;\n"
    "    uint mul;\n"
    "    int shift;\n"
    "    float scale;\n"
    "    uint pad;\n"
    "};\n"
    "__kernel void affine(__global const uint *in, __global uint *out,\n"
    "                     uint mul, int add)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    out[i] += in[i] * mul * SCALE + (uint)add + OFFSET;\n"
    "}\n"
    "__kernel void lookup(__global const uchar *idx, __constant uint *table,\n"
    "                     __global uint *out)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    uint t = table[idx[i] % TABLE_SIZE] ^ (uint)OFFSET;\n"
    "    out[i] = out[i] * 3u + t;\n"
    "}\n"
    "__kernel void reduce(__global const uint *in, __local uint *scratch,\n"
    "                     __global uint *sums)\n"
    "{\n"
    "    size_t l = get_local_id(0);\n"
    "    size_t n = get_local_size(0);\n"
    "    scratch[l] = in[get_global_id(0)];\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    for (size_t s = n / 2; s > 0; s /= 2) {\n"
    "        if (l < s)\n"
    "            scratch[l] += scratch[l + s];\n"
    "        barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    }\n"
    "    if (l == 0)\n"
    "        sums[get_group_id(0)] += scratch[0];\n"
    "}\n"
    "__kernel void with_struct(__global uint *out, struct params p)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    out[i] += ((uint)(p.base + i * p.mul) >> p.shift)\n"
    "             + (uint)(p.scale * (float)i) + p.pad;\n"
    "}\n"
    "__kernel void scalars(__global ulong *out, char c, short s, int v,\n"
    "                      long l, float f, uchar u)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    out[i] = (ulong)((long)c + (long)s + (long)v + l + (long)f\n"
    "                     + (long)u + (long)i);\n"
    "}\n";

/* The host view of the kernels' struct argument, laid out identically. */
struct params {
    cl_ulong base;
    cl_uint mul;
    cl_int shift;
    cl_float scale;
    cl_uint pad;
};

static const char *kernel_names[] = {"affine", "lookup", "reduce",
                                     "with_struct", "scalars"};
#define NKERNELS (sizeof(kernel_names) / sizeof(kernel_names[0]))

static uint32_t rng_state = 0x9e3779b9u;

/* Returns the next number of a fixed xorshift sequence. */
static uint32_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return rng_state;
}

/* The objects and CPU mirrors every step uses. */
struct state {
    cl_context context;
    cl_command_queue queue;
    cl_device_id device;
    cl_kernel k[NKERNELS];
    cl_mem in[POOL];
    cl_mem out[POOL];
    cl_mem idx;
    cl_mem table;
    cl_uint in_host[POOL][N];
    cl_uint out_mirror[POOL][N];
    cl_uchar idx_host[N];
    cl_uint table_host[TABLE_SIZE];
};

/* Returns the kernel of st->k with the given name. */
static cl_kernel kernel_named(struct state *st, const char *name)
{
    for (size_t i = 0; i < NKERNELS; i++) {
        if (strcmp(kernel_names[i], name) == 0)
            return st->k[i];
    }
    fail("no kernel named %s", name);
}

/* Reads an output buffer and compares it with its mirror. */
static void verify_out(struct state *st, int o, const char *step)
{
    static cl_uint got[N];
    char what[128];

    memset(got, 0xcc, sizeof(got));
    CHECK(clEnqueueReadBuffer(st->queue, st->out[o], CL_TRUE, 0, sizeof(got),
                              got, 0, NULL, NULL));
    snprintf(what, sizeof(what), "out[%d] after %s", o, step);
    expect_uints(got, st->out_mirror[o], N, what);
}

/* Checks the program's build options, kernel list and argument info. */
static void check_program_info(struct state *st, cl_program program)
{
    char text[1024];
    size_t num = 0;
    cl_uint nargs = 0;
    cl_kernel_arg_address_qualifier aq = 0;

    CHECK(clGetProgramBuildInfo(program, st->device, CL_PROGRAM_BUILD_OPTIONS,
                                sizeof(text), text, NULL));
    EXPECT(strcmp(text, BUILD_OPTIONS) == 0, "build options are '%s'", text);
    CHECK(clGetProgramInfo(program, CL_PROGRAM_NUM_KERNELS, sizeof(num), &num,
                           NULL));
    EXPECT(num == NKERNELS, "CL_PROGRAM_NUM_KERNELS is %zu", num);
    CHECK(clGetProgramInfo(program, CL_PROGRAM_KERNEL_NAMES, sizeof(text),
                           text, NULL));
    for (size_t i = 0; i < NKERNELS; i++)
        EXPECT(strstr(text, kernel_names[i]) != NULL,
               "CL_PROGRAM_KERNEL_NAMES '%s' lacks %s", text, kernel_names[i]);

    CHECK(clGetKernelInfo(kernel_named(st, "scalars"), CL_KERNEL_NUM_ARGS,
                          sizeof(nargs), &nargs, NULL));
    EXPECT(nargs == 7, "scalars has %u arguments", nargs);
    CHECK(clGetKernelArgInfo(kernel_named(st, "affine"), 2,
                             CL_KERNEL_ARG_NAME, sizeof(text), text, NULL));
    EXPECT(strcmp(text, "mul") == 0, "affine argument 2 is named '%s'", text);
    CHECK(clGetKernelArgInfo(kernel_named(st, "lookup"), 1,
                             CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof(aq), &aq,
                             NULL));
    EXPECT(aq == CL_KERNEL_ARG_ADDRESS_CONSTANT,
           "lookup argument 1 has address qualifier 0x%x", (unsigned)aq);
    CHECK(clGetKernelArgInfo(kernel_named(st, "reduce"), 1,
                             CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof(aq), &aq,
                             NULL));
    EXPECT(aq == CL_KERNEL_ARG_ADDRESS_LOCAL,
           "reduce argument 1 has address qualifier 0x%x", (unsigned)aq);
}

/* Applies one affine launch to the mirror of an output buffer. */
static void affine_model(struct state *st, int i, int o, cl_uint mul,
                         cl_int add)
{
    for (size_t j = 0; j < N; j++)
        st->out_mirror[o][j] +=
            st->in_host[i][j] * mul * SCALE + (cl_uint)add + OFFSET;
}

/* Sets affine's arguments and launches it, updating the mirror. */
static void launch_affine(struct state *st, cl_kernel k, int i, int o,
                          cl_uint mul, cl_int add)
{
    size_t global = N;

    CHECK(clSetKernelArg(k, 0, sizeof(cl_mem), &st->in[i]));
    CHECK(clSetKernelArg(k, 1, sizeof(cl_mem), &st->out[o]));
    CHECK(clSetKernelArg(k, 2, sizeof(mul), &mul));
    CHECK(clSetKernelArg(k, 3, sizeof(add), &add));
    CHECK(clEnqueueNDRangeKernel(st->queue, k, 1, NULL, &global, NULL, 0,
                                 NULL, NULL));
    affine_model(st, i, o, mul, add);
}

/* Launches lookup with the __constant table, folding into one output. */
static void launch_lookup(struct state *st, int o)
{
    cl_kernel k = kernel_named(st, "lookup");
    size_t global = N;

    CHECK(clSetKernelArg(k, 0, sizeof(cl_mem), &st->idx));
    CHECK(clSetKernelArg(k, 1, sizeof(cl_mem), &st->table));
    CHECK(clSetKernelArg(k, 2, sizeof(cl_mem), &st->out[o]));
    CHECK(clEnqueueNDRangeKernel(st->queue, k, 1, NULL, &global, NULL, 0,
                                 NULL, NULL));
    for (size_t j = 0; j < N; j++)
        st->out_mirror[o][j] =
            st->out_mirror[o][j] * 3u +
            (st->table_host[st->idx_host[j] % TABLE_SIZE] ^ (cl_uint)OFFSET);
}

/* Launches reduce with a __local scratch of the given work-group size;
 * the sums are added to the first N / local words of the output buffer. */
static void launch_reduce(struct state *st, int i, int o, size_t local)
{
    cl_kernel k = kernel_named(st, "reduce");
    size_t global = N;

    CHECK(clSetKernelArg(k, 0, sizeof(cl_mem), &st->in[i]));
    CHECK(clSetKernelArg(k, 1, local * sizeof(cl_uint), NULL));
    CHECK(clSetKernelArg(k, 2, sizeof(cl_mem), &st->out[o]));
    CHECK(clEnqueueNDRangeKernel(st->queue, k, 1, NULL, &global, &local, 0,
                                 NULL, NULL));
    for (size_t g = 0; g < N / local; g++) {
        cl_uint sum = 0;

        for (size_t j = 0; j < local; j++)
            sum += st->in_host[i][g * local + j];
        st->out_mirror[o][g] += sum;
    }
}

/* Launches with_struct with a by-value struct argument. */
static void launch_struct(struct state *st, int o, const struct params *p)
{
    cl_kernel k = kernel_named(st, "with_struct");
    size_t global = N;

    CHECK(clSetKernelArg(k, 0, sizeof(cl_mem), &st->out[o]));
    CHECK(clSetKernelArg(k, 1, sizeof(*p), p));
    CHECK(clEnqueueNDRangeKernel(st->queue, k, 1, NULL, &global, NULL, 0,
                                 NULL, NULL));
    for (size_t j = 0; j < N; j++)
        st->out_mirror[o][j] += ((cl_uint)(p->base + j * p->mul) >> p->shift) +
                                (cl_uint)(p->scale * (float)j) + p->pad;
}

/* Launches scalars with one argument of each scalar width and checks the
 * result at once. */
static void launch_scalars(struct state *st, cl_mem out64, int round)
{
    cl_kernel k = kernel_named(st, "scalars");
    size_t global = 256;
    cl_char c = (cl_char)(-3 - round);
    cl_short s = (cl_short)(1000 + round);
    cl_int v = -70000 * round;
    cl_long l = (cl_long)1 << 40 | (cl_long)round;
    cl_float f = 2.0f * (float)round + 0.5f;
    cl_uchar u = (cl_uchar)(200 + round);
    cl_ulong got[256];

    CHECK(clSetKernelArg(k, 0, sizeof(cl_mem), &out64));
    CHECK(clSetKernelArg(k, 1, sizeof(c), &c));
    CHECK(clSetKernelArg(k, 2, sizeof(s), &s));
    CHECK(clSetKernelArg(k, 3, sizeof(v), &v));
    CHECK(clSetKernelArg(k, 4, sizeof(l), &l));
    CHECK(clSetKernelArg(k, 5, sizeof(f), &f));
    CHECK(clSetKernelArg(k, 6, sizeof(u), &u));
    CHECK(clEnqueueNDRangeKernel(st->queue, k, 1, NULL, &global, NULL, 0,
                                 NULL, NULL));
    CHECK(clEnqueueReadBuffer(st->queue, out64, CL_TRUE, 0, sizeof(got), got,
                              0, NULL, NULL));
    for (size_t j = 0; j < global; j++) {
        cl_ulong want = (cl_ulong)((cl_long)c + s + v + l + (cl_long)f + u +
                                   (cl_long)j);

        if (got[j] != want)
            fail("scalars round %d element %zu is %llu, expected %llu", round,
                 j, (unsigned long long)got[j], (unsigned long long)want);
    }
}

/* Clones a kernel with its arguments set and checks that the clone keeps
 * them while the original changes, if the device has clCloneKernel. */
static void step_clone(struct state *st)
{
    cl_kernel affine = kernel_named(st, "affine");
    cl_kernel clone;
    size_t global = N;
    cl_int err;

    if (device_version(st->device) < 21) {
        fprintf(stderr, "note: device is older than OpenCL 2.1, "
                        "clCloneKernel skipped\n");
        return;
    }
    launch_affine(st, affine, 1, 2, 5, -11);
    clone = clCloneKernel(affine, &err);
    if (err == CL_INVALID_OPERATION) {
        fprintf(stderr, "note: clCloneKernel is not supported, skipped\n");
        return;
    }
    CHECK(err);

    /* The clone runs with the arguments copied from the original. */
    CHECK(clEnqueueNDRangeKernel(st->queue, clone, 1, NULL, &global, NULL, 0,
                                 NULL, NULL));
    affine_model(st, 1, 2, 5, -11);
    verify_out(st, 2, "launch of clone");

    /* Changing the original leaves the clone's arguments alone. */
    launch_affine(st, affine, 3, 4, 9, 100);
    CHECK(clEnqueueNDRangeKernel(st->queue, clone, 1, NULL, &global, NULL, 0,
                                 NULL, NULL));
    affine_model(st, 1, 2, 5, -11);
    verify_out(st, 2, "second launch of clone");
    verify_out(st, 4, "launch of original after clone");

    /* And changing the clone leaves the original alone. */
    launch_affine(st, clone, 0, 5, 2, 3);
    CHECK(clEnqueueNDRangeKernel(st->queue, affine, 1, NULL, &global, NULL, 0,
                                 NULL, NULL));
    affine_model(st, 3, 4, 9, 100);
    verify_out(st, 5, "launch of changed clone");
    verify_out(st, 4, "relaunch of original");
    CHECK(clReleaseKernel(clone));
}

int main(void)
{
    static struct state st;
    cl_platform_id platform;
    cl_program program;
    cl_kernel by_name;
    cl_uint count = 0;
    cl_mem out64;
    cl_int err;
    size_t max_wg = 0;

    pick_device(&platform, &st.device);
    st.context = clCreateContext(NULL, 1, &st.device, NULL, NULL, &err);
    CHECK(err);
    st.queue = clCreateCommandQueueWithProperties(st.context, st.device, NULL,
                                                  &err);
    CHECK(err);
    program = build_source(st.context, st.device, kernel_source,
                           BUILD_OPTIONS);

    /* All kernels at once, matched to their names afterwards. */
    CHECK(clCreateKernelsInProgram(program, 0, NULL, &count));
    EXPECT(count == NKERNELS, "clCreateKernelsInProgram counts %u", count);
    {
        cl_kernel all[NKERNELS];

        CHECK(clCreateKernelsInProgram(program, NKERNELS, all, NULL));
        for (size_t i = 0; i < NKERNELS; i++) {
            char name[64];

            CHECK(clGetKernelInfo(all[i], CL_KERNEL_FUNCTION_NAME,
                                  sizeof(name), name, NULL));
            st.k[i] = NULL;
            for (size_t j = 0; j < NKERNELS; j++) {
                if (strcmp(name, kernel_names[j]) == 0)
                    st.k[j] = all[i];
            }
            EXPECT(strcmp(name, "") != 0, "kernel %zu has no name", i);
        }
        for (size_t j = 0; j < NKERNELS; j++)
            EXPECT(st.k[j] != NULL, "no kernel %s", kernel_names[j]);
    }
    check_program_info(&st, program);
    CHECK(clGetKernelWorkGroupInfo(kernel_named(&st, "reduce"), st.device,
                                   CL_KERNEL_WORK_GROUP_SIZE, sizeof(max_wg),
                                   &max_wg, NULL));
    EXPECT(max_wg >= 16, "reduce work-group size limit is %zu", max_wg);

    /* Buffers: inputs and the table are read-only and set from the host. */
    for (size_t j = 0; j < TABLE_SIZE; j++)
        st.table_host[j] = rng();
    for (size_t j = 0; j < N; j++)
        st.idx_host[j] = (cl_uchar)rng();
    st.table = clCreateBuffer(st.context,
                              CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                              sizeof(st.table_host), st.table_host, &err);
    CHECK(err);
    st.idx = clCreateBuffer(st.context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                            sizeof(st.idx_host), st.idx_host, &err);
    CHECK(err);
    for (int p = 0; p < POOL; p++) {
        for (size_t j = 0; j < N; j++)
            st.in_host[p][j] = rng();
        st.in[p] = clCreateBuffer(st.context,
                                  CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                  sizeof(st.in_host[p]), st.in_host[p], &err);
        CHECK(err);
        for (size_t j = 0; j < N; j++)
            st.out_mirror[p][j] = rng();
        st.out[p] = clCreateBuffer(st.context,
                                   CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                   sizeof(st.out_mirror[p]), st.out_mirror[p],
                                   &err);
        CHECK(err);
    }
    out64 = clCreateBuffer(st.context, CL_MEM_WRITE_ONLY,
                           256 * sizeof(cl_ulong), NULL, &err);
    CHECK(err);

    /* A second kernel object for affine, made by name, alternates with the
     * enumerated one. */
    by_name = make_kernel(program, "affine");

    for (int it = 0; it < LAUNCHES; it++) {
        int i = (int)(rng() % POOL);
        int o = (int)(rng() % POOL);

        switch (it % 8) {
        case 0:
            launch_lookup(&st, o);
            break;
        case 1: {
            size_t local = (size_t)16 << (rng() % 3);

            if (local > max_wg)
                local = max_wg >= 32 ? 32 : 16;
            launch_reduce(&st, i, o, local);
            break;
        }
        case 2: {
            struct params p = {
                .base = ((cl_ulong)rng() << 32) | rng(),
                .mul = rng(),
                .shift = (cl_int)(rng() % 8),
                .scale = 0.5f * (float)(rng() % 4),
                .pad = rng(),
            };

            launch_struct(&st, o, &p);
            break;
        }
        case 3:
            launch_affine(&st, by_name, i, o, rng(), (cl_int)rng());
            break;
        default:
            launch_affine(&st, kernel_named(&st, "affine"), i, o, rng(),
                          (cl_int)rng());
            break;
        }
        if (it % 20 == 19)
            verify_out(&st, o, "launch loop");
        if (it % 50 == 25)
            launch_scalars(&st, out64, it / 50);
    }
    for (int o = 0; o < POOL; o++)
        verify_out(&st, o, "launch loop");

    step_clone(&st);

    /* The read-only inputs and the __constant table are untouched. */
    {
        static cl_uint got[N];
        cl_uchar idx_got[N];

        for (int p = 0; p < POOL; p++) {
            CHECK(clEnqueueReadBuffer(st.queue, st.in[p], CL_TRUE, 0,
                                      sizeof(got), got, 0, NULL, NULL));
            expect_uints(got, st.in_host[p], N, "read-only input");
        }
        CHECK(clEnqueueReadBuffer(st.queue, st.table, CL_TRUE, 0,
                                  sizeof(st.table_host), got, 0, NULL, NULL));
        expect_uints(got, st.table_host, TABLE_SIZE, "__constant table");
        CHECK(clEnqueueReadBuffer(st.queue, st.idx, CL_TRUE, 0,
                                  sizeof(idx_got), idx_got, 0, NULL, NULL));
        expect_bytes(idx_got, st.idx_host, sizeof(idx_got), "index buffer");
    }

    CHECK(clReleaseKernel(by_name));
    for (size_t i = 0; i < NKERNELS; i++)
        CHECK(clReleaseKernel(st.k[i]));
    for (int p = 0; p < POOL; p++) {
        CHECK(clReleaseMemObject(st.in[p]));
        CHECK(clReleaseMemObject(st.out[p]));
    }
    CHECK(clReleaseMemObject(out64));
    CHECK(clReleaseMemObject(st.idx));
    CHECK(clReleaseMemObject(st.table));
    CHECK(clReleaseProgram(program));
    CHECK(clReleaseCommandQueue(st.queue));
    CHECK(clReleaseContext(st.context));
    pass();
}
