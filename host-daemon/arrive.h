/* The destination side: a VM arrives, gets a free GPU, its programs resume;
 * VMs that found no free GPU wait for one. */
#ifndef HD_ARRIVE_H
#define HD_ARRIVE_H

#include "daemon.h"
#include "proto/hostd.pb-c.h"

#include <stdint.h>

int hd_waiting_new(struct hd_waiting **out);
void hd_waiting_free(struct hd_waiting *w);

/* Answers a peer's Arrive (request ID) on FD: attach, resume, reply with
 * the steps.  Returns the write's result. */
int hd_arrive_serve(struct hd_daemon *d, int fd, uint64_t id,
                    const Crane__Hostd__Arrive *a, const char *src_host);

/* Loop thread: when VMs wait and no retry runs, starts a job that gives
 * each a free GPU while there are some. */
void hd_waiting_kick(struct hd_daemon *d);

/* The proxy domain stopped: the migration of every VM waiting here (their
 * programs remote through it) gets a "proxy-lost" step when the retry job
 * next takes it up, and ends with that said.  Any thread; kick the retry
 * job after it. */
void hd_waiting_proxy_lost(struct hd_daemon *d);

/* At start-up: migrations the history still has as running.  Those this
 * host received whose VM runs here without a GPU wait again; the others
 * are marked failed (the daemon stopped in their middle). */
int hd_waiting_recover(struct hd_daemon *d);

#endif /* HD_ARRIVE_H */
