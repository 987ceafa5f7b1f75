/* Limits on what a client may send, and checking a message against them. */
#include "validate.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Records why into WHY and returns -EINVAL. */
static int bad(char *why, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int bad(char *why, size_t len, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
    return -EINVAL;
}

#define BAD(...) bad(why, why_len, __VA_ARGS__)

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
    switch (m->msg_case) {
    case CRANE__CLIENT_MESSAGE__MSG_CREATE_BUFFER:
        return m->create_buffer->bulk_len;
    case CRANE__CLIENT_MESSAGE__MSG_CREATE_IMAGE:
        return m->create_image->bulk_len;
    case CRANE__CLIENT_MESSAGE__MSG_MEM_COMMAND:
        return m->mem_command->bulk_len;
    default:
        return 0;
    }
}

static int check_props(size_t n, bool pairs, const char *what, char *why,
                       size_t why_len)
{
    if (n > PX_MAX_PROPS)
        return BAD("%s: %zu property words (at most %d)", what, n,
                   PX_MAX_PROPS);
    if (pairs && n % 2)
        return BAD("%s: properties must be name/value pairs", what);
    return 0;
}

static int check_list(size_t n, size_t max, const char *what, char *why,
                      size_t why_len)
{
    if (n > max)
        return BAD("%s: %zu entries (at most %zu)", what, n, max);
    return 0;
}

static int check_arg(const Crane__KernelArg *a, char *why, size_t why_len)
{
    bool object = a->is_object || a->object != 0;

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
    return 0;
}

static int check_args(Crane__KernelArg **args, size_t n, char *why,
                      size_t why_len)
{
    int rc = check_list(n, PX_MAX_LIST, "kernel arguments", why, why_len);

    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = check_arg(args[i], why, why_len);
    return rc;
}

static int check_launch(const Crane__LaunchKernel *l, char *why,
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
    if (check_list(l->n_wait, PX_MAX_LIST, "wait list", why, why_len))
        return -EINVAL;
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

static int check_mem(const Crane__MemCommand *c, char *why, size_t why_len)
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
    if (c->op == CRANE__MEM_OP__MEM_WRITE && c->bulk_len != c->size)
        return BAD("write of %llu bytes with bulk_len %llu",
                   (unsigned long long)c->size,
                   (unsigned long long)c->bulk_len);
    if (c->op == CRANE__MEM_OP__MEM_WRITE_RECT) {
        uint64_t n;
        if (px_mul3(c->region[0], c->region[1], c->region[2], &n) ||
            n != c->bulk_len)
            return BAD("rectangular write region does not match bulk_len "
                       "%llu",
                       (unsigned long long)c->bulk_len);
    }
    if (c->op == CRANE__MEM_OP__MEM_FILL &&
        (c->pattern.len == 0 || c->pattern.len > PX_MAX_PATTERN))
        return BAD("fill pattern of %zu bytes (1 to %d)", c->pattern.len,
                   PX_MAX_PATTERN);
    if (c->op == CRANE__MEM_OP__MEM_FILL_IMAGE && c->pattern.len != 16)
        return BAD("image fill pattern of %zu bytes (16)", c->pattern.len);
    if (c->op != CRANE__MEM_OP__MEM_FILL &&
        c->op != CRANE__MEM_OP__MEM_FILL_IMAGE && c->pattern.len)
        return BAD("memory op %d takes no pattern", (int)c->op);
    if (check_list(c->n_objects, PX_MAX_LIST, "objects", why, why_len) ||
        check_list(c->n_wait, PX_MAX_LIST, "wait list", why, why_len))
        return -EINVAL;
    return 0;
}

static int check_info(const Crane__GetInfo *g, char *why, size_t why_len)
{
    if (g->fn < CRANE__INFO_FN__INFO_PLATFORM ||
        g->fn > CRANE__INFO_FN__INFO_IMAGE_FORMATS)
        return BAD("unknown info function %d", (int)g->fn);
    if (g->size > PX_MAX_INFO)
        return BAD("info size %llu (at most %u)",
                   (unsigned long long)g->size, PX_MAX_INFO);
    if (g->input.len > PX_MAX_ARG)
        return BAD("info input of %zu bytes", g->input.len);
    return 0;
}

static int check_program(const Crane__CreateProgram *p, char *why,
                         size_t why_len)
{
    if (p->origin < CRANE__PROGRAM_ORIGIN__PROGRAM_SOURCE ||
        p->origin > CRANE__PROGRAM_ORIGIN__PROGRAM_BUILTIN)
        return BAD("unknown program origin %d", (int)p->origin);
    if (check_list(p->n_devices, PX_MAX_DEVICES, "devices", why, why_len))
        return -EINVAL;
    if (p->origin == CRANE__PROGRAM_ORIGIN__PROGRAM_BINARY &&
        (p->n_binaries != p->n_devices || p->n_devices == 0))
        return BAD("%zu binaries for %zu devices", p->n_binaries,
                   p->n_devices);
    if (p->origin != CRANE__PROGRAM_ORIGIN__PROGRAM_BINARY && p->n_binaries)
        return BAD("binaries given for a program not made from binaries");
    return 0;
}

