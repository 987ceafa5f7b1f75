/* Executors for programs and kernels: create, build, arguments, launch. */
#include "exec.h"

#include "validate.h"

#include <stdlib.h>
#include <string.h>

static cl_int program_from_binaries(struct px_call *c, cl_context ctx,
                                    const cl_device_id *devs,
                                    cl_program *prog)
{
    const Crane__CreateProgram *p = c->m->create_program;
    size_t n = p->n_devices;
    size_t *lens = calloc(n, sizeof(*lens));
    const unsigned char **bins = calloc(n, sizeof(*bins));
    cl_int *status = calloc(n, sizeof(*status));
    cl_int err;

    if (!lens || !bins || !status) {
        free(lens);
        free(bins);
        free(status);
        return px_fail(c, CL_OUT_OF_HOST_MEMORY, "out of memory");
    }
    /* Inline, or one after another in the bulk (validate.c checked that
     * the lengths add up to it). */
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        if (p->bulk_len) {
            lens[i] = p->binary_lens[i];
            bins[i] = c->bulk + at;
            at += lens[i];
        } else {
            lens[i] = p->binaries[i].len;
            bins[i] = p->binaries[i].data;
        }
    }
    *prog = clCreateProgramWithBinary(ctx, (cl_uint)n, devs, lens, bins,
                                      status, &err);
    free(lens);
    free(bins);
    /* The per-device statuses go back with the reply. */
    c->reply.statuses = status;
    c->reply.n_statuses = n;
    c->value_owner = status;
    return err;
}

cl_int px_exec_program(struct px_call *c)
{
    const Crane__CreateProgram *p = c->m->create_program;
    cl_device_id devs[PX_MAX_DEVICES];
    cl_program prog = NULL;
    cl_context ctx;
    cl_int err;

    err = px_new_in_context(c, p->id, PX_PROGRAM,
                            "program id", p->context, &ctx);
    if (err != CL_SUCCESS)
        return err;
    err = px_device_handles(c, p->devices, p->n_devices, devs);
    if (err != CL_SUCCESS)
        return err;
    /* Source, IL or names: inline, or the whole bulk. */
    const uint8_t *bytes = p->bulk_len ? c->bulk : p->source.data;
    size_t bytes_len = p->bulk_len ? c->bulk_len : p->source.len;
    switch (p->origin) {
    case CRANE__PROGRAM_ORIGIN__PROGRAM_SOURCE: {
        /* An empty source is a valid program (OpenCL refuses only a
         * NULL string): given as "", since a length of 0 would mean a
         * NUL-terminated string at BYTES. */
        const char *src = bytes_len ? (const char *)bytes : "";
        size_t len = bytes_len;
        prog = clCreateProgramWithSource(ctx, 1, &src, len ? &len : NULL,
                                         &err);
        break;
    }
    case CRANE__PROGRAM_ORIGIN__PROGRAM_BINARY:
        err = program_from_binaries(c, ctx, devs, &prog);
        break;
    case CRANE__PROGRAM_ORIGIN__PROGRAM_IL:
        if (bytes_len == 0)
            return px_fail(c, CL_INVALID_VALUE, "empty IL");
        prog = clCreateProgramWithIL(ctx, bytes, bytes_len, &err);
        break;
    case CRANE__PROGRAM_ORIGIN__PROGRAM_BUILTIN: {
        /* The names as a NUL-terminated string. */
        char *names = malloc(bytes_len + 1);
        if (!names)
            return px_fail(c, CL_OUT_OF_HOST_MEMORY, "out of memory");
        memcpy(names, bytes, bytes_len);
        names[bytes_len] = '\0';
        prog = clCreateProgramWithBuiltInKernels(ctx, (cl_uint)p->n_devices,
                                                 devs, names, &err);
        free(names);
        break;
    }
    default:
        return px_fail(c, CL_INVALID_VALUE, "unknown program origin");
    }
    if (!prog)
        return err != CL_SUCCESS ? err : CL_OUT_OF_RESOURCES;
    if (err != CL_SUCCESS) {
        clReleaseProgram(prog);
        return err;
    }
    return px_tenant_add(c->t, p->id, PX_PROGRAM, prog, 0, false);
}


