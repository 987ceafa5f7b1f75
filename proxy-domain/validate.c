/* Checking a client's message against the limits (validate.h) and the
 * shapes its call needs: commands, kernel arguments, launches, queries and
 * programs; the fields of a creation in validate_create.c. */
#include "validate.h"
#include "validate_common.h"

#include "proto/clrules.h"

#include <errno.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

int px_mul3(uint64_t a, uint64_t b, uint64_t c, uint64_t *out)
{
    uint64_t ab;

    if (__builtin_mul_overflow(a, b, &ab) ||
        __builtin_mul_overflow(ab, c, out))
        return -EOVERFLOW;
    return 0;
}

uint64_t px_bulk_len(const Crane__ClientMessage *m)
{
#define BULK_BULK(field) return m->field->bulk_len;
#define BULK_NONE(field) return 0;
#define CRN_REMOTE_CALL(CASE, field, Type, exec, shape, call, bulk, flags) \
    case CRANE__CLIENT_MESSAGE__MSG_##CASE:                             \
        BULK_##bulk(field)
    switch (m->msg_case) {
#include "proto/remote_calls.def"
    default:
        return 0;
    }
#undef CRN_REMOTE_CALL
#undef BULK_BULK
#undef BULK_NONE
}

static int check_image_type(uint32_t type, char *why, size_t why_len)
{
    switch (type) {
    case CL_MEM_OBJECT_IMAGE1D: case CL_MEM_OBJECT_IMAGE1D_BUFFER:
    case CL_MEM_OBJECT_IMAGE1D_ARRAY: case CL_MEM_OBJECT_IMAGE2D:
    case CL_MEM_OBJECT_IMAGE2D_ARRAY: case CL_MEM_OBJECT_IMAGE3D:
        return 0;
    default:
        return BAD("image type 0x%x", type);
    }
}

/* An SVM pointer argument: an allocation (or NULL) and an offset only. */
static int check_arg_svm(const Crane__KernelArg *a, char *why,
                         size_t why_len)
{
    if (!a->is_svm)
        return a->svm_offset ? BAD("kernel argument %u: svm_offset "
                                   "without is_svm",
                                   a->index)
                             : 0;
    if (a->is_object || a->is_local || a->local_size || a->value.len)
        return BAD("kernel argument %u: an SVM pointer with an object, "
                   "local size or value",
                   a->index);
    if (!a->object && a->svm_offset)
        return BAD("kernel argument %u: offset into a NULL SVM pointer",
                   a->index);
    return 0;
}

static int check_arg(const Crane__KernelArg *a, char *why, size_t why_len)
{
    bool object = a->is_object || a->object != 0;

    if (a->is_svm || a->svm_offset)
        return check_arg_svm(a, why, why_len);

    if (a->value.len > PX_MAX_ARG)
        return BAD("kernel argument %u: %zu bytes (at most %u)", a->index,
                   a->value.len, PX_MAX_ARG);
    if ((object && a->is_local) || (object && a->value.len) ||
        (a->is_local && a->value.len))
        return BAD("kernel argument %u: more than one of object, local "
                   "size and value",
                   a->index);
    if (!a->is_local && a->local_size)
        return BAD("kernel argument %u: local_size without is_local",
                   a->index);
    if (a->is_local && a->local_size == 0)
        return REFUSE(CL_INVALID_ARG_SIZE,
                      "kernel argument %u: local size 0", a->index);
    return 0;
}

static int check_args(Crane__KernelArg **args, size_t n, char *why,
                      size_t why_len)
{
    int rc = px_check_list(n, PX_MAX_LIST, "kernel arguments", why, why_len);

    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = check_arg(args[i], why, why_len);
    return rc;
}