static int check_build(const Crane__BuildProgram *b, char *why,
                       size_t why_len)
{
    if (b->op < CRANE__BUILD_OP__BUILD || b->op > CRANE__BUILD_OP__LINK)
        return BAD("unknown build op %d", (int)b->op);
    if (check_list(b->n_devices, PX_MAX_DEVICES, "devices", why, why_len) ||
        check_list(b->n_inputs, PX_MAX_LIST, "inputs", why, why_len))
        return -EINVAL;
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

int px_validate(const Crane__ClientMessage *m, char *why, size_t why_len)
{
    switch (m->msg_case) {
    case CRANE__CLIENT_MESSAGE__MSG_HELLO:
        if (strlen(m->hello->program) > PX_MAX_NAME)
            return BAD("program name too long");
        if (m->hello->resume_token.len > PX_MAX_TOKEN)
            return BAD("resume token of %zu bytes",
                       m->hello->resume_token.len);
        return 0;
    case CRANE__CLIENT_MESSAGE__MSG_AUTH:
        if (m->auth->mac.len > PX_MAX_TOKEN)
            return BAD("MAC of %zu bytes", m->auth->mac.len);
        return 0;
    case CRANE__CLIENT_MESSAGE__MSG_GET_INFO:
        return check_info(m->get_info, why, why_len);
    case CRANE__CLIENT_MESSAGE__MSG_CREATE_SUB_DEVICES:
        if (check_props(m->create_sub_devices->n_properties, false,
                        "sub-devices", why, why_len))
            return -EINVAL;
        return check_list(m->create_sub_devices->n_ids, PX_MAX_DEVICES,
                          "sub-device ids", why, why_len);
    case CRANE__CLIENT_MESSAGE__MSG_CREATE_CONTEXT:
        if (m->create_context->n_devices == 0)
            return BAD("context without devices");
        if (check_list(m->create_context->n_devices, PX_MAX_DEVICES,
                       "devices", why, why_len))
            return -EINVAL;
        return check_props(m->create_context->n_properties, true, "context",
                           why, why_len);
    case CRANE__CLIENT_MESSAGE__MSG_CREATE_QUEUE:
        return check_props(m->create_queue->n_properties, true, "queue", why,
                           why_len);
    case CRANE__CLIENT_MESSAGE__MSG_CREATE_BUFFER: {
        const Crane__CreateBuffer *b = m->create_buffer;
        if (b->bulk_len > PX_MAX_BULK)
            return BAD("bulk of %llu bytes (at most %u)",
                       (unsigned long long)b->bulk_len, PX_MAX_BULK);
        if (b->bulk_len && b->bulk_len != b->size)
            return BAD("buffer of %llu bytes with %llu bytes of contents",
                       (unsigned long long)b->size,
                       (unsigned long long)b->bulk_len);
        return check_props(b->n_properties, false, "buffer", why, why_len);
    }
    case CRANE__CLIENT_MESSAGE__MSG_CREATE_SUB_BUFFER:
        return 0;
    case CRANE__CLIENT_MESSAGE__MSG_CREATE_IMAGE:
        if (m->create_image->bulk_len > PX_MAX_BULK)
            return BAD("bulk of %llu bytes (at most %u)",
                       (unsigned long long)m->create_image->bulk_len,
                       PX_MAX_BULK);
        return check_props(m->create_image->n_properties, false, "image",
                           why, why_len);
    case CRANE__CLIENT_MESSAGE__MSG_CREATE_SAMPLER:
        return check_props(m->create_sampler->n_properties, true, "sampler",
                           why, why_len);
    case CRANE__CLIENT_MESSAGE__MSG_CREATE_PROGRAM:
        return check_program(m->create_program, why, why_len);
    case CRANE__CLIENT_MESSAGE__MSG_BUILD_PROGRAM:
        return check_build(m->build_program, why, why_len);
    case CRANE__CLIENT_MESSAGE__MSG_CREATE_KERNEL:
        if (strlen(m->create_kernel->name) > PX_MAX_NAME)
            return BAD("kernel name of %zu bytes",
                       strlen(m->create_kernel->name));
        return check_list(m->create_kernel->n_all_ids, PX_MAX_LIST,
                          "kernel ids", why, why_len);
    case CRANE__CLIENT_MESSAGE__MSG_CREATE_USER_EVENT:
        return 0;
    case CRANE__CLIENT_MESSAGE__MSG_RELEASE:
        if (m->release->kind < CRANE__OBJ_KIND__OBJ_PLATFORM ||
            m->release->kind > CRANE__OBJ_KIND__OBJ_EVENT)
            return BAD("release of unknown kind %d", (int)m->release->kind);
        return 0;
    case CRANE__CLIENT_MESSAGE__MSG_SET_KERNEL_ARGS:
        return check_args(m->set_kernel_args->args,
                          m->set_kernel_args->n_args, why, why_len);
    case CRANE__CLIENT_MESSAGE__MSG_LAUNCH_KERNEL:
        return check_launch(m->launch_kernel, why, why_len);
    case CRANE__CLIENT_MESSAGE__MSG_MEM_COMMAND:
        return check_mem(m->mem_command, why, why_len);
    case CRANE__CLIENT_MESSAGE__MSG_SYNC:
        if (m->sync->op < CRANE__SYNC_OP__SYNC_FINISH ||
            m->sync->op > CRANE__SYNC_OP__SYNC_PING)
            return BAD("unknown sync op %d", (int)m->sync->op);
        return check_list(m->sync->n_events, PX_MAX_LIST, "events", why,
                          why_len);
    case CRANE__CLIENT_MESSAGE__MSG_SET_USER_EVENT_STATUS:
        return 0;
    case CRANE__CLIENT_MESSAGE__MSG_WATCH_EVENT:
        if (m->watch_event->status < 0 || m->watch_event->status > 2)
            return BAD("watched status %d (CL_COMPLETE, CL_RUNNING or "
                       "CL_SUBMITTED)",
                       m->watch_event->status);
        return 0;
    case CRANE__CLIENT_MESSAGE__MSG__NOT_SET:
        return BAD("message without a call");
    default:
        return BAD("unknown call %d", (int)m->msg_case);
    }
}
