/* Binary test: programs rebuilt from their own binaries, and programs made
 * by separate compilation (with an embedded header) and linking. */
#define TEST_NAME "binaries"
#define CL_TARGET_OPENCL_VERSION 300
#include "clcheck.h"

#include <stdint.h>

/* Words per buffer and launches per program. */
#define N 4096
#define LAUNCHES 150

/* The -D value the source program is built with; the model uses it too. */
#define BIAS 5
#define SOURCE_OPTIONS "-DBIAS=5"
#define MUL 7

static const char *source =
    "__kernel void scale(__global uint *d, uint f)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    d[i] = d[i] * f + BIAS + (uint)i;\n"
    "}\n";

/* An embedded header shared by two separately compiled units. */
static const char *header_source =
    "#define MUL 7\n"
    "uint helper(uint x);\n";

static const char *unit_kernel =
    "#include \"crane_defs.h\"\n"
    "__kernel void use_helper(__global uint *d, uint k)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    d[i] = helper(d[i]) * MUL + k + EXTRA;\n"
    "}\n";

static const char *unit_helper =
    "#include \"crane_defs.h\"\n"
    "uint helper(uint x)\n"
    "{\n"
    "    return (x ^ (x >> 3)) + MUL;\n"
    "}\n";

/* The -D value the kernel unit is compiled with. */
#define EXTRA 11
#define UNIT_OPTIONS "-DEXTRA=11"

/* The objects every step uses. */
struct state {
    cl_context context;
    cl_device_id device;
    cl_command_queue queue;
};

/* Model of the scale kernel. */
static void scale_model(cl_uint *d, cl_uint f)
{
    for (size_t i = 0; i < N; i++)
        d[i] = d[i] * f + BIAS + (cl_uint)i;
}

/* Model of the use_helper kernel. */
static void helper_model(cl_uint *d, cl_uint k)
{
    for (size_t i = 0; i < N; i++)
        d[i] = ((d[i] ^ (d[i] >> 3)) + MUL) * MUL + k + EXTRA;
}

/* Returns a program's binary type for the test device. */
static cl_program_binary_type binary_type(struct state *st, cl_program p)
{
    cl_program_binary_type t = 0;

    CHECK(clGetProgramBuildInfo(p, st->device, CL_PROGRAM_BINARY_TYPE,
                                sizeof(t), &t, NULL));
    return t;
}

/* Returns a malloc'd copy of a built program's binary and its size. */
static unsigned char *get_binary(cl_program p, size_t *size)
{
    unsigned char *bin;

    CHECK(clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof(*size), size,
                           NULL));
    EXPECT(*size > 0, "binary size is 0");
    bin = malloc(*size);
    if (bin == NULL)
        fail("out of memory");
    CHECK(clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof(bin), &bin, NULL));
    return bin;
}

/* Creates and builds a program from a binary. */
static cl_program from_binary(struct state *st, const unsigned char *bin,
                              size_t size)
{
    cl_int err, status = 1;
    cl_program p;

    p = clCreateProgramWithBinary(st->context, 1, &st->device, &size, &bin,
                                  &status, &err);
    CHECK(err);
    CHECK(status);
    CHECK(clBuildProgram(p, 1, &st->device, NULL, NULL, NULL));
    EXPECT(binary_type(st, p) == CL_PROGRAM_BINARY_TYPE_EXECUTABLE,
           "program from binary has binary type 0x%x",
           (unsigned)binary_type(st, p));
    return p;
}

/* Compiles one unit against the embedded header, failing with the log. */
static cl_program compile_unit(struct state *st, const char *src,
                               cl_program header, const char *options)
{
    const char *include_name = "crane_defs.h";
    cl_program p;
    cl_int err;

    p = clCreateProgramWithSource(st->context, 1, &src, NULL, &err);
    CHECK(err);
    err = clCompileProgram(p, 1, &st->device, options, 1, &header,
                           &include_name, NULL, NULL);
    if (err != CL_SUCCESS) {
        static char log[16384];

        clGetProgramBuildInfo(p, st->device, CL_PROGRAM_BUILD_LOG,
                              sizeof(log) - 1, log, NULL);
        fail("clCompileProgram returned %d, log:\n%s", err, log);
    }
    EXPECT(binary_type(st, p) == CL_PROGRAM_BINARY_TYPE_COMPILED_OBJECT,
           "compiled unit has binary type 0x%x",
           (unsigned)binary_type(st, p));
    return p;
}

/* Launches one kernel per iteration, alternating between the given kernels,
 * each with its own buffer and model, verifying along the way. */
