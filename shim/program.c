/* Programs: every way of creating one, building, compiling and linking, all
 * recorded so that a re-home can rebuild them the same way. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "proto/log.h"
#include "shim.h"
#include "entry.h"

/* Whether the vendor has argument info for `p`, and whether the program
 * asked for it (else clGetKernelArgInfo answers as without it). */
static void program_note_arg_info(struct shim_program *p, const char *options)
{
    bool asked = options && strstr(options, "-cl-kernel-arg-info");

    atomic_store(&p->arg_info, asked || shim_config.arg_info);
    p->arg_info_hidden = !asked && shim_config.arg_info;
}

int shim_program_sig_classes(const struct shim_program *p,
                             const char *kernel, cl_uint n_args,
                             uint8_t *cls)
{
    if (p->origin == SHIM_FROM_SOURCE)
        return shim_kernel_sig_classes(p->source, kernel, n_args, cls);
    if (p->origin != SHIM_FROM_LINK)
        return -ENOENT;
    /* Linked: the one input whose source defines it. */
    int found = 0;
    for (cl_uint i = 0; i < p->n_inputs; i++)
        if (p->inputs[i]->origin == SHIM_FROM_SOURCE &&
            shim_kernel_sig_classes(p->inputs[i]->source, kernel, n_args,
                                    cls) == 0)
            found++;
    if (found != 1)
        memset(cls, SHIM_ARG_UNKNOWN, n_args);
    return found == 1 ? 0 : -ENOENT;
}

static int real_devices(struct shim_device **devs, cl_uint n,
                        cl_device_id *out)
{
    for (cl_uint i = 0; i < n; i++)
        out[i] = devs[i]->obj.real;
    return 0;
}

static int program_build_step(struct shim_program *p)
{
    cl_device_id devs[64];
    char *opts = NULL;
    cl_int err = CL_SUCCESS;

    if (p->step == SHIM_NOT_BUILT || p->origin == SHIM_FROM_LINK)
        return 0;
    real_devices(p->build_devices, p->n_build_devices, devs);
    opts = shim_program_build_options(p->options);
    if (!opts)
        return -ENOMEM;
    if (p->step == SHIM_BUILT) {
        err = VENDOR(p->obj.real)->clBuildProgram(
            p->obj.real, p->n_build_devices,
            p->n_build_devices ? devs : NULL, opts, NULL, NULL);
    } else {
        cl_program heads[64];
        for (cl_uint i = 0; i < p->n_inputs && i < 64; i++)
            heads[i] = p->inputs[i]->obj.real;
        err = VENDOR(p->obj.real)->clCompileProgram(
            p->obj.real, p->n_build_devices,
            p->n_build_devices ? devs : NULL, opts, p->n_inputs,
            p->n_inputs ? heads : NULL,
            (const char **)(p->n_inputs ? p->input_names : NULL), NULL,
            NULL);
    }
    free(opts);
    if (err != CL_SUCCESS)
        CRN_WARN("program: rebuild gave %d (it gave success before)", err);
    return 0;
}

