/* Which real device each of the program's devices lands on after a switch:
 * CRANE_DEVICE, then the same device, then one of the same type able to run
 * what the program holds; a move nothing can take is refused before
 * anything changes (docs/shim.md, "Devices"). */
#include <errno.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "proto/log.h"
#include "shim.h"

#define MAX_CANDIDATES 64

static void info_str(cl_device_id d, cl_device_info what, char *out,
                     size_t len)
{
    out[0] = '\0';
    if (VENDOR(d)->clGetDeviceInfo(d, what, len, out, NULL) != CL_SUCCESS)
        out[0] = '\0';
    out[len - 1] = '\0';
}

int shim_device_ident_read(cl_device_id d, struct shim_device_ident *id)
{
    size_t len = 0;

    info_str(d, CL_DEVICE_VENDOR, id->vendor, sizeof(id->vendor));
    info_str(d, CL_DEVICE_NAME, id->name, sizeof(id->name));
    info_str(d, CL_DRIVER_VERSION, id->driver, sizeof(id->driver));
    id->type = 0;
    id->max_alloc = 0;
    id->max_wg = 0;
    id->images = CL_FALSE;
    VENDOR(d)->clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof(id->type),
                               &id->type, NULL);
    VENDOR(d)->clGetDeviceInfo(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE,
                               sizeof(id->max_alloc), &id->max_alloc, NULL);
    VENDOR(d)->clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_GROUP_SIZE,
                               sizeof(id->max_wg), &id->max_wg, NULL);
    VENDOR(d)->clGetDeviceInfo(d, CL_DEVICE_IMAGE_SUPPORT,
                               sizeof(id->images), &id->images, NULL);
    free(id->extensions);
    id->extensions = NULL;
    if (VENDOR(d)->clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, 0, NULL, &len) !=
            CL_SUCCESS ||
        !(id->extensions = calloc(1, len + 1)))
        return -ENOMEM;
    VENDOR(d)->clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, len, id->extensions,
                               NULL);
    return 0;
}

void shim_device_ident_free(struct shim_device_ident *id)
{
    free(id->extensions);
    id->extensions = NULL;
}

/* A device the backend offers. */
struct candidate {
    cl_platform_id platform;
    cl_device_id device;
    unsigned platform_index, device_index;
    struct shim_device_ident id;
    bool taken;
    int formats_ok;              /* -1: not asked yet */
    char formats_why[160];
};

/* What the program holds that a device must offer. */
#define MAX_FORMATS 16

/* An image format the program created an image with. */
struct format_use {
    cl_image_format format;
    cl_mem_object_type type;
    cl_mem_flags access;
};

struct needs {
    bool used;                   /* in a live context */
    bool binary_only;            /* a program of it has no source or IL */
    bool images;
    size_t max_alloc;
    size_t max_wg;               /* work-items of the largest work-group */
    char extensions[1024];       /* space-separated, each once */
    struct format_use formats[MAX_FORMATS];
    unsigned n_formats;
};

atomic_size_t shim_local_size_max;

static bool same_model(const struct shim_device_ident *a,
                       const struct shim_device_ident *b)
{
    return strcmp(a->vendor, b->vendor) == 0 && strcmp(a->name, b->name) == 0;
}

static bool same_device(const struct shim_device_ident *a,
                        const struct shim_device_ident *b)
{
    return same_model(a, b) && strcmp(a->driver, b->driver) == 0;
}