int px_check_launch_kernel(const Crane__LaunchKernel *l, char *why,
                        size_t why_len)
{
    if (l->work_dim < 1 || l->work_dim > 3)
        return BAD("work_dim %u (1 to 3)", l->work_dim);
    if (l->n_global_size != l->work_dim)
        return BAD("%zu global sizes for work_dim %u", l->n_global_size,
                   l->work_dim);
    if (l->n_global_offset && l->n_global_offset != l->work_dim)
        return BAD("%zu global offsets for work_dim %u", l->n_global_offset,
                   l->work_dim);
    if (l->n_local_size && l->n_local_size != l->work_dim)
        return BAD("%zu local sizes for work_dim %u", l->n_local_size,
                   l->work_dim);
    for (uint32_t i = 0; i < l->work_dim; i++) {
        uint64_t end;
        if (l->n_global_offset &&
            __builtin_add_overflow(l->global_offset[i], l->global_size[i],
                                   &end))
            return REFUSE(CL_INVALID_GLOBAL_OFFSET,
                          "global offset %llu + size %llu overflows",
                          (unsigned long long)l->global_offset[i],
                          (unsigned long long)l->global_size[i]);
        if (l->n_local_size && l->local_size[i] == 0)
            return REFUSE(CL_INVALID_WORK_GROUP_SIZE,
                          "local size 0 in dimension %u", i);
    }
    if (px_check_list(l->n_wait, PX_MAX_LIST, "wait list", why, why_len))
        return CL_INVALID_VALUE;
    return check_args(l->args, l->n_args, why, why_len);
}

/* What a MemCommand op uses: which origins, a region, a pattern, data. */
enum {
    USE_SRC_ORIGIN = 1,
    USE_DST_ORIGIN = 2,
    USE_REGION = 4,
    WRITES_DATA = 8,
};

static int mem_uses(Crane__MemOp op)
{
    switch (op) {
    case CRANE__MEM_OP__MEM_READ: return 0;
    case CRANE__MEM_OP__MEM_WRITE: return WRITES_DATA;
    case CRANE__MEM_OP__MEM_COPY: return 0;
    case CRANE__MEM_OP__MEM_FILL: return 0;
    case CRANE__MEM_OP__MEM_READ_RECT: return USE_SRC_ORIGIN | USE_REGION;
    case CRANE__MEM_OP__MEM_WRITE_RECT:
        return USE_DST_ORIGIN | USE_REGION | WRITES_DATA;
    case CRANE__MEM_OP__MEM_COPY_RECT:
        return USE_SRC_ORIGIN | USE_DST_ORIGIN | USE_REGION;
    case CRANE__MEM_OP__MEM_READ_IMAGE: return USE_SRC_ORIGIN | USE_REGION;
    case CRANE__MEM_OP__MEM_WRITE_IMAGE:
        return USE_DST_ORIGIN | USE_REGION | WRITES_DATA;
    case CRANE__MEM_OP__MEM_COPY_IMAGE:
        return USE_SRC_ORIGIN | USE_DST_ORIGIN | USE_REGION;
    case CRANE__MEM_OP__MEM_FILL_IMAGE: return USE_DST_ORIGIN | USE_REGION;
    case CRANE__MEM_OP__MEM_COPY_IMAGE_TO_BUFFER:
        return USE_SRC_ORIGIN | USE_REGION;
    case CRANE__MEM_OP__MEM_COPY_BUFFER_TO_IMAGE:
        return USE_DST_ORIGIN | USE_REGION;
    case CRANE__MEM_OP__MEM_MIGRATE: return 0;
    default: return -1;
    }
}

