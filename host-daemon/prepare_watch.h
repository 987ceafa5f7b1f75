/* While a prepare runs: the guest's programs that wait for a long kernel. */
#ifndef HD_PREPARE_WATCH_H
#define HD_PREPARE_WATCH_H

struct hd_run;
struct hd_prepare_watch;

/*
 * Starts a thread that asks the guest daemon on channel PATH for its
 * status every second while the prepare of RUN waits for its answer, and
 * says each program that reports waiting (a switch behind a long kernel,
 * control.proto ProgramReport.waiting) in the run: "pid N (NAME): waiting
 * for a kernel running for 37 s (at most 12 s more)", at first sight and
 * every 5 s.  Three status requests in a row that get no answer within
 * a second (a channel that takes one connection at a time, as QEMU's
 * socket behind a virtio-serial port) end the polling, logged once.
 * NULL when the thread could not start (logged; the prepare goes on
 * without).  The run must not be used by its own thread until
 * hd_prepare_watch_stop, after which the watch never touches it again.
 */
struct hd_prepare_watch *hd_prepare_watch_start(struct hd_run *run,
                                                const char *path);

/* Stops the watch at once (a status it still waits for is dropped when
 * it comes), then records one step "kernel-wait" per program seen waiting
 * (how long the prepare waited for it: from when its kernel began, as the
 * program said, or the prepare's start if later, to when it was last
 * seen waiting).  W is freed by the last of the two threads.  NULL:
 * nothing. */
void hd_prepare_watch_stop(struct hd_prepare_watch *w);

#endif /* HD_PREPARE_WATCH_H */
