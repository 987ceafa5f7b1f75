/* The destination side: a VM arrives, gets a free GPU, its programs resume;
 * VMs that found no free GPU wait for one. */
#ifndef HD_ARRIVE_H
#define HD_ARRIVE_H

#include "daemon.h"
#include "pool.h"
#include "host-daemon/web/pool_report.h"
#include "host-daemon/history/history.h"
#include "proto/hostd.pb-c.h"
#include "run.h"

#include <stddef.h>
#include <stdint.h>

/* How the programs come back once the GPU is in: after a move (resume),
 * or on the host that prepared them (abort). */
enum hd_bring { HD_BRING_RESUME, HD_BRING_ABORT };

#define HD_WAITING_MAX 64      /* VMs waiting for a GPU at once */

/* A VM waiting for a GPU, as hd_waiting_list copies it. */
struct hd_waiting_entry {
    char domain[HV_NAME_MAX + 1];
    char id[HD_ID_MAX + 1];
    double start_wall;            /* the migration's start */
    struct hd_gpu_want want;      /* the GPUs it waits for */
};

int hd_waiting_new(struct hd_waiting **out);
void hd_waiting_free(struct hd_waiting *w);

/* Answers a peer's Arrive (request ID) on FD: attach, resume, reply with
 * the steps.  Returns the write's result. */
int hd_arrive_serve(struct hd_daemon *d, int fd, uint64_t id,
                    const Crane__Hostd__Arrive *a, const char *src_host);

/* Gives DOMAIN free GPUs of the pool for every GPU of WANT (all or none,
 * matched by model) and brings its programs back (HOW): OK; REMOTING when
 * fewer are free or one would not attach (none stays attached: the VM
 * goes on remoting); FAILED when the guest did not come back.  WHY says
 * why.  Steps go into RUN. */
Crane__Hostd__Result hd_arrive_attach(struct hd_daemon *d, struct hd_run *run,
                                      const char *domain,
                                      const struct hd_gpu_want *want,
                                      enum hd_bring how, char *why,
                                      size_t why_len);

/* RUN's VM waits here for the GPUs of WANT (retried by hd_waiting_kick);
 * the run is left running in the history (hd_run_leave). */
void hd_waiting_add_run(struct hd_daemon *d, struct hd_run *run,
                        const struct hd_gpu_want *want);

/* Copies up to MAX of the VMs waiting for a GPU; returns how many. */
size_t hd_waiting_list(struct hd_daemon *d, struct hd_waiting_entry *out,
                       size_t max);

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

/* hd_pool_read_fn (http.h) for the HTTP server: the pool's GPUs and the
 * VMs that wait here for one, as a struct hd_pool_state (ARG: the struct
 * hd_daemon).  Any thread. */
int hd_daemon_pool_read(void *arg,
                        int (*use)(void *use_arg,
                                   const struct hd_pool_state *s),
                        void *use_arg);

#endif /* HD_ARRIVE_H */
