/* Binaries of programs built from source or IL, compiled or linked, kept so
 * that a re-home onto the same device model loads them instead of compiling
 * the source again (a compile is most of a re-home's rebuild: ~100 ms on
 * NVIDIA, ~60 ms on PoCL with a warm kernel cache, ~1.5 ms from binaries;
 * a compile and a link 41-52 ms on the H200). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "proto/log.h"
#include "shim.h"

#define KEY_LEN 512

struct shim_program_cache {
    cl_uint n;
    struct shim_device **devices;  /* the shadows the binaries are for */
    char (*keys)[KEY_LEN];         /* device model of each */
    size_t *sizes;
    unsigned char **bins;
    /* What the binaries are: an executable is built after it is loaded;
     * a compiled object or a library is loaded only (linked later). */
    cl_program_binary_type type;
};

/* Programs a switch's rebuild made from binaries (kept or the program's
 * own) and those it compiled or linked (the switch's report). */
static atomic_uint n_kept, n_compiled;

void shim_program_cache_count(bool kept)
{
    atomic_fetch_add(kept ? &n_kept : &n_compiled, 1);
}

void shim_program_cache_counts_take(unsigned *kept, unsigned *compiled)
{
    *kept = atomic_exchange(&n_kept, 0);
    *compiled = atomic_exchange(&n_compiled, 0);
}

/* What must match for a binary to load: the device's name, the driver's
 * version and the OpenCL version it speaks. */
static void device_key(cl_device_id real, char key[KEY_LEN])
{
    char name[200] = "", driver[150] = "", version[150] = "";

    VENDOR(real)->clGetDeviceInfo(real, CL_DEVICE_NAME, sizeof(name) - 1,
                                  name, NULL);
    VENDOR(real)->clGetDeviceInfo(real, CL_DRIVER_VERSION, sizeof(driver) - 1,
                                  driver, NULL);
    VENDOR(real)->clGetDeviceInfo(real, CL_DEVICE_VERSION,
                                  sizeof(version) - 1, version, NULL);
    snprintf(key, KEY_LEN, "%s|%s|%s", name, driver, version);
}

/* Guards every program's cache and cache_due against the program's own
 * builds while a switch prepares. */
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

static void cache_free(struct shim_program_cache *c)
{
    if (!c)
        return;
    for (cl_uint i = 0; i < c->n; i++)
        free(c->bins ? c->bins[i] : NULL);
    free(c->devices);
    free(c->keys);
    free(c->sizes);
    free(c->bins);
    free(c);
}

static void cache_drop(struct shim_program *p)
{
    cache_free(p->cache);
    p->cache = NULL;
    cache_free(p->answer);
    p->answer = NULL;
}

void shim_program_cache_free(struct shim_program *p)
{
    pthread_mutex_lock(&cache_lock);
    cache_drop(p);
    p->cache_due = false;
    p->cache_gen++;
    pthread_mutex_unlock(&cache_lock);
}

static struct shim_device *shadow_of(struct shim_program *p, void *real)
{
    for (cl_uint d = 0; d < p->context->n_devices; d++)
        if (p->context->devices[d]->obj.real == real)
            return p->context->devices[d];
    return NULL;
}

bool shim_program_cache_has(struct shim_program *p)
{
    pthread_mutex_lock(&cache_lock);
    bool has = p->cache != NULL;
    pthread_mutex_unlock(&cache_lock);
    return has;
}

/* After a build: the binaries are fetched later, by the next switch before
 * it stops the program (shim_program_cache_prepare), not now: on PoCL
 * fetching them compiles each kernel once more (about a second for a
 * mid-sized program), which a native run of the program never pays. */
void shim_program_cache_mark(struct shim_program *p)
{
    bool compiled = p->origin == SHIM_FROM_SOURCE || p->origin == SHIM_FROM_IL;

    pthread_mutex_lock(&cache_lock);
    cache_drop(p);
    /* Built or compiled from source or IL, or linked: what the device
     * gives back loads again (specialization constants are not kept). */
    p->cache_due = shim_config.binary_cache && !p->n_spec &&
                   ((compiled && p->step != SHIM_NOT_BUILT) ||
                    p->origin == SHIM_FROM_LINK);
    p->cache_gen++;
    pthread_mutex_unlock(&cache_lock);
}

/* What the vendor made of `p`'s source, or NULL. */
static struct shim_program_cache *fetch(struct shim_program *p)
{
    void *r = p->obj.real;
    cl_device_id real[64];
    size_t got = 0;
    struct shim_program_cache *c;

