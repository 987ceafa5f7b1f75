/* Threads waiting for hypervisor events (device removed/added, domain up). */
#ifndef HD_WAITS_H
#define HD_WAITS_H

#include "host-daemon/hv/hv.h"

#include <stdbool.h>
#include <stdint.h>

struct hd_waits;

/* One wait: armed BEFORE the action that causes the event, so that an
 * event arriving before the waiter sleeps is not lost. */
struct hd_wait {
    enum hv_event_kind kind;
    char domain[HV_NAME_MAX + 1];
    char alias[HV_ALIAS_MAX + 1];  /* "" for domain events */
    bool fired;
    struct hd_wait *next;
};

int hd_waits_new(struct hd_waits **out);
void hd_waits_free(struct hd_waits *ws);

void hd_wait_arm(struct hd_waits *ws, struct hd_wait *w,
                 enum hv_event_kind kind, const char *domain,
                 const char *alias);
/* Sleeps until W fired or TIMEOUT_MS passed, then disarms W.  0, or
 * -ETIMEDOUT. */
int hd_wait_for(struct hd_waits *ws, struct hd_wait *w, uint32_t timeout_ms);
void hd_wait_disarm(struct hd_waits *ws, struct hd_wait *w);

/* Fires every armed wait that EV matches (any thread). */
void hd_waits_signal(struct hd_waits *ws, const struct hv_event *ev);

#endif /* HD_WAITS_H */
