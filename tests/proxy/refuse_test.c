/* crane-proxy refuses what the vendor cannot safely take: `refuse_test NAME`. */
#include "client.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * Each case sends one call that a vendor library (PoCL 3.1 here) would
 * abort, exit() or crash on, or that the OpenCL specification forbids,
 * checks that the proxy answers with the error the specification names,
 * and then that the proxy still serves: the same tenant answers a ping and
 * a second tenant writes and reads back 64 bytes exactly.
 */

enum {
    CTX = 1,
    QUEUE = 2,
    BUF = 3,
    PROG = 4,
    KERNEL = 5,
    IMAGE = 6,
    SAMPLER = 7,
    NEW = 20,                    /* the id a refused creation names */
};

/* Arguments: 0 buffer, 1 __local, 2 image, 3 sampler, 4 a long value. */
static const char kernel_source[] =
    "__kernel void k(__global int *a, __local int *l,\n"
    "                read_only image2d_t im, sampler_t sm, long x)\n"
    "{\n"
    "    l[0] = (int)x;\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    a[get_global_id(0)] = l[0] +\n"
    "        (int)read_imagef(im, sm, (int2)(0, 0)).x;\n"
    "}\n";

static int call(struct client *c, Crane__ClientMessage *m)
{
    return client_call(c, m, NULL, 0, NULL);
}

/* --- the calls refused ------------------------------------------------------ */

static int image(struct client *c, void (*change)(Crane__CreateImage *))
{
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__CreateImage im = CRANE__CREATE_IMAGE__INIT;

    im.id = NEW;
    im.context = CTX;
    im.channel_order = CL_RGBA;
    im.channel_type = CL_UNORM_INT8;
    im.image_type = CL_MEM_OBJECT_IMAGE2D;
    im.width = im.height = 16;
    change(&im);
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_CREATE_IMAGE;
    m.create_image = &im;
    return call(c, &m);
}

static void mip_levels(Crane__CreateImage *im) { im->num_mip_levels = 2; }
static void samples(Crane__CreateImage *im) { im->num_samples = 4; }
static void bad_type(Crane__CreateImage *im) { im->image_type = 0x10F0; }
static void buffer_type(Crane__CreateImage *im)
{
    im->image_type = CL_MEM_OBJECT_BUFFER;
}
static void bad_format(Crane__CreateImage *im)
{
    im->channel_order = CL_BGRA;
    im->channel_type = CL_FLOAT;
}
static void width_0(Crane__CreateImage *im) { im->width = 0; }
static void too_wide(Crane__CreateImage *im) { im->width = 1u << 30; }
static void pitch(Crane__CreateImage *im) { im->row_pitch = 4096; }
static void from_image(Crane__CreateImage *im)
{
    im->image_type = CL_MEM_OBJECT_IMAGE1D_BUFFER;
    im->buffer = IMAGE;
}

static int refuse_image_mip_levels(struct client *c)
{
    return image(c, mip_levels);
}
static int refuse_image_samples(struct client *c) { return image(c, samples); }
static int refuse_image_type(struct client *c) { return image(c, bad_type); }
static int refuse_image_buffer_type(struct client *c)
{
    return image(c, buffer_type);
}
static int refuse_image_format(struct client *c)
{
    return image(c, bad_format);
}
static int refuse_image_width_0(struct client *c)
{
    return image(c, width_0);
}
static int refuse_image_too_large(struct client *c)
{
    return image(c, too_wide);
}
static int refuse_image_pitch(struct client *c) { return image(c, pitch); }
static void plain(Crane__CreateImage *im) { im->id = IMAGE; }
static int refuse_image_from_image(struct client *c)
{
    CHECK_EQ(image(c, plain), 0);
    return image(c, from_image);
}

static int queue(struct client *c, bool legacy, uint64_t legacy_props,
                 const uint64_t *props, size_t n)
{
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__CreateQueue q = CRANE__CREATE_QUEUE__INIT;

    q.id = NEW;
    q.context = CTX;
    q.device = c->device;
    q.legacy = legacy;
    q.legacy_properties = legacy_props;
    q.properties = (uint64_t *)props;
    q.n_properties = n;
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_CREATE_QUEUE;
    m.create_queue = &q;
    return call(c, &m);
}