static bool has_word(const char *list, const char *word)
{
    size_t n = strlen(word);

    for (const char *p = list; p && (p = strstr(p, word)); p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return true;
    return false;
}

static struct shim_device *root_of(struct shim_device *d)
{
    while (d && d->parent)
        d = d->parent;
    return d;
}

static struct needs *needs_of(struct shim_device *d, struct needs *all)
{
    struct shim_device *r = root_of(d);
    unsigned at = 0;

    for (cl_uint i = 0; i < shim.n_platforms; i++) {
        if (shim.platforms[i] == r->platform)
            return &all[at + r->index];
        at += shim.platforms[i]->n_devices;
    }
    return NULL;
}

/* Extensions of D's device that SRC names (an enabling pragma, a macro
 * test or a call): the program relies on them. */
static void note_extensions(struct needs *n, const struct shim_device *root,
                            const char *src)
{
    const char *ext = root->ident.extensions;
    char word[128];

    while (ext && *ext) {
        size_t len = strcspn(ext, " ");
        if (len && len < sizeof(word)) {
            memcpy(word, ext, len);
            word[len] = '\0';
            if (strstr(src, word) && !has_word(n->extensions, word) &&
                strlen(n->extensions) + len + 2 < sizeof(n->extensions)) {
                if (n->extensions[0])
                    strcat(n->extensions, " ");
                strcat(n->extensions, word);
            }
        }
        ext += len;
        ext += strspn(ext, " ");
    }
}

static void note_format(struct needs *n, const struct shim_mem *m)
{
    struct format_use u = {m->format, m->desc.image_type,
                           m->flags & (CL_MEM_READ_WRITE | CL_MEM_WRITE_ONLY |
                                       CL_MEM_READ_ONLY)};

    if (!u.access)
        u.access = CL_MEM_READ_WRITE;
    for (unsigned i = 0; i < n->n_formats; i++)
        if (memcmp(&n->formats[i], &u, sizeof(u)) == 0)
            return;
    if (n->n_formats < MAX_FORMATS)
        n->formats[n->n_formats++] = u;
}

/* What each root device (in platform order) must offer, from the live
 * objects.  Caller holds the store lock. */
static void gather_needs(struct needs *all)
{
    for (struct shim_obj *o = shim_store_first(); o; o = o->next) {
        if (o->kind == SHIM_CONTEXT) {
            struct shim_context *c = (void *)o;
            for (cl_uint i = 0; i < c->n_devices; i++) {
                struct needs *n = needs_of(c->devices[i], all);
                if (n)
                    n->used = true;
            }
        } else if (o->kind == SHIM_MEM) {
            struct shim_mem *m = (void *)o;
            for (cl_uint i = 0; i < m->context->n_devices; i++) {
                struct needs *n = needs_of(m->context->devices[i], all);
                if (!n)
                    continue;
                if (m->type == SHIM_IMAGE) {
                    n->images = true;
                    note_format(n, m);
                }
                if (m->type == SHIM_BUFFER && m->size > n->max_alloc)
                    n->max_alloc = m->size;
            }
        } else if (o->kind == SHIM_PROGRAM) {
            struct shim_program *p = (void *)o;
            for (cl_uint i = 0; i < p->context->n_devices; i++) {
                struct shim_device *d = p->context->devices[i];
                struct needs *n = needs_of(d, all);
                if (!n)
                    continue;
                if (p->origin == SHIM_FROM_BINARY)
                    n->binary_only = true;
                if (p->source && p->origin == SHIM_FROM_SOURCE)
                    note_extensions(n, root_of(d), p->source);
            }
        }
    }
}

/* Whether C supports every image format N's images were made with: asked
 * once per candidate, through a context made on it for the question. */
static bool formats_ok(struct candidate *c, const struct needs *n)
{
    cl_image_format have[256];
    cl_uint count = 0;
    cl_int err;

    if (c->formats_ok >= 0)
        return c->formats_ok;
    c->formats_ok = 0;
    cl_context ctx = VENDOR(c->device)->clCreateContext(NULL, 1, &c->device,
                                                        NULL, NULL, &err);
    if (!ctx) {
        snprintf(c->formats_why, sizeof(c->formats_why),
                 "its image formats cannot be asked (%d)", err);
        return false;
    }
    c->formats_ok = 1;
    for (unsigned i = 0; i < n->n_formats && c->formats_ok; i++) {
        const struct format_use *u = &n->formats[i];
        bool found = false;
        if (VENDOR(ctx)->clGetSupportedImageFormats(ctx, u->access, u->type,
                                                    256, have, &count) !=
            CL_SUCCESS)
            count = 0;
        for (cl_uint f = 0; f < count && f < 256 && !found; f++)
            found = have[f].image_channel_order ==
                        u->format.image_channel_order &&
                    have[f].image_channel_data_type ==
                        u->format.image_channel_data_type;
        if (!found) {
            c->formats_ok = 0;
            snprintf(c->formats_why, sizeof(c->formats_why),
                     "it lacks the image format (order 0x%x, type 0x%x) of "
                     "an image the program holds",
                     u->format.image_channel_order,
                     u->format.image_channel_data_type);
        }
    }
    VENDOR(ctx)->clReleaseContext(ctx);
    return c->formats_ok;
}

/* Why candidate C cannot take a device needing N, or NULL if it can. */
static const char *unfit(struct candidate *c,
                         const struct shim_device_ident *was,
                         const struct needs *n, bool any_type, char *why,
                         size_t len)
{
    if (!any_type && c->id.type != was->type) {
        snprintf(why, len, "another type of device");
        return why;
    }
    if (n->binary_only && !same_model(&c->id, was)) {
        snprintf(why, len, "a program was created from binaries only, "
                           "which rebuild only on the same device model");
        return why;
    }
    if (n->max_alloc > c->id.max_alloc) {
        snprintf(why, len, "a buffer of %zu bytes exceeds its largest "
                           "allocation (%llu)",
                 n->max_alloc, (unsigned long long)c->id.max_alloc);
        return why;
    }
    if (n->images && !c->id.images) {
        snprintf(why, len, "the program holds images, which it lacks");
        return why;
    }
    if (n->max_wg > c->id.max_wg) {
        snprintf(why, len, "the program launched work-groups of %zu "
                           "work-items, more than its %zu",
                 n->max_wg, c->id.max_wg);
        return why;
    }
    if (n->n_formats && !same_device(&c->id, was) && !formats_ok(c, n)) {
        snprintf(why, len, "%s", c->formats_why);
        return why;
    }
    const char *ext = n->extensions;
    while (*ext) {
        size_t l = strcspn(ext, " ");
        char word[128];
        if (l < sizeof(word)) {
            memcpy(word, ext, l);
            word[l] = '\0';
            if (!has_word(c->id.extensions, word)) {
                snprintf(why, len, "it lacks %s, which a program's source "
                                   "uses",
                         word);
                return why;
            }
        }
        ext += l;
        ext += strspn(ext, " ");
    }
    return NULL;
}

/* Whether candidate C is what CRANE_DEVICE names: "P:D" (indices on the
 * backend) or a text found in "platform-name vendor device-name" (any
 * case).  A named device may be of another type than the program's. */
static bool named(const struct candidate *c, const char *spec)
{
    unsigned p, d;
    char full[700], plat[128] = "";
    int end = 0;

    if (sscanf(spec, "%u:%u%n", &p, &d, &end) == 2 && !spec[end])
        return p == c->platform_index && d == c->device_index;
    if (VENDOR(c->platform)->clGetPlatformInfo(c->platform, CL_PLATFORM_NAME,
                                               sizeof(plat), plat, NULL) !=
        CL_SUCCESS)
        plat[0] = '\0';
    plat[sizeof(plat) - 1] = '\0';
    snprintf(full, sizeof(full), "%s %s %s", plat, c->id.vendor, c->id.name);
    return strcasestr(full, spec) != NULL;
}

static int candidates(const struct shim_backend_ops *be, struct candidate *v,
                      unsigned *n)
{
    cl_platform_id *plats;
    cl_uint np;
    int rc = be->platforms(&plats, &np);

    *n = 0;
    if (rc < 0)
        return rc;
    for (cl_uint i = 0; i < np; i++) {
        cl_device_id devs[MAX_CANDIDATES];
        cl_uint nd = 0;
        if (VENDOR(plats[i])->clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_ALL,
                                             MAX_CANDIDATES, devs, &nd) !=
            CL_SUCCESS)
            continue;
        for (cl_uint d = 0; d < nd && d < MAX_CANDIDATES &&
                            *n < MAX_CANDIDATES;
             d++) {
            struct candidate *c = &v[(*n)++];
            memset(c, 0, sizeof(*c));
            c->platform = plats[i];
            c->device = devs[d];
            c->platform_index = i;
            c->device_index = d;
            c->formats_ok = -1;
            shim_device_ident_read(devs[d], &c->id);
        }
    }
    return 0;
}