    if (!r ||
        VENDOR(r)->clGetProgramInfo(r, CL_PROGRAM_DEVICES, sizeof(real), real,
                                    &got) != CL_SUCCESS ||
        got == 0)
        return NULL;
    if (!(c = calloc(1, sizeof(*c))))
        return NULL;
    c->n = (cl_uint)(got / sizeof(cl_device_id));
    c->devices = calloc(c->n, sizeof(*c->devices));
    c->keys = calloc(c->n, sizeof(*c->keys));
    c->sizes = calloc(c->n, sizeof(*c->sizes));
    c->bins = calloc(c->n, sizeof(*c->bins));
    if (!c->devices || !c->keys || !c->sizes || !c->bins ||
        VENDOR(r)->clGetProgramInfo(r, CL_PROGRAM_BINARY_SIZES,
                                    c->n * sizeof(size_t), c->sizes,
                                    NULL) != CL_SUCCESS)
        goto drop;
    for (cl_uint i = 0; i < c->n; i++) {
        if (!c->sizes[i] || !(c->devices[i] = shadow_of(p, real[i])) ||
            !(c->bins[i] = malloc(c->sizes[i])))
            goto drop;
        device_key(real[i], c->keys[i]);
        cl_program_binary_type type = CL_PROGRAM_BINARY_TYPE_NONE;
        if (VENDOR(r)->clGetProgramBuildInfo(r, real[i],
                                             CL_PROGRAM_BINARY_TYPE,
                                             sizeof(type), &type,
                                             NULL) != CL_SUCCESS ||
            type == CL_PROGRAM_BINARY_TYPE_NONE || (i && type != c->type))
            goto drop;
        c->type = type;
    }
    if (VENDOR(r)->clGetProgramInfo(r, CL_PROGRAM_BINARIES,
                                    c->n * sizeof(unsigned char *), c->bins,
                                    NULL) != CL_SUCCESS)
        goto drop;
    return c;
drop:
    cache_free(c);
    return NULL;
}

/* Called by a switch before it closes the gate (the program still runs;
 * real handles change only under the re-home lock, which it holds). */
void shim_program_cache_prepare(void)
{
    struct shim_program **due = NULL;
    size_t n = 0, cap = 0;

    shim_store_lock();
    for (struct shim_obj *o = shim_store_first(); o; o = o->next) {
        if (o->kind != SHIM_PROGRAM || !((struct shim_program *)o)->cache_due)
            continue;
        if (n == cap) {
            struct shim_program **d =
                realloc(due, (cap = cap ? 2 * cap : 16) * sizeof(*d));
            if (!d)
                break;
            due = d;
        }
        due[n++] = (struct shim_program *)o;
        shim_obj_retain_child(o);
    }
    shim_store_unlock();
    for (size_t i = 0; i < n; i++) {
        struct shim_program *p = due[i];
        pthread_mutex_lock(&cache_lock);
        unsigned gen = p->cache_gen;
        bool wanted = p->cache_due;
        pthread_mutex_unlock(&cache_lock);
        struct shim_program_cache *c = wanted ? fetch(p) : NULL;
        pthread_mutex_lock(&cache_lock);
        /* Not rebuilt meanwhile, nor fetched by the program's own query
         * (shim_program_cache_answer), whose answer must stay. */
        if (p->cache_gen == gen && p->cache_due) {
            cache_drop(p);
            p->cache = c;
            p->cache_due = false;
            c = NULL;
        }
        pthread_mutex_unlock(&cache_lock);
        cache_free(c);
        shim_obj_release_child(&p->obj);
    }
    free(due);
}

/* The binaries a query of P is answered from, fetched now if it has none:
 * kept for the next switch where they are due, else only for answers. */
static struct shim_program_cache *answer_of(struct shim_program *p)
{
    pthread_mutex_lock(&cache_lock);
    unsigned gen = p->cache_gen;
    bool have = p->cache || p->answer;
    pthread_mutex_unlock(&cache_lock);
    struct shim_program_cache *c = have ? NULL : fetch(p);
    pthread_mutex_lock(&cache_lock);
    if (c && p->cache_gen == gen && !p->cache && !p->answer) {
        if (p->cache_due)
            p->cache = c;
        else
            p->answer = c;
        p->cache_due = false;
        c = NULL;
    }
    cache_free(c);
    /* Returned locked: the caller copies from it, then unlocks. */
    return p->cache ? p->cache : p->answer;
}

/* A vendor answers CL_PROGRAM_BINARIES with as many bytes as its binaries
 * have now, into buffers the program sized by an earlier
 * CL_PROGRAM_BINARY_SIZES: a switch between the two (its program remade
 * from binaries, or elsewhere) changed them (PoCL then wrote past the
 * program's blocks, or refused a compiled object's sizes with
 * CL_INVALID_PROGRAM).  Both are answered here from the same binaries,
 * those of the program's build, whichever side it is on. */
