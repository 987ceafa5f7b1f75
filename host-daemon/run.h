/* One migration as it happens on this host: its steps, history, progress. */
#ifndef HD_RUN_H
#define HD_RUN_H

#include "daemon.h"
#include "host-daemon/history/history.h"
#include "host-daemon/hv/hv.h"
#include "proto/control.pb-c.h"
#include "proto/hostd.pb-c.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hd_run {
    struct hd_daemon *d;
    struct hd_history *h;         /* this thread's own; NULL if it failed */
    struct hd_migration m;        /* as recorded */
    /* The history failed a write: from then on the run is kept in the
     * backlog (backlog.c) at its end, with the steps from n_stored on. */
    bool unsaved;
    char unsaved_why[128];
    size_t n_stored;              /* steps the history took */
    double t0;                    /* hd_now() at the start */
    int client_fd;                /* crane-migrate's socket, or -1 */
    /* Every step, for the final report. */
    Crane__Hostd__Step *steps;
    size_t n_steps, cap_steps;
    /* Programs lost to a fault (steps in phase "lost", one per pid): said
     * in the end's error when nothing else failed. */
    unsigned n_lost;
    char lost[512];
    /* The hypervisor's completed job, for the MigrateDone. */
    bool has_job;
    struct hv_job job;
};

/* Starts a run: a fresh id (or ID when not NULL), a history row in state
 * running.  CLIENT_FD (or -1) gets Progress frames; the run does not own
 * it. */
int hd_run_begin(struct hd_run *run, struct hd_daemon *d, const char *id,
                 const char *domain, const char *src, const char *dst,
                 enum hd_mode mode, int client_fd);
/* Takes up a run begun earlier (by this daemon, perhaps before a
 * restart) whose history row is still running: migration ID that began at
 * START_WALL (seconds since the epoch). */
int hd_run_continue(struct hd_run *run, struct hd_daemon *d, const char *id,
                    const char *domain, double start_wall);
/* Leaves the run unfinished in the history (a VM waiting for a GPU) and
 * frees what it holds; hd_run_continue takes it up again. */
void hd_run_leave(struct hd_run *run);
/* Seconds since the run began. */
double hd_run_elapsed(const struct hd_run *run);
/* A line for people: logged, and sent to the client as Progress. */
void hd_run_say(struct hd_run *run, const char *phase, int percent,
                const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Records a step (START is seconds since the run began). */
void hd_run_step(struct hd_run *run, const char *phase, uint32_t pid,
                 const char *program, double start, double seconds, int err,
                 const char *error);
/* Records what a guest daemon's answer carries: its own steps (as
 * "guest: NAME") and each program's stoppage in PROGRAM_PHASE ("pre" or
 * "post"), placed from SENT (when the command left, run seconds); a
 * program the guest names lost to a fault as a step "lost" with its
 * reason. */
void hd_run_guest_steps(struct hd_run *run, const Crane__Control__Ack *ack,
                        const char *program_phase, double sent);
/* The destination's host name, as it named itself, in place of the address
 * the run began with (history and MigrateDone). */
void hd_run_set_destination(struct hd_run *run, const char *host);
/* Memory the hypervisor moved so far. */
void hd_run_bytes(struct hd_run *run, uint64_t bytes);
/* Progress of the hypervisor's job J (crane-migrate --verbose). */
void hd_run_job_progress(struct hd_run *run, const struct hv_job *j);
/* Keeps the completed job J for the MigrateDone. */
void hd_run_set_job(struct hd_run *run, const struct hv_job *j);
/* Ends the run: history finished, MigrateDone to the client, memory
 * freed.  ERROR may be NULL (then the programs lost, if any, are the
 * error). */
void hd_run_end(struct hd_run *run, Crane__Hostd__Result result,
                const char *error);
/* MigrateDone (RESULT, ERROR or NULL, the steps so far) to the client
 * while the history keeps the run running: one step of a migration that
 * another tool performs (crane-hostctl).  The run stays as it was. */
void hd_run_reply(struct hd_run *run, Crane__Hostd__Result result,
                  const char *error);
/* Stores each of a peer's STEPS, shifted by OFFSET seconds. */
void hd_run_peer_steps(struct hd_run *run, Crane__Hostd__Step **steps,
                       size_t n, double offset);

/* A migration's result as the history names it. */
enum hd_result hd_run_history_result(Crane__Hostd__Result r);

#endif /* HD_RUN_H */
