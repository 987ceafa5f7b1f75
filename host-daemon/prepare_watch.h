/* While a prepare runs: the guest's programs that wait for a long kernel. */
#ifndef HD_PREPARE_WATCH_H
#define HD_PREPARE_WATCH_H

#include "proto/control.pb-c.h"

struct hd_run;
struct hd_prepare_watch;

/*
 * A watch over the prepare of RUN, fed the progress crane-guestd sends on
 * the prepare's own connection (the Prepare's hd_guest_send watch,
 * control.proto OpProgress): each program it lists as waiting (a switch behind a long
 * kernel) is said in the run, "pid N (NAME): waiting for a kernel running
 * for 37 s (at most 12 s more)", at first sight and every 5 s.  NULL when
 * there is no memory for it (logged; the prepare goes on without).
 */
struct hd_prepare_watch *hd_prepare_watch_start(struct hd_run *run);

/* One OpProgress (an hd_guest_progress_fn: ARG is the watch). */
void hd_prepare_watch_feed(void *arg, const Crane__Control__OpProgress *p);

/* Records one step "kernel-wait" per program seen waiting (how long the
 * prepare waited for it: from when its kernel began, as the guest said,
 * or the prepare's start if later, to when it was last seen waiting),
 * then frees W.  NULL: nothing. */
void hd_prepare_watch_stop(struct hd_prepare_watch *w);

#endif /* HD_PREPARE_WATCH_H */