/* What piglit's OpenCL API tests ask for: PoCL exit()s on it. */
static int refuse_queue_on_device(struct client *c)
{
    uint64_t p[] = {CL_QUEUE_PROPERTIES,
                    CL_QUEUE_ON_DEVICE | CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE};
    return queue(c, false, 0, p, 2);
}
static int refuse_queue_on_device_default(struct client *c)
{
    uint64_t p[] = {CL_QUEUE_PROPERTIES,
                    CL_QUEUE_ON_DEVICE | CL_QUEUE_ON_DEVICE_DEFAULT |
                        CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE,
                    CL_QUEUE_SIZE, 4096};
    return queue(c, false, 0, p, 4);
}
static int refuse_queue_property(struct client *c)
{
    uint64_t p[] = {0x1234, 1};
    return queue(c, false, 0, p, 2);
}
static int refuse_queue_legacy_bits(struct client *c)
{
    return queue(c, true,
                 CL_QUEUE_ON_DEVICE | CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE,
                 NULL, 0);
}

static int sampler(struct client *c, uint64_t name, uint64_t value)
{
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__CreateSampler s = CRANE__CREATE_SAMPLER__INIT;
    uint64_t p[2] = {name, value};

    s.id = NEW;
    s.context = CTX;
    s.properties = p;
    s.n_properties = 2;
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_CREATE_SAMPLER;
    m.create_sampler = &s;
    return call(c, &m);
}
static int refuse_sampler_addressing(struct client *c)
{
    return sampler(c, CL_SAMPLER_ADDRESSING_MODE, 0x9999);
}
static int refuse_sampler_filter(struct client *c)
{
    return sampler(c, CL_SAMPLER_FILTER_MODE, 0x7777);
}

/* A GL context handle would be a pointer on the client's machine. */
static int refuse_context_property(struct client *c)
{
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__CreateContext cc = CRANE__CREATE_CONTEXT__INIT;
    int64_t p[2] = {0x2008 /* CL_GL_CONTEXT_KHR */, 0x1234};

    cc.id = NEW;
    cc.devices = &c->device;
    cc.n_devices = 1;
    cc.properties = p;
    cc.n_properties = 2;
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_CREATE_CONTEXT;
    m.create_context = &cc;
    return call(c, &m);
}

static int buffer(struct client *c, uint64_t flags, uint64_t size,
                  uint64_t *props, size_t nprops)
{
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__CreateBuffer b = CRANE__CREATE_BUFFER__INIT;

    b.id = NEW;
    b.context = CTX;
    b.flags = flags;
    b.size = size;
    b.properties = props;
    b.n_properties = nprops;
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_CREATE_BUFFER;
    m.create_buffer = &b;
    return call(c, &m);
}
static int refuse_buffer_flags(struct client *c)
{
    return buffer(c, CL_MEM_READ_ONLY | CL_MEM_WRITE_ONLY, 64, NULL, 0);
}
static int refuse_buffer_size_0(struct client *c)
{
    return buffer(c, 0, 0, NULL, 0);
}
static int refuse_buffer_property(struct client *c)
{
    uint64_t p[2] = {0x9999, 1};
    return buffer(c, 0, 64, p, 2);
}

static int refuse_sub_buffer_overflow(struct client *c)
{
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__CreateSubBuffer s = CRANE__CREATE_SUB_BUFFER__INIT;

    s.id = NEW;
    s.buffer = BUF;
    s.origin = UINT64_MAX - 10;
    s.size = 64;
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_CREATE_SUB_BUFFER;
    m.create_sub_buffer = &s;
    return call(c, &m);
}

/* BY_COUNTS without its LIST_END: PoCL reads past the list. */
static int refuse_sub_devices_counts(struct client *c)
{
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__CreateSubDevices s = CRANE__CREATE_SUB_DEVICES__INIT;
    int64_t p[2] = {CL_DEVICE_PARTITION_BY_COUNTS, 1};

    s.device = c->device;
    s.properties = p;
    s.n_properties = 2;
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_CREATE_SUB_DEVICES;
    m.create_sub_devices = &s;
    return call(c, &m);
}

static int mem(struct client *c, Crane__MemOp op, const void *pattern,
               size_t pattern_len, uint64_t flags)
{
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__MemCommand mc = CRANE__MEM_COMMAND__INIT;
    uint64_t obj = BUF;

    mc.queue = QUEUE;
    mc.op = op;
    mc.dst = BUF;
    mc.size = 60;
    mc.pattern.data = (uint8_t *)pattern;
    mc.pattern.len = pattern_len;
    mc.flags = flags;
    if (op == CRANE__MEM_OP__MEM_MIGRATE) {
        mc.objects = &obj;
        mc.n_objects = 1;
    }
    mc.blocking = 1;
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_MEM_COMMAND;
    m.mem_command = &mc;
    return call(c, &m);
}
static int refuse_fill_pattern(struct client *c)
{
    return mem(c, CRANE__MEM_OP__MEM_FILL, "abc", 3, 0);
}
static int refuse_migrate_flags(struct client *c)
{
    return mem(c, CRANE__MEM_OP__MEM_MIGRATE, NULL, 0, 0xff);
}

