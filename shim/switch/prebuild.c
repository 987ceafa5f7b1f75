/* Before a switch to the proxy: the program's contexts, queues, samplers,
 * programs and kernels made there ahead, as twins, while it still runs
 * natively, so that the rebuild inside the stop takes them instead of
 * making them (a context and a program build are most of a small
 * program's rebuild).
 *
 * Nothing here may matter to the switch: a twin that cannot be made is
 * not made (the rebuild makes the object, as without this), and one the
 * switch does not take stays a twin, which goes with its shadow
 * (objects.c), with the connection (twin_conn) or at the next switch of
 * another kind (rehome_linger.c).  The program runs on meanwhile: its
 * native objects are never touched; what a twin is made from is read
 * under the store lock, and each shadow is held by a child reference
 * until its twin is in place.  A program built again meanwhile changes
 * its build_gen, which the rebuild compares with the twin's twin_build
 * (the program's and its kernels'), so that a twin of an older build is
 * dropped there, never used.
 */
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "proto/log.h"
#include "shim.h"

#define MAX_DEVS 64

/* One twin to make: its shadow, its parent's twin (context or program),
 * the build it is of and what its kind needs, all read under the store
 * lock. */
struct order {
    struct shim_obj *o;
    void *parent;
    unsigned gen;                /* programs, kernels: build_gen */
    cl_device_id devs[MAX_DEVS]; /* queues: [0]; programs: their list */
    cl_uint n_devs;
    cl_device_id build_devs[MAX_DEVS];
    cl_uint n_build_devs;
    char *options;               /* programs: the build's, malloc()ed */
    bool from_binary;            /* programs: made from kept binaries */
};

struct batch {
    struct order *v;
    size_t n, cap;
    const struct shim_plan *plan;
    unsigned long conn;
};

/* The twin of O, if it stands for O on connection CONN: for a program,
 * of its current build; for a kernel, of its program's. */
static void *valid_twin(struct shim_obj *o, unsigned long conn)
{
    void *t = atomic_load(&o->twin);

    if (!t || o->twin_conn != conn)
        return NULL;
    if (o->kind == SHIM_PROGRAM &&
        o->twin_build != ((struct shim_program *)o)->build_gen)
        return NULL;
    if (o->kind == SHIM_KERNEL &&
        o->twin_build != ((struct shim_kernel *)o)->program->build_gen)
        return NULL;
    return t;
}

static bool place_devices(struct shim_device **devs, cl_uint n,
                          const struct shim_plan *plan, cl_device_id *out)
{
    if (n > MAX_DEVS)
        return false;
    for (cl_uint i = 0; i < n; i++)
        if (!(out[i] = shim_plan_device(devs[i], plan)))
            return false;
    return true;
}

/* What a program's twin is made from; false if it is not made ahead:
 * compiled or linked programs without kept binaries (their inputs' twins
 * would have to match), specialization constants, sub-devices. */
static bool program_order(struct shim_program *p, struct order *r,
                          const struct shim_plan *plan)
{
    if (((p->origin == SHIM_FROM_LINK || p->step == SHIM_COMPILED ||
          p->n_inputs) && !shim_program_cache_has(p)) ||
        p->n_spec)
        return false;
    if (!place_devices(p->devices, p->n_devices, plan, r->devs) ||
        !place_devices(p->build_devices, p->n_build_devices, plan,
                       r->build_devs))
        return false;
    r->n_devs = p->n_devices;
    r->n_build_devs = p->n_build_devices;
    r->gen = p->build_gen;
    if (p->step == SHIM_BUILT &&
        !(r->options = shim_program_build_options(p->options)))
        return false;
    return true;
}

/* What O's twin is made from; false if none is made ahead (it has one,
 * its parent has none, or its kind is not made ahead). */
