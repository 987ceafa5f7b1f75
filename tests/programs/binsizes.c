/* Binaries asked for again and again, as kernel caches ask for them: the
 * sizes, then the binaries into blocks of exactly those sizes (canaries
 * after each), of a built program, a compiled object and a library; every
 * tenth round each binary is loaded again and run (or linked and run). */
#define TEST_NAME "binsizes"
#define CL_TARGET_OPENCL_VERSION 300
#include "clcheck.h"

#define ROUNDS 120
#define N 256
#define CANARY 64

static const char *built_source =
    "__kernel void add(__global uint *d, uint k)\n"
    "{ d[get_global_id(0)] += k; }\n";

static const char *lib_source =
    "uint twice(uint x) { return 2 * x + 1; }\n";

static const char *user_source =
    "uint twice(uint x);\n"
    "__kernel void use(__global uint *d)\n"
    "{ d[get_global_id(0)] = twice(d[get_global_id(0)]); }\n";

struct env {
    cl_context ctx;
    cl_device_id dev;
    cl_command_queue q;
    cl_mem buf;
};

/* The binary of P (one device) asked the way programs ask: its size, then
 * the bytes into a block of that size, followed by canaries that must
 * stay.  malloc()ed; its size in *LEN. */
static unsigned char *take_binary(cl_program p, size_t *len, const char *what)
{
    size_t sizes_len = 0;

    CHECK(clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, 0, NULL, &sizes_len));
    EXPECT(sizes_len == sizeof(size_t), "%s: %zu bytes of sizes", what,
           sizes_len);
    CHECK(clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof(*len), len,
                           NULL));
    EXPECT(*len > 0, "%s: an empty binary", what);
    unsigned char *bin = malloc(*len + CANARY);
    EXPECT(bin != NULL, "out of memory");
    memset(bin + *len, 0xa5, CANARY);
    CHECK(clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof(bin), &bin, NULL));
    for (size_t i = 0; i < CANARY; i++)
        EXPECT(bin[*len + i] == 0xa5, "%s: %zu bytes of binary written "
               "past its size %zu", what, i + 1, *len);
    return bin;
}

static cl_program from_binary(struct env *e, const unsigned char *bin,
                              size_t len)
{
    cl_int err, st;
    cl_program p = clCreateProgramWithBinary(e->ctx, 1, &e->dev, &len, &bin,
                                             &st, &err);

    CHECK(err);
    CHECK(st);
    return p;
}

/* Runs KERNEL of P over the buffer (filled with 0..N-1) and checks it
 * against f(i) = i * MUL + ADD. */
static void run_check(struct env *e, cl_program p, const char *kernel,
                      cl_uint mul, cl_uint add, int with_k)
{
    cl_uint d[N];
    size_t global = N;
    cl_int err;
    cl_kernel k = clCreateKernel(p, kernel, &err);

    CHECK(err);
    for (cl_uint i = 0; i < N; i++)
        d[i] = i;
    CHECK(clEnqueueWriteBuffer(e->q, e->buf, CL_TRUE, 0, sizeof(d), d, 0,
                               NULL, NULL));
    CHECK(clSetKernelArg(k, 0, sizeof(e->buf), &e->buf));
    if (with_k)
        CHECK(clSetKernelArg(k, 1, sizeof(add), &add));
    CHECK(clEnqueueNDRangeKernel(e->q, k, 1, NULL, &global, NULL, 0, NULL,
                                 NULL));
    CHECK(clEnqueueReadBuffer(e->q, e->buf, CL_TRUE, 0, sizeof(d), d, 0,
                              NULL, NULL));
    for (cl_uint i = 0; i < N; i++)
        EXPECT(d[i] == i * mul + add, "%s: d[%u] = %u, not %u", kernel, i,
               d[i], i * mul + add);
    CHECK(clReleaseKernel(k));
}

/* A compiled object or library's binary loaded again, linked with the
 * user unit and run. */
static void link_run(struct env *e, cl_program user, const unsigned char *bin,
                     size_t len)
{
    cl_int err;
    cl_program again = from_binary(e, bin, len);
    cl_program both[2] = {user, again};
    cl_program linked = clLinkProgram(e->ctx, 1, &e->dev, NULL, 2, both,
                                      NULL, NULL, &err);

    CHECK(err);
    run_check(e, linked, "use", 2, 1, 0);
    CHECK(clReleaseProgram(linked));
    CHECK(clReleaseProgram(again));
}

static cl_program compiled(struct env *e, const char *src)
{
    cl_int err;
    cl_program p = clCreateProgramWithSource(e->ctx, 1, &src, NULL, &err);

    CHECK(err);
    CHECK(clCompileProgram(p, 1, &e->dev, NULL, 0, NULL, NULL, NULL, NULL));
    return p;
}

int main(void)
{
    struct env e;
    cl_platform_id platform;
    cl_int err;

    setvbuf(stdout, NULL, _IOLBF, 0);
    pick_device(&platform, &e.dev);
    e.ctx = clCreateContext(NULL, 1, &e.dev, NULL, NULL, &err);
    CHECK(err);
    e.q = clCreateCommandQueueWithProperties(e.ctx, e.dev, NULL, &err);
    CHECK(err);
    e.buf = clCreateBuffer(e.ctx, CL_MEM_READ_WRITE, N * sizeof(cl_uint),
                           NULL, &err);
    CHECK(err);
    cl_program built = build_source(e.ctx, e.dev, built_source, NULL);
    cl_program lib = compiled(&e, lib_source);
    cl_program user = compiled(&e, user_source);
    cl_program library = clLinkProgram(e.ctx, 1, &e.dev, "-create-library",
                                       1, &lib, NULL, NULL, &err);
    CHECK(err);
    for (int r = 0; r < ROUNDS; r++) {
        size_t len[3];
        unsigned char *b[3] = {take_binary(built, &len[0], "built"),
                               take_binary(lib, &len[1], "compiled"),
                               take_binary(library, &len[2], "library")};
        if (r % 10 == 9) {
            cl_program p = from_binary(&e, b[0], len[0]);
            CHECK(clBuildProgram(p, 1, &e.dev, NULL, NULL, NULL));
            run_check(&e, p, "add", 1, (cl_uint)r, 1);
            CHECK(clReleaseProgram(p));
            link_run(&e, user, b[1], len[1]);
            link_run(&e, user, b[2], len[2]);
        }
        for (int i = 0; i < 3; i++)
            free(b[i]);
    }
    CHECK(clReleaseProgram(library));
    CHECK(clReleaseProgram(user));
    CHECK(clReleaseProgram(lib));
    CHECK(clReleaseProgram(built));
    CHECK(clReleaseMemObject(e.buf));
    CHECK(clReleaseCommandQueue(e.q));
    CHECK(clReleaseContext(e.ctx));
    pass();
}