static int program_realize(struct shim_obj *o)
{
    struct shim_program *p = (void *)o;
    void *ctx = p->context->obj.real;
    cl_device_id devs[64];
    cl_int err = CL_INVALID_OPERATION;

    real_devices(p->devices, p->n_devices, devs);
    p->real_from_binary = false;
    /* Built, compiled or linked before: from its kept binaries if they
     * fit the device (program_cache.c), else made again as below. */
    if (p->cache && shim_program_cache_realize(p)) {
        shim_program_cache_count(true);
        return 0;
    }
    switch (p->origin) {
    case SHIM_FROM_SOURCE: {
        const char *src = p->source;
        p->obj.real = VENDOR(ctx)->clCreateProgramWithSource(ctx, 1, &src,
                                                             NULL, &err);
        break;
    }
    case SHIM_FROM_BINARY:
        p->obj.real = VENDOR(ctx)->clCreateProgramWithBinary(
            ctx, p->n_devices, devs, p->bin_sizes,
            (const unsigned char **)p->bins, NULL, &err);
        break;
    case SHIM_FROM_IL:
        if (VENDOR(ctx)->clCreateProgramWithIL)
            p->obj.real = VENDOR(ctx)->clCreateProgramWithIL(
                ctx, p->il, p->il_size, &err);
        break;
    case SHIM_FROM_BUILTIN:
        p->obj.real = VENDOR(ctx)->clCreateProgramWithBuiltInKernels(
            ctx, p->n_devices, devs, p->source, &err);
        break;
    case SHIM_FROM_LINK: {
        cl_program in[64];
        char *opts = shim_program_build_options(p->options);
        for (cl_uint i = 0; i < p->n_inputs && i < 64; i++)
            in[i] = p->inputs[i]->obj.real;
        if (opts)
            p->obj.real = VENDOR(ctx)->clLinkProgram(
                ctx, p->n_devices, p->n_devices ? devs : NULL, opts,
                p->n_inputs, in, NULL, NULL, &err);
        free(opts);
        break;
    }
    }
    if (!p->obj.real) {
        shim_vendor_err = err;
        return -EIO;
    }
    /* A link that failed may still make a program, with a log to read:
     * the program gets both (clLinkProgram). */
    shim_vendor_err = err;
    for (cl_uint i = 0; i < p->n_spec; i++)
        VENDOR(p->obj.real)->clSetProgramSpecializationConstant(
            p->obj.real, p->spec[i].id, p->spec[i].size, p->spec[i].value);
    if (p->origin == SHIM_FROM_BINARY)
        shim_program_cache_count(true);
    else if (p->origin == SHIM_FROM_LINK || p->step != SHIM_NOT_BUILT)
        shim_program_cache_count(false);
    return program_build_step(p);
}

static struct shim_device **copy_devices(const cl_device_id *list, cl_uint n,
                                         cl_int *err)
{
    struct shim_device **d;

    if (n == 0 || !list)
        return NULL;
    if (n > 64) {
        *err = CL_INVALID_VALUE;
        return NULL;
    }
    for (cl_uint i = 0; i < n; i++)
        if (!shim_obj_is(list[i], SHIM_DEVICE)) {
            *err = CL_INVALID_DEVICE;
            return NULL;
        }
    d = malloc(n * sizeof(*d));
    if (!d) {
        *err = CL_OUT_OF_HOST_MEMORY;
        return NULL;
    }
    memcpy(d, list, n * sizeof(*d));
    for (cl_uint i = 0; i < n; i++)
        shim_obj_retain_child(&d[i]->obj);
    return d;
}

static struct shim_program *program_alloc(struct shim_context *c,
                                          enum shim_program_origin origin)
{
    struct shim_program *p = shim_obj_new(&shim_program_kind, sizeof(*p), NULL);

    if (p) {
        p->context = c;
        p->origin = origin;
        shim_obj_retain_child(&c->obj);
    }
    return p;
}

/* Realizes a freshly recorded program; on failure drops it. */
static cl_program program_finish(struct shim_program *p, cl_int err,
                                 cl_int *errcode_ret)
{
    if (err == CL_SUCCESS && program_realize(&p->obj) < 0)
        err = shim_vendor_err;
    if (err != CL_SUCCESS && p) {
        shim_obj_release(p, SHIM_PROGRAM);
        p = NULL;
    }
    if (errcode_ret)
        *errcode_ret = err;
    return (cl_program)p;
}

#define CONTEXT_OR_FAIL(c, context, errcode_ret)                    \
    struct shim_context *c = SHIM_AS(shim_context, SHIM_CONTEXT, context); \
    if (!c) {                                                       \
        if (errcode_ret)                                            \
            *errcode_ret = CL_INVALID_CONTEXT;                      \
        return NULL;                                                \
    }