int px_check_mem_command(const Crane__MemCommand *c, char *why, size_t why_len)
{
    int uses = mem_uses(c->op);

    if (uses < 0)
        return BAD("unknown memory op %d", (int)c->op);
    if ((uses & USE_SRC_ORIGIN) && c->n_src_origin != 3)
        return BAD("memory op %d needs 3 src_origin values, got %zu",
                   (int)c->op, c->n_src_origin);
    if ((uses & USE_DST_ORIGIN) && c->n_dst_origin != 3)
        return BAD("memory op %d needs 3 dst_origin values, got %zu",
                   (int)c->op, c->n_dst_origin);
    if ((uses & USE_REGION) && c->n_region != 3)
        return BAD("memory op %d needs 3 region values, got %zu", (int)c->op,
                   c->n_region);
    if (!(uses & USE_SRC_ORIGIN) && c->n_src_origin)
        return BAD("memory op %d takes no src_origin", (int)c->op);
    if (!(uses & USE_DST_ORIGIN) && c->n_dst_origin)
        return BAD("memory op %d takes no dst_origin", (int)c->op);
    if (!(uses & USE_REGION) && c->n_region)
        return BAD("memory op %d takes no region", (int)c->op);
    if (c->bulk_len > PX_MAX_BULK)
        return BAD("bulk of %llu bytes (at most %u)",
                   (unsigned long long)c->bulk_len, PX_MAX_BULK);
    if (!(uses & WRITES_DATA) && c->bulk_len)
        return BAD("memory op %d carries no data, bulk_len %llu", (int)c->op,
                   (unsigned long long)c->bulk_len);
    if (c->host_mem) {
        uint64_t end;
        /* The bytes are in the host-memory region (hostmem.c checks
         * the range against it). */
        bool rect = c->op == CRANE__MEM_OP__MEM_READ_RECT ||
                    c->op == CRANE__MEM_OP__MEM_WRITE_RECT;
        if (c->op != CRANE__MEM_OP__MEM_READ &&
            c->op != CRANE__MEM_OP__MEM_WRITE && !rect)
            return BAD("memory op %d takes no host memory", (int)c->op);
        if (!rect && (c->host_row_pitch || c->host_slice_pitch))
            return BAD("host pitches on memory op %d", (int)c->op);
        if (c->bulk_len)
            return BAD("host-memory command with %llu bytes of bulk",
                       (unsigned long long)c->bulk_len);
        if (__builtin_add_overflow(c->host_offset, c->size, &end))
            return BAD("host-memory offset %llu + size %llu overflows",
                       (unsigned long long)c->host_offset,
                       (unsigned long long)c->size);
    } else if (c->host_offset || c->host_row_pitch || c->host_slice_pitch) {
        return BAD("host_offset or host pitches without host_mem");
    }
    if (c->op == CRANE__MEM_OP__MEM_WRITE && !c->host_mem &&
        c->bulk_len != c->size)
        return BAD("write of %llu bytes with bulk_len %llu",
                   (unsigned long long)c->size,
                   (unsigned long long)c->bulk_len);
    if (c->op == CRANE__MEM_OP__MEM_WRITE_RECT && !c->host_mem) {
        uint64_t n;
        if (px_mul3(c->region[0], c->region[1], c->region[2], &n) ||
            n != c->bulk_len)
            return BAD("rectangular write region does not match bulk_len "
                       "%llu",
                       (unsigned long long)c->bulk_len);
    }
    if (c->op == CRANE__MEM_OP__MEM_FILL &&
        !crn_fill_pattern_ok(c->pattern.len, c->dst_offset, c->size))
        return BAD("fill pattern of %zu bytes at offset %llu, size %llu "
                   "(1, 2, 4, ... %d bytes; offset and size its multiples)",
                   c->pattern.len, (unsigned long long)c->dst_offset,
                   (unsigned long long)c->size, PX_MAX_PATTERN);
    if (c->op == CRANE__MEM_OP__MEM_MIGRATE &&
        (c->n_objects == 0 || !crn_migrate_flags_ok(c->flags)))
        return BAD("migration of %zu objects with flags 0x%llx",
                   c->n_objects, (unsigned long long)c->flags);
    if (c->op != CRANE__MEM_OP__MEM_MIGRATE && (c->flags || c->n_objects))
        return BAD("memory op %d takes no flags or objects", (int)c->op);
    if (c->op == CRANE__MEM_OP__MEM_FILL_IMAGE && c->pattern.len != 16)
        return BAD("image fill pattern of %zu bytes (16)", c->pattern.len);
    if (c->op != CRANE__MEM_OP__MEM_FILL &&
        c->op != CRANE__MEM_OP__MEM_FILL_IMAGE && c->pattern.len)
        return BAD("memory op %d takes no pattern", (int)c->op);
    if (px_check_list(c->n_objects, PX_MAX_LIST, "objects", why, why_len) ||
        px_check_list(c->n_wait, PX_MAX_LIST, "wait list", why, why_len))
        return CL_INVALID_VALUE;
    return 0;
}