static int refuse_user_event_status(struct client *c)
{
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__CreateUserEvent u = CRANE__CREATE_USER_EVENT__INIT;
    Crane__SetUserEventStatus s = CRANE__SET_USER_EVENT_STATUS__INIT;
    int err;

    u.id = NEW;
    u.context = CTX;
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_CREATE_USER_EVENT;
    m.create_user_event = &u;
    CHECK_EQ(call(c, &m), 0);
    crane__client_message__init(&m);
    s.event = NEW;
    s.status = 5;
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_SET_USER_EVENT_STATUS;
    m.set_user_event_status = &s;
    err = call(c, &m);
    /* Set it, so that the tenant ends without waiting for it. */
    s.status = CL_COMPLETE;
    CHECK_EQ(call(c, &m), 0);
    return err;
}

static int refuse_image_formats_type(struct client *c)
{
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__GetInfo g = CRANE__GET_INFO__INIT;

    g.fn = CRANE__INFO_FN__INFO_IMAGE_FORMATS;
    g.id = CTX;
    g.image_type = 0x9999;
    g.size = 64;
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_GET_INFO;
    m.get_info = &g;
    return call(c, &m);
}

/* --- kernel arguments --------------------------------------------------------- */

static void kernel(struct client *c)
{
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__CreateImage im = CRANE__CREATE_IMAGE__INIT;

    CHECK_EQ(tc_program_kernel(c, PROG, CTX, kernel_source, KERNEL, "k"), 0);
    im.id = IMAGE;
    im.context = CTX;
    im.channel_order = CL_RGBA;
    im.channel_type = CL_UNORM_INT8;
    im.image_type = CL_MEM_OBJECT_IMAGE2D;
    im.width = im.height = 4;
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_CREATE_IMAGE;
    m.create_image = &im;
    CHECK_EQ(call(c, &m), 0);
    {
        Crane__CreateSampler s = CRANE__CREATE_SAMPLER__INIT;
        crane__client_message__init(&m);
        s.id = SAMPLER;
        s.context = CTX;
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_CREATE_SAMPLER;
        m.create_sampler = &s;
        CHECK_EQ(call(c, &m), 0);
    }
}

/* Sets argument A (and, when LAUNCH, launches one item with it). */
static int arg(struct client *c, Crane__KernelArg *a, bool launch)
{
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__SetKernelArgs s = CRANE__SET_KERNEL_ARGS__INIT;
    Crane__LaunchKernel l = CRANE__LAUNCH_KERNEL__INIT;
    uint64_t one = 1;

    kernel(c);
    if (launch) {
        Crane__KernelArg v[5], *pv[5];
        int64_t x = 7;
        for (int i = 0; i < 5; i++) {
            crane__kernel_arg__init(&v[i]);
            v[i].index = (uint32_t)i;
            pv[i] = &v[i];
        }
        v[0].object = BUF;
        v[0].is_object = 1;
        v[1].is_local = 1;
        v[1].local_size = 16;
        v[2].object = IMAGE;
        v[2].is_object = 1;
        v[3].object = SAMPLER;
        v[3].is_object = 1;
        v[4].value.data = (uint8_t *)&x;
        v[4].value.len = sizeof(x);
        pv[a->index] = a;
        l.queue = QUEUE;
        l.kernel = KERNEL;
        l.work_dim = 1;
        l.global_size = &one;
        l.n_global_size = 1;
        l.args = pv;
        l.n_args = 5;
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_LAUNCH_KERNEL;
        m.launch_kernel = &l;
        return call(c, &m);
    }
    s.kernel = KERNEL;
    s.args = &a;
    s.n_args = 1;
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_SET_KERNEL_ARGS;
    m.set_kernel_args = &s;
    return call(c, &m);
}