SHIM_EXPORT CL_API_ENTRY cl_program CL_API_CALL
clCreateProgramWithSource(cl_context context, cl_uint count,
                          const char **strings, const size_t *lengths,
                          cl_int *errcode_ret)
{
    CONTEXT_OR_FAIL(c, context, errcode_ret);
    size_t total = 0;
    cl_int err = CL_SUCCESS;
    struct shim_program *p = NULL;
    cl_program h;

    if (count == 0 || !strings) {
        if (errcode_ret)
            *errcode_ret = CL_INVALID_VALUE;
        return NULL;
    }
    for (cl_uint i = 0; i < count; i++) {
        if (!strings[i]) {
            if (errcode_ret)
                *errcode_ret = CL_INVALID_VALUE;
            return NULL;
        }
        total += lengths && lengths[i] ? lengths[i] : strlen(strings[i]);
    }
    shim_enter();
    p = program_alloc(c, SHIM_FROM_SOURCE);
    if (!p || !(p->source = malloc(total + 1))) {
        err = CL_OUT_OF_HOST_MEMORY;
    } else {
        size_t at = 0;
        for (cl_uint i = 0; i < count; i++) {
            size_t n =
                lengths && lengths[i] ? lengths[i] : strlen(strings[i]);
            memcpy(p->source + at, strings[i], n);
            at += n;
        }
        p->source[at] = '\0';
    }
    h = program_finish(p, err, errcode_ret);
    shim_leave();
    return h;
}

SHIM_EXPORT CL_API_ENTRY cl_program CL_API_CALL clCreateProgramWithBinary(
    cl_context context, cl_uint num_devices, const cl_device_id *device_list,
    const size_t *lengths, const unsigned char **binaries,
    cl_int *binary_status, cl_int *errcode_ret)
{
    CONTEXT_OR_FAIL(c, context, errcode_ret);
    cl_int err = CL_SUCCESS;
    struct shim_program *p = NULL;
    cl_program h;

    if (!num_devices || !device_list || !lengths || !binaries) {
        if (errcode_ret)
            *errcode_ret = CL_INVALID_VALUE;
        return NULL;
    }
    for (cl_uint i = 0; i < num_devices; i++)
        if (!lengths[i] || !binaries[i]) {
            if (binary_status)
                binary_status[i] = CL_INVALID_VALUE;
            if (errcode_ret)
                *errcode_ret = CL_INVALID_VALUE;
            return NULL;
        }
    shim_enter();
    p = program_alloc(c, SHIM_FROM_BINARY);
    if (!p)
        err = CL_OUT_OF_HOST_MEMORY;
    else
        p->devices = copy_devices(device_list, num_devices, &err);
    if (err == CL_SUCCESS) {
        p->n_devices = num_devices;
        p->bin_sizes = calloc(num_devices, sizeof(size_t));
        p->bins = calloc(num_devices, sizeof(unsigned char *));
        if (!p->bin_sizes || !p->bins)
            err = CL_OUT_OF_HOST_MEMORY;
        for (cl_uint i = 0; err == CL_SUCCESS && i < num_devices; i++) {
            p->bins[i] = malloc(lengths[i]);
            if (!p->bins[i]) {
                err = CL_OUT_OF_HOST_MEMORY;
                break;
            }
            memcpy(p->bins[i], binaries[i], lengths[i]);
            p->bin_sizes[i] = lengths[i];
        }
    }
    if (err == CL_SUCCESS && program_realize(&p->obj) < 0)
        err = shim_vendor_err;
    if (binary_status)
        for (cl_uint i = 0; i < num_devices; i++)
            binary_status[i] = err == CL_SUCCESS ? CL_SUCCESS : err;
    if (err != CL_SUCCESS && p) {
        shim_obj_release(p, SHIM_PROGRAM);
        p = NULL;
    }
    if (errcode_ret)
        *errcode_ret = err;
    h = (cl_program)p;
    shim_leave();
    return h;
}

SHIM_EXPORT CL_API_ENTRY cl_program CL_API_CALL
clCreateProgramWithBuiltInKernels(cl_context context, cl_uint num_devices,
                                  const cl_device_id *device_list,
                                  const char *kernel_names,
                                  cl_int *errcode_ret)
{
    CONTEXT_OR_FAIL(c, context, errcode_ret);
    cl_int err = CL_SUCCESS;
    struct shim_program *p;
    cl_program h;

    if (!num_devices || !device_list || !kernel_names) {
        if (errcode_ret)
            *errcode_ret = CL_INVALID_VALUE;
        return NULL;
    }
    shim_enter();
    p = program_alloc(c, SHIM_FROM_BUILTIN);
    if (!p) {
        err = CL_OUT_OF_HOST_MEMORY;
    } else {
        p->devices = copy_devices(device_list, num_devices, &err);
        p->n_devices = p->devices ? num_devices : 0;
        if (err == CL_SUCCESS && !(p->source = strdup(kernel_names)))
            err = CL_OUT_OF_HOST_MEMORY;
    }
    h = program_finish(p, err, errcode_ret);
    shim_leave();
    return h;
}

