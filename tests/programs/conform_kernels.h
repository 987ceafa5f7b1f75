/* The conformance program's kernel and program probes: attributes,
 * work-group sizes, argument refusals, clones, native kernels, binaries. */
#ifndef CRANE_TESTS_CONFORM_KERNELS_H
#define CRANE_TESTS_CONFORM_KERNELS_H

static void kernel_strings(const char *what, cl_kernel k)
{
    char s[512];
    char name[96];
    size_t size = 0;
    cl_int err;

    s[0] = '\0';
    err = clGetKernelInfo(k, CL_KERNEL_ATTRIBUTES, sizeof(s), s, NULL);
    snprintf(name, sizeof(name), "%s.attributes", what);
    rec_string(name, err, s);
    err = clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, 0, NULL, &size);
    snprintf(name, sizeof(name), "%s.name-size", what);
    rec_info(name, err, size, NULL);
    err = clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, sizeof(s), s, NULL);
    snprintf(name, sizeof(name), "%s.name", what);
    rec_string(name, err, s);
    if (err == CL_SUCCESS)
        EXPECT(size == strlen(s) + 1, "%s: name size %zu for '%s'", what,
               size, s);
    snprintf(name, sizeof(name), "%s.name-small", what);
    REC_ERR(name, clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, 2, s, NULL));
    snprintf(name, sizeof(name), "%s.bad-param", what);
    REC_ERR(name, clGetKernelInfo(k, 0x7fffffff, sizeof(s), s, NULL));
}

static void work_group_info(const char *what, cl_kernel k, cl_device_id dev)
{
    const cl_kernel_work_group_info params[] = {
        CL_KERNEL_WORK_GROUP_SIZE, CL_KERNEL_LOCAL_MEM_SIZE,
        CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE,
        CL_KERNEL_PRIVATE_MEM_SIZE};
    size_t wg[3] = {9, 9, 9};
    unsigned char v[64];
    char name[96];
    size_t size = 0;
    cl_int err;

    err = clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_COMPILE_WORK_GROUP_SIZE,
                                   sizeof(wg), wg, &size);
    snprintf(name, sizeof(name), "%s.compile-wg", what);
    rec(name, "err %d size %zu %zu,%zu,%zu", (int)err, size, wg[0], wg[1],
        wg[2]);
    for (size_t p = 0; p < sizeof(params) / sizeof(params[0]); p++) {
        memset(v, 0, sizeof(v));
        err = clGetKernelWorkGroupInfo(k, dev, params[p], sizeof(v), v,
                                       &size);
        snprintf(name, sizeof(name), "%s.wg-0x%x", what,
                 (unsigned)params[p]);
        rec_info(name, err, size, v);
    }
    snprintf(name, sizeof(name), "%s.wg-bad-param", what);
    REC_ERR(name, clGetKernelWorkGroupInfo(k, dev, 0x7fffffff, sizeof(v), v,
                                           NULL));
    snprintf(name, sizeof(name), "%s.wg-small", what);
    REC_ERR(name, clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_WORK_GROUP_SIZE,
                                           1, v, NULL));
}

/* A kernel with reqd_work_group_size(4, 2, 1): its size is the one a NULL
 * local size gets, and another is refused. */
static void required_size(struct env *e, cl_kernel k, cl_mem out)
{
    size_t global[2] = {8, 4};
    size_t bad[2] = {8, 1};
    cl_int got[32];
    cl_int err;

    CHECK(clSetKernelArg(k, 0, sizeof(out), &out));
    err = clEnqueueNDRangeKernel(e->q, k, 2, NULL, global, NULL, 0, NULL,
                                 NULL);
    rec("kernel.fixed.null-local", "err %d", (int)err);
    if (err == CL_SUCCESS) {
        CHECK(clEnqueueReadBuffer(e->q, out, CL_TRUE, 0, sizeof(got), got, 0,
                                  NULL, NULL));
        for (int i = 0; i < 32; i++)
            EXPECT(got[i] == 42, "reqd_work_group_size: item %d saw local "
                   "size code %d", i, got[i]);
    }
    err = clEnqueueNDRangeKernel(e->q, k, 2, NULL, global, bad, 0, NULL,
                                 NULL);
    rec("kernel.fixed.other-local", "err %d", (int)err);
    EXPECT(err == CL_INVALID_WORK_GROUP_SIZE, "a local size other than "
           "reqd_work_group_size: %d", err);
}

/* clSetKernelArg's refusals (CTS negative_invalid_arg_size) and a local
 * argument of every size up to the device's local memory. */