/* Eight bytes where a buffer goes: PoCL dereferences them (SIGSEGV). */
static int refuse_arg_pointer_bytes(struct client *c)
{
    Crane__KernelArg a = CRANE__KERNEL_ARG__INIT;
    uint64_t v = 0x1234;

    a.index = 0;
    a.value.data = (uint8_t *)&v;
    a.value.len = sizeof(v);
    return arg(c, &a, false);
}
/* A sampler where a buffer goes: SIGSEGV in PoCL. */
static int refuse_arg_sampler_for_buffer(struct client *c)
{
    Crane__KernelArg a = CRANE__KERNEL_ARG__INIT;

    a.index = 0;
    a.object = SAMPLER;
    a.is_object = 1;
    return arg(c, &a, false);
}
/* A buffer where an image goes: SIGSEGV in PoCL at the launch. */
static int refuse_arg_buffer_for_image(struct client *c)
{
    Crane__KernelArg a = CRANE__KERNEL_ARG__INIT;

    a.index = 2;
    a.object = BUF;
    a.is_object = 1;
    return arg(c, &a, true);
}
static int refuse_arg_buffer_for_sampler(struct client *c)
{
    Crane__KernelArg a = CRANE__KERNEL_ARG__INIT;

    a.index = 3;
    a.object = BUF;
    a.is_object = 1;
    return arg(c, &a, false);
}
/* A proxy handle would reach the kernel as a number. */
static int refuse_arg_object_for_value(struct client *c)
{
    Crane__KernelArg a = CRANE__KERNEL_ARG__INIT;

    a.index = 4;
    a.object = BUF;
    a.is_object = 1;
    return arg(c, &a, false);
}
static int refuse_arg_value_for_local(struct client *c)
{
    Crane__KernelArg a = CRANE__KERNEL_ARG__INIT;
    uint32_t v = 1;

    a.index = 1;
    a.value.data = (uint8_t *)&v;
    a.value.len = sizeof(v);
    return arg(c, &a, false);
}
/* More __local memory than the device has: PoCL asserts at the launch. */
static int refuse_arg_local_too_large(struct client *c)
{
    Crane__KernelArg a = CRANE__KERNEL_ARG__INIT;

    a.index = 1;
    a.is_local = 1;
    a.local_size = UINT64_C(1) << 40;
    return arg(c, &a, true);
}
static int refuse_arg_local_0(struct client *c)
{
    Crane__KernelArg a = CRANE__KERNEL_ARG__INIT;

    a.index = 1;
    a.is_local = 1;
    return arg(c, &a, false);
}
static int refuse_arg_index(struct client *c)
{
    Crane__KernelArg a = CRANE__KERNEL_ARG__INIT;
    int32_t v = 1;

    a.index = 9;
    a.value.data = (uint8_t *)&v;
    a.value.len = sizeof(v);
    return arg(c, &a, false);
}

static int launch(struct client *c, uint64_t offset, uint64_t local)
{
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__LaunchKernel l = CRANE__LAUNCH_KERNEL__INIT;
    uint64_t global = 16;

    kernel(c);
    l.queue = QUEUE;
    l.kernel = KERNEL;
    l.work_dim = 1;
    l.global_size = &global;
    l.n_global_size = 1;
    l.global_offset = &offset;
    l.n_global_offset = 1;
    l.local_size = &local;
    l.n_local_size = 1;
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_LAUNCH_KERNEL;
    m.launch_kernel = &l;
    return call(c, &m);
}
static int refuse_launch_offset(struct client *c)
{
    return launch(c, UINT64_MAX - 4, 16);
}
static int refuse_launch_local_0(struct client *c) { return launch(c, 0, 0); }

/* --- the harness ---------------------------------------------------------------- */