static void run_kernels_n(struct state *st, cl_kernel *k, int nk,
                          void (*model)(cl_uint *, cl_uint), const char *what,
                          int launches)
{
    cl_mem bufs[4];
    static cl_uint mirror[4][N];
    static cl_uint got[N];
    size_t global = N;
    cl_int err;

    for (int b = 0; b < nk; b++) {
        for (size_t i = 0; i < N; i++)
            mirror[b][i] = (cl_uint)(i * 2654435761u) ^ (cl_uint)b;
        bufs[b] = clCreateBuffer(st->context,
                                 CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                 sizeof(mirror[b]), mirror[b], &err);
        CHECK(err);
    }
    for (int it = 0; it < launches; it++) {
        int b = it % nk;
        cl_uint f = 3u + (cl_uint)it * 2u;

        CHECK(clSetKernelArg(k[b], 0, sizeof(cl_mem), &bufs[b]));
        CHECK(clSetKernelArg(k[b], 1, sizeof(f), &f));
        CHECK(clEnqueueNDRangeKernel(st->queue, k[b], 1, NULL, &global, NULL,
                                     0, NULL, NULL));
        model(mirror[b], f);
        if (it % 25 == 24 || it >= launches - nk) {
            char msg[128];

            CHECK(clEnqueueReadBuffer(st->queue, bufs[b], CL_TRUE, 0,
                                      sizeof(got), got, 0, NULL, NULL));
            snprintf(msg, sizeof(msg), "%s, kernel %d after launch %d", what,
                     b, it);
            expect_uints(got, mirror[b], N, msg);
        }
    }
    for (int b = 0; b < nk; b++)
        CHECK(clReleaseMemObject(bufs[b]));
}

static void run_kernels(struct state *st, cl_kernel *k, int nk,
                        void (*model)(cl_uint *, cl_uint), const char *what)
{
    run_kernels_n(st, k, nk, model, what, LAUNCHES);
}

/* Builds from source, rebuilds from the binary, and runs both. */
static void step_binaries(struct state *st)
{
    cl_program src_prog, bin_prog, bin_prog2;
    cl_kernel k[3];
    unsigned char *bin, *bin2;
    size_t size, size2;

    src_prog = build_source(st->context, st->device, source, SOURCE_OPTIONS);
    EXPECT(binary_type(st, src_prog) == CL_PROGRAM_BINARY_TYPE_EXECUTABLE,
           "source program has binary type 0x%x",
           (unsigned)binary_type(st, src_prog));
    bin = get_binary(src_prog, &size);
    bin_prog = from_binary(st, bin, size);

    /* The binary of a program made from a binary builds again too. */
    bin2 = get_binary(bin_prog, &size2);
    bin_prog2 = from_binary(st, bin2, size2);

    k[0] = make_kernel(src_prog, "scale");
    k[1] = make_kernel(bin_prog, "scale");
    k[2] = make_kernel(bin_prog2, "scale");
    run_kernels(st, k, 3, scale_model, "source and binary programs");
    for (int i = 0; i < 3; i++)
        CHECK(clReleaseKernel(k[i]));
    CHECK(clReleaseProgram(src_prog));
    CHECK(clReleaseProgram(bin_prog));
    CHECK(clReleaseProgram(bin_prog2));
    free(bin);
    free(bin2);
}

/* Compiles two units against a header program, links them, and runs the
 * linked kernel alongside one from the linked program's binary. */
static void step_compile_link(struct state *st)
{
    cl_program header, unit_k, unit_h, linked, relinked;
    cl_program units[2];
    cl_kernel k[2];
    unsigned char *bin;
    size_t size;
    cl_int err;

    header = clCreateProgramWithSource(st->context, 1, &header_source, NULL,
                                       &err);
    CHECK(err);
    unit_k = compile_unit(st, unit_kernel, header, UNIT_OPTIONS);
    unit_h = compile_unit(st, unit_helper, header, "");
    units[0] = unit_k;
    units[1] = unit_h;
    linked = clLinkProgram(st->context, 1, &st->device, "", 2, units, NULL,
                           NULL, &err);
    if (err != CL_SUCCESS) {
        static char log[16384];

        log[0] = '\0';
        if (linked != NULL)
            clGetProgramBuildInfo(linked, st->device, CL_PROGRAM_BUILD_LOG,
                                  sizeof(log) - 1, log, NULL);
        fail("clLinkProgram returned %d, log:\n%s", err, log);
    }
    EXPECT(binary_type(st, linked) == CL_PROGRAM_BINARY_TYPE_EXECUTABLE,
           "linked program has binary type 0x%x",
           (unsigned)binary_type(st, linked));
    bin = get_binary(linked, &size);
    relinked = from_binary(st, bin, size);

    k[0] = make_kernel(linked, "use_helper");
    k[1] = make_kernel(relinked, "use_helper");
    run_kernels(st, k, 2, helper_model, "linked programs");
    CHECK(clReleaseKernel(k[0]));
    CHECK(clReleaseKernel(k[1]));
    CHECK(clReleaseProgram(relinked));
    CHECK(clReleaseProgram(linked));
    CHECK(clReleaseProgram(unit_k));
    CHECK(clReleaseProgram(unit_h));
    CHECK(clReleaseProgram(header));
    free(bin);
}

