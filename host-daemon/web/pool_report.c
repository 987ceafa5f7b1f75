/* The GPU pool as schedulers read it: crane's own JSON, an OpenStack
 * Placement provider view, a Kubernetes Node patch (docs/fleet.md). */
#include "pool_report.h"

#include "json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* Placement: a resource provider's name is 1..200 characters. */
#define PLACEMENT_NAME_MAX 200

int hd_pool_format_parse(const char *name, enum hd_pool_format *out)
{
    if (!name)
        return -EINVAL;
    if (strcmp(name, "json") == 0)
        *out = HD_POOL_JSON;
    else if (strcmp(name, "placement") == 0)
        *out = HD_POOL_PLACEMENT;
    else if (strcmp(name, "kubernetes") == 0)
        *out = HD_POOL_KUBERNETES;
    else
        return -EINVAL;
    return 0;
}

static bool unknown(const struct hd_pool_state *s)
{
    return s->error && *s->error;
}

void hd_pool_count(const struct hd_pool_state *s, size_t *held,
                   size_t *reserved, size_t *free_count)
{
    *held = *reserved = *free_count = 0;
    for (size_t i = 0; i < s->n_gpus; i++) {
        const struct hd_pool_gpu_state *g = &s->gpus[i];

        if (unknown(s))
            (*reserved)++;
        else if (*g->holder)
            (*held)++;
        else if (g->reserved)
            (*reserved)++;
        else
            (*free_count)++;
    }
}

static const char *state_name(const struct hd_pool_state *s,
                              const struct hd_pool_gpu_state *g)
{
    if (unknown(s))
        return "unknown";
    return *g->holder ? "held" : g->reserved ? "reserved" : "free";
}

/* A string, or null when empty. */
static void put_or_null(struct hd_buf *out, const char *v)
{
    if (*v)
        hd_json_put_string(out, v);
    else
        hd_buf_puts(out, "null");
}

/* ,"history":{...}: what crane-hostd could not write to its history. */
static void render_history(struct hd_buf *out,
                           const struct hd_history_health *h)
{
    hd_buf_printf(out,
                  ",\"history\":{\"degraded\":%s,\"read_only\":%s,"
                  "\"unsaved\":%zu,\"dropped\":%llu,\"since\":",
                  h->degraded ? "true" : "false",
                  h->read_only ? "true" : "false", h->unsaved, h->dropped);
    if (h->since > 0 && isfinite(h->since))
        hd_buf_put_double(out, h->since);
    else
        hd_buf_puts(out, "null");
    hd_buf_puts(out, ",\"reason\":");
    put_or_null(out, h->reason);
    hd_buf_puts(out, "}");
}

static int render_json(struct hd_buf *out, const struct hd_pool_state *s)
{
    size_t held, reserved, free_count;

    hd_pool_count(s, &held, &reserved, &free_count);
    hd_buf_puts(out, "{\"host\":");
    hd_json_put_string(out, s->host);
    hd_buf_printf(out, ",\"total\":%zu,\"free\":%zu,\"held\":%zu,"
                       "\"reserved\":%zu,\"gpus\":[",
                  s->n_gpus, free_count, held, reserved);
    for (size_t i = 0; i < s->n_gpus; i++) {
        const struct hd_pool_gpu_state *g = &s->gpus[i];

        hd_buf_puts(out, i ? ",{\"name\":" : "{\"name\":");
        hd_json_put_string(out, g->name);
        hd_buf_puts(out, ",\"alias\":");
        hd_json_put_string(out, g->alias);
        hd_buf_puts(out, ",\"pci\":");
        put_or_null(out, g->pci);
        hd_buf_printf(out, ",\"state\":\"%s\",\"holder\":",
                      state_name(s, g));
        put_or_null(out, unknown(s) ? "" : g->holder);
        hd_buf_puts(out, "}");
    }
    hd_buf_puts(out, "],\"waiting\":[");
    for (size_t i = 0; i < s->n_waiting; i++) {
        const struct hd_pool_waiter_state *w = &s->waiting[i];

        hd_buf_puts(out, i ? ",{\"domain\":" : "{\"domain\":");
        hd_json_put_string(out, w->domain);
        hd_buf_puts(out, ",\"migration_id\":");
        hd_json_put_string(out, w->migration_id);
        hd_buf_puts(out, ",\"since\":");
        hd_buf_put_double(out, isfinite(w->since) ? w->since : 0);
        hd_buf_printf(out, ",\"gpus\":%u}", w->gpus ? w->gpus : 1);
    }
    hd_buf_puts(out, "],\"prepared\":[");
    for (size_t i = 0; i < s->n_prepared; i++) {
        const struct hd_pool_prepared_state *p = &s->prepared[i];

        hd_buf_puts(out, i ? ",{\"domain\":" : "{\"domain\":");
        hd_json_put_string(out, p->domain);
        hd_buf_puts(out, ",\"migration_id\":");
        hd_json_put_string(out, p->migration_id);
        hd_buf_puts(out, ",\"since\":");
        hd_buf_put_double(out, isfinite(p->since) ? p->since : 0);
        if (p->lease_s && isfinite(p->lease_left) && p->lease_left >= 0) {
            hd_buf_printf(out, ",\"lease_s\":%u,\"lease_left\":",
                          p->lease_s);
            hd_buf_put_double(out, p->lease_left);
        } else {
            hd_buf_puts(out, ",\"lease_s\":null,\"lease_left\":null");
        }
        hd_buf_puts(out, "}");
    }
    hd_buf_puts(out, "],\"error\":");
    put_or_null(out, s->error ? s->error : "");
    if (s->history)
        render_history(out, s->history);
    hd_buf_puts(out, "}\n");
    return 0;
}

