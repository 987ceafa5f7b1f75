/* The GPUs a VM needs: from the wire, to and from the history's steps. */
#include "want.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool model_ok(const char *m)
{
    size_t n = strlen(m);

    return n < sizeof(((struct hd_gpu_want *)0)->model[0]) &&
           strspn(m, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                     "0123456789_.-") == n;
}

int hd_want_parse(uint32_t count, char *const *models, size_t n_models,
                  struct hd_gpu_want *out)
{
    memset(out, 0, sizeof(*out));
    if (count > HD_MAX_GPUS || n_models > HD_MAX_GPUS ||
        (count && n_models > count))
        return -EINVAL;
    for (size_t i = 0; i < n_models; i++) {
        if (!models[i] || !model_ok(models[i]))
            return -EINVAL;
        snprintf(out->model[i], sizeof(out->model[0]), "%s", models[i]);
    }
    out->n = count ? count : n_models;
    return 0;
}

int hd_want_set_mem(struct hd_gpu_want *want, const uint32_t *mem,
                    size_t n)
{
    if (n > hd_want_count(want) || n > HD_MAX_GPUS)
        return -EINVAL;
    for (size_t i = 0; i < n; i++)
        if (mem[i] > 65536)
            return -EINVAL;
    /* A want of one said as none (N 0) names it now. */
    if (n && !want->n)
        want->n = 1;
    for (size_t i = 0; i < n; i++)
        want->mem_gib[i] = mem[i];
    return 0;
}

void hd_want_any(struct hd_gpu_want *out, size_t n)
{
    memset(out, 0, sizeof(*out));
    out->n = n > HD_MAX_GPUS ? HD_MAX_GPUS : n;
}

size_t hd_want_count(const struct hd_gpu_want *want)
{
    return want->n ? want->n : 1;
}

void hd_want_step(const struct hd_gpu_want *want, size_t k, char *out,
                  size_t len)
{
    const char *m = k < want->n ? want->model[k] : "";
    uint32_t mem = k < want->n ? want->mem_gib[k] : 0;
    char at[16] = "";

    if (mem)
        snprintf(at, sizeof(at), "@%u", mem);
    if (!*m || strlen(m) > HD_WANT_STEP_MODEL_MAX)
        snprintf(out, len, "%s%s", HD_WANT_STEP, at);
    else
        snprintf(out, len, "%s:%s%s", HD_WANT_STEP, m, at);
}

/* The model and memory a gpu-want step's PHASE keeps into OUT and *MEM:
 * 1, or 0 when PHASE is not such a step. */
static int step_model(const char *phase, char *out, size_t len,
                      uint32_t *mem)
{
    char buf[HD_PHASE_MAX + 1], *at;
    size_t n = strlen(HD_WANT_STEP);
    unsigned long v = 0;

    if (strncmp(phase, HD_WANT_STEP, n) != 0 ||
        snprintf(buf, sizeof(buf), "%s", phase + n) >= (int)sizeof(buf))
        return 0;
    if ((at = strchr(buf, '@'))) {
        char *end;

        v = strtoul(at + 1, &end, 10);
        if (*end || end == at + 1 || v > 65536)
            return 0;
        *at = '\0';
    }
    if (buf[0] && (buf[0] != ':' || !model_ok(buf + 1)))
        return 0;
    snprintf(out, len, "%s", buf[0] ? buf + 1 : "");
    *mem = (uint32_t)v;
    return 1;
}

void hd_want_from_steps(const struct hd_step *steps, size_t n,
                        struct hd_gpu_want *out)
{
    struct hd_gpu_want cur;
    bool in_run = false;

    hd_want_any(out, 0);
    memset(&cur, 0, sizeof(cur));
    /* Each set is written as consecutive steps; a later set (the VM
     * waited again) replaces an earlier one. */
    for (size_t i = 0; i < n; i++) {
        char m[sizeof(cur.model[0])];
        uint32_t mem;

        if (!step_model(steps[i].phase, m, sizeof(m), &mem)) {
            in_run = false;
            continue;
        }
        if (!in_run) {
            memset(&cur, 0, sizeof(cur));
            in_run = true;
        }
        if (cur.n < HD_MAX_GPUS) {
            cur.mem_gib[cur.n] = mem;
            snprintf(cur.model[cur.n++], sizeof(cur.model[0]), "%s", m);
        }
        *out = cur;
    }
}
