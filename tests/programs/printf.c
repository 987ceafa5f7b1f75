/* Printf test: kernels' printf output reaches the program's stdout, whole
 * and in order with the host's own lines, at every blocking point. */
#define TEST_NAME "printf"
#define CL_TARGET_OPENCL_VERSION 300
#include "clcheck.h"

#include <stdint.h>
#include <unistd.h>

/* Rounds of launches, work-items per launch, and the largest captured
 * output. */
#define ROUNDS 40
#define ITEMS 4
#define OUT_MAX (1 << 20)

static const char *kernel_source =
    "__kernel void hello(int round)\n"
    "{\n"
    "    int i = get_global_id(0);\n"
    "    printf(\"k%d.%d hello %s %c%%\\n\", round, i, \"str\", 'c');\n"
    "}\n"
    "__kernel void formats(int round, __global int *out)\n"
    "{\n"
    "    int i = get_global_id(0);\n"
    "    float4 v = (float4)(1.5f, -2.0f, 0.25f, i);\n"
    "    printf(\"k%d.%d fmt %5d|%-4x|%08.3f|%e|%v4hlf|%lu\\n\", round, i,\n"
    "           i * 1000, 255 + i, 3.14159f, 1.0e10f, v, (ulong)i << 40);\n"
    "    out[i] = round + i;\n"
    "}\n";

/* Where the captured stdout goes, and the saved descriptor of the real
 * one. */
static char cap_path[] = "/tmp/crane-printf-XXXXXX";
static int saved_stdout = -1;
static char expected[OUT_MAX];
static size_t expected_len;

/* Appends one line the host expects (whatever printed it) to the model. */
static void expect_line(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
static void expect_line(const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(expected + expected_len, OUT_MAX - expected_len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= OUT_MAX - expected_len)
        fail("the expected output grew past %d bytes", OUT_MAX);
    expected_len += (size_t)n;
}

/* The host's own marker line, printed through stdio and in the model. */
static void host_line(const char *what, int round)
{
    printf("host %s %d\n", what, round);
    fflush(stdout);
    expect_line("host %s %d\n", what, round);
}

/* Points fd 1 at a private file until restore_stdout. */
static void capture_stdout(void)
{
    int fd = mkstemp(cap_path);

    if (fd < 0)
        fail("mkstemp(%s) failed", cap_path);
    fflush(stdout);
    saved_stdout = dup(1);
    if (saved_stdout < 0 || dup2(fd, 1) < 0)
        fail("cannot redirect stdout");
    close(fd);
}

/* Gives fd 1 back and returns what was written to it (NUL-terminated). */
static char *restore_stdout(size_t *len)
{
    static char got[OUT_MAX + 1];
    FILE *f;

    fflush(stdout);
    if (dup2(saved_stdout, 1) < 0)
        fail("cannot restore stdout");
    close(saved_stdout);
    f = fopen(cap_path, "r");
    if (!f)
        fail("cannot reopen %s", cap_path);
    *len = fread(got, 1, OUT_MAX, f);
    got[*len] = '\0';
    fclose(f);
    unlink(cap_path);
    return got;
}

/* Sorts the lines between host markers: work-items of one launch may print
 * in any order, the launches and the host's lines may not. */
static int line_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void canonical(char *text, size_t len, char *out)
{
    static char *lines[OUT_MAX / 8];
    size_t n = 0;
    size_t start = 0;
    size_t o = 0;
    char *save = NULL;

    (void)len;
    for (char *l = strtok_r(text, "\n", &save); l;
         l = strtok_r(NULL, "\n", &save)) {
        if (n == sizeof(lines) / sizeof(lines[0]))
            fail("too many lines of output");
        lines[n++] = l;
        if (strncmp(l, "host ", 5) == 0) {
            qsort(lines + start, n - 1 - start, sizeof(char *), line_cmp);
            start = n;
        }
    }
    qsort(lines + start, n - start, sizeof(char *), line_cmp);
    for (size_t i = 0; i < n; i++)
        o += (size_t)sprintf(out + o, "%s\n", lines[i]);
    out[o] = '\0';
}

/* The lines one launch of each kernel prints. */
static void expect_hello(int round)
{
    for (int i = 0; i < ITEMS; i++)
        expect_line("k%d.%d hello str c%%\n", round, i);
}

static void expect_formats(int round)
{
    for (int i = 0; i < ITEMS; i++)
        expect_line("k%d.%d fmt %5d|%-4x|%08.3f|%e|%f,%f,%f,%f|%lu\n",
                    round, i, i * 1000, 255 + i, 3.14159f, 1.0e10f, 1.5,
                    -2.0, 0.25, (double)i, (unsigned long)i << 40);
}

/* One round: each blocking point (finish, a blocking read, a wait for an
 * event) must have brought the kernels' lines in before the host's next
 * line. */
static void round_trip(cl_command_queue q, cl_kernel hello, cl_kernel fmts,
                       cl_mem buf, int round)
{
    size_t items = ITEMS;
    cl_int got[ITEMS];
    cl_event ev;

    host_line("round", round);
    CHECK(clSetKernelArg(hello, 0, sizeof(round), &round));
    CHECK(clEnqueueNDRangeKernel(q, hello, 1, NULL, &items, &items, 0, NULL,
                                 NULL));
    expect_hello(round);
    CHECK(clFinish(q));
    host_line("finished", round);
    CHECK(clSetKernelArg(fmts, 0, sizeof(round), &round));
    CHECK(clEnqueueNDRangeKernel(q, fmts, 1, NULL, &items, &items, 0, NULL,
                                 NULL));
    expect_formats(round);
    CHECK(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, sizeof(got), got, 0, NULL,
                              NULL));
    for (int i = 0; i < ITEMS; i++)
        EXPECT(got[i] == round + i, "out[%d] = %d", i, got[i]);
    host_line("read", round);
    CHECK(clEnqueueNDRangeKernel(q, hello, 1, NULL, &items, &items, 0, NULL,
                                 &ev));
    expect_hello(round);
    CHECK(clWaitForEvents(1, &ev));
    CHECK(clReleaseEvent(ev));
    host_line("waited", round);
}