static bool order_of(struct shim_obj *o, struct order *r,
                     const struct shim_plan *plan, unsigned long conn)
{
    memset(r, 0, sizeof(*r));
    r->o = o;
    if (!o->ops->twins || valid_twin(o, conn))
        return false;
    switch (o->kind) {
    case SHIM_QUEUE: {
        struct shim_queue *q = (void *)o;
        r->parent = valid_twin(&q->context->obj, conn);
        r->n_devs = 1;
        return r->parent && (r->devs[0] = shim_plan_device(q->device, plan));
    }
    case SHIM_SAMPLER:
        r->parent =
            valid_twin(&((struct shim_sampler *)o)->context->obj, conn);
        return r->parent != NULL;
    case SHIM_PROGRAM: {
        struct shim_program *p = (void *)o;
        r->parent = valid_twin(&p->context->obj, conn);
        return r->parent && program_order(p, r, plan);
    }
    case SHIM_KERNEL: {
        struct shim_obj *prog = &((struct shim_kernel *)o)->program->obj;
        r->parent = valid_twin(prog, conn);
        r->gen = prog->twin_build;
        return r->parent != NULL;
    }
    default:
        return false;
    }
}

/* Every shadow of KIND (programs: also queues and samplers) whose twin
 * can be made now, each held by a child reference. */
static void collect(struct batch *b, bool kernels)
{
    shim_store_lock();
    for (struct shim_obj *o = shim_store_first(); o; o = o->next) {
        if ((o->kind == SHIM_KERNEL) != kernels)
            continue;
        /* Being destroyed by the program's last release: left alone. */
        if (atomic_load(&o->finalizing) ||
            (atomic_load(&o->app_refs) == 0 &&
             atomic_load(&o->child_refs) == 0))
            continue;
        if (b->n == b->cap) {
            size_t cap = b->cap ? 2 * b->cap : 16;
            struct order *v = realloc(b->v, cap * sizeof(*v));
            if (!v)
                break;
            b->v = v;
            b->cap = cap;
        }
        struct order *r = &b->v[b->n];
        if (!order_of(o, r, b->plan, b->conn)) {
            free(r->options);
            continue;
        }
        /* A stale twin on this connection (an older build) goes now. */
        shim_twin_release(o);
        shim_obj_retain_child(o);
        b->n++;
    }
    shim_store_unlock();
}

static void *make_program(struct order *r, const struct shim_plan *plan)
{
    struct shim_program *p = (void *)r->o;
    void *ctx = r->parent, *made = NULL;
    cl_int err = CL_INVALID_OPERATION;
    const char *src = p->source;

    if ((made = shim_program_cache_twin(p, ctx, plan))) {
        r->from_binary = true;
        return made;
    }
    /* Compiled or linked: only from kept binaries. */
    if (p->origin == SHIM_FROM_LINK || p->step == SHIM_COMPILED ||
        p->n_inputs)
        return NULL;
    switch (p->origin) {
    case SHIM_FROM_SOURCE:
        made = VENDOR(ctx)->clCreateProgramWithSource(ctx, 1, &src, NULL,
                                                      &err);
        break;
    case SHIM_FROM_BINARY:
        made = VENDOR(ctx)->clCreateProgramWithBinary(
            ctx, r->n_devs, r->devs, p->bin_sizes,
            (const unsigned char **)p->bins, NULL, &err);
        break;
    case SHIM_FROM_IL:
        if (VENDOR(ctx)->clCreateProgramWithIL)
            made = VENDOR(ctx)->clCreateProgramWithIL(ctx, p->il,
                                                      p->il_size, &err);
        break;
    case SHIM_FROM_BUILTIN:
        made = VENDOR(ctx)->clCreateProgramWithBuiltInKernels(
            ctx, r->n_devs, r->devs, p->source, &err);
        break;
    default:
        break;
    }
    if (made && r->options &&
        (err = VENDOR(made)->clBuildProgram(
             made, r->n_build_devs, r->n_build_devs ? r->build_devs : NULL,
             r->options, NULL, NULL)) != CL_SUCCESS) {
        VENDOR(made)->clReleaseProgram(made);
        made = NULL;
    }
    if (!made)
        CRN_DEBUG("prebuild: program not made ahead (%d)", err);
    return made;
}

