/* The conformance program's program-object, refusal and enqueue probes:
 * binary types, CL_PROGRAM_* info, bad arguments, zero-sized launches. */
#ifndef CRANE_TESTS_CONFORM_API_H
#define CRANE_TESTS_CONFORM_API_H

static const char *lib_source =
    "int twice(int v) { return 2 * v; }\n";
static const char *user_source =
    "int twice(int v);\n"
    "__kernel void use(__global int *o) { o[get_global_id(0)] = twice(21); }\n";

static cl_uint binary_type(const char *what, cl_program p, cl_device_id dev)
{
    cl_program_binary_type t = 0x99;
    size_t size = 0;
    cl_int err = clGetProgramBuildInfo(p, dev, CL_PROGRAM_BINARY_TYPE,
                                       sizeof(t), &t, &size);

    rec_info(what, err, size, &t);
    return (cl_uint)t;
}

static void program_info(const char *what, cl_program p)
{
    const cl_program_info params[] = {
        CL_PROGRAM_NUM_DEVICES, CL_PROGRAM_REFERENCE_COUNT,
        CL_PROGRAM_NUM_KERNELS, CL_PROGRAM_SCOPE_GLOBAL_CTORS_PRESENT,
        CL_PROGRAM_SCOPE_GLOBAL_DTORS_PRESENT};
    unsigned char v[64];
    char s[4096];
    char name[96];
    size_t size;
    cl_int err;

    for (size_t i = 0; i < sizeof(params) / sizeof(params[0]); i++) {
        memset(v, 0, sizeof(v));
        size = 0;
        err = clGetProgramInfo(p, params[i], sizeof(v), v, &size);
        snprintf(name, sizeof(name), "%s.0x%x", what, (unsigned)params[i]);
        rec_info(name, err, size, v);
    }
    s[0] = '\0';
    err = clGetProgramInfo(p, CL_PROGRAM_KERNEL_NAMES, sizeof(s), s, &size);
    snprintf(name, sizeof(name), "%s.kernel-names", what);
    rec_string(name, err, s);
    size = 99;
    err = clGetProgramInfo(p, CL_PROGRAM_SOURCE, 0, NULL, &size);
    snprintf(name, sizeof(name), "%s.source-size", what);
    rec_info(name, err, size, NULL);
    size = 99;
    err = clGetProgramInfo(p, CL_PROGRAM_IL, 0, NULL, &size);
    snprintf(name, sizeof(name), "%s.il-size", what);
    rec_info(name, err, size, NULL);
    size = 99;
    err = clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, 0, NULL, &size);
    snprintf(name, sizeof(name), "%s.binary-sizes-size", what);
    rec_info(name, err, size, NULL);
    snprintf(name, sizeof(name), "%s.bad-param", what);
    REC_ERR(name, clGetProgramInfo(p, 0x7fffffff, sizeof(v), v, NULL));
    snprintf(name, sizeof(name), "%s.small", what);
    REC_ERR(name, clGetProgramInfo(p, CL_PROGRAM_NUM_DEVICES, 1, v, NULL));
}

/* A program's one binary, malloc'd (CTS binary_get). */
static unsigned char *get_binary(cl_program p, size_t *len)
{
    unsigned char *bin;

    CHECK(clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof(*len), len,
                           NULL));
    EXPECT(*len > 0, "an empty binary");
    bin = malloc(*len);
    EXPECT(bin != NULL, "out of memory");
    CHECK(clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof(bin), &bin, NULL));
    return bin;
}

/* Runs `use` from a linked program and checks its answer. */
static void run_use(struct env *e, cl_program linked, const char *what)
{
    cl_kernel k = make_kernel(linked, "use");
    size_t global = 4;
    cl_int got[4];
    cl_int err;
    cl_mem out = clCreateBuffer(e->ctx, CL_MEM_READ_WRITE, sizeof(got), NULL,
                                &err);

    CHECK(err);
    CHECK(clSetKernelArg(k, 0, sizeof(out), &out));
    CHECK(clEnqueueNDRangeKernel(e->q, k, 1, NULL, &global, NULL, 0, NULL,
                                 NULL));
    CHECK(clEnqueueReadBuffer(e->q, out, CL_TRUE, 0, sizeof(got), got, 0,
                              NULL, NULL));
    for (int i = 0; i < 4; i++)
        EXPECT(got[i] == 42, "%s: out[%d] = %d", what, i, got[i]);
    CHECK(clReleaseMemObject(out));
    CHECK(clReleaseKernel(k));
}

/* Compiled objects and libraries, kept as binaries and loaded again
 * (CTS execute_after_serialize_reload_object / _library). */