SHIM_EXPORT CL_API_ENTRY cl_program CL_API_CALL
clCreateProgramWithIL(cl_context context, const void *il, size_t length,
                      cl_int *errcode_ret)
{
    CONTEXT_OR_FAIL(c, context, errcode_ret);
    cl_int err = CL_SUCCESS;
    struct shim_program *p;
    cl_program h;

    if (!il || !length) {
        if (errcode_ret)
            *errcode_ret = CL_INVALID_VALUE;
        return NULL;
    }
    shim_enter();
    p = program_alloc(c, SHIM_FROM_IL);
    if (!p || !(p->il = malloc(length))) {
        err = CL_OUT_OF_HOST_MEMORY;
    } else {
        memcpy(p->il, il, length);
        p->il_size = length;
    }
    h = program_finish(p, err, errcode_ret);
    shim_leave();
    return h;
}

SHIM_RETAIN_RELEASE(Program, cl_program, SHIM_PROGRAM, CL_INVALID_PROGRAM)

/* A program a switch made from its kept binaries (program_cache.c) and
 * now built or compiled again: the vendor would build the binary, not the
 * source with the new options (PoCL aborts), so it gets a program made
 * from its source (or IL) first, as the program made it.  Not while
 * kernels (or programs) hold a built one: the vendor then refuses the
 * build as it would have natively; a compiled object has no kernels, and
 * the programs linked from it no longer need it. */
static void source_again(struct shim_program *p)
{
    void *ctx = p->context->obj.real, *old = p->obj.real, *fresh = NULL;
    const char *src = p->source;
    cl_int err = CL_INVALID_OPERATION;

    if ((p->origin != SHIM_FROM_SOURCE && p->origin != SHIM_FROM_IL) ||
        !p->real_from_binary ||
        (p->step != SHIM_COMPILED && atomic_load(&p->obj.child_refs) != 0))
        return;
    if (p->origin == SHIM_FROM_SOURCE)
        fresh = VENDOR(ctx)->clCreateProgramWithSource(ctx, 1, &src, NULL,
                                                       &err);
    else if (VENDOR(ctx)->clCreateProgramWithIL)
        fresh = VENDOR(ctx)->clCreateProgramWithIL(ctx, p->il, p->il_size,
                                                   &err);
    if (!fresh) {
        CRN_WARN("program: cannot make it from its source again (%d)", err);
        return;
    }
    for (cl_uint i = 0; i < p->n_spec; i++)
        VENDOR(fresh)->clSetProgramSpecializationConstant(
            fresh, p->spec[i].id, p->spec[i].size, p->spec[i].value);
    p->obj.real = fresh;
    p->real_from_binary = false;
    VENDOR(old)->clReleaseProgram(old);
}

/* Records one build or compile step and runs it on the vendor. */
/* The header programs and their names a compile was given, retained by
 * the caller once the vendor accepted it; CL_SUCCESS or the error. */
static cl_int build_inputs(cl_uint n_headers, const cl_program *headers,
                           const char **header_names,
                           struct shim_program ***inputs, char ***names)
{
    if (!n_headers)
        return CL_SUCCESS;
    *inputs = calloc(n_headers, sizeof(**inputs));
    *names = calloc(n_headers, sizeof(**names));
    if (!*inputs || !*names)
        return CL_OUT_OF_HOST_MEMORY;
    for (cl_uint i = 0; i < n_headers; i++) {
        if (!shim_obj_is(headers[i], SHIM_PROGRAM))
            return CL_INVALID_VALUE;
        (*inputs)[i] = (struct shim_program *)headers[i];
        (*names)[i] = shim_strdup(header_names[i]);
    }
    return CL_SUCCESS;
}

/* The vendor's verdict on a build or compile (STEP) of P: only a build
 * it accepted is recorded (and replayed by a re-home); one it refused left
 * the program as it was, and one that failed to compile left it without
 * an executable, which a re-home reproduces by not building it. */