static cl_int link_programs(struct px_call *c, const cl_device_id *devs,
                   cl_program *inputs)
{
    const Crane__BuildProgram *b = c->m->build_program;
    cl_program prog;
    cl_context ctx;
    cl_int err;

    err = px_new_in_context(c, b->link_id, PX_PROGRAM,
                            "program id for the link", b->context, &ctx);
    if (err != CL_SUCCESS)
        return err;
    prog = clLinkProgram(ctx, (cl_uint)b->n_devices,
                         b->n_devices ? devs : NULL, b->options,
                         (cl_uint)b->n_inputs, inputs, NULL, NULL, &err);
    /* A failed link may still make a program, to read its log from; the
     * reply's count says whether it did (a vendor that makes none gives
     * the program none either). */
    c->reply.count = prog != NULL;
    if (prog) {
        cl_int kept = px_tenant_add(c->t, b->link_id, PX_PROGRAM, prog, 0,
                                    false);
        if (err == CL_SUCCESS)
            err = kept;
    }
    return err;
}

cl_int px_exec_build(struct px_call *c)
{
    const Crane__BuildProgram *b = c->m->build_program;
    cl_device_id devs[PX_MAX_DEVICES];
    cl_program prog = NULL, *inputs = NULL;
    char *options = NULL;
    cl_int err;

    err = px_device_handles(c, b->devices, b->n_devices, devs);
    if (err != CL_SUCCESS)
        return err;
    if (b->op != CRANE__BUILD_OP__LINK) {
        prog = px_known(c, b->program, PX_PROGRAM, &err);
        if (!prog)
            return err;
    }
    err = px_handle_array(c, b->inputs, b->n_inputs, PX_PROGRAM,
                          (void ***)&inputs);
    if (err != CL_SUCCESS)
        return err;
    /* Argument info lets validate_dev.c check each argument's kind. */
    if (b->op != CRANE__BUILD_OP__LINK &&
        !(options = px_build_options(b->options))) {
        free(inputs);
        return px_fail(c, CL_OUT_OF_HOST_MEMORY, "out of memory");
    }
    switch (b->op) {
    case CRANE__BUILD_OP__BUILD:
        err = clBuildProgram(prog, (cl_uint)b->n_devices,
                             b->n_devices ? devs : NULL, options, NULL,
                             NULL);
        break;
    case CRANE__BUILD_OP__COMPILE:
        err = clCompileProgram(prog, (cl_uint)b->n_devices,
                               b->n_devices ? devs : NULL, options,
                               (cl_uint)b->n_inputs,
                               b->n_inputs ? inputs : NULL,
                               b->n_inputs ? (const char **)b->input_names
                                           : NULL,
                               NULL, NULL);
        break;
    case CRANE__BUILD_OP__LINK:
        err = link_programs(c, devs, inputs);
        break;
    default:
        err = px_fail(c, CL_INVALID_VALUE, "unknown build op");
        break;
    }
    free(options);
    free(inputs);
    return err;
}

/* clCreateKernelsInProgram: all of them made, the first ones kept. */
static cl_int all_kernels(struct px_call *c, cl_program prog)
{
    const Crane__CreateKernel *k = c->m->create_kernel;
    cl_kernel *v;
    cl_uint n = 0;
    cl_int err;

    err = px_check_new_ids(c, k->all_ids, k->n_all_ids, PX_KERNEL);
    if (err != CL_SUCCESS)
        return err;
    err = clCreateKernelsInProgram(prog, 0, NULL, &n);
    if (err != CL_SUCCESS)
        return err;
    c->reply.count = n;
    if (n == 0 || k->n_all_ids == 0)
        return CL_SUCCESS;
    v = calloc(n, sizeof(*v));
    if (!v)
        return px_fail(c, CL_OUT_OF_HOST_MEMORY, "out of memory");
    err = clCreateKernelsInProgram(prog, n, v, NULL);
    if (err == CL_SUCCESS)
        err = px_tenant_adopt(c->t, k->all_ids, k->n_all_ids, PX_KERNEL,
                              (void **)v, n);
    free(v);
    return err;
}

