/* This host's GPU pool: which GPU each domain holds, which are free. */
#include "pool.h"

#include "host-daemon/hv/hv_xml.h"
#include "proto/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POOL_XML_MAX (64 * 1024)

struct hd_pool {
    pthread_mutex_t lock;        /* reservations */
    size_t n;
    struct hv_gpu gpus[HD_MAX_GPUS];
    bool reserved[HD_MAX_GPUS];
};

static int read_small_file(const char *path, char **out)
{
    FILE *f = fopen(path, "re");
    char *buf;
    size_t n;

    if (!f)
        return -errno;
    buf = malloc(POOL_XML_MAX + 1);
    if (!buf) {
        fclose(f);
        return -ENOMEM;
    }
    n = fread(buf, 1, POOL_XML_MAX + 1, f);
    fclose(f);
    if (n == 0 || n > POOL_XML_MAX) {
        free(buf);
        return n ? -EFBIG : -EINVAL;
    }
    buf[n] = '\0';
    *out = buf;
    return 0;
}

static int pci_gpu(struct hv_gpu *g, const struct hd_gpu_conf *c)
{
    unsigned d, b, s, f;
    char xml[512];

    sscanf(c->pci, "%x:%x:%x.%x", &d, &b, &s, &f);
    snprintf(g->alias, sizeof(g->alias), "ua-crane-%s", c->name);
    snprintf(g->pci, sizeof(g->pci), "%s", c->pci);
    snprintf(xml, sizeof(xml),
             "<hostdev mode='subsystem' type='pci' managed='yes'>"
             "<source><address domain='0x%04x' bus='0x%02x' slot='0x%02x'"
             " function='0x%x'/></source><alias name='%s'/></hostdev>",
             d, b, s, f, g->alias);
    return (g->xml = strdup(xml)) ? 0 : -ENOMEM;
}

int hd_pool_new(const struct hd_config *cfg, struct hd_pool **out,
                char *why, size_t why_len)
{
    struct hd_pool *p = calloc(1, sizeof(*p));
    int rc = 0;

    if (!p)
        return -ENOMEM;
    pthread_mutex_init(&p->lock, NULL);
    for (size_t i = 0; i < cfg->n_gpus && rc == 0; i++) {
        const struct hd_gpu_conf *c = &cfg->gpus[i];
        struct hv_gpu *g = &p->gpus[i];

        snprintf(g->name, sizeof(g->name), "%s", c->name);
        snprintf(g->model, sizeof(g->model), "%s", c->model);
        g->mem_gib = c->mem_gib;
        if (*c->pci) {
            rc = pci_gpu(g, c);
        } else if ((rc = read_small_file(c->xml_file, &g->xml)) < 0) {
            snprintf(why, why_len, "gpu %s: cannot read %s: %s", c->name,
                     c->xml_file, strerror(-rc));
        } else if ((rc = hv_xml_device_alias(g->xml, g->alias,
                                             sizeof(g->alias))) < 0) {
            snprintf(why, why_len,
                     "gpu %s: %s has no <alias name='ua-...'/>", c->name,
                     c->xml_file);
        }
        p->n = i + 1;
        for (size_t j = 0; j < i && rc == 0; j++)
            if (strcmp(p->gpus[j].alias, g->alias) == 0) {
                snprintf(why, why_len, "gpu %s: alias %s used twice",
                         c->name, g->alias);
                rc = -EINVAL;
            }
    }
    if (rc < 0) {
        hd_pool_free(p);
        return rc;
    }
    *out = p;
    return 0;
}

void hd_pool_free(struct hd_pool *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++)
        free(p->gpus[i].xml);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

size_t hd_pool_size(const struct hd_pool *p)
{
    return p->n;
}

int hd_pool_held_by(struct hd_pool *p, const struct hv_ops *ops,
                    struct hv *hv, const char *domain,
                    const struct hv_gpu **out)
{
    for (size_t i = 0; i < p->n; i++) {
        int rc = ops->has_gpu(hv, domain, &p->gpus[i]);

        if (rc < 0)
            return rc;
        if (rc == 1) {
            *out = &p->gpus[i];
            return 0;
        }
    }
    return -ENOENT;
}

/* Marks free GPUs in FREE[]; returns how many, or -errno. */
static int scan_free(struct hd_pool *p, const struct hv_ops *ops,
                     struct hv *hv, bool *free_gpu)
{
    char (*holder)[HV_NAME_MAX + 1];
    int rc, n = 0;

    if (p->n == 0)
        return 0;
    if (!(holder = calloc(p->n, sizeof(*holder))))
        return -ENOMEM;
    rc = ops->holders(hv, p->gpus, p->n, holder);
    for (size_t i = 0; rc == 0 && i < p->n; i++) {
        free_gpu[i] = !holder[i][0] && !p->reserved[i];
        n += free_gpu[i];
    }
    free(holder);
    return rc < 0 ? rc : n;
}

int hd_pool_held_set(struct hd_pool *p, const struct hv_ops *ops,
                     struct hv *hv, const char *domain,
                     struct hd_gpu_set *out)
{
    out->n = 0;
    for (size_t i = 0; i < p->n; i++) {
        int rc = ops->has_gpu(hv, domain, &p->gpus[i]);

        if (rc < 0)
            return rc;
        if (rc == 1)
            out->gpu[out->n++] = &p->gpus[i];
    }
    return out->n ? 0 : -ENOENT;
}

void hd_pool_want_of(const struct hd_gpu_set *set, struct hd_gpu_want *out)
{
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < set->n && i < HD_MAX_GPUS; i++) {
        out->mem_gib[out->n] = set->gpu[i]->mem_gib;
        snprintf(out->model[out->n++], sizeof(out->model[0]), "%s",
                 set->gpu[i]->model);
    }
}