static void candidates_free(struct candidate *v, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        shim_device_ident_free(&v[i].id);
}

/* Picks, for the root device WAS with needs N, a candidate: CRANE_DEVICE,
 * then the same device (one not taken first), then the first fit of the
 * same type.  Returns its index or -1 with WHY filled. */
static int pick(struct candidate *v, unsigned nc,
                const struct shim_device_ident *was, const struct needs *n,
                char *why, size_t len)
{
    char reason[256];

    char named_why[300] = "";

    if (shim_config.device)
        for (unsigned i = 0; i < nc; i++)
            if (named(&v[i], shim_config.device)) {
                if (!unfit(&v[i], was, n, true, reason, sizeof(reason)))
                    return (int)i;
                /* Said if nothing else fits: the operator named it. */
                snprintf(named_why, sizeof(named_why), "%s, named by "
                         "CRANE_DEVICE: %s", v[i].id.name, reason);
            }
    for (int pass = 0; pass < 2; pass++)
        for (unsigned i = 0; i < nc; i++)
            if ((pass || !v[i].taken) && same_device(&v[i].id, was))
                return (int)i;
    for (unsigned i = 0; i < nc; i++)
        if (!unfit(&v[i], was, n, false, reason, sizeof(reason)))
            return (int)i;
    /* Nothing fits: the reason given is the named device's, or the
     * nearest candidate's. */
    if (named_why[0]) {
        snprintf(why, len, "no device there can take %s (%s)", was->name,
                 named_why);
        return -1;
    }
    snprintf(why, len, "no device there can take %s (none offered)",
             was->name);
    for (unsigned i = 0; i < nc; i++)
        if (unfit(&v[i], was, n, false, reason, sizeof(reason))) {
            snprintf(why, len, "no device there can take %s (%s: %s)",
                     was->name, v[i].id.name, reason);
            if (v[i].id.type == was->type)
                break;
        }
    return -1;
}

