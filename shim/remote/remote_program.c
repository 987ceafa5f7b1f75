/* The remote backend's programs: creation from source, binaries, IL or
 * built-in kernels, and builds. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proto/log.h"
#include "remote.h"

/* --- programs */

/* Puts LEN program bytes at BYTES into CP: inline when small, else
 * announced as bulk (the caller sends BYTES after the message).  Refuses,
 * logged, what exceeds the channel's bulk limit. */
static int program_bytes(Crane__CreateProgram *cp, const void *bytes,
                         size_t len, cl_int *errcode_ret)
{
    if (len > SHIM_REMOTE_MAX_BULK) {
        CRN_ERROR("remote: a program of %zu bytes exceeds the remoting "
                  "limit of %u bytes (docs/remoting.md): not created",
                  len, SHIM_REMOTE_MAX_BULK);
        RC_SET_ERR(CL_OUT_OF_RESOURCES);
        return -EMSGSIZE;
    }
    if (len > SHIM_REMOTE_PROGRAM_INLINE)
        cp->bulk_len = len;
    else if (cp->origin != CRANE__PROGRAM_ORIGIN__PROGRAM_BINARY) {
        cp->source.data = (uint8_t *)bytes;
        cp->source.len = len;
    }
    return 0;
}

cl_program CL_API_CALL rc_clCreateProgramWithSource(cl_context c,
                                                    cl_uint count,
                                                    const char **strings,
                                                    const size_t *lengths,
                                                    cl_int *errcode_ret)
{
    Crane__CreateProgram cp = CRANE__CREATE_PROGRAM__INIT;
    size_t total = 0;

    if (!count || !strings) {
        RC_SET_ERR(CL_INVALID_VALUE);
        return NULL;
    }
    for (cl_uint i = 0; i < count; i++) {
        if (!strings[i]) {
            RC_SET_ERR(CL_INVALID_VALUE);
            return NULL;
        }
        total += lengths && lengths[i] ? lengths[i] : strlen(strings[i]);
    }
    char *src = malloc(total + 1);
    struct rc_obj *o =
        src ? rc_obj_new(SHIM_PROGRAM, sizeof(struct rc_obj)) : NULL;
    if (!o) {
        free(src);
        RC_SET_ERR(CL_OUT_OF_HOST_MEMORY);
        return NULL;
    }
    size_t at = 0;
    for (cl_uint i = 0; i < count; i++) {
        size_t n = lengths && lengths[i] ? lengths[i] : strlen(strings[i]);
        memcpy(src + at, strings[i], n);
        at += n;
    }
    cp.id = o->id;
    cp.context = RC_ID(c);
    cp.origin = CRANE__PROGRAM_ORIGIN__PROGRAM_SOURCE;
    RC_MSG(m, create_program, CREATE_PROGRAM, &cp);
    cl_program p = NULL;
    if (program_bytes(&cp, src, total, errcode_ret) == 0)
        p = rc_created(o, &m, cp.bulk_len ? src : NULL, cp.bulk_len,
                       errcode_ret);
    else
        rc_forget(o);
    free(src);
    return p;
}