int main(void)
{
    static char want[OUT_MAX + 1];
    static char have[OUT_MAX + 1];
    cl_platform_id platform;
    cl_device_id device;
    cl_context ctx;
    cl_command_queue q;
    cl_program prog;
    cl_kernel hello, fmts;
    cl_mem buf;
    cl_int err;
    char *got;
    size_t got_len;

    pick_device(&platform, &device);
    ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    CHECK(err);
    q = clCreateCommandQueueWithProperties(ctx, device, NULL, &err);
    CHECK(err);
    prog = build_source(ctx, device, kernel_source, NULL);
    hello = make_kernel(prog, "hello");
    fmts = make_kernel(prog, "formats");
    buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, ITEMS * sizeof(cl_int),
                         NULL, &err);
    CHECK(err);
    CHECK(clSetKernelArg(fmts, 1, sizeof(buf), &buf));

    capture_stdout();
    for (int r = 0; r < ROUNDS; r++)
        round_trip(q, hello, fmts, buf, r);
    got = restore_stdout(&got_len);

    canonical(expected, expected_len, want);
    canonical(got, got_len, have);
    if (strcmp(want, have) != 0) {
        size_t i = 0;

        while (want[i] && want[i] == have[i])
            i++;
        while (i > 0 && want[i - 1] != '\n')
            i--;
        fail("the output differs at byte %zu of %zu (%zu captured):\n"
             "want: %.120s\nhave: %.120s", i, strlen(want), got_len,
             want + i, have + i);
    }
    clReleaseMemObject(buf);
    clReleaseKernel(fmts);
    clReleaseKernel(hello);
    clReleaseProgram(prog);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    pass();
}