static const struct {
    const char *name;
    int (*send)(struct client *c);
    int want;
} cases[] = {
    {"image-mip-levels", refuse_image_mip_levels, CL_INVALID_IMAGE_DESCRIPTOR},
    {"image-samples", refuse_image_samples, CL_INVALID_IMAGE_DESCRIPTOR},
    {"image-type", refuse_image_type, CL_INVALID_IMAGE_DESCRIPTOR},
    {"image-buffer-type", refuse_image_buffer_type,
     CL_INVALID_IMAGE_DESCRIPTOR},
    {"image-format", refuse_image_format, CL_INVALID_IMAGE_FORMAT_DESCRIPTOR},
    {"image-width-0", refuse_image_width_0, CL_INVALID_IMAGE_SIZE},
    {"image-too-large", refuse_image_too_large, CL_INVALID_IMAGE_SIZE},
    {"image-pitch", refuse_image_pitch, CL_INVALID_IMAGE_DESCRIPTOR},
    {"image-from-image", refuse_image_from_image, CL_INVALID_IMAGE_DESCRIPTOR},
    {"queue-on-device", refuse_queue_on_device, CL_INVALID_QUEUE_PROPERTIES},
    {"queue-on-device-default", refuse_queue_on_device_default,
     CL_INVALID_QUEUE_PROPERTIES},
    {"queue-property", refuse_queue_property, CL_INVALID_VALUE},
    {"queue-legacy-bits", refuse_queue_legacy_bits, CL_INVALID_VALUE},
    {"sampler-addressing", refuse_sampler_addressing, CL_INVALID_VALUE},
    {"sampler-filter", refuse_sampler_filter, CL_INVALID_VALUE},
    {"context-property", refuse_context_property, CL_INVALID_PROPERTY},
    {"buffer-flags", refuse_buffer_flags, CL_INVALID_VALUE},
    {"buffer-size-0", refuse_buffer_size_0, CL_INVALID_BUFFER_SIZE},
    {"buffer-property", refuse_buffer_property, CL_INVALID_PROPERTY},
    {"sub-buffer-overflow", refuse_sub_buffer_overflow, CL_INVALID_VALUE},
    {"sub-devices-counts", refuse_sub_devices_counts, CL_INVALID_VALUE},
    {"fill-pattern", refuse_fill_pattern, CL_INVALID_VALUE},
    {"migrate-flags", refuse_migrate_flags, CL_INVALID_VALUE},
    {"user-event-status", refuse_user_event_status, CL_INVALID_VALUE},
    {"image-formats-type", refuse_image_formats_type, CL_INVALID_VALUE},
    {"arg-pointer-bytes", refuse_arg_pointer_bytes, CL_INVALID_MEM_OBJECT},
    {"arg-sampler-for-buffer", refuse_arg_sampler_for_buffer,
     CL_INVALID_MEM_OBJECT},
    {"arg-buffer-for-image", refuse_arg_buffer_for_image,
     CL_INVALID_MEM_OBJECT},
    {"arg-buffer-for-sampler", refuse_arg_buffer_for_sampler,
     CL_INVALID_SAMPLER},
    {"arg-object-for-value", refuse_arg_object_for_value,
     CL_INVALID_ARG_VALUE},
    {"arg-value-for-local", refuse_arg_value_for_local, CL_INVALID_ARG_VALUE},
    {"arg-local-too-large", refuse_arg_local_too_large, CL_OUT_OF_RESOURCES},
    {"arg-local-0", refuse_arg_local_0, CL_INVALID_ARG_SIZE},
    {"arg-index", refuse_arg_index, CL_INVALID_ARG_INDEX},
    {"launch-offset", refuse_launch_offset, CL_INVALID_GLOBAL_OFFSET},
    {"launch-local-0", refuse_launch_local_0, CL_INVALID_WORK_GROUP_SIZE},
};

/* A second tenant writes 64 bytes and reads them back. */
static void still_serving(struct proxy *p)
{
    struct client d;
    uint8_t in[64], out[64];

    for (size_t i = 0; i < sizeof(in); i++)
        in[i] = (uint8_t)(i * 7 + 1);
    client_open(&d, p, NULL, 0, NULL, 0);
    tc_context(&d, CTX);
    tc_queue(&d, QUEUE, CTX);
    CHECK_EQ(tc_buffer(&d, false, BUF, CTX, sizeof(in), NULL), 0);
    CHECK_EQ(tc_write(&d, false, QUEUE, BUF, 0, in, sizeof(in)), 0);
    CHECK_EQ(tc_read(&d, QUEUE, BUF, 0, out, sizeof(out)), 0);
    CHECK(memcmp(in, out, sizeof(in)) == 0);
    client_close(&d);
}

static int run(size_t i)
{
    struct proxy p;
    struct client c;
    int err;

    proxy_start(&p, NULL);
    client_open(&c, &p, NULL, 0, NULL, 0);
    tc_context(&c, CTX);
    tc_queue(&c, QUEUE, CTX);
    CHECK_EQ(tc_buffer(&c, false, BUF, CTX, 4096, NULL), 0);
    err = cases[i].send(&c);
    fprintf(stderr, "test: %s answered %d (want %d)\n", cases[i].name, err,
            cases[i].want);
    CHECK_EQ(err, cases[i].want);
    CHECK_EQ(tc_ping(&c), 0);
    CHECK_EQ(tc_finish(&c, QUEUE), 0);
    still_serving(&p);
    client_close(&c);
    proxy_stop(&p);
    return 0;
}

int main(int argc, char **argv)
{
    size_t n = sizeof(cases) / sizeof(cases[0]);

    signal(SIGPIPE, SIG_IGN);
    srandom((unsigned)getpid());
    if (argc == 2 && strcmp(argv[1], "--list") == 0) {
        for (size_t i = 0; i < n; i++)
            puts(cases[i].name);
        return 0;
    }
    if (argc != 2) {
        fprintf(stderr, "usage: refuse_test --list | NAME\n");
        return 2;
    }
    for (size_t i = 0; i < n; i++)
        if (strcmp(argv[1], cases[i].name) == 0)
            return run(i);
    fprintf(stderr, "refuse_test: no case named '%s'\n", argv[1]);
    return 2;
}