/* Words of the big program's constant table: its source (~3 MiB) and its
 * binary (the table alone is 0.94 MiB, plus code) each exceed one 1 MiB message. */
#define TABLE_WORDS (240u * 1024u)

static cl_uint table_word(cl_uint j)
{
    return (j * 2654435761u) >> 3;
}

/* Model of the lookup kernel. */
static void lookup_model(cl_uint *d, cl_uint f)
{
    for (size_t i = 0; i < N; i++)
        d[i] = d[i] * f + table_word((d[i] ^ (cl_uint)i) % TABLE_WORDS);
}

/* A program bigger than any one message: built from a big source, then
 * made again from its big binary, both run and checked. */
static void step_big_program(struct state *st)
{
    cl_ulong max_const = 0;
    size_t cap = (size_t)TABLE_WORDS * 12 + 512, at = 0, size;
    char *src;
    unsigned char *bin;
    cl_program big, big_bin;
    cl_kernel k[2];

    CHECK(clGetDeviceInfo(st->device, CL_DEVICE_MAX_CONSTANT_BUFFER_SIZE,
                          sizeof(max_const), &max_const, NULL));
    if (max_const < (cl_ulong)TABLE_WORDS * sizeof(cl_uint)) {
        fprintf(stderr, "note: constant buffers of %llu bytes: big program "
                        "step skipped\n",
                (unsigned long long)max_const);
        return;
    }
    if ((src = malloc(cap)) == NULL)
        fail("out of memory");
    at += (size_t)snprintf(src + at, cap - at,
                           "__constant uint table[%u] = {", TABLE_WORDS);
    for (cl_uint j = 0; j < TABLE_WORDS; j++)
        at += (size_t)snprintf(src + at, cap - at, "%uu,", table_word(j));
    snprintf(src + at, cap - at,
             "};\n__kernel void lookup(__global uint *d, uint f)\n{\n"
             "    size_t i = get_global_id(0);\n"
             "    d[i] = d[i] * f + table[(d[i] ^ (uint)i) %% %uu];\n}\n",
             TABLE_WORDS);
    big = build_source(st->context, st->device, src, "");
    bin = get_binary(big, &size);
    EXPECT(size > (1u << 20), "big program's binary has only %zu bytes",
           size);
    big_bin = from_binary(st, bin, size);
    k[0] = make_kernel(big, "lookup");
    k[1] = make_kernel(big_bin, "lookup");
    /* Few launches: every re-home during them rebuilds both programs. */
    run_kernels_n(st, k, 2, lookup_model, "big programs", 6);
    CHECK(clReleaseKernel(k[0]));
    CHECK(clReleaseKernel(k[1]));
    CHECK(clReleaseProgram(big_bin));
    CHECK(clReleaseProgram(big));
    free(bin);
    free(src);
}

int main(void)
{
    static struct state st;
    cl_platform_id platform;
    cl_bool compiler = CL_FALSE, linker = CL_FALSE;
    cl_int err;

    pick_device(&platform, &st.device);
    CHECK(clGetDeviceInfo(st.device, CL_DEVICE_COMPILER_AVAILABLE,
                          sizeof(compiler), &compiler, NULL));
    CHECK(clGetDeviceInfo(st.device, CL_DEVICE_LINKER_AVAILABLE,
                          sizeof(linker), &linker, NULL));
    if (!compiler || !linker)
        skip("device has no online compiler or linker");
    st.context = clCreateContext(NULL, 1, &st.device, NULL, NULL, &err);
    CHECK(err);
    st.queue = clCreateCommandQueueWithProperties(st.context, st.device, NULL,
                                                  &err);
    CHECK(err);

    step_binaries(&st);
    step_compile_link(&st);
    step_big_program(&st);

    CHECK(clReleaseCommandQueue(st.queue));
    CHECK(clReleaseContext(st.context));
    pass();
}