void shim_plan_free(struct shim_plan *plan)
{
    if (plan->devices)
        for (cl_uint i = 0; i < shim.n_platforms; i++)
            free(plan->devices[i]);
    free(plan->devices);
    free(plan->platforms);
    memset(plan, 0, sizeof(*plan));
}

/* Device D of platform I (its needs N) bound to one of the NC candidates
 * V into PLAN: 0, or -ENODEV with the reason in WHY. */
static int bind_device(const struct shim_backend_ops *be,
                       struct shim_plan *plan, struct candidate *v,
                       unsigned nc, cl_uint i, cl_uint d, struct needs *n,
                       char *why, size_t len)
{
    struct shim_platform *p = shim.platforms[i];
    int c = pick(v, nc, &p->devices[d]->ident, n, why, len);

    if (c < 0 && n->used)
        return -ENODEV;
    /* A device the program only holds follows the first one offered when
     * nothing fits it. */
    if (c < 0)
        c = nc ? 0 : -1;
    if (c < 0)
        return -ENODEV;
    /* Two devices the program uses on one of the target's: it offers
     * fewer such devices (said, not refused). */
    if (n->used && v[c].taken)
        CRN_WARN("devices: device %u:%u (%s) shares %s (%u:%u) on %s with "
                 "another of the program's: the target has fewer such "
                 "devices", i, d, p->devices[d]->ident.name, v[c].id.name,
                 v[c].platform_index, v[c].device_index, be->name);
    v[c].taken = true;
    plan->devices[i][d] = v[c].device;
    if (n->used)
        CRN_DEBUG("devices: device %u:%u bound to %u:%u on %s", i, d,
                  v[c].platform_index, v[c].device_index, be->name);
    if (n->used && !same_device(&v[c].id, &p->devices[d]->ident))
        CRN_INFO("devices: %s %s (%s) lands on %s %s (%s) on %s",
                 p->devices[d]->ident.vendor, p->devices[d]->ident.name,
                 p->devices[d]->ident.driver, v[c].id.vendor, v[c].id.name,
                 v[c].id.driver, be->name);
    if (!plan->platforms[i] || n->used) {
        if (n->used && plan->platforms[i] &&
            plan->platforms[i] != v[c].platform) {
            snprintf(why, len, "the devices of platform %u would land on "
                     "different platforms", i);
            return -ENODEV;
        }
        plan->platforms[i] = v[c].platform;
    }
    return 0;
}

/* Every device bound into PLAN, used devices first, so that the unused
 * ones cannot take theirs: 0, -ENOMEM or -ENODEV (WHY says). */