static void arg_refusals(struct env *e, cl_kernel k, cl_mem out)
{
    cl_int v = 5;
    cl_ulong local = 0;
    size_t size;
    size_t global = 16, lsz = 8;
    cl_int err;
    cl_int got[16];

    REC_ERR("arg.int-short", clSetKernelArg(k, 1, 2, &v));
    REC_ERR("arg.int-long", clSetKernelArg(k, 1, 8, &v));
    REC_ERR("arg.mem-short", clSetKernelArg(k, 0, 4, &out));
    REC_ERR("arg.local-zero", clSetKernelArg(k, 2, 0, NULL));
    REC_ERR("arg.local-value", clSetKernelArg(k, 2, 8, &v));
    REC_ERR("arg.index", clSetKernelArg(k, 3, sizeof(v), &v));
    /* Not a kernel handle as a buffer: PoCL takes it (and would crash at
     * the launch), the shim refuses it (CL_INVALID_MEM_OBJECT). */
    CHECK(clGetDeviceInfo(e->device, CL_DEVICE_LOCAL_MEM_SIZE, sizeof(local),
                          &local, NULL));
    rec("device.local-mem", "%llu", (unsigned long long)local);
    CHECK(clSetKernelArg(k, 0, sizeof(out), &out));
    CHECK(clSetKernelArg(k, 1, sizeof(v), &v));
    /* CTS min_max_local_mem_size: the whole local memory, minus what the
     * kernel itself holds, as one argument. */
    size_t own = 0;
    CHECK(clSetKernelArg(k, 2, lsz * sizeof(cl_int), NULL));
    CHECK(clGetKernelWorkGroupInfo(k, e->device, CL_KERNEL_LOCAL_MEM_SIZE,
                                   sizeof(size), &size, NULL));
    own = size - lsz * sizeof(cl_int);
    rec("kernel.hinted.own-local", "%zu", own);
    size = (size_t)local - own;
    REC_ERR("arg.local-max", clSetKernelArg(k, 2, size, NULL));
    err = clEnqueueNDRangeKernel(e->q, k, 1, NULL, &global, &lsz, 0, NULL,
                                 NULL);
    rec("kernel.hinted.local-max", "err %d", (int)err);
    EXPECT(err == CL_SUCCESS, "a local argument of the whole local memory "
           "(%zu bytes): %d", size, err);
    CHECK(clEnqueueReadBuffer(e->q, out, CL_TRUE, 0, sizeof(got), got, 0,
                              NULL, NULL));
    for (int i = 0; i < 16; i++)
        EXPECT(got[i] == v + 1, "hinted: out[%d] = %d", i, got[i]);
}

/* CTS options_uniform_work_group_size: a global size that no work-group
 * size divides. */
static void uniform_sizes(struct env *e, cl_mem out)
{
    static const char *src =
        "__kernel void odd(__global int *o) { o[get_global_id(0)] = 1; }\n";
    const char *opts[] = {"", "-cl-uniform-work-group-size",
                          "-cl-std=CL2.0", "-cl-std=CL2.0 "
                          "-cl-uniform-work-group-size"};
    size_t global = 10, local = 4;
    cl_bool nonuni = CL_FALSE;
    cl_int err;

    err = clGetDeviceInfo(e->device, CL_DEVICE_NON_UNIFORM_WORK_GROUP_SUPPORT,
                          sizeof(nonuni), &nonuni, NULL);
    rec("device.non-uniform", "err %d value %u", (int)err,
        (unsigned)nonuni);
    for (int i = 0; i < 4; i++) {
        char name[64];
        cl_program p = clCreateProgramWithSource(e->ctx, 1, &src, NULL, &err);
        CHECK(err);
        err = clBuildProgram(p, 1, &e->device, opts[i], NULL, NULL);
        snprintf(name, sizeof(name), "uniform%d.build", i);
        rec(name, "err %d", (int)err);
        if (err == CL_SUCCESS) {
            cl_kernel k = make_kernel(p, "odd");
            CHECK(clSetKernelArg(k, 0, sizeof(out), &out));
            snprintf(name, sizeof(name), "uniform%d.launch", i);
            REC_ERR(name, clEnqueueNDRangeKernel(e->q, k, 1, NULL, &global,
                                                 &local, 0, NULL, NULL));
            CHECK(clFinish(e->q));
            CHECK(clReleaseKernel(k));
        }
        CHECK(clReleaseProgram(p));
    }
}

/* CTS clone_kernel_with_exec_info: a clone keeps the SVM pointers set by
 * clSetKernelExecInfo and runs. */