static void binaries(struct env *e)
{
    cl_int err, st;
    cl_program lib = clCreateProgramWithSource(e->ctx, 1, &lib_source, NULL,
                                               &err);
    CHECK(err);
    cl_program user = clCreateProgramWithSource(e->ctx, 1, &user_source,
                                                NULL, &err);
    CHECK(err);
    EXPECT(binary_type("program.lib.type-none", lib, e->device) ==
           CL_PROGRAM_BINARY_TYPE_NONE, "unbuilt: not BINARY_TYPE_NONE");
    CHECK(clCompileProgram(lib, 1, &e->device, NULL, 0, NULL, NULL, NULL,
                           NULL));
    CHECK(clCompileProgram(user, 1, &e->device, NULL, 0, NULL, NULL, NULL,
                           NULL));
    EXPECT(binary_type("program.lib.type-compiled", lib, e->device) ==
           CL_PROGRAM_BINARY_TYPE_COMPILED_OBJECT, "not COMPILED_OBJECT");
    program_info("program.compiled", lib);
    cl_program library = clLinkProgram(e->ctx, 1, &e->device,
                                       "-create-library", 1, &lib, NULL,
                                       NULL, &err);
    CHECK(err);
    EXPECT(binary_type("program.library.type", library, e->device) ==
           CL_PROGRAM_BINARY_TYPE_LIBRARY, "not LIBRARY");
    program_info("program.library", library);
    const struct {
        const char *name;
        cl_program from;
        cl_uint type;
    } reload[] = {{"object", lib, CL_PROGRAM_BINARY_TYPE_COMPILED_OBJECT},
                  {"library", library, CL_PROGRAM_BINARY_TYPE_LIBRARY}};
    for (int i = 0; i < 2; i++) {
        char name[96];
        size_t len;
        unsigned char *bin = get_binary(reload[i].from, &len);
        const unsigned char *cbin = bin;
        cl_program again = clCreateProgramWithBinary(
            e->ctx, 1, &e->device, &len, &cbin, &st, &err);
        CHECK(err);
        free(bin);
        snprintf(name, sizeof(name), "program.reloaded-%s.type",
                 reload[i].name);
        binary_type(name, again, e->device);
        cl_program both[2] = {user, again};
        cl_program linked = clLinkProgram(e->ctx, 1, &e->device, NULL, 2,
                                          both, NULL, NULL, &err);
        snprintf(name, sizeof(name), "program.reloaded-%s.link",
                 reload[i].name);
        rec(name, "err %d", (int)err);
        CHECK(err);
        EXPECT(binary_type("program.linked.type", linked, e->device) ==
               CL_PROGRAM_BINARY_TYPE_EXECUTABLE, "not EXECUTABLE");
        run_use(e, linked, name);
        CHECK(clReleaseProgram(linked));
        CHECK(clReleaseProgram(again));
    }
    CHECK(clReleaseProgram(library));
    CHECK(clReleaseProgram(user));
    CHECK(clReleaseProgram(lib));
}

static void programs(struct env *e)
{
    cl_program p = build_source(e->ctx, e->device, kernel_source, NULL);
    size_t len;
    unsigned char *bin;

    EXPECT(binary_type("program.built.type", p, e->device) ==
           CL_PROGRAM_BINARY_TYPE_EXECUTABLE, "built: not EXECUTABLE");
    program_info("program.built", p);
    bin = get_binary(p, &len);
    free(bin);
    CHECK(clReleaseProgram(p));
    /* Only with --dump (switched too: a compiled object's binary once grew
     * between CL_PROGRAM_BINARY_SIZES and CL_PROGRAM_BINARIES, its twin
     * remade elsewhere, and PoCL wrote past the program's block). */
    if (conform_dump)
        binaries(e);
}