int px_check_get_info(const Crane__GetInfo *g, char *why, size_t why_len)
{
    if (g->fn < CRANE__INFO_FN__INFO_PLATFORM ||
        g->fn > CRANE__INFO_FN__INFO_IMAGE_FORMATS)
        return BAD("unknown info function %d", (int)g->fn);
    if (g->size > PX_MAX_INFO)
        return BAD("info size %llu (at most %u)",
                   (unsigned long long)g->size, PX_MAX_INFO);
    if (g->input.len > PX_MAX_ARG)
        return BAD("info input of %zu bytes", g->input.len);
    if (g->fn == CRANE__INFO_FN__INFO_IMAGE_FORMATS)
        return check_image_type(g->image_type, why, why_len) ||
                       px_check_mem_flags(g->flags, "image formats", why,
                                          why_len)
                   ? CL_INVALID_VALUE
                   : 0;
    return 0;
}

/* --- remote backend additions (shim/remote_*.c's newer messages) ------- */

/* A program's bytes as bulk: within the bulk limit, and for binaries one
 * length per device adding up to the bulk, with nothing inline beside. */
static int check_program_bulk(const Crane__CreateProgram *p, char *why,
                              size_t why_len)
{
    uint64_t sum = 0;

    if (!p->bulk_len)
        return p->n_binary_lens
                   ? BAD("binary lengths without bulk program bytes")
                   : 0;
    if (p->bulk_len > PX_MAX_BULK)
        return BAD("program bulk of %llu bytes (at most %u)",
                   (unsigned long long)p->bulk_len, PX_MAX_BULK);
    if (p->source.len || p->n_binaries)
        return BAD("program bytes both inline and as bulk");
    if (p->origin != CRANE__PROGRAM_ORIGIN__PROGRAM_BINARY)
        return p->n_binary_lens ? BAD("binary lengths for a program not "
                                      "made from binaries")
                                : 0;
    if (p->n_binary_lens != p->n_devices)
        return BAD("%zu binary lengths for %zu devices", p->n_binary_lens,
                   p->n_devices);
    for (size_t i = 0; i < p->n_binary_lens; i++)
        if (__builtin_add_overflow(sum, p->binary_lens[i], &sum))
            return BAD("binary lengths overflow");
    if (sum != p->bulk_len)
        return BAD("binary lengths add up to %llu, bulk is %llu bytes",
                   (unsigned long long)sum, (unsigned long long)p->bulk_len);
    return 0;
}

/* A specialization constant's value: 1 to PX_MAX_ARG bytes. */
int px_check_set_spec_constant(const Crane__SetSpecConstant *c, char *why,
                               size_t why_len)
{
    if (c->value.len == 0 || c->value.len > PX_MAX_ARG)
        return BAD("specialization constant of %zu bytes (1 to %u)",
                   c->value.len, PX_MAX_ARG);
    return 0;
}

/* Coarse-grained SVM only (the client keeps the program's copy, so
 * fine-grained sharing cannot hold), of a size and alignment OpenCL
 * accepts. */
int px_check_svm_alloc(const Crane__SvmAlloc *a, char *why,
                           size_t why_len)
{
    const uint64_t access =
        CL_MEM_READ_WRITE | CL_MEM_WRITE_ONLY | CL_MEM_READ_ONLY;

    if (a->flags & ~access)
        return REFUSE(CL_INVALID_VALUE,
                      "SVM flags 0x%llx: only coarse-grained SVM is "
                      "remoted",
                      (unsigned long long)a->flags);
    if (a->size == 0 || a->size > PX_MAX_SVM)
        return REFUSE(CL_INVALID_VALUE, "SVM of %llu bytes (1 to %llu)",
                      (unsigned long long)a->size,
                      (unsigned long long)PX_MAX_SVM);
    if (a->alignment & (a->alignment - 1))
        return REFUSE(CL_INVALID_VALUE,
                      "SVM alignment %u is no power of two", a->alignment);
    return 0;
}