static void *make(struct order *r, const struct shim_plan *plan)
{
    void *parent = r->parent;
    cl_int err = CL_INVALID_OPERATION;

    switch (r->o->kind) {
    case SHIM_QUEUE: {
        struct shim_queue *q = (void *)r->o;
        if (q->legacy)
            return VENDOR(parent)->clCreateCommandQueue(
                parent, r->devs[0], q->legacy_props, &err);
        if (!VENDOR(parent)->clCreateCommandQueueWithProperties)
            return NULL;
        return VENDOR(parent)->clCreateCommandQueueWithProperties(
            parent, r->devs[0], q->props, &err);
    }
    case SHIM_SAMPLER:
        /* Only the 2.0 call: the 1.x mapping is left to the rebuild. */
        if (!VENDOR(parent)->clCreateSamplerWithProperties)
            return NULL;
        return VENDOR(parent)->clCreateSamplerWithProperties(
            parent, ((struct shim_sampler *)r->o)->props, &err);
    case SHIM_PROGRAM:
        return make_program(r, plan);
    case SHIM_KERNEL:
        return VENDOR(parent)->clCreateKernel(
            parent, ((struct shim_kernel *)r->o)->name, &err);
    default:
        return NULL;
    }
}

/* Makes every twin of B; how many were made.  Each is in place before its
 * shadow's child reference goes: a shadow the program released meanwhile
 * then takes its twin with it (objects.c). */
static unsigned make_all(struct batch *b, bool give_up)
{
    unsigned made_n = 0;

    for (size_t i = 0; i < b->n; i++) {
        struct order *r = &b->v[i];
        /* A connection made again meanwhile: the parents are gone. */
        void *made = give_up || shim_twin_generation() != b->conn
                         ? NULL
                         : make(r, b->plan);
        if (made && shim_twin_generation() == b->conn) {
            shim_store_lock();
            r->o->twin_conn = b->conn;
            r->o->twin_build = r->gen;
            if (r->o->kind == SHIM_PROGRAM)
                ((struct shim_program *)r->o)->twin_from_binary =
                    r->from_binary;
            atomic_store(&r->o->twin, made);
            shim_store_unlock();
            made_n++;
        } else if (made) {
            CRN_DEBUG("prebuild: the proxy connection changed; a %s made "
                      "ahead went with it", r->o->ops->name);
        }
        free(r->options);
        shim_obj_release_child(r->o);
    }
    b->n = 0;
    return made_n;
}

void shim_prebuild_remote(struct shim_rehome_times *t)
{
    struct shim_plan plan;
    char why[400];
    double t0 = shim_now();
    struct batch b = {.conn = shim_twin_generation(), .plan = &plan};

    if (!shim_config.prebuild || !b.conn ||
        shim_plan_make(shim_proxy_backend(), &plan, why, sizeof(why)) < 0)
        return;
    /* Parents first: contexts, then what is made in them, then kernels
     * from the programs' twins. */
    unsigned n = shim_prewarm_remote_contexts_on(&plan, b.conn);
    collect(&b, false);
    n += make_all(&b, false);
    /* tests/fault: the proxy killed, programs built again or objects
     * made here, between the programs and their kernels. */
    bool give_up = shim_fault_at("prebuild") < 0;
    collect(&b, true);
    n += make_all(&b, give_up);
    free(b.v);
    shim_plan_free(&plan);
    t->prebuilt = n;
    t->prebuild = shim_now() - t0;
    if (n)
        CRN_INFO("prebuild: %u object(s) made on the proxy ahead of the "
                 "switch in %.3f ms, before the gate closes",
                 n, t->prebuild * 1e3);
}
