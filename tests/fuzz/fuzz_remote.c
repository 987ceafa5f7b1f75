/* libFuzzer target: bytes as a client's stream into crane-proxy's executor. */
#include "arena.h"
#include "dispatch.h"
#include "exec.h"
#include "proto/log.h"
#include "tenant.h"
#include "validate.h"

#include "proto/frame.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Each input is what one client sends after its handshake: frames, each
 * followed by the bulk its message announces.  Every message is decoded,
 * validated and executed, in order, by a fresh tenant on the real OpenCL
 * devices (PoCL in the tests), whose replies are decoded again; the tenant
 * is torn down at the end of the input, so leaks show.  It starts with a
 * few objects (populate()) so that small ids name real ones.
 *
 * So that an input always ends, and ends soon, the harness keeps out what
 * could wait for ever or for long: user events (a wait on one never set),
 * program builds and programs from binaries or IL (compiler time, and
 * blobs that only test the vendor's parser); memory commands run blocking
 * so that no callback outlives the input.
 */

/* Small enough that inputs can reach the limits. */
#define FUZZ_MAX_FRAME 4096
#define FUZZ_QUOTA (16u << 20)

int LLVMFuzzerInitialize(int *argc, char ***argv);
const char *__lsan_default_suppressions(void);
const char *__lsan_default_options(void);

/* Memory PoCL allocates for itself and keeps (work-group functions of the
 * shared program, events its threads free later) is not the proxy's: a
 * leak is reported only when no frame of its allocation is in libpocl or
 * its LLVM.  Nor is anything allocated through C++'s operator new (crane
 * is C): LLVM's compiler threads leave such blocks whose stack the
 * unwinder cannot follow past libstdc++ (16 bytes at the end of a 2.5
 * million run, and once at the end of a 20 s pass). */
const char *__lsan_default_suppressions(void)
{
    return "leak:libpocl\nleak:libLLVM\nleak:libstdc++\n";
}

/* With a warm PoCL cache (POCL_CACHE_DIR, as make check sets), PoCL
 * dlopens cached kernel libraries whose dynamic TLS LeakSanitizer's
 * __tls_get_addr interception records with a bogus range (0x3da-0x8000014dc
 * here): its stop-the-world tracer then faults reading it ("Tracer caught
 * signal 11 ... LeakSanitizer has encountered a fatal error"), every run.
 * Without the interception static TLS is still scanned; only those
 * libraries' dynamic TLS is not, and crane keeps no heap pointers there. */
const char *__lsan_default_options(void)
{
    return "intercept_tls_get_addr=0";
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct px_devices devs;

/* Built once: a context on the first device, a program in it whose kernel
 * takes every kind of argument, for each input's tenant to adopt.  The
 * kernel touches only the first element of each pointer it is given, and
 * none that is NULL (OpenCL lets a program pass NULL for a buffer): what a
 * tenant's own kernel does wrong on a CPU device faults the process, which
 * the proxy contains by isolation (tests/proxy crash-isolation), not by
 * validation; the fuzzer explores the proxy, not such kernels. */
static cl_context shared_ctx;
static cl_program shared_prog;
static const char kernel_source[] =
    "__kernel void k(__global int *a, __local int *l, __constant int *c,\n"
    "                read_only image2d_t im, sampler_t sm, long x,\n"
    "                float4 v)\n"
    "{\n"
    "    int base = (int)x + (c ? c[0] : 0);\n"
    "    if (get_local_id(0) == 0)\n"
    "        l[0] = base;\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    if (a && get_global_id(0) == 0)\n"
    "        a[0] = l[0] + (int)(read_imagef(im, sm, (int2)(0, 0)).x +\n"
    "                            v.x);\n"
    "}\n";

/* Replies must be frames holding a ServerMessage. */
static void check_out(void *ctx, struct px_out *o)
{
    Crane__ServerMessage *m;

    (void)ctx;
    if (o->frame_len < 4)
        abort();
    m = crane__server_message__unpack(NULL, o->frame_len - 4, o->frame + 4);
    if (!m)
        abort();
    crane__server_message__free_unpacked(m, NULL);
    px_out_free(o);
}


/* --- seeds: one stream per kind of call, written into an empty corpus ---- */

struct seed {
    uint8_t buf[8192];
    size_t len;
};

/* Appends M as a frame, then BULK_LEN bytes of pattern. */
static void add(struct seed *sd, Crane__ClientMessage *m, size_t bulk_len)
{
    size_t len = crane__client_message__get_packed_size(m);

    if (sd->len + 4 + len + bulk_len > sizeof(sd->buf))
        abort();
    sd->buf[sd->len++] = (uint8_t)(len >> 24);
    sd->buf[sd->len++] = (uint8_t)(len >> 16);
    sd->buf[sd->len++] = (uint8_t)(len >> 8);
    sd->buf[sd->len++] = (uint8_t)len;
    sd->len += crane__client_message__pack(m, sd->buf + sd->len);
    for (size_t i = 0; i < bulk_len; i++)
        sd->buf[sd->len++] = (uint8_t)i;
}

static void save(const char *dir, int n, const struct seed *sd)
{
    char path[4096];
    FILE *f;

    snprintf(path, sizeof(path), "%s/seed-%02d", dir, n);
    f = fopen(path, "wb");
    if (!f)
        return;
    fwrite(sd->buf, 1, sd->len, f);
    fclose(f);
}

static void mem_seed(const char *dir, int n, Crane__MemOp op, size_t bulk)
{
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__MemCommand mc = CRANE__MEM_COMMAND__INIT;
    uint64_t origin[3] = {0, 0, 0}, region[3] = {4, 4, 1};
    struct seed sd = {.len = 0};
    bool image = op >= CRANE__MEM_OP__MEM_READ_IMAGE &&
                 op <= CRANE__MEM_OP__MEM_FILL_IMAGE;
    uint8_t pattern[16] = {1, 2, 3, 4};

    mc.queue = 2;
    mc.op = op;
    mc.src = image ? 5 : 3;
    mc.dst = image ? 5 : 4;
    mc.size = 64;
    mc.bulk_len = bulk;
    mc.event = 9;
    if (op == CRANE__MEM_OP__MEM_READ_RECT ||
        op == CRANE__MEM_OP__MEM_READ_IMAGE ||
        op == CRANE__MEM_OP__MEM_COPY_RECT ||
        op == CRANE__MEM_OP__MEM_COPY_IMAGE ||
        op == CRANE__MEM_OP__MEM_COPY_IMAGE_TO_BUFFER) {
        mc.n_src_origin = 3;
        mc.src_origin = origin;
    }
    if (op == CRANE__MEM_OP__MEM_WRITE_RECT ||
        op == CRANE__MEM_OP__MEM_WRITE_IMAGE ||
        op == CRANE__MEM_OP__MEM_COPY_RECT ||
        op == CRANE__MEM_OP__MEM_COPY_IMAGE ||
        op == CRANE__MEM_OP__MEM_FILL_IMAGE ||
        op == CRANE__MEM_OP__MEM_COPY_BUFFER_TO_IMAGE) {
        mc.n_dst_origin = 3;
        mc.dst_origin = origin;
    }
    if (mc.n_src_origin || mc.n_dst_origin) {
        mc.n_region = 3;
        mc.region = region;
    }
    if (op == CRANE__MEM_OP__MEM_FILL || op == CRANE__MEM_OP__MEM_FILL_IMAGE) {
        mc.pattern.data = pattern;
        mc.pattern.len = op == CRANE__MEM_OP__MEM_FILL ? 4 : 16;
    }
    if (op == CRANE__MEM_OP__MEM_COPY_IMAGE_TO_BUFFER)
        mc.dst = 3;
    if (op == CRANE__MEM_OP__MEM_COPY_BUFFER_TO_IMAGE)
        mc.src = 3;
    if (op == CRANE__MEM_OP__MEM_MIGRATE) {
        static uint64_t objs[2] = {3, 5};
        mc.n_objects = 2;
        mc.objects = objs;
    }
    m.seq = 1;
    m.want_reply = 1;
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_MEM_COMMAND;
    m.mem_command = &mc;
    add(&sd, &m, bulk);
    save(dir, n, &sd);
}

static void write_seeds(const char *dir)
{
    static const char src[] = "__kernel void k(__global int *a) { a[0]++; }";
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    struct seed sd = {.len = 0};
    uint64_t dev = devs.plats[0].devs[0].id;
    int n = 0;

    mem_seed(dir, n++, CRANE__MEM_OP__MEM_READ, 0);
    mem_seed(dir, n++, CRANE__MEM_OP__MEM_WRITE, 64);
    mem_seed(dir, n++, CRANE__MEM_OP__MEM_COPY, 0);
    mem_seed(dir, n++, CRANE__MEM_OP__MEM_FILL, 0);
    mem_seed(dir, n++, CRANE__MEM_OP__MEM_READ_RECT, 0);
    mem_seed(dir, n++, CRANE__MEM_OP__MEM_WRITE_RECT, 16);
    mem_seed(dir, n++, CRANE__MEM_OP__MEM_COPY_RECT, 0);
    mem_seed(dir, n++, CRANE__MEM_OP__MEM_READ_IMAGE, 0);
    mem_seed(dir, n++, CRANE__MEM_OP__MEM_WRITE_IMAGE, 64);
    mem_seed(dir, n++, CRANE__MEM_OP__MEM_COPY_IMAGE, 0);
    mem_seed(dir, n++, CRANE__MEM_OP__MEM_FILL_IMAGE, 0);
    mem_seed(dir, n++, CRANE__MEM_OP__MEM_COPY_IMAGE_TO_BUFFER, 0);
    mem_seed(dir, n++, CRANE__MEM_OP__MEM_COPY_BUFFER_TO_IMAGE, 0);
    mem_seed(dir, n++, CRANE__MEM_OP__MEM_MIGRATE, 0);
    {
        Crane__GetInfo g = CRANE__GET_INFO__INIT;
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_GET_INFO;
        m.get_info = &g;
        m.want_reply = 1;
        for (int fn = 1; fn <= 17; fn++) {
            g.fn = fn;
            g.id = fn <= 2 ? (fn == 1 ? devs.plats[0].id : dev) : 3;
            g.param = fn == 5 ? CL_MEM_CONTEXT : 0x1000;
            g.size = 64;
            m.seq = (uint64_t)fn;
            add(&sd, &m, 0);
        }
        save(dir, n++, &sd);
    }
    {
        Crane__CreateContext cc = CRANE__CREATE_CONTEXT__INIT;
        Crane__CreateBuffer b = CRANE__CREATE_BUFFER__INIT;
        Crane__CreateProgram p = CRANE__CREATE_PROGRAM__INIT;
        Crane__CreateKernel k = CRANE__CREATE_KERNEL__INIT;
        Crane__Release r = CRANE__RELEASE__INIT;
        Crane__Sync sy = CRANE__SYNC__INIT;
        uint64_t ev = 9;
        sd.len = 0;
        cc.id = 11;
        cc.n_devices = 1;
        cc.devices = &dev;
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_CREATE_CONTEXT;
        m.create_context = &cc;
        add(&sd, &m, 0);
        b.id = 12;
        b.context = 11;
        b.size = 32;
        b.bulk_len = 32;
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_CREATE_BUFFER;
        m.create_buffer = &b;
        add(&sd, &m, 32);
        p.id = 13;
        p.context = 1;
        p.source.data = (uint8_t *)src;
        p.source.len = sizeof(src) - 1;
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_CREATE_PROGRAM;
        m.create_program = &p;
        add(&sd, &m, 0);
        k.id = 14;
        k.program = 13;
        k.name = "k";
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_CREATE_KERNEL;
        m.create_kernel = &k;
        add(&sd, &m, 0);
        sy.op = CRANE__SYNC_OP__SYNC_MARKER;
        sy.queue = 2;
        sy.event = 9;
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_SYNC;
        m.sync = &sy;
        add(&sd, &m, 0);
        sy.op = CRANE__SYNC_OP__SYNC_WAIT;
        sy.n_events = 1;
        sy.events = &ev;
        add(&sd, &m, 0);
        r.kind = CRANE__OBJ_KIND__OBJ_MEM;
        r.id = 12;
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_RELEASE;
        m.release = &r;
        add(&sd, &m, 0);
        save(dir, n++, &sd);
    }
    {
        Crane__LaunchKernel l = CRANE__LAUNCH_KERNEL__INIT;
        Crane__KernelArg a = CRANE__KERNEL_ARG__INIT, *av = &a;
        uint64_t gsz = 1;
        sd.len = 0;
        a.object = 3;
        a.is_object = 1;
        l.queue = 2;
        l.kernel = 14;
        l.work_dim = 1;
        l.n_global_size = 1;
        l.global_size = &gsz;
        l.n_args = 1;
        l.args = &av;
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_LAUNCH_KERNEL;
        m.launch_kernel = &l;
        add(&sd, &m, 0);
        save(dir, n++, &sd);
    }
    {
        /* Every argument of the shared kernel 6, then a launch. */
        Crane__LaunchKernel l = CRANE__LAUNCH_KERNEL__INIT;
        Crane__SetKernelArgs sa = CRANE__SET_KERNEL_ARGS__INIT;
        Crane__KernelArg a[7], *av[7];
        uint64_t gsz = 16, lsz = 16;
        int64_t x = 5;
        float v[4] = {1, 2, 3, 4};
        for (int i = 0; i < 7; i++) {
            crane__kernel_arg__init(&a[i]);
            a[i].index = (uint32_t)i;
            av[i] = &a[i];
        }
        a[0].object = 3;
        a[0].is_object = 1;
        a[1].is_local = 1;
        a[1].local_size = 64;
        a[2].object = 4;
        a[2].is_object = 1;
        a[3].object = 5;
        a[3].is_object = 1;
        a[4].object = 7;
        a[4].is_object = 1;
        a[5].value.data = (uint8_t *)&x;
        a[5].value.len = sizeof(x);
        a[6].value.data = (uint8_t *)v;
        a[6].value.len = sizeof(v);
        sd.len = 0;
        sa.kernel = 6;
        sa.n_args = 3;
        sa.args = av;
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_SET_KERNEL_ARGS;
        m.set_kernel_args = &sa;
        add(&sd, &m, 0);
        l.queue = 2;
        l.kernel = 6;
        l.work_dim = 1;
        l.n_global_size = 1;
        l.global_size = &gsz;
        l.n_local_size = 1;
        l.local_size = &lsz;
        l.n_args = 4;
        l.args = av + 3;
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_LAUNCH_KERNEL;
        m.launch_kernel = &l;
        add(&sd, &m, 0);
        save(dir, n++, &sd);
    }
}

/* A corpus directory given on the command line that is still empty gets
 * the seeds. */
static void seed_corpus(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        DIR *d;
        struct dirent *e;
        bool empty = true;
        if (argv[i][0] == '-')
            continue;
        d = opendir(argv[i]);
        if (!d)
            continue;
        while ((e = readdir(d)) != NULL)
            if (e->d_name[0] != '.')
                empty = false;
        closedir(d);
        if (empty)
            write_seeds(argv[i]);
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    char why[256];

    crn_log_set_level("error");
    if (px_devices_open("all", &devs, why, sizeof(why)) < 0) {
        fprintf(stderr, "fuzz_remote: %s\n", why);
        abort();
    }
    {
        cl_device_id dev = devs.plats[0].devs[0].handle;
        const char *src = kernel_source;
        cl_int err;
        shared_ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
        if (!shared_ctx)
            abort();
        shared_prog = clCreateProgramWithSource(shared_ctx, 1, &src, NULL,
                                                &err);
        if (!shared_prog || clBuildProgram(shared_prog, 0, NULL,
                                           "-cl-kernel-arg-info", NULL,
                                           NULL) != CL_SUCCESS)
            abort();
    }
    seed_corpus(*argc, *argv);
    return 0;
}

/* Executes M (built here, not fuzzed) for T. */
static void run(struct px_tenant *t, Crane__ClientMessage *m)
{
    struct px_req *r = calloc(1, sizeof(*r));
    uint8_t *buf = malloc(crane__client_message__get_packed_size(m) + 1);

    if (!r || !buf)
        abort();
    /* Through pack and unpack, as a real message would come. */
    r->msg = crane__client_message__unpack(
        NULL, crane__client_message__pack(m, buf), buf);
    free(buf);
    if (!r->msg)
        abort();
    px_exec_one(t, r);
}

/*
 * Objects every input starts with, so that small ids name something:
 * 1 a context on the first device (the shared one), 2 a queue, 3 a buffer
 * of 4 KiB, 4 a sub-buffer of it, 5 a 16x16 RGBA8 image, 6 the shared
 * program's kernel, 7 a sampler.
 */
static void populate_calls(struct px_tenant *t);

static void populate(struct px_tenant *t)
{
    cl_int err;
    cl_kernel kernel;
    cl_sampler sampler;

    clRetainContext(shared_ctx);
    if (px_tenant_add(t, 1, PX_CONTEXT, shared_ctx, 0, false) != CL_SUCCESS)
        abort();
    kernel = clCreateKernel(shared_prog, "k", &err);
    if (!kernel || px_tenant_add(t, 6, PX_KERNEL, kernel, 0, false))
        abort();
    sampler = clCreateSampler(shared_ctx, CL_FALSE, CL_ADDRESS_NONE,
                              CL_FILTER_NEAREST, &err);
    if (!sampler || px_tenant_add(t, 7, PX_SAMPLER, sampler, 0, false))
        abort();
    populate_calls(t);
}

/* The rest of populate(), through calls as a client makes them. */
static void populate_calls(struct px_tenant *t)
{
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__CreateContext cc = CRANE__CREATE_CONTEXT__INIT;
    Crane__CreateQueue q = CRANE__CREATE_QUEUE__INIT;
    Crane__CreateBuffer b = CRANE__CREATE_BUFFER__INIT;
    Crane__CreateSubBuffer sb = CRANE__CREATE_SUB_BUFFER__INIT;
    Crane__CreateImage im = CRANE__CREATE_IMAGE__INIT;
    uint64_t dev = devs.plats[0].devs[0].id;

    (void)cc;
    q.id = 2;
    q.context = 1;
    q.device = dev;
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_CREATE_QUEUE;
    m.create_queue = &q;
    run(t, &m);
    b.id = 3;
    b.context = 1;
    b.size = 4096;
    b.flags = CL_MEM_READ_WRITE;
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_CREATE_BUFFER;
    m.create_buffer = &b;
    run(t, &m);
    sb.id = 4;
    sb.buffer = 3;
    sb.size = 1024;
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_CREATE_SUB_BUFFER;
    m.create_sub_buffer = &sb;
    run(t, &m);
    im.id = 5;
    im.context = 1;
    im.channel_order = CL_RGBA;
    im.channel_type = CL_UNORM_INT8;
    im.image_type = CL_MEM_OBJECT_IMAGE2D;
    im.width = im.height = 16;
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_CREATE_IMAGE;
    m.create_image = &im;
    run(t, &m);
}

static bool kept_out(Crane__ClientMessage *m)
{
    switch (m->msg_case) {
    case CRANE__CLIENT_MESSAGE__MSG_CREATE_USER_EVENT:
    case CRANE__CLIENT_MESSAGE__MSG_SET_USER_EVENT_STATUS:
    case CRANE__CLIENT_MESSAGE__MSG_WATCH_EVENT:
    case CRANE__CLIENT_MESSAGE__MSG_BUILD_PROGRAM:
        return true;
    case CRANE__CLIENT_MESSAGE__MSG_CREATE_PROGRAM:
        return m->create_program->origin !=
               CRANE__PROGRAM_ORIGIN__PROGRAM_SOURCE;
    case CRANE__CLIENT_MESSAGE__MSG_MEM_COMMAND:
        m->mem_command->blocking = 1;
        return false;
    case CRANE__CLIENT_MESSAGE__MSG_LAUNCH_KERNEL: {
        /* At most 4096 work-items, so that an input ends soon. */
        uint64_t items = 1;
        for (size_t i = 0; i < m->launch_kernel->n_global_size; i++)
            if (__builtin_mul_overflow(items,
                                       m->launch_kernel->global_size[i],
                                       &items))
                return true;
        return items > 4096;
    }
    default:
        return false;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct px_sink sink = {check_out, NULL, NULL};
    struct px_tenant *t = px_tenant_new(&devs, 1, FUZZ_QUOTA);
    size_t pos = 0;

    if (!t)
        abort();
    px_tenant_attach(t, &sink, NULL);
    populate(t);
    for (;;) {
        const uint8_t *msg;
        size_t len, used;
        struct px_req *r;
        uint64_t bulk;

        if (crn_frame_decode(data + pos, size - pos, FUZZ_MAX_FRAME, &msg,
                             &len, &used) < 0)
            break;
        pos += used;
        r = calloc(1, sizeof(*r));
        if (!r)
            abort();
        /* Into an arena, as the proxy's input does (arena.h). */
        r->msg = px_arena_unpack(msg, len, &r->arena);
        if (!r->msg) {
            snprintf(r->error, sizeof(r->error), "frame does not decode");
            px_exec_one(t, r);
            continue;
        }
        r->seq = r->msg->seq;
        /* As the proxy does: bulk over the limit, or cut short, ends the
         * stream; any other bulk is taken, valid message or not. */
        bulk = px_bulk_len(r->msg);
        if (bulk > PX_MAX_BULK || bulk > size - pos) {
            px_req_free(r);
            break;
        }
        if (bulk) {
            r->bulk = malloc(bulk);
            if (!r->bulk)
                abort();
            memcpy(r->bulk, data + pos, bulk);
            r->bulk_len = bulk;
            pos += bulk;
        }
        if (kept_out(r->msg)) {
            px_req_free(r);
            continue;
        }
        px_exec_one(t, r);
    }
    px_exec_teardown(t);
    px_tenant_unref(t);
    return 0;
}