int px_check_create_program(const Crane__CreateProgram *p, char *why,
                         size_t why_len)
{
    if (p->origin < CRANE__PROGRAM_ORIGIN__PROGRAM_SOURCE ||
        p->origin > CRANE__PROGRAM_ORIGIN__PROGRAM_BUILTIN)
        return BAD("unknown program origin %d", (int)p->origin);
    if (px_check_list(p->n_devices, PX_MAX_DEVICES, "devices", why, why_len))
        return CL_INVALID_VALUE;
    if (p->bulk_len || p->n_binary_lens)
        return check_program_bulk(p, why, why_len);
    if (p->origin == CRANE__PROGRAM_ORIGIN__PROGRAM_BINARY &&
        (p->n_binaries != p->n_devices || p->n_devices == 0))
        return BAD("%zu binaries for %zu devices", p->n_binaries,
                   p->n_devices);
    if (p->origin != CRANE__PROGRAM_ORIGIN__PROGRAM_BINARY && p->n_binaries)
        return BAD("binaries given for a program not made from binaries");
    return 0;
}

int px_check_build_program(const Crane__BuildProgram *b, char *why,
                       size_t why_len)
{
    if (b->op < CRANE__BUILD_OP__BUILD || b->op > CRANE__BUILD_OP__LINK)
        return BAD("unknown build op %d", (int)b->op);
    if (px_check_list(b->n_devices, PX_MAX_DEVICES, "devices", why, why_len) ||
        px_check_list(b->n_inputs, PX_MAX_LIST, "inputs", why, why_len))
        return CL_INVALID_VALUE;
    if (strlen(b->options) > PX_MAX_OPTIONS)
        return BAD("build options of %zu bytes", strlen(b->options));
    if (b->op == CRANE__BUILD_OP__COMPILE && b->n_input_names != b->n_inputs)
        return BAD("%zu header names for %zu headers", b->n_input_names,
                   b->n_inputs);
    if (b->op != CRANE__BUILD_OP__COMPILE && b->n_input_names)
        return BAD("header names outside a compile");
    for (size_t i = 0; i < b->n_input_names; i++)
        if (strlen(b->input_names[i]) > PX_MAX_NAME)
            return BAD("header name of %zu bytes",
                       strlen(b->input_names[i]));
    return 0;
}

int px_check_hello(const Crane__Hello *h, char *why, size_t why_len)
{
    if (strlen(h->program) > PX_MAX_NAME)
        return BAD("program name too long");
    if (h->resume_token.len > PX_MAX_TOKEN)
        return BAD("resume token of %zu bytes", h->resume_token.len);
    return 0;
}

int px_check_auth(const Crane__Auth *a, char *why, size_t why_len)
{
    if (a->mac.len > PX_MAX_TOKEN)
        return BAD("MAC of %zu bytes", a->mac.len);
    return 0;
}

int px_check_create_buffer(const Crane__CreateBuffer *b, char *why,
                           size_t why_len)
{
    int rc;

    if (b->bulk_len > PX_MAX_BULK)
        return BAD("bulk of %llu bytes (at most %u)",
                   (unsigned long long)b->bulk_len, PX_MAX_BULK);
    if (b->bulk_len && b->bulk_len != b->size)
        return BAD("buffer of %llu bytes with %llu bytes of contents",
                   (unsigned long long)b->size,
                   (unsigned long long)b->bulk_len);
    if (b->size == 0)
        return REFUSE(CL_INVALID_BUFFER_SIZE, "buffer of 0 bytes");
    if ((rc = px_check_mem_flags(b->flags, "buffer", why, why_len)))
        return rc;
    return px_check_mem_props(b->n_properties, b->properties, "buffer", why,
                              why_len);
}