static void clone_exec_info(struct env *e, cl_kernel k, cl_mem out)
{
    cl_device_svm_capabilities caps = 0;
    cl_kernel clone;
    cl_int err;
    void *svm;

    /* Only with --dump: a switch is refused (-EOPNOTSUPP) while the
     * program holds SVM, which the re-home cases count as a failure. */
    if (e->version < 21 || !conform_dump)
        return;
    clGetDeviceInfo(e->device, CL_DEVICE_SVM_CAPABILITIES, sizeof(caps),
                    &caps, NULL);
    rec("device.svm", "0x%llx", (unsigned long long)caps);
    if (!(caps & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER))
        return;
    svm = clSVMAlloc(e->ctx, CL_MEM_READ_WRITE, 4096, 0);
    EXPECT(svm != NULL, "clSVMAlloc failed");
    REC_ERR("clone.exec-info", clSetKernelExecInfo(k,
            CL_KERNEL_EXEC_INFO_SVM_PTRS, sizeof(svm), &svm));
    clone = clCloneKernel(k, &err);
    rec("clone.clone", "err %d", (int)err);
    CHECK(err);
    CHECK(clSetKernelArg(clone, 0, sizeof(out), &out));
    size_t global = 8;
    REC_ERR("clone.launch", clEnqueueNDRangeKernel(e->q, clone, 1, NULL,
                                                   &global, NULL, 0, NULL,
                                                   NULL));
    cl_int got[8];
    CHECK(clEnqueueReadBuffer(e->q, out, CL_TRUE, 0, sizeof(got), got, 0,
                              NULL, NULL));
    for (int i = 0; i < 8; i++)
        EXPECT(got[i] == 7, "the clone wrote %d at %d", got[i], i);
    CHECK(clReleaseKernel(clone));
    clSVMFree(e->ctx, svm);
}

/* A native kernel: runs (on the host, with the buffer's bytes) where the
 * device says CL_EXEC_NATIVE_KERNEL, is refused otherwise. */
struct native_args {
    cl_int *data;
    cl_int add;
};

static void native_fn(void *p)
{
    struct native_args *a = p;

    for (int i = 0; i < 16; i++)
        a->data[i] += a->add;
}

static void native_kernel(struct env *e, cl_mem out)
{
    cl_device_exec_capabilities caps = 0;
    struct native_args a = {NULL, 3};
    const void *loc = &a.data;
    cl_int got[16], init[16];
    cl_int err;

    CHECK(clGetDeviceInfo(e->device, CL_DEVICE_EXECUTION_CAPABILITIES,
                          sizeof(caps), &caps, NULL));
    rec("device.exec-caps", "0x%llx", (unsigned long long)caps);
    for (int i = 0; i < 16; i++)
        init[i] = i;
    CHECK(clEnqueueWriteBuffer(e->q, out, CL_TRUE, 0, sizeof(init), init, 0,
                               NULL, NULL));
    err = clEnqueueNativeKernel(e->q, native_fn, &a, sizeof(a), 1, &out, &loc,
                                0, NULL, NULL);
    rec("native.enqueue", "err %d", (int)err);
    /* Refused where the device has none (remoted: conform-known.txt). */
    if (!(caps & CL_EXEC_NATIVE_KERNEL)) {
        EXPECT(err == CL_INVALID_OPERATION, "a native kernel where the "
               "device has none: %d", err);
        return;
    }
    CHECK(err);
    CHECK(clEnqueueReadBuffer(e->q, out, CL_TRUE, 0, sizeof(got), got, 0,
                              NULL, NULL));
    for (int i = 0; i < 16; i++)
        EXPECT(got[i] == i + 3, "the native kernel left %d at %d", got[i],
               i);
}

static void kernels(struct env *e)
{
    cl_program p = build_source(e->ctx, e->device, kernel_source, NULL);
    cl_kernel fixed = make_kernel(p, "fixed");
    cl_kernel hinted = make_kernel(p, "hinted");
    cl_kernel named = make_kernel(
        p, "a_kernel_with_a_rather_long_name_for_kernel_name_size");
    cl_int err;
    cl_mem out = clCreateBuffer(e->ctx, CL_MEM_READ_WRITE, 4096, NULL, &err);

    CHECK(err);
    kernel_strings("kernel.fixed", fixed);
    kernel_strings("kernel.hinted", hinted);
    kernel_strings("kernel.named", named);
    work_group_info("kernel.fixed", fixed, e->device);
    work_group_info("kernel.hinted", hinted, e->device);
    required_size(e, fixed, out);
    arg_refusals(e, hinted, out);
    uniform_sizes(e, out);
    clone_exec_info(e, named, out);
    /* Only with --dump and without --no-native: a native kernel under
     * re-homes every N calls crashed the program (a re-home between the
     * enqueue and its run; not fixed yet), and switched its device's
     * capability changes under it. */
    if (conform_dump && !conform_no_native)
        native_kernel(e, out);
    CHECK(clReleaseMemObject(out));
    CHECK(clReleaseKernel(named));
    CHECK(clReleaseKernel(hinted));
    CHECK(clReleaseKernel(fixed));
    CHECK(clReleaseProgram(p));
}

#endif /* CRANE_TESTS_CONFORM_KERNELS_H */