static cl_int vendor_build(struct shim_program *p, cl_uint num_devices,
                           struct shim_device **devs, const char *options,
                           enum shim_build_step step, cl_uint n_headers,
                           struct shim_program **inputs,
                           const cl_program *headers,
                           const char **header_names)
{
    cl_device_id real_devs[64];
    cl_program real_heads[64];
    char *full = shim_program_build_options(options);
    cl_int err;

    if (!full)
        return CL_OUT_OF_HOST_MEMORY;
    real_devices(devs, devs ? num_devices : 0, real_devs);
    for (cl_uint i = 0; i < n_headers && i < 64; i++)
        real_heads[i] = inputs[i]->obj.real;
    source_again(p);
    if (step == SHIM_BUILT)
        err = VENDOR(p->obj.real)->clBuildProgram(
            p->obj.real, num_devices, num_devices ? real_devs : NULL, full,
            NULL, NULL);
    else
        err = VENDOR(p->obj.real)->clCompileProgram(
            p->obj.real, num_devices, num_devices ? real_devs : NULL, full,
            n_headers, headers ? real_heads : NULL, header_names, NULL,
            NULL);
    free(full);
    if (err == CL_BUILD_PROGRAM_FAILURE || err == CL_COMPILE_PROGRAM_FAILURE) {
        /* Under the store lock, with build_gen: a switch making twins
         * ahead (prebuild.c) reads them there. */
        shim_store_lock();
        p->step = SHIM_NOT_BUILT;
        p->build_gen++;
        shim_store_unlock();
        shim_program_cache_free(p);
    }
    return err;
}

/* What a build accepted replaces what an earlier one recorded: swapped
 * under the store lock (prebuild.c reads them there), the old ones let go
 * after.  P takes DEVS, INPUTS, NAMES and OPTS. */
static void record_build(struct shim_program *p, struct shim_device **devs,
                         cl_uint n_devs, struct shim_program **inputs,
                         char **names, cl_uint n_inputs, char *opts,
                         enum shim_build_step step)
{
    for (cl_uint i = 0; i < n_inputs; i++)
        shim_obj_retain_child(&inputs[i]->obj);
    struct shim_device **old_devs = p->build_devices;
    cl_uint n_old_devs = p->n_build_devices;
    struct shim_program **old_inputs = p->inputs;
    char **old_names = p->input_names, *old_opts = p->options;
    cl_uint n_old_inputs = p->n_inputs;
    shim_store_lock();
    p->build_devices = devs;
    p->n_build_devices = n_devs;
    p->inputs = inputs;
    p->input_names = names;
    p->n_inputs = n_inputs;
    p->options = opts;
    p->step = step;
    p->build_gen++;
    shim_store_unlock();
    for (cl_uint i = 0; i < n_old_devs; i++)
        shim_obj_release_child(&old_devs[i]->obj);
    free(old_devs);
    for (cl_uint i = 0; i < n_old_inputs; i++) {
        shim_obj_release_child(&old_inputs[i]->obj);
        free(old_names ? old_names[i] : NULL);
    }
    free(old_inputs);
    free(old_names);
    free(old_opts);
}

static cl_int build_or_compile(struct shim_program *p, cl_uint num_devices,
                               const cl_device_id *device_list,
                               const char *options,
                               enum shim_build_step step, cl_uint n_headers,
                               const cl_program *headers,
                               const char **header_names)
{
    cl_int err = CL_SUCCESS;
    struct shim_device **devs;
    struct shim_program **inputs = NULL;
    char **names = NULL;
    char *opts;

    if ((num_devices == 0) != (device_list == NULL))
        return CL_INVALID_VALUE;
    if (n_headers && (!headers || !header_names))
        return CL_INVALID_VALUE;
    devs = copy_devices(device_list, num_devices, &err);
    if (err != CL_SUCCESS)
        return err;
    err = build_inputs(n_headers, headers, header_names, &inputs, &names);
    opts = shim_strdup(options);
    if (err == CL_SUCCESS && options && !opts)
        err = CL_OUT_OF_HOST_MEMORY;
    if (err == CL_SUCCESS)
        err = vendor_build(p, num_devices, devs, options, step, n_headers,
                           inputs, headers, header_names);
    if (err != CL_SUCCESS)
        goto drop;
    record_build(p, devs, devs ? num_devices : 0, inputs, names, n_headers,
                 opts, step);
    shim_program_cache_mark(p);
    program_note_arg_info(p, options);
    return CL_SUCCESS;

drop:
    for (cl_uint i = 0; i < num_devices && devs; i++)
        shim_obj_release_child(&devs[i]->obj);
    for (cl_uint i = 0; names && i < n_headers; i++)
        free(names[i]);
    free(devs);
    free(inputs);
    free(names);
    free(opts);
    return err;
}

