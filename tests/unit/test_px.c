/* Unit tests of crane-proxy's pure parts: the message checks. */
#include "runner.h"

#include "proxy-domain/validate.h"
#include "proto/remote_calls.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int check(Crane__ClientMessage *m)
{
    char why[160];

    return px_validate(m, why, sizeof(why));
}

TEST(px_validate_launch)
{
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__LaunchKernel l = CRANE__LAUNCH_KERNEL__INIT;
    Crane__KernelArg a = CRANE__KERNEL_ARG__INIT, *av = &a;
    uint64_t sizes[3] = {8, 8, 8};

    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_LAUNCH_KERNEL;
    m.launch_kernel = &l;
    l.work_dim = 2;
    l.n_global_size = 2;
    l.global_size = sizes;
    ASSERT_EQ(check(&m), 0);
    l.n_local_size = 2;
    l.local_size = sizes;
    ASSERT_EQ(check(&m), 0);
    l.n_local_size = 1;
    ASSERT_EQ(check(&m), CL_INVALID_VALUE);
    l.n_local_size = 0;
    l.work_dim = 4;
    ASSERT_EQ(check(&m), CL_INVALID_VALUE);
    l.work_dim = 0;
    ASSERT_EQ(check(&m), CL_INVALID_VALUE);
    l.work_dim = 3;
    ASSERT_EQ(check(&m), CL_INVALID_VALUE);      /* 2 global sizes */
    l.work_dim = 2;
    l.n_wait = PX_MAX_LIST + 1;
    ASSERT_EQ(check(&m), CL_INVALID_VALUE);
    l.n_wait = 0;
    /* An argument is one of object, local size or value. */
    l.n_args = 1;
    l.args = &av;
    a.is_object = 1;
    a.object = 5;
    ASSERT_EQ(check(&m), 0);
    a.is_local = 1;
    ASSERT_EQ(check(&m), CL_INVALID_VALUE);
    a.is_object = 0;
    a.object = 0;
    a.local_size = 64;
    ASSERT_EQ(check(&m), 0);
    a.value.len = 4;
    ASSERT_EQ(check(&m), CL_INVALID_VALUE);
}

TEST(px_validate_mem)
{
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__MemCommand mc = CRANE__MEM_COMMAND__INIT;
    uint64_t three[3] = {4, 4, 2};
    uint8_t pattern[17] = {0};

    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_MEM_COMMAND;
    m.mem_command = &mc;
    mc.op = CRANE__MEM_OP__MEM_WRITE;
    mc.size = 64;
    mc.bulk_len = 64;
    ASSERT_EQ(check(&m), 0);
    mc.bulk_len = 63;
    ASSERT_EQ(check(&m), CL_INVALID_VALUE);      /* bulk must match */
    mc.op = CRANE__MEM_OP__MEM_READ;
    ASSERT_EQ(check(&m), CL_INVALID_VALUE);      /* no bulk on reads */
    mc.bulk_len = 0;
    ASSERT_EQ(check(&m), 0);
    mc.op = CRANE__MEM_OP__MEM_WRITE_RECT;
    mc.n_dst_origin = 3;
    mc.dst_origin = three;
    mc.n_region = 3;
    mc.region = three;
    mc.bulk_len = 32;
    ASSERT_EQ(check(&m), 0);
    mc.n_region = 2;
    ASSERT_EQ(check(&m), CL_INVALID_VALUE);
    mc.n_region = 3;
    mc.n_src_origin = 3;
    mc.src_origin = three;
    ASSERT_EQ(check(&m), CL_INVALID_VALUE);      /* an origin it does not use */
    mc.n_src_origin = 0;
    three[0] = UINT64_MAX;
    ASSERT_EQ(check(&m), CL_INVALID_VALUE);      /* the region overflows */
    three[0] = 4;
    mc.op = CRANE__MEM_OP__MEM_FILL_IMAGE;
    mc.bulk_len = 0;
    mc.pattern.data = pattern;
    mc.pattern.len = 16;
    ASSERT_EQ(check(&m), 0);
    mc.pattern.len = 17;
    ASSERT_EQ(check(&m), CL_INVALID_VALUE);
    mc.op = 99;
    ASSERT_EQ(check(&m), CL_INVALID_VALUE);
    mc.op = CRANE__MEM_OP__MEM_WRITE;
    mc.n_dst_origin = mc.n_region = 0;
    mc.pattern.len = 0;
    mc.size = mc.bulk_len = (uint64_t)PX_MAX_BULK + 1;
    ASSERT_EQ(check(&m), CL_INVALID_VALUE);
    ASSERT_EQ(px_bulk_len(&m), (uint64_t)PX_MAX_BULK + 1);
}