cl_program CL_API_CALL rc_clCreateProgramWithBinary(
    cl_context c, cl_uint n, const cl_device_id *devs, const size_t *lengths,
    const unsigned char **bins, cl_int *status, cl_int *errcode_ret)
{
    Crane__CreateProgram cp = CRANE__CREATE_PROGRAM__INIT;
    uint64_t ids[64], lens[64];
    ProtobufCBinaryData b[64];
    unsigned char *joined = NULL;
    struct rc_reply r = {0};
    size_t total = 0;

    if (!n || n > 64 || !devs || !lengths || !bins) {
        RC_SET_ERR(CL_INVALID_VALUE);
        return NULL;
    }
    for (cl_uint i = 0; i < n; i++) {
        ids[i] = RC_ID(devs[i]);
        b[i].data = (uint8_t *)bins[i];
        b[i].len = bins[i] ? lengths[i] : 0;
        lens[i] = b[i].len;
        total += b[i].len;
    }
    cp.origin = CRANE__PROGRAM_ORIGIN__PROGRAM_BINARY;
    if (program_bytes(&cp, NULL, total, errcode_ret) < 0)
        return NULL;
    if (cp.bulk_len) {
        /* One bulk, the binaries one after another. */
        if (!(joined = malloc(total))) {
            RC_SET_ERR(CL_OUT_OF_HOST_MEMORY);
            return NULL;
        }
        size_t at = 0;
        for (cl_uint i = 0; i < n; i++) {
            if (b[i].len)
                memcpy(joined + at, b[i].data, b[i].len);
            at += b[i].len;
        }
        cp.binary_lens = lens;
        cp.n_binary_lens = n;
    } else {
        cp.binaries = b;
        cp.n_binaries = n;
    }
    struct rc_obj *o = rc_obj_new(SHIM_PROGRAM, sizeof(struct rc_obj));
    if (!o) {
        free(joined);
        RC_SET_ERR(CL_OUT_OF_HOST_MEMORY);
        return NULL;
    }
    cp.id = o->id;
    cp.context = RC_ID(c);
    cp.devices = ids;
    cp.n_devices = n;
    RC_MSG(m, create_program, CREATE_PROGRAM, &cp);
    cl_program p =
        rc_created_sync(o, &m, joined, cp.bulk_len, errcode_ret, &r);
    free(joined);
    for (cl_uint i = 0; status && r.reply && i < n; i++)
        status[i] = i < r.reply->n_statuses ? r.reply->statuses[i]
                                            : CL_INVALID_BINARY;
    shim_remote_reply_free(&r);
    return p;
}

static cl_program program_from_bytes(cl_context c, Crane__ProgramOrigin org,
                                     const void *bytes, size_t len,
                                     const cl_device_id *devs, cl_uint n,
                                     cl_int *errcode_ret)
{
    Crane__CreateProgram cp = CRANE__CREATE_PROGRAM__INIT;
    uint64_t ids[64];

    if (n > 64) {
        RC_SET_ERR(CL_INVALID_VALUE);
        return NULL;
    }
    for (cl_uint i = 0; i < n; i++)
        ids[i] = RC_ID(devs[i]);
    struct rc_obj *o = rc_obj_new(SHIM_PROGRAM, sizeof(struct rc_obj));
    if (!o) {
        RC_SET_ERR(CL_OUT_OF_HOST_MEMORY);
        return NULL;
    }
    cp.id = o->id;
    cp.context = RC_ID(c);
    cp.origin = org;
    cp.devices = ids;
    cp.n_devices = n;
    if (program_bytes(&cp, bytes, len, errcode_ret) < 0) {
        rc_forget(o);
        return NULL;
    }
    RC_MSG(m, create_program, CREATE_PROGRAM, &cp);
    return rc_created_sync(o, &m, cp.bulk_len ? bytes : NULL, cp.bulk_len,
                           errcode_ret, NULL);
}

cl_program CL_API_CALL rc_clCreateProgramWithIL(cl_context c, const void *il,
                                                size_t len,
                                                cl_int *errcode_ret)
{
    return program_from_bytes(c, CRANE__PROGRAM_ORIGIN__PROGRAM_IL, il, len,
                              NULL, 0, errcode_ret);
}

cl_program CL_API_CALL rc_clCreateProgramWithBuiltInKernels(
    cl_context c, cl_uint n, const cl_device_id *devs, const char *names,
    cl_int *errcode_ret)
{
    if (!names) {
        RC_SET_ERR(CL_INVALID_VALUE);
        return NULL;
    }
    return program_from_bytes(c, CRANE__PROGRAM_ORIGIN__PROGRAM_BUILTIN, names,
                              strlen(names), devs, n, errcode_ret);
}

typedef void(CL_CALLBACK *build_notify_fn)(cl_program, void *);

/* A build, compile or link, answered; *MADE: whether a link made its
 * program (NULL for the others). */
