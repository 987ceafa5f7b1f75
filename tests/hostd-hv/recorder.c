/* Records the hv_event_fn calls of a backend, for tests to wait on. */
#include "recorder.h"

#include "host-daemon/hv/hv_event.h"

#include <stdio.h>
#include <string.h>

void hvt_record(void *arg, const struct hv_event *ev)
{
    struct hvt_recorder *r = arg;

    if (!hv_event_on_loop_thread())
        r->off_loop++;
    if (r->count < HVT_EVENTS_MAX)
        r->events[r->count++] = *ev;
    else
        r->dropped++;
}

int hvt_count(const struct hvt_recorder *r, enum hv_event_kind kind,
              const char *domain, const char *alias)
{
    int n = 0;

    for (int i = 0; i < r->count; i++) {
        const struct hv_event *ev = &r->events[i];

        n += ev->kind == kind && strcmp(ev->domain, domain) == 0 &&
             (alias == NULL || strcmp(ev->alias, alias) == 0);
    }
    return n;
}

struct event_goal {
    const struct hvt_recorder *r;
    enum hv_event_kind kind;
    const char *domain, *alias;
    int want;
};

static bool goal_met(void *arg)
{
    struct event_goal *g = arg;

    return hvt_count(g->r, g->kind, g->domain, g->alias) >= g->want;
}

void hvt_wait_event(struct hvt_loop *l, const struct hvt_recorder *r,
                    enum hv_event_kind kind, const char *domain,
                    const char *alias, int want, unsigned timeout_ms)
{
    static const char *const kinds[] = {
        [HV_EV_DEVICE_REMOVED] = "device-removed",
        [HV_EV_DEVICE_ADDED] = "device-added",
        [HV_EV_DOMAIN_STARTED] = "started",
        [HV_EV_DOMAIN_STOPPED] = "stopped",
        [HV_EV_CONNECTION_LOST] = "connection-lost",
        [HV_EV_DOMAIN_MIGRATED_OUT] = "migrated-out",
        [HV_EV_DOMAIN_SHUT_OFF] = "shut-off",
    };
    struct event_goal g = {r, kind, domain, alias, want};
    char what[HV_NAME_MAX + HV_ALIAS_MAX + 64];

    snprintf(what, sizeof(what), "%d %s event(s) of %s%s%s", want,
             kinds[kind], domain, alias != NULL ? " " : "",
             alias != NULL ? alias : "");
    hvt_run_until(l, goal_met, &g, timeout_ms, what);
}