int px_check_create_sub_buffer(const Crane__CreateSubBuffer *sb, char *why,
                               size_t why_len)
{
    uint64_t end;

    if (sb->size == 0)
        return REFUSE(CL_INVALID_BUFFER_SIZE, "sub-buffer of 0 bytes");
    if (__builtin_add_overflow(sb->origin, sb->size, &end))
        return BAD("sub-buffer origin %llu + size %llu overflows",
                   (unsigned long long)sb->origin,
                   (unsigned long long)sb->size);
    return px_check_mem_flags(sb->flags, "sub-buffer", why, why_len);
}

int px_check_create_kernel(const Crane__CreateKernel *k, char *why,
                           size_t why_len)
{
    if (strlen(k->name) > PX_MAX_NAME)
        return BAD("kernel name of %zu bytes", strlen(k->name));
    return px_check_list(k->n_all_ids, PX_MAX_LIST, "kernel ids", why,
                         why_len);
}

int px_check_release(const Crane__Release *r, char *why, size_t why_len)
{
    if (r->kind < CRANE__OBJ_KIND__OBJ_PLATFORM ||
        r->kind > CRANE__OBJ_KIND__OBJ_EVENT)
        return BAD("release of unknown kind %d", (int)r->kind);
    return 0;
}

int px_check_set_kernel_args(const Crane__SetKernelArgs *a, char *why,
                             size_t why_len)
{
    return check_args(a->args, a->n_args, why, why_len);
}

int px_check_sync(const Crane__Sync *s, char *why, size_t why_len)
{
    if (s->op < CRANE__SYNC_OP__SYNC_FINISH ||
        s->op > CRANE__SYNC_OP__SYNC_HEARTBEAT)
        return BAD("unknown sync op %d", (int)s->op);
    if (s->op == CRANE__SYNC_OP__SYNC_HEARTBEAT && s->beat_ms &&
        (s->beat_ms < PX_MIN_BEAT_MS || s->beat_ms > PX_MAX_BEAT_MS))
        return BAD("heartbeat every %u ms (0, or %u to %u)", s->beat_ms,
                   PX_MIN_BEAT_MS, PX_MAX_BEAT_MS);
    return px_check_list(s->n_events, PX_MAX_LIST, "events", why, why_len);
}

int px_check_set_user_event_status(const Crane__SetUserEventStatus *s,
                                   char *why, size_t why_len)
{
    if (s->status > CL_COMPLETE)
        return BAD("user event status %d (CL_COMPLETE or an error)",
                   s->status);
    return 0;
}

int px_check_watch_event(const Crane__WatchEvent *w, char *why,
                         size_t why_len)
{
    if (w->status < 0 || w->status > 2)
        return BAD("watched status %d (CL_COMPLETE, CL_RUNNING or "
                   "CL_SUBMITTED)",
                   w->status);
    return 0;
}

/* The token only: the area is checked where it is mapped (conn_input.c),
 * as are HostAttach's region and ShmDetach. */
int px_check_shm_attach(const Crane__ShmAttach *a, char *why, size_t why_len)
{
    if (a->token.len > 64)
        return BAD("shared area token of %zu bytes", a->token.len);
    return 0;
}

/* Each row's check (proto/remote_calls.def): px_check_FIELD for SHAPE. */
int px_validate(const Crane__ClientMessage *m, char *why, size_t why_len)
{
#define SHAPE_SHAPE(field) return px_check_##field(m->field, why, why_len);
#define SHAPE_NONE(field) return 0;
#define CRN_REMOTE_CALL(CASE, field, Type, exec, shape, call, bulk, flags) \
    case CRANE__CLIENT_MESSAGE__MSG_##CASE:                             \
        SHAPE_##shape(field)
    switch (m->msg_case) {
#include "proto/remote_calls.def"
    case CRANE__CLIENT_MESSAGE__MSG__NOT_SET:
        return BAD("message without a call");
    default:
        return BAD("unknown call %d", (int)m->msg_case);
    }
#undef CRN_REMOTE_CALL
#undef SHAPE_SHAPE
#undef SHAPE_NONE
}