SHIM_EXPORT CL_API_ENTRY cl_int CL_API_CALL
clBuildProgram(cl_program program, cl_uint num_devices,
               const cl_device_id *device_list, const char *options,
               void(CL_CALLBACK *pfn_notify)(cl_program, void *),
               void *user_data)
{
    struct shim_program *p = SHIM_AS(shim_program, SHIM_PROGRAM, program);
    cl_int err;

    if (!p)
        return CL_INVALID_PROGRAM;
    if (!pfn_notify && user_data)
        return CL_INVALID_VALUE;
    shim_enter();
    err = build_or_compile(p, num_devices, device_list, options, SHIM_BUILT,
                           0, NULL, NULL);
    shim_leave();
    /* The build ran synchronously; the spec allows the callback now. */
    if (pfn_notify && err != CL_INVALID_VALUE && err != CL_INVALID_DEVICE)
        pfn_notify(program, user_data);
    return err;
}

SHIM_EXPORT CL_API_ENTRY cl_int CL_API_CALL clCompileProgram(
    cl_program program, cl_uint num_devices, const cl_device_id *device_list,
    const char *options, cl_uint num_input_headers,
    const cl_program *input_headers, const char **header_include_names,
    void(CL_CALLBACK *pfn_notify)(cl_program, void *), void *user_data)
{
    struct shim_program *p = SHIM_AS(shim_program, SHIM_PROGRAM, program);
    cl_int err;

    if (!p)
        return CL_INVALID_PROGRAM;
    if (!pfn_notify && user_data)
        return CL_INVALID_VALUE;
    shim_enter();
    err = build_or_compile(p, num_devices, device_list, options,
                           SHIM_COMPILED, num_input_headers, input_headers,
                           header_include_names);
    shim_leave();
    if (pfn_notify && err != CL_INVALID_VALUE && err != CL_INVALID_DEVICE)
        pfn_notify(program, user_data);
    return err;
}

SHIM_EXPORT CL_API_ENTRY cl_program CL_API_CALL clLinkProgram(
    cl_context context, cl_uint num_devices, const cl_device_id *device_list,
    const char *options, cl_uint num_input_programs,
    const cl_program *input_programs,
    void(CL_CALLBACK *pfn_notify)(cl_program, void *), void *user_data,
    cl_int *errcode_ret)
{
    CONTEXT_OR_FAIL(c, context, errcode_ret);
    cl_int err = CL_SUCCESS;
    struct shim_program *p;
    cl_program h;

    if (!num_input_programs || !input_programs ||
        (num_devices == 0) != (device_list == NULL) ||
        (!pfn_notify && user_data)) {
        if (errcode_ret)
            *errcode_ret = CL_INVALID_VALUE;
        return NULL;
    }
    for (cl_uint i = 0; i < num_input_programs; i++)
        if (!shim_obj_is(input_programs[i], SHIM_PROGRAM)) {
            if (errcode_ret)
                *errcode_ret = CL_INVALID_PROGRAM;
            return NULL;
        }
    shim_enter();
    p = program_alloc(c, SHIM_FROM_LINK);
    if (!p) {
        err = CL_OUT_OF_HOST_MEMORY;
    } else {
        p->devices = copy_devices(device_list, num_devices, &err);
        p->n_devices = p->devices ? num_devices : 0;
        p->inputs = calloc(num_input_programs, sizeof(*p->inputs));
        p->options = shim_strdup(options);
        if (!p->inputs || (options && !p->options))
            err = CL_OUT_OF_HOST_MEMORY;
        for (cl_uint i = 0; err == CL_SUCCESS && i < num_input_programs;
             i++) {
            p->inputs[i] = (struct shim_program *)input_programs[i];
            shim_obj_retain_child(&p->inputs[i]->obj);
            p->n_inputs++;
        }
        p->step = SHIM_BUILT;
        program_note_arg_info(p, options);
    }
    h = program_finish(p, err, errcode_ret);
    if (h && shim_vendor_err == CL_LINK_PROGRAM_FAILURE && errcode_ret)
        *errcode_ret = CL_LINK_PROGRAM_FAILURE;
    /* Its binaries are kept for a switch's rebuild, as a build's are. */
    if (h && shim_vendor_err == CL_SUCCESS)
        shim_program_cache_mark(p);
    shim_leave();
    if (h && pfn_notify)
        pfn_notify(h, user_data);
    return h;
}