bool shim_program_cache_answer(struct shim_program *p, cl_program_info param,
                               size_t size, void *value, size_t *size_ret,
                               cl_int *err)
{
    const struct shim_program_cache *c = answer_of(p);

    if (!c) {
        pthread_mutex_unlock(&cache_lock);
        return false;
    }
    size_t need = c->n * (param == CL_PROGRAM_BINARIES
                              ? sizeof(unsigned char *)
                              : sizeof(size_t));
    *err = CL_SUCCESS;
    if (value && size < need) {
        *err = CL_INVALID_VALUE;
    } else if (value && param == CL_PROGRAM_BINARY_SIZES) {
        memcpy(value, c->sizes, need);
    } else if (value) {
        unsigned char **out = value;
        for (cl_uint i = 0; i < c->n; i++)
            if (out[i])
                memcpy(out[i], c->bins[i], c->sizes[i]);
    }
    if (*err == CL_SUCCESS && size_ret)
        *size_ret = need;
    pthread_mutex_unlock(&cache_lock);
    return true;
}

/* Programs are built with their own options, so that the vendor's kernel
 * cache finds what native runs of the program left.  Which arguments a
 * kernel may write is read from the source instead (kernel_sig.c);
 * CRANE_ARG_INFO=1 adds -cl-kernel-arg-info, for exact qualifiers at the
 * price of a cold cache. */
char *shim_program_build_options(const char *options)
{
    const char *extra = shim_config.arg_info ? " -cl-kernel-arg-info" : "";
    size_t n = (options ? strlen(options) : 0) + strlen(extra) + 1;
    char *s = malloc(n);

    if (s)
        snprintf(s, n, "%s%s", options ? options : "", extra);
    return s;
}

/* The options a kept executable is built with: the program's build
 * options, or for a linked one only what the shim adds (link options are
 * no build options). */
static char *load_options(const struct shim_program *p)
{
    return shim_program_build_options(
        p->origin == SHIM_FROM_LINK ? NULL : p->options);
}

/* A program of context CTX on devices DEVS made from C's binaries, built
 * if they are an executable; NULL if the vendor refused them. */
static void *make(const struct shim_program_cache *c, void *ctx,
                  const cl_device_id *devs, const char *options)
{
    cl_int err;
    void *real = VENDOR(ctx)->clCreateProgramWithBinary(
        ctx, c->n, devs, c->sizes, (const unsigned char **)c->bins, NULL,
        &err);

    if (!real) {
        CRN_DEBUG("program: kept binary refused (%d); compiling", err);
        return NULL;
    }
    if (c->type != CL_PROGRAM_BINARY_TYPE_EXECUTABLE)
        return real;
    err = VENDOR(real)->clBuildProgram(real, c->n, devs, options, NULL, NULL);
    if (err != CL_SUCCESS) {
        CRN_DEBUG("program: kept binary did not build (%d); compiling", err);
        VENDOR(real)->clReleaseProgram(real);
        return NULL;
    }
    return real;
}

/* Creates (and builds) P's real program from its kept binaries if every
 * device is still the same model; false (nothing created) otherwise, and
 * the caller compiles the source or links the inputs. */
bool shim_program_cache_realize(struct shim_program *p)
{
    struct shim_program_cache *c = p->cache;
    cl_device_id devs[64];
    char key[KEY_LEN];

    if (!c || c->n > 64)
        return false;
    for (cl_uint i = 0; i < c->n; i++) {
        devs[i] = c->devices[i]->obj.real;
        device_key(devs[i], key);
        if (strcmp(key, c->keys[i]) != 0)
            return false;
    }
    char *options = load_options(p);
    void *real = options ? make(c, p->context->obj.real, devs, options)
                         : NULL;
    free(options);
    if (!real)
        return false;
    p->obj.real = real;
    p->real_from_binary = true;
    return true;
}

/* The same from the kept binaries, for a twin on another backend made
 * while the program runs: its builds may drop the cache meanwhile, so it
 * is read under the cache lock (a build waits for this one). */
void *shim_program_cache_twin(struct shim_program *p, void *ctx,
                              const struct shim_plan *plan)
{
    cl_device_id devs[64];
    char key[KEY_LEN];
    void *real = NULL;
    char *options = load_options(p);

    if (!options)
        return NULL;
    pthread_mutex_lock(&cache_lock);
    struct shim_program_cache *c = p->cache;
    if (!c || c->n > 64)
        goto out;
    for (cl_uint i = 0; i < c->n; i++) {
        if (!(devs[i] = shim_plan_device(c->devices[i], plan)))
            goto out;
        device_key(devs[i], key);
        if (strcmp(key, c->keys[i]) != 0)
            goto out;
    }
    real = make(c, ctx, devs, options);
out:
    pthread_mutex_unlock(&cache_lock);
    free(options);
    return real;
}