/* Refusals the CTS's negative_* tests check: each must be the vendor's. */
static void negatives(struct env *e)
{
    char s[256];
    cl_ulong a, b;
    cl_uint n;
    cl_platform_id pl;
    cl_int err;
    cl_command_queue q;
    const cl_queue_properties bad_name[] = {0x7777, 0, 0};
    const cl_queue_properties bad_bits[] = {CL_QUEUE_PROPERTIES, 0x4000, 0};
    const cl_queue_properties size_only[] = {CL_QUEUE_SIZE, 16, 0};

    REC_ERR("device.null", clGetDeviceInfo(NULL, CL_DEVICE_NAME, sizeof(s), s,
                                           NULL));
    REC_ERR("device.bad-param", clGetDeviceInfo(e->device, 0x7fffffff,
                                                sizeof(s), s, NULL));
    REC_ERR("device.small", clGetDeviceInfo(e->device, CL_DEVICE_NAME, 1, s,
                                            NULL));
    REC_ERR("device.small-type", clGetDeviceInfo(e->device, CL_DEVICE_TYPE, 1,
                                                 s, NULL));
    REC_ERR("platform.bad-param", clGetPlatformInfo(e->platform, 0x7fffffff,
                                                    sizeof(s), s, NULL));
    REC_ERR("platform.small", clGetPlatformInfo(e->platform, CL_PLATFORM_NAME,
                                                1, s, NULL));
    REC_ERR("platform.ids-none", clGetPlatformIDs(0, NULL, NULL));
    REC_ERR("platform.ids-zero", clGetPlatformIDs(0, &pl, &n));
    REC_ERR("devices.bad-type", clGetDeviceIDs(e->platform, 0, 1, NULL, &n));
    q = clCreateCommandQueue(NULL, e->device, 0, &err);
    rec("queue.null-context", "err %d", (int)err);
    q = clCreateCommandQueue(e->ctx, NULL, 0, &err);
    rec("queue.null-device", "err %d", (int)err);
    q = clCreateCommandQueue(e->ctx, e->device, 0x4000, &err);
    rec("queue.bad-bits", "err %d", (int)err);
    EXPECT(q == NULL, "a queue with unknown properties");
    q = clCreateCommandQueueWithProperties(e->ctx, e->device, bad_name, &err);
    rec("queue2.bad-name", "err %d", (int)err);
    EXPECT(q == NULL, "a queue with an unknown property");
    q = clCreateCommandQueueWithProperties(e->ctx, e->device, bad_bits, &err);
    rec("queue2.bad-bits", "err %d", (int)err);
    q = clCreateCommandQueueWithProperties(e->ctx, e->device, size_only,
                                           &err);
    rec("queue2.size-only", "err %d", (int)err);
    if (q)
        CHECK(clReleaseCommandQueue(q));
    q = clCreateCommandQueueWithProperties(NULL, e->device, NULL, &err);
    rec("queue2.null-context", "err %d", (int)err);
    q = clCreateCommandQueueWithProperties(e->ctx, NULL, NULL, &err);
    rec("queue2.null-device", "err %d", (int)err);
    if (e->version >= 21) {
        REC_ERR("timer.null-device", clGetDeviceAndHostTimer(NULL, &a, &b));
        REC_ERR("timer.null-device-ts", clGetDeviceAndHostTimer(e->device,
                                                                NULL, &b));
        REC_ERR("timer.null-host-ts", clGetDeviceAndHostTimer(e->device, &a,
                                                              NULL));
        REC_ERR("timer.host-null", clGetHostTimer(e->device, NULL));
        REC_ERR("timer.host-null-device", clGetHostTimer(NULL, &a));
    }
}

/* CTS zero_sized_enqueue: a launch with a 0 in its global size does
 * nothing, and its event completes. */
static void enqueues(struct env *e)
{
    static const char *src =
        "__kernel void z(__global int *o) { o[get_global_id(0)] = 1; }\n";
    cl_program p = build_source(e->ctx, e->device, src, NULL);
    cl_kernel k = make_kernel(p, "z");
    size_t zero[1] = {0};
    cl_int err, status = 99;
    cl_event ev = NULL;
    cl_mem out = clCreateBuffer(e->ctx, CL_MEM_READ_WRITE, 64, NULL, &err);

    CHECK(err);
    CHECK(clSetKernelArg(k, 0, sizeof(out), &out));
    err = clEnqueueNDRangeKernel(e->q, k, 1, NULL, zero, NULL, 0, NULL, &ev);
    rec("zero.launch", "err %d", (int)err);
    if (ev) {
        CHECK(clWaitForEvents(1, &ev));
        CHECK(clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS,
                             sizeof(status), &status, NULL));
        rec("zero.status", "%d", (int)status);
        CHECK(clReleaseEvent(ev));
        ev = NULL;
    }
    size_t zero2[2] = {4, 0};
    REC_ERR("zero.launch-2d", clEnqueueNDRangeKernel(e->q, k, 2, NULL, zero2,
                                                     NULL, 0, NULL, NULL));
    /* Not behind a user event: PoCL 3.1 asserts (max_wgs > 0) when it
     * runs such a launch once the event is set. */
    REC_ERR("zero.read", clEnqueueReadBuffer(e->q, out, CL_TRUE, 0, 0, s_buf,
                                             0, NULL, NULL));
    REC_ERR("zero.write", clEnqueueWriteBuffer(e->q, out, CL_TRUE, 0, 0,
                                               s_buf, 0, NULL, NULL));
    REC_ERR("zero.copy", clEnqueueCopyBuffer(e->q, out, out, 0, 32, 0, 0,
                                             NULL, NULL));
    REC_ERR("zero.fill", clEnqueueFillBuffer(e->q, out, s_buf, 4, 0, 0, 0,
                                             NULL, NULL));
    CHECK(clFinish(e->q));
    CHECK(clReleaseMemObject(out));
    CHECK(clReleaseKernel(k));
    CHECK(clReleaseProgram(p));
}

#endif /* CRANE_TESTS_CONFORM_API_H */
