/* A VM's GPUs unplugged and plugged as one set: a failure at any one of
 * them undoes the others, so that no VM is left with half its GPUs. */
#include "gpus.h"

#include "proto/log.h"
#include "waits.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

void hd_gpus_names(const struct hd_gpu_set *set, char *out, size_t len)
{
    size_t at = 0;

    snprintf(out, len, "%s", set->n ? "" : "none");
    for (size_t i = 0; i < set->n && at < len; i++) {
        int w = snprintf(out + at, len - at, "%s%s", i ? ", " : "",
                         set->gpu[i]->name);

        if (w < 0)
            break;
        at += (size_t)w;
    }
}

/* Milliseconds left until DEADLINE (hd_now seconds), at least 1. */
static uint32_t left_ms(double deadline)
{
    double left = (deadline - hd_now()) * 1000.0;

    return left < 1 ? 1 : (uint32_t)left;
}

/* Asks the hypervisor to plug (ATTACH) or unplug every GPU of SET, then
 * waits for each; DONE[i] tells which one got there.  The first failure
 * into WHY, its -errno returned; the others are still waited for, so
 * that DONE is true of the set as it is. */
static int plug(struct hd_daemon *d, const char *domain,
                const struct hd_gpu_set *set, bool attach, bool *done,
                char *why, size_t why_len)
{
    struct hd_wait w[HD_MAX_GPUS];
    uint32_t timeout = attach ? d->cfg.attach_timeout_ms
                              : d->cfg.detach_timeout_ms;
    double deadline;
    size_t asked = 0;
    int rc = 0;

    for (size_t i = 0; i < set->n; i++) {
        const struct hv_gpu *g = set->gpu[i];
        int r;

        done[i] = false;
        hd_wait_arm(d->waits, &w[i],
                    attach ? HV_EV_DEVICE_ADDED : HV_EV_DEVICE_REMOVED,
                    domain, g->alias);
        r = attach ? d->hv_ops->attach(d->hv, domain, g)
                   : d->hv_ops->detach(d->hv, domain, g);
        if (r < 0) {
            hd_wait_disarm(d->waits, &w[i]);
            snprintf(why, why_len, "%s would not %s: %s", g->name,
                     attach ? "attach" : "unplug", strerror(-r));
            CRN_ERROR("%s: %s", domain, why);
            rc = r;
            break;
        }
        asked++;
    }
    deadline = hd_now() + timeout / 1000.0;
    for (size_t i = 0; i < asked; i++) {
        const struct hv_gpu *g = set->gpu[i];
        int r = hd_wait_for(d->waits, &w[i], left_ms(deadline));

        /* The event may have been missed: the device is where it should
         * be, or not. */
        if (r < 0 && d->hv_ops->has_gpu(d->hv, domain, g) == (attach ? 1 : 0))
            r = 0;
        done[i] = r == 0;
        if (r < 0 && rc == 0) {
            snprintf(why, why_len, attach ? "%s did not attach within %.1f s"
                                          : "the guest did not let %s go "
                                            "within %.1f s",
                     g->name, timeout / 1000.0);
            CRN_ERROR("%s: %s", domain, why);
            rc = -ETIMEDOUT;
        }
    }
    return rc;
}

/* After a failed plug: the GPUs of SET that DONE marks go back where they
 * were; what could not is added to WHY. */
static void undo(struct hd_daemon *d, const char *domain,
                 const struct hd_gpu_set *set, const bool *done, bool attach,
                 char *why, size_t why_len)
{
    struct hd_gpu_set back = { .n = 0 };
    bool back_done[HD_MAX_GPUS];
    char names[512], err[256];
    size_t l;

    for (size_t i = 0; i < set->n; i++)
        if (done[i])
            back.gpu[back.n++] = set->gpu[i];
    if (!back.n)
        return;
    hd_gpus_names(&back, names, sizeof(names));
    CRN_WARN("%s: %s %s again (all or none)", domain,
            attach ? "plugging" : "unplugging", names);
    if (plug(d, domain, &back, attach, back_done, err, sizeof(err)) == 0) {
        l = strlen(why);
        snprintf(why + l, why_len - l, "; %s %s again", names,
                 attach ? "plugged in" : "unplugged");
        return;
    }
    l = strlen(why);
    snprintf(why + l, why_len - l, "; undoing: %s", err);
}

/* Plugs SET in (ATTACH) or out as one: on a failure the GPUs already moved
 * are moved back, so that the VM keeps all of its GPUs or none. */
static int plug_all_or_none(struct hd_daemon *d, const char *domain,
                            const struct hd_gpu_set *set, bool attach,
                            char *why, size_t why_len)
{
    bool done[HD_MAX_GPUS];
    int rc = plug(d, domain, set, attach, done, why, why_len);

    if (rc < 0)
        undo(d, domain, set, done, !attach, why, why_len);
    return rc;
}

int hd_gpus_detach(struct hd_daemon *d, const char *domain,
                   const struct hd_gpu_set *set, char *why, size_t why_len)
{
    return plug_all_or_none(d, domain, set, false, why, why_len);
}

int hd_gpus_attach(struct hd_daemon *d, const char *domain,
                   const struct hd_gpu_set *set, char *why, size_t why_len)
{
    return plug_all_or_none(d, domain, set, true, why, why_len);
}