static bool gpu_fits(const struct hv_gpu *g, const char *model, uint32_t mem)
{
    return (!*model || !*g->model || strcmp(g->model, model) == 0) &&
           (!mem || !g->mem_gib || g->mem_gib >= mem);
}

/* The free GPU of P (in FREE_GPU) that fits MODEL and MEM best: the one
 * with the least memory that is enough (an untagged one last), so that a
 * larger one stays for a want that needs it; -1 when none fits. */
static int best_fit(const struct hd_pool *p, const bool *free_gpu,
                    const char *model, uint32_t mem)
{
    int best = -1;

    for (size_t i = 0; i < p->n; i++) {
        const struct hv_gpu *g = &p->gpus[i];
        uint32_t b;

        if (!free_gpu[i] || !gpu_fits(g, model, mem))
            continue;
        b = best < 0 ? 0 : p->gpus[best].mem_gib;
        if (best < 0 || (g->mem_gib && (!b || g->mem_gib < b)))
            best = (int)i;
    }
    return best;
}

/* Picks for each GPU of WANT a GPU marked in FREE_GPU (unmarking it):
 * the wants naming a model first, then those naming memory, then the
 * others, so that a want of any kind does not take the only GPU another
 * needs.  PICK[k] is the pool index for want k; how many found one. */
static size_t match(const struct hd_pool *p, const struct hd_gpu_want *want,
                    bool *free_gpu, size_t *pick)
{
    size_t n = want->n ? want->n : 1, found = 0;

    for (int pass = 0; pass < 3; pass++)
        for (size_t k = 0; k < n; k++) {
            const char *m = want->n ? want->model[k] : "";
            uint32_t mem = want->n ? want->mem_gib[k] : 0;
            int kind = *m ? 0 : mem ? 1 : 2, i;

            if (kind != pass || (i = best_fit(p, free_gpu, m, mem)) < 0)
                continue;
            free_gpu[i] = false;
            pick[k] = (size_t)i;
            found++;
        }
    return found;
}

int hd_pool_reserve_set(struct hd_pool *p, const struct hv_ops *ops,
                        struct hv *hv, const char *domain,
                        const struct hd_gpu_want *want,
                        struct hd_gpu_set *out)
{
    bool free_gpu[HD_MAX_GPUS] = { 0 };
    size_t pick[HD_MAX_GPUS], n = want->n ? want->n : 1;
    int rc;

    out->n = 0;
    pthread_mutex_lock(&p->lock);
    rc = scan_free(p, ops, hv, free_gpu);
    if (rc >= 0)
        rc = match(p, want, free_gpu, pick) == n ? 0 : -EBUSY;
    for (size_t k = 0; rc == 0 && k < n; k++) {
        p->reserved[pick[k]] = true;
        out->gpu[out->n++] = &p->gpus[pick[k]];
        CRN_INFO("pool: %s reserved for %s", p->gpus[pick[k]].name, domain);
    }
    pthread_mutex_unlock(&p->lock);
    return rc;
}

void hd_pool_unreserve_set(struct hd_pool *p, const struct hd_gpu_set *s)
{
    pthread_mutex_lock(&p->lock);
    for (size_t k = 0; k < s->n; k++)
        for (size_t i = 0; i < p->n; i++)
            if (&p->gpus[i] == s->gpu[k])
                p->reserved[i] = false;
    pthread_mutex_unlock(&p->lock);
}

/* scan_free under the pool's lock, for the callers that only read. */
static int scan_free_locked(struct hd_pool *p, const struct hv_ops *ops,
                            struct hv *hv, bool *free_gpu)
{
    int rc;

    pthread_mutex_lock(&p->lock);
    rc = scan_free(p, ops, hv, free_gpu);
    pthread_mutex_unlock(&p->lock);
    return rc;
}

int hd_pool_free_matching(struct hd_pool *p, const struct hv_ops *ops,
                          struct hv *hv, const struct hd_gpu_want *want,
                          unsigned *matching)
{
    bool free_gpu[HD_MAX_GPUS] = { 0 };
    size_t pick[HD_MAX_GPUS];
    int rc = scan_free_locked(p, ops, hv, free_gpu);

    if (rc < 0)
        return rc;
    *matching = (unsigned)match(p, want, free_gpu, pick);
    return 0;
}

int hd_pool_free_count(struct hd_pool *p, const struct hv_ops *ops,
                       struct hv *hv, unsigned *free_count)
{
    bool free_gpu[HD_MAX_GPUS] = { 0 };
    int rc = scan_free_locked(p, ops, hv, free_gpu);

    if (rc < 0)
        return rc;
    *free_count = (unsigned)rc;
    return 0;
}

int hd_pool_view(struct hd_pool *p, const struct hv_ops *ops, struct hv *hv,
                 struct hd_pool_entry *out, size_t max, size_t *n)
{
    char (*holder)[HV_NAME_MAX + 1] = NULL;
    int rc = 0;

    *n = p->n < max ? p->n : max;
    if (p->n && !(holder = calloc(p->n, sizeof(*holder))))
        return -ENOMEM;
    pthread_mutex_lock(&p->lock);
    if (p->n)
        rc = ops->holders(hv, p->gpus, p->n, holder);
    for (size_t i = 0; i < *n; i++) {
        out[i].gpu = &p->gpus[i];
        snprintf(out[i].holder, sizeof(out[i].holder), "%s",
                 rc == 0 ? holder[i] : "");
        out[i].reserved = p->reserved[i];
    }
    pthread_mutex_unlock(&p->lock);
    free(holder);
    return rc;
}