cl_int px_exec_kernel(struct px_call *c)
{
    const Crane__CreateKernel *k = c->m->create_kernel;
    cl_kernel kernel;
    cl_program prog;
    cl_int err;

    if (k->clone_of) {
        cl_kernel src = px_known(c, k->clone_of, PX_KERNEL, &err);
        if (!src)
            return err;
        err = px_tenant_check_new(c->t, k->id, PX_KERNEL);
        if (err != CL_SUCCESS)
            return px_fail(c, err, "bad or used kernel id");
        kernel = clCloneKernel(src, &err);
    } else {
        prog = px_known(c, k->program, PX_PROGRAM, &err);
        if (!prog)
            return err;
        if (k->n_all_ids || (!k->id && !k->name[0]))
            return all_kernels(c, prog);
        err = px_tenant_check_new(c->t, k->id, PX_KERNEL);
        if (err != CL_SUCCESS)
            return px_fail(c, err, "bad or used kernel id");
        kernel = clCreateKernel(prog, k->name, &err);
    }
    if (!kernel)
        return err != CL_SUCCESS ? err : CL_OUT_OF_RESOURCES;
    return px_tenant_add(c->t, k->id, PX_KERNEL, kernel, 0, false);
}

/* Sets the N arguments at ARGS on KERNEL. */
static cl_int set_args(struct px_call *c, cl_kernel kernel,
                       Crane__KernelArg **args, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const Crane__KernelArg *a = args[i];
        cl_int err;

        if (a->is_svm) {
            err = px_svm_arg(c, kernel, a);
            if (c->error[0])
                return err;
        } else if (a->is_object || a->object) {
            void *h = NULL;
            if (a->object) {
                /* A memory object, or else a sampler. */
                h = px_tenant_handle(c->t, a->object, PX_MEM, &err);
                if (!h)
                    h = px_tenant_handle(c->t, a->object, PX_SAMPLER, &err);
                if (!h)
                    return px_fail(c, CL_INVALID_ARG_VALUE,
                                   "argument %u: unknown object %llu",
                                   a->index, (unsigned long long)a->object);
            }
            err = clSetKernelArg(kernel, a->index, sizeof(cl_mem),
                                 h ? &h : NULL);
        } else if (a->is_local) {
            err = clSetKernelArg(kernel, a->index, a->local_size, NULL);
        } else {
            err = clSetKernelArg(kernel, a->index, a->value.len,
                                 a->value.len ? a->value.data : NULL);
        }
        if (err != CL_SUCCESS)
            return px_fail(c, err, "argument %u", a->index);
    }
    return CL_SUCCESS;
}

cl_int px_exec_kernel_args(struct px_call *c)
{
    const Crane__SetKernelArgs *s = c->m->set_kernel_args;
    cl_kernel kernel;
    cl_int err;

    kernel = px_known(c, s->kernel, PX_KERNEL, &err);
    if (!kernel)
        return err;
    return set_args(c, kernel, s->args, s->n_args);
}

cl_int px_exec_launch(struct px_call *c)
{
    const Crane__LaunchKernel *l = c->m->launch_kernel;
    size_t off[3], gsz[3], lsz[3];
    cl_event slot, *evp, *wait = NULL;
    cl_command_queue q;
    cl_kernel kernel;
    cl_int err;

    q = px_known(c, l->queue, PX_QUEUE, &err);
    if (!q)
        return err;
    kernel = px_known(c, l->kernel, PX_KERNEL, &err);
    if (!kernel)
        return err;
    err = px_event_slot(c, l->event, &slot, &evp);
    if (err != CL_SUCCESS)
        return err;
    err = set_args(c, kernel, l->args, l->n_args);
    if (err == CL_SUCCESS)
        err = px_validate_launch(c, q, kernel);
    if (err != CL_SUCCESS)
        return err;
    for (uint32_t i = 0; i < l->work_dim; i++) {
        gsz[i] = l->global_size[i];
        off[i] = l->n_global_offset ? l->global_offset[i] : 0;
        lsz[i] = l->n_local_size ? l->local_size[i] : 0;
    }
    err = px_wait_list(c, l->wait, l->n_wait, &wait);
    if (err != CL_SUCCESS)
        return err;
    err = clEnqueueNDRangeKernel(q, kernel, l->work_dim,
                                 l->n_global_offset ? off : NULL, gsz,
                                 l->n_local_size ? lsz : NULL,
                                 (cl_uint)l->n_wait, wait, evp);
    free(wait);
    if (err != CL_SUCCESS)
        return err;
    return px_event_keep(c, l->event, slot);
}

cl_int px_exec_spec_constant(struct px_call *c)
{
    const Crane__SetSpecConstant *s = c->m->set_spec_constant;
    cl_program prog;
    cl_int err;

    prog = px_known(c, s->program, PX_PROGRAM, &err);
    if (!prog)
        return err;
    return clSetProgramSpecializationConstant(prog, s->spec_id, s->value.len,
                                              s->value.data);
}
