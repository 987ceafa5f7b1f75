/* Records the hv_event_fn calls of a backend, for tests to wait on. */
#ifndef HVT_RECORDER_H
#define HVT_RECORDER_H

#include "harness.h"
#include "host-daemon/hv/hv.h"

#define HVT_EVENTS_MAX 512

/* Filled on the loop thread only (where the tests also read it). */
struct hvt_recorder {
    struct hv_event events[HVT_EVENTS_MAX];
    int count;
    int dropped;                /* past HVT_EVENTS_MAX */
    int off_loop;               /* calls off the loop thread: must be 0 */
};

/* The hv_event_fn to open a backend with; ARG is a struct hvt_recorder. */
void hvt_record(void *arg, const struct hv_event *ev);

/* How many events of KIND for DOMAIN (and ALIAS, unless NULL) came. */
int hvt_count(const struct hvt_recorder *r, enum hv_event_kind kind,
              const char *domain, const char *alias);

/* Runs L until there are WANT such events; fails the test after
 * TIMEOUT_MS. */
void hvt_wait_event(struct hvt_loop *l, const struct hvt_recorder *r,
                    enum hv_event_kind kind, const char *domain,
                    const char *alias, int want, unsigned timeout_ms);

#endif /* HVT_RECORDER_H */