static int bind_devices(const struct shim_backend_ops *be,
                        struct shim_plan *plan, struct candidate *v,
                        unsigned nc, struct needs *needs, char *why,
                        size_t len)
{
    int rc = 0;

    for (int used = 1; used >= 0 && rc == 0; used--) {
        unsigned at = 0;
        for (cl_uint i = 0; i < shim.n_platforms && rc == 0; i++) {
            struct shim_platform *p = shim.platforms[i];
            if (!plan->devices[i] &&
                !(plan->devices[i] = calloc(p->n_devices ? p->n_devices : 1,
                                            sizeof(cl_device_id))))
                return -ENOMEM;
            for (cl_uint d = 0; d < p->n_devices && rc == 0; d++, at++)
                if (needs[at].used == (used == 1))
                    rc = bind_device(be, plan, v, nc, i, d, &needs[at], why,
                                     len);
        }
    }
    return rc;
}

int shim_plan_make(const struct shim_backend_ops *be, struct shim_plan *plan,
                   char *why, size_t len)
{
    static struct candidate v[MAX_CANDIDATES];
    unsigned nc, total = 0;
    struct needs *needs;
    int rc;

    memset(plan, 0, sizeof(*plan));
    for (cl_uint i = 0; i < shim.n_platforms; i++)
        total += shim.platforms[i]->n_devices;
    if ((rc = candidates(be, v, &nc)) < 0) {
        snprintf(why, len, "%s lists no platforms (%d)", be->name, rc);
        return rc;
    }
    needs = calloc(total ? total : 1, sizeof(*needs));
    plan->platforms = calloc(shim.n_platforms ? shim.n_platforms : 1,
                             sizeof(*plan->platforms));
    plan->devices = calloc(shim.n_platforms ? shim.n_platforms : 1,
                           sizeof(*plan->devices));
    if (!needs || !plan->platforms || !plan->devices) {
        rc = -ENOMEM;
        goto out;
    }
    shim_store_lock();
    gather_needs(needs);
    shim_store_unlock();
    for (unsigned i = 0; i < total; i++)
        needs[i].max_wg = atomic_load_explicit(&shim_local_size_max,
                                               memory_order_relaxed);
    rc = bind_devices(be, plan, v, nc, needs, why, len);
    for (cl_uint i = 0; i < shim.n_platforms && rc == 0; i++)
        if (!plan->platforms[i])  /* a platform without devices */
            plan->platforms[i] = nc ? v[0].platform : NULL;
out:
    free(needs);
    candidates_free(v, nc);
    if (rc < 0)
        shim_plan_free(plan);
    return rc;
}

static char refusal[512];

/* The plan the last check made, for the bind that follows it: the check
 * runs before the gate closes, so the bind costs the program nothing. */
static struct shim_plan checked;
static const struct shim_backend_ops *checked_for;
static unsigned checked_at;      /* shim.rehomes then: this switch only */

bool shim_plan_take(const struct shim_backend_ops *be, struct shim_plan *plan)
{
    if (checked_for != be || checked_at != shim.rehomes) {
        if (checked_for)
            shim_plan_free(&checked);
        checked_for = NULL;
        return false;
    }
    *plan = checked;
    memset(&checked, 0, sizeof(checked));
    checked_for = NULL;
    return true;
}

const char *shim_devices_refusal(void)
{
    return refusal;
}

int shim_devices_check(const struct shim_backend_ops *from,
                       const struct shim_backend_ops *to)
{
    struct shim_plan plan;
    char why[400];
    int rc;

    refusal[0] = '\0';
    if (checked_for) {
        shim_plan_free(&checked);
        checked_for = NULL;
    }
    if (to == from || !shim.platforms)
        return 0;
    if ((rc = to->load()) < 0) {
        snprintf(refusal, sizeof(refusal), "%s did not come up (%d)",
                 to->name, rc);
        shim_switch_refuse(rc, "%s", refusal);
        to->unload();
        return rc;
    }
    why[0] = '\0';
    rc = shim_plan_make(to, &plan, why, sizeof(why));
    if (rc < 0) {
        snprintf(refusal, sizeof(refusal), "cannot move to %s: %s",
                 to->name, why[0] ? why : strerror(-rc));
        shim_switch_refuse(rc, "%s", refusal);
        to->unload();
        return rc;
    }
    checked = plan;
    checked_for = to;
    checked_at = shim.rehomes;
    return 0;
}