SHIM_EXPORT CL_API_ENTRY cl_int CL_API_CALL clSetProgramReleaseCallback(
    cl_program program, void(CL_CALLBACK *pfn_notify)(cl_program, void *),
    void *user_data)
{
    (void)user_data;
    if (!shim_obj_is(program, SHIM_PROGRAM))
        return CL_INVALID_PROGRAM;
    if (!pfn_notify)
        return CL_INVALID_VALUE;
    /* Deprecated in OpenCL 3.0 and optional: report it unsupported, as
     * most vendors do. */
    return CL_INVALID_OPERATION;
}

SHIM_EXPORT CL_API_ENTRY cl_int CL_API_CALL clSetProgramSpecializationConstant(
    cl_program program, cl_uint spec_id, size_t spec_size,
    const void *spec_value)
{
    struct shim_program *p = SHIM_AS(shim_program, SHIM_PROGRAM, program);
    struct shim_spec_const *grown;
    cl_int err;

    if (!p)
        return CL_INVALID_PROGRAM;
    if (!spec_value || !spec_size)
        return CL_INVALID_VALUE;
    shim_enter();
    err = VENDOR(p->obj.real)->clSetProgramSpecializationConstant
              ? VENDOR(p->obj.real)->clSetProgramSpecializationConstant(
                    p->obj.real, spec_id, spec_size, spec_value)
              : CL_INVALID_OPERATION;
    if (err == CL_SUCCESS) {
        grown = realloc(p->spec, (p->n_spec + 1) * sizeof(*grown));
        if (grown && (grown[p->n_spec].value = malloc(spec_size))) {
            p->spec = grown;
            grown[p->n_spec].id = spec_id;
            grown[p->n_spec].size = spec_size;
            memcpy(grown[p->n_spec].value, spec_value, spec_size);
            p->n_spec++;
            p->build_gen++;
        } else {
            if (grown)
                p->spec = grown;
            err = CL_OUT_OF_HOST_MEMORY;
        }
    }
    shim_leave();
    return err;
}

static void program_destroy(struct shim_obj *o)
{
    struct shim_program *p = (void *)o;

    for (cl_uint i = 0; i < p->n_devices && p->devices; i++)
        shim_obj_release_child(&p->devices[i]->obj);
    for (cl_uint i = 0; i < p->n_build_devices; i++)
        shim_obj_release_child(&p->build_devices[i]->obj);
    for (cl_uint i = 0; i < p->n_inputs; i++) {
        shim_obj_release_child(&p->inputs[i]->obj);
        free(p->input_names ? p->input_names[i] : NULL);
    }
    for (cl_uint i = 0; p->bins && i < p->n_devices; i++)
        free(p->bins[i]);
    for (cl_uint i = 0; i < p->n_spec; i++)
        free(p->spec[i].value);
    free(p->spec);
    free(p->bins);
    free(p->bin_sizes);
    free(p->devices);
    free(p->build_devices);
    free(p->inputs);
    free(p->input_names);
    free(p->options);
    free(p->source);
    free(p->il);
    shim_program_cache_free(p);
    shim_obj_release_child(&p->context->obj);
}

SHIM_RELEASE_REAL_WITH(clReleaseProgram)

const struct shim_kind_ops shim_program_kind = {
    .kind = SHIM_PROGRAM, .name = "program", .twins = true,
    .destroy = program_destroy, .realize = program_realize,
    .release_real = release_real,
};