TEST(px_validate_other)
{
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__CreateContext cc = CRANE__CREATE_CONTEXT__INIT;
    Crane__Release r = CRANE__RELEASE__INIT;
    Crane__GetInfo g = CRANE__GET_INFO__INIT;
    uint64_t dev = 1;
    int64_t props[3] = {1, 2, 3};

    ASSERT_EQ(check(&m), CL_INVALID_VALUE);      /* no call */
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_CREATE_CONTEXT;
    m.create_context = &cc;
    ASSERT_EQ(check(&m), CL_INVALID_VALUE);      /* no devices */
    cc.n_devices = 1;
    cc.devices = &dev;
    ASSERT_EQ(check(&m), 0);
    cc.n_properties = 3;
    cc.properties = props;
    ASSERT_EQ(check(&m), CL_INVALID_VALUE);      /* not pairs */
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_RELEASE;
    m.release = &r;
    ASSERT_EQ(check(&m), CL_INVALID_VALUE);      /* kind 0 */
    r.kind = CRANE__OBJ_KIND__OBJ_EVENT;
    ASSERT_EQ(check(&m), 0);
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_GET_INFO;
    m.get_info = &g;
    g.fn = CRANE__INFO_FN__INFO_DEVICE;
    ASSERT_EQ(check(&m), 0);
    g.size = (uint64_t)PX_MAX_INFO + 1;
    ASSERT_EQ(check(&m), CL_INVALID_VALUE);
    g.size = 0;
    g.fn = 18;
    ASSERT_EQ(check(&m), CL_INVALID_VALUE);
}

/* Program bytes as bulk: lengths that add up, nothing inline beside. */
TEST(px_validate_program_bulk)
{
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__CreateProgram p = CRANE__CREATE_PROGRAM__INIT;
    uint64_t devs[2] = {1, 2}, lens[2] = {3u << 20, 2u << 20};

    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_CREATE_PROGRAM;
    m.create_program = &p;
    p.origin = CRANE__PROGRAM_ORIGIN__PROGRAM_SOURCE;
    p.bulk_len = 3u << 20;
    ASSERT_EQ(check(&m), 0);
    ASSERT_EQ(px_bulk_len(&m), 3u << 20);
    p.source.len = 1;
    ASSERT_EQ(check(&m), CL_INVALID_VALUE);      /* inline and bulk */
    p.source.len = 0;
    p.bulk_len = (uint64_t)PX_MAX_BULK + 1;
    ASSERT_EQ(check(&m), CL_INVALID_VALUE);      /* over the limit */
    p.origin = CRANE__PROGRAM_ORIGIN__PROGRAM_BINARY;
    p.devices = devs;
    p.n_devices = 2;
    p.binary_lens = lens;
    p.n_binary_lens = 2;
    p.bulk_len = 5u << 20;
    ASSERT_EQ(check(&m), 0);
    p.bulk_len = 4u << 20;
    ASSERT_EQ(check(&m), CL_INVALID_VALUE);      /* lengths do not add up */
    p.bulk_len = 5u << 20;
    p.n_binary_lens = 1;
    ASSERT_EQ(check(&m), CL_INVALID_VALUE);      /* one length for two devices */
    p.bulk_len = 0;
    ASSERT_EQ(check(&m), CL_INVALID_VALUE);      /* lengths without bulk */
}

/* SVM: coarse-grained allocations only; SVM pointer arguments alone. */
TEST(px_validate_svm)
{
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__SvmAlloc a = CRANE__SVM_ALLOC__INIT;
    Crane__LaunchKernel l = CRANE__LAUNCH_KERNEL__INIT;
    Crane__KernelArg arg = CRANE__KERNEL_ARG__INIT, *args[1] = {&arg};
    uint64_t gs = 64;

    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_SVM_ALLOC;
    m.svm_alloc = &a;
    ASSERT_EQ(check(&m), CL_INVALID_VALUE);     /* size 0 */
    a.size = 4096;
    a.flags = CL_MEM_READ_WRITE;
    ASSERT_EQ(check(&m), 0);
    a.flags |= CL_MEM_SVM_FINE_GRAIN_BUFFER;
    ASSERT_EQ(check(&m), CL_INVALID_VALUE);     /* fine-grained */
    a.flags = CL_MEM_READ_WRITE;
    a.alignment = 48;
    ASSERT_EQ(check(&m), CL_INVALID_VALUE);     /* not a power of two */
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_LAUNCH_KERNEL;
    m.launch_kernel = &l;
    l.work_dim = 1;
    l.global_size = &gs;
    l.n_global_size = 1;
    l.args = args;
    l.n_args = 1;
    arg.is_svm = 1;
    arg.object = 7;
    arg.svm_offset = 128;
    ASSERT_EQ(check(&m), 0);
    arg.object = 0;
    ASSERT_EQ(check(&m), CL_INVALID_VALUE);     /* offset into NULL */
    arg.object = 7;
    arg.value.len = 8;
    ASSERT_EQ(check(&m), CL_INVALID_VALUE);     /* pointer and value */
    arg.value.len = 0;
    arg.is_svm = 0;
    ASSERT_EQ(check(&m), CL_INVALID_VALUE);     /* offset without is_svm */
}