/*
 * One child provider per GPU under the compute node's provider (named
 * after the host, as Nova names it), each with an inventory of one
 * CUSTOM_CRANE_GPU in exactly the form Placement's
 * PUT /resource_providers/{uuid}/inventories takes per resource class, the
 * CUSTOM_CRANE_LIVE_MIGRATABLE trait, and what crane sees in use (Placement
 * counts usage from its own allocations: "usages" is there to compare).
 * A GPU crane is attaching, or every GPU when the hypervisor could not be
 * read, is reserved: no scheduler should place a VM on it now.
 */
static int render_placement(struct hd_buf *out, const struct hd_pool_state *s)
{
    hd_buf_puts(out, "{\"resource_class\":\"" HD_POOL_RC "\",\"trait\":\""
                     HD_POOL_TRAIT "\",\"root_provider_name\":");
    hd_json_put_string(out, s->host);
    hd_buf_puts(out, ",\"providers\":[");
    for (size_t i = 0; i < s->n_gpus; i++) {
        const struct hd_pool_gpu_state *g = &s->gpus[i];
        bool reserved = unknown(s) || (g->reserved && !*g->holder);
        char name[PLACEMENT_NAME_MAX + 1];
        int n = snprintf(name, sizeof(name), "%s_crane_%s", s->host, g->name);

        if (n < 0 || (size_t)n >= sizeof(name))
            return -EINVAL;
        hd_buf_puts(out, i ? ",{\"name\":" : "{\"name\":");
        hd_json_put_string(out, name);
        hd_buf_puts(out, ",\"parent_provider_name\":");
        hd_json_put_string(out, s->host);
        hd_buf_puts(out, ",\"traits\":[\"" HD_POOL_TRAIT "\"]");
        hd_buf_printf(out, ",\"inventories\":{\"" HD_POOL_RC "\":"
                           "{\"total\":1,\"reserved\":%d,\"min_unit\":1,"
                           "\"max_unit\":1,\"step_size\":1,"
                           "\"allocation_ratio\":1.0}}",
                      reserved ? 1 : 0);
        hd_buf_printf(out, ",\"usages\":{\"" HD_POOL_RC "\":%d}",
                      !unknown(s) && *g->holder ? 1 : 0);
        hd_buf_puts(out, ",\"pci\":");
        put_or_null(out, g->pci);
        hd_buf_puts(out, "}");
    }
    hd_buf_puts(out, "]}\n");
    return 0;
}

/*
 * A JSON merge patch of the Node: labels a nodeSelector or a descheduler
 * reads (the pool exists, its size, how many are free, VMs waiting), and
 * the pool as the extended resource crane.io/gpu in capacity and
 * allocatable (what a device plugin would advertise; status is a
 * subresource: apply it with --subresource=status).  Every label value is
 * a decimal or "true", within Kubernetes' 63 characters.
 */
static int render_kubernetes(struct hd_buf *out,
                             const struct hd_pool_state *s)
{
    size_t held, reserved, free_count, usable = s->n_gpus;

    hd_pool_count(s, &held, &reserved, &free_count);
    if (unknown(s))
        usable = 0;
    hd_buf_printf(out,
                  "{\"metadata\":{\"labels\":{"
                  "\"" HD_POOL_K8S_PREFIX "gpu-pool\":\"true\","
                  "\"" HD_POOL_K8S_PREFIX "gpus-total\":\"%zu\","
                  "\"" HD_POOL_K8S_PREFIX "gpus-free\":\"%zu\","
                  "\"" HD_POOL_K8S_PREFIX "vms-waiting\":\"%zu\"}},"
                  "\"status\":{\"capacity\":{\"" HD_POOL_K8S_RESOURCE
                  "\":\"%zu\"},\"allocatable\":{\"" HD_POOL_K8S_RESOURCE
                  "\":\"%zu\"}}}\n",
                  s->n_gpus, free_count, s->n_waiting, s->n_gpus, usable);
    return 0;
}

int hd_pool_render(struct hd_buf *out, const struct hd_pool_state *s,
                   enum hd_pool_format format)
{
    int rc;

    if (!out || !s || !s->host || !*s->host || (s->n_gpus && !s->gpus) ||
        (s->n_waiting && !s->waiting) || (s->n_prepared && !s->prepared))
        return -EINVAL;
    for (size_t i = 0; i < s->n_gpus; i++)
        if (!s->gpus[i].name || !*s->gpus[i].name || !s->gpus[i].alias ||
            !s->gpus[i].pci || !s->gpus[i].holder)
            return -EINVAL;
    for (size_t i = 0; i < s->n_waiting; i++)
        if (!s->waiting[i].domain || !s->waiting[i].migration_id)
            return -EINVAL;
    for (size_t i = 0; i < s->n_prepared; i++)
        if (!s->prepared[i].domain || !s->prepared[i].migration_id)
            return -EINVAL;
    switch (format) {
    case HD_POOL_JSON: rc = render_json(out, s); break;
    case HD_POOL_PLACEMENT: rc = render_placement(out, s); break;
    case HD_POOL_KUBERNETES: rc = render_kubernetes(out, s); break;
    default: return -EINVAL;
    }
    return rc < 0 ? rc : out->err;
}