static cl_int build(Crane__BuildOp op, cl_program p, cl_context c, cl_uint n,
                    const cl_device_id *devs, const char *options,
                    cl_uint n_inputs, const cl_program *inputs,
                    const char **names, uint64_t link_id, bool *made)
{
    Crane__BuildProgram bp = CRANE__BUILD_PROGRAM__INIT;
    uint64_t ids[64], in[256];
    struct rc_reply r;

    if (n > 64 || n_inputs > 256)
        return CL_INVALID_VALUE;
    for (cl_uint i = 0; i < n; i++)
        ids[i] = RC_ID(devs[i]);
    for (cl_uint i = 0; i < n_inputs; i++)
        in[i] = RC_ID(inputs[i]);
    bp.op = op;
    bp.program = RC_ID(p);
    bp.context = RC_ID(c);
    bp.devices = ids;
    bp.n_devices = n;
    bp.options = (char *)(options ? options : "");
    bp.inputs = in;
    bp.n_inputs = n_inputs;
    bp.input_names = (char **)names;
    bp.n_input_names = names ? n_inputs : 0;
    bp.link_id = link_id;
    RC_MSG(m, build_program, BUILD_PROGRAM, &bp);
    cl_int err = shim_remote_call(&m, NULL, 0, NULL, 0, &r);
    if (made)
        *made = r.reply && r.reply->count;
    shim_remote_reply_free(&r);
    return err;
}

cl_int CL_API_CALL rc_clBuildProgram(cl_program p, cl_uint n,
                                     const cl_device_id *devs,
                                     const char *options,
                                     build_notify_fn notify, void *data)
{
    cl_int err = build(CRANE__BUILD_OP__BUILD, p, NULL, n, devs, options, 0,
                       NULL, NULL, 0, NULL);
    if (notify)
        notify(p, data);
    return err;
}

cl_int CL_API_CALL rc_clCompileProgram(cl_program p, cl_uint n,
                                       const cl_device_id *devs,
                                       const char *options, cl_uint n_headers,
                                       const cl_program *headers,
                                       const char **names,
                                       build_notify_fn notify, void *data)
{
    cl_int err = build(CRANE__BUILD_OP__COMPILE, p, NULL, n, devs, options,
                       n_headers, headers, names, 0, NULL);
    if (notify)
        notify(p, data);
    return err;
}

cl_program CL_API_CALL rc_clLinkProgram(cl_context c, cl_uint n,
                                        const cl_device_id *devs,
                                        const char *options, cl_uint n_inputs,
                                        const cl_program *inputs,
                                        build_notify_fn notify, void *data,
                                        cl_int *errcode_ret)
{
    struct rc_obj *o = rc_obj_new(SHIM_PROGRAM, sizeof(struct rc_obj));

    if (!o) {
        RC_SET_ERR(CL_OUT_OF_HOST_MEMORY);
        return NULL;
    }
    bool made = false;
    cl_int err = build(CRANE__BUILD_OP__LINK, NULL, c, n, devs, options,
                       n_inputs, inputs, NULL, o->id, &made);
    RC_SET_ERR(err);
    /* A failed link may still make a program (with a log to read), if the
     * proxy's vendor made one. */
    if (err != CL_SUCCESS && (err != CL_LINK_PROGRAM_FAILURE || !made)) {
        shim_remote_untrack(o);
        free(o);
        o = NULL;
    }
    if (notify && o)
        notify((cl_program)o, data);
    return (cl_program)o;
}

cl_int CL_API_CALL rc_clReleaseProgram(cl_program p)
{
    cl_int err = rc_release(p, SHIM_PROGRAM);
    free(p);
    return err;
}

/* A hint that the compiler may be unloaded: the proxy's compiler serves
 * every tenant, so the hint is answered here and goes no further. */
cl_int CL_API_CALL rc_clUnloadPlatformCompiler(cl_platform_id platform)
{
    const struct rc_obj *p = (const void *)platform;

    return p && p->kind == SHIM_PLATFORM ? CL_SUCCESS : CL_INVALID_PLATFORM;
}

/* Answered at once: an unknown spec_id is the program's error now. */
cl_int CL_API_CALL rc_clSetProgramSpecializationConstant(cl_program p,
                                                         cl_uint spec_id,
                                                         size_t spec_size,
                                                         const void *value)
{
    Crane__SetSpecConstant sc = CRANE__SET_SPEC_CONSTANT__INIT;

    if (!value || !spec_size || spec_size > 65536)
        return CL_INVALID_VALUE;
    sc.program = RC_ID(p);
    sc.spec_id = spec_id;
    sc.value.data = (uint8_t *)value;
    sc.value.len = spec_size;
    RC_MSG(m, set_spec_constant, SET_SPEC_CONSTANT, &sc);
    struct rc_reply r;
    cl_int err = shim_remote_call(&m, NULL, 0, NULL, 0, &r);
    shim_remote_reply_free(&r);
    return err;
}