/* Fields the vendor gets, refused with the specification's error. */
TEST(px_validate_spec)
{
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__CreateImage im = CRANE__CREATE_IMAGE__INIT;
    Crane__CreateQueue q = CRANE__CREATE_QUEUE__INIT;
    Crane__CreateBuffer b = CRANE__CREATE_BUFFER__INIT;
    Crane__CreateSubDevices sd = CRANE__CREATE_SUB_DEVICES__INIT;
    uint64_t qp[4] = {CL_QUEUE_PROPERTIES, 0, CL_QUEUE_SIZE, 64};
    int64_t counts[4] = {CL_DEVICE_PARTITION_BY_COUNTS, 2, 1,
                         CL_DEVICE_PARTITION_BY_COUNTS_LIST_END};

    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_CREATE_IMAGE;
    m.create_image = &im;
    im.channel_order = CL_RGBA;
    im.channel_type = CL_UNORM_INT8;
    im.image_type = CL_MEM_OBJECT_IMAGE2D;
    im.width = im.height = 4;
    ASSERT_EQ(check(&m), 0);
    im.num_samples = 2;
    ASSERT_EQ(check(&m), CL_INVALID_IMAGE_DESCRIPTOR);
    im.num_samples = 0;
    im.channel_order = CL_BGRA;
    im.channel_type = CL_FLOAT;
    ASSERT_EQ(check(&m), CL_INVALID_IMAGE_FORMAT_DESCRIPTOR);
    im.channel_order = CL_RGBA;
    im.height = 0;
    ASSERT_EQ(check(&m), CL_INVALID_IMAGE_SIZE);
    im.height = 4;
    im.row_pitch = 64;
    ASSERT_EQ(check(&m), CL_INVALID_IMAGE_DESCRIPTOR);

    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_CREATE_QUEUE;
    m.create_queue = &q;
    q.properties = qp;
    q.n_properties = 2;
    ASSERT_EQ(check(&m), 0);
    qp[1] = CL_QUEUE_ON_DEVICE;          /* without out-of-order */
    ASSERT_EQ(check(&m), CL_INVALID_VALUE);
    qp[1] = CL_QUEUE_ON_DEVICE | CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE;
    q.n_properties = 4;
    ASSERT_EQ(check(&m), 0);             /* the device decides */
    qp[1] = 0;
    /* A size off the device: the vendor's to judge (PoCL takes it, and a
     * switch must remake such a queue). */
    ASSERT_EQ(check(&m), 0);
    q.n_properties = 0;
    q.legacy = 1;
    q.legacy_properties = CL_QUEUE_ON_DEVICE;
    ASSERT_EQ(check(&m), CL_INVALID_VALUE);

    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_CREATE_BUFFER;
    m.create_buffer = &b;
    b.size = 64;
    ASSERT_EQ(check(&m), 0);
    b.size = 0;
    ASSERT_EQ(check(&m), CL_INVALID_BUFFER_SIZE);
    b.size = 64;
    b.flags = CL_MEM_USE_HOST_PTR | CL_MEM_COPY_HOST_PTR;
    ASSERT_EQ(check(&m), CL_INVALID_VALUE);

    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_CREATE_SUB_DEVICES;
    m.create_sub_devices = &sd;
    sd.properties = counts;
    sd.n_properties = 4;
    ASSERT_EQ(check(&m), 0);
    sd.n_properties = 3;                 /* no LIST_END */
    ASSERT_EQ(check(&m), CL_INVALID_VALUE);
}

/* proto/remote_calls.def has a row for every case of ClientMessage's oneof,
 * named as the schema names it, and none more; an unset or unknown case
 * has no row and fails the checks. */
TEST(px_remote_calls_rows)
{
    const ProtobufCMessageDescriptor *d = &crane__client_message__descriptor;
    size_t oneof = 0;
    char why[160];

    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        if (!(f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)) {
            ASSERT(crn_remote_call((int)f->id) == NULL);
            continue;
        }
        oneof++;
        ASSERT(crn_remote_call((int)f->id) != NULL);
        ASSERT_STR_EQ(crn_remote_call_name((int)f->id), f->name);
    }
    ASSERT(oneof > 20);
    ASSERT_EQ(crn_remote_call_count(), oneof);
    ASSERT_STR_EQ(crn_remote_call_name(CRANE__CLIENT_MESSAGE__MSG__NOT_SET),
                  "?");
    ASSERT(crn_remote_call(100000) == NULL);
    ASSERT(crn_remote_call(-1) == NULL);
    ASSERT(crn_remote_call_is(CRANE__CLIENT_MESSAGE__MSG_GET_INFO,
                              CRN_CALL_LIGHT));
    ASSERT(!crn_remote_call_is(CRANE__CLIENT_MESSAGE__MSG_SYNC,
                               CRN_CALL_LIGHT));
    ASSERT(crn_remote_call_is(CRANE__CLIENT_MESSAGE__MSG_BUILD_PROGRAM,
                              CRN_CALL_UNTIMED));

    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    m.msg_case = (Crane__ClientMessage__MsgCase)99;
    ASSERT_EQ(px_validate(&m, why, sizeof(why)), CL_INVALID_VALUE);
    ASSERT_EQ(px_bulk_len(&m), 0u);
}
