/* crane-guestd's context: the daemon, programs and peers its files share. */
#ifndef GD_GUESTD_H
#define GD_GUESTD_H

#include "config.h"
#include "wire.h"

#include "proto/control.pb-c.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

/* Host or cranectl connections at most (programs: cfg.max_programs). */
#define GD_MAX_HOST_CONNS 16

/* Short names for the generated enums. */
#define GD_OP(x) CRANE__CONTROL__OP__OP_##x
#define GD_PHASE(x) CRANE__CONTROL__PHASE__PHASE_##x
#define GD_PMODE(x) CRANE__CONTROL__PROGRAM_MODE__PROGRAM_##x
#define GD_MIG(x) CRANE__CONTROL__MIGRATION_MODE__MIGRATION_##x
#define GD_PSTATE(x) CRANE__CONTROL__PROGRAM_STATE__STATE_##x

struct gd_daemon;
struct gd_driver_run;
struct gd_op;
struct gd_program;

/* What the shim side (programs.c) tells the files above it (migrate.c,
 * status.c), passed down by main.c so that programs.c never calls up. */
struct gd_program_events {
    /* P registered (again, after a restart). */
    void (*registered)(struct gd_daemon *d, struct gd_program *p);
    /* P acked its migration command (the outcome is in P's last_*). */
    void (*acked)(struct gd_daemon *d, struct gd_program *p);
    /* P answered its status query, or went away with one pending. */
    void (*answered)(struct gd_daemon *d, struct gd_program *p);
    /* P's connection ended. */
    void (*gone)(struct gd_daemon *d, struct gd_program *p);
};

/* Whoever sent a host command: a socket connection or the virtio port.
 * Answers go back through `send`; `push` sends what answers nothing (a
 * command's progress, progress.c). */
struct gd_peer {
    int (*send)(struct gd_peer *p, const ProtobufCMessage *msg);
    int (*push)(struct gd_peer *p, const ProtobufCMessage *msg);
    char name[64];
};

/* One program under the shim: its connection, what it said about itself,
 * and what became of the last command sent to it. */
struct gd_program {
    struct gd_conn conn;         /* first: the connection is the program */
    struct gd_daemon *d;
    struct gd_program *next;
    bool refused;                /* over max_programs: closed at once */
    bool registered;
    double accepted_at;
    double last_heard;           /* its last frame */
    pid_t pid;                   /* from the socket's credentials */
    uid_t uid;
    char name[64];
    Crane__Control__ProgramMode mode;
    uint64_t state_bytes;
    /* Its remote connection's bulk bytes and shared area (last ack). */
    uint64_t shm_bytes, stream_bytes, host_bytes;
    bool shm_attached;
    double registered_at;
    char proxy[GD_TEXT];
    /* The migration command in flight (cmd_id 0: none) and a status
     * query in flight. */
    uint64_t cmd_id;
    Crane__Control__Op cmd_op;
    double cmd_sent;
    double silent_since;         /* sending of the oldest unanswered one */
    uint64_t query_id;
    double query_sent;
    unsigned query_round;        /* the status round that asked */
    /* This program's part in the current operation's fan-out. */
    bool in_fanout;              /* waited for */
    bool fanned;                 /* sent the current fan-out's command */
    bool unresponsive;           /* missed a deadline; not waited for */
    /* Registered before its first OpenCL call (Register.starting): told
     * where that call goes by a Start; `held` while it waits for the GPU
     * (offline migration), until the phase is idle again. */
    bool starting;
    bool held;
    /* The last fault its shim reported (fault_err 0: none). */
    int fault_err;
    char fault[200];
    double fault_at;
    /* The last command's outcome. */
    Crane__Control__Op last_op;
    int last_err;
    char last_error[200];
    Crane__Control__StepTimes last_times;
    double last_elapsed;
    /* What the command in flight waits for, as the shim said (Progress;
     * "" none): cleared by its answer. */
    char waiting[GD_TEXT];
};

/* A program that died of a fault during the current migration: its shim
 * reported the fault, then its connection ended. */
struct gd_lost {
    pid_t pid;
    char name[64];
    Crane__Control__Op during;   /* the operation then, OP_NONE: between */
    int err;
    char reason[200];
};

#define GD_MAX_LOST 32

/* A host command waiting for its answer. */
struct gd_waiter {
    struct gd_peer *peer;        /* NULL once the peer went away */
    uint64_t id;
    Crane__Control__Op op;
    bool progress;               /* asked for progress (Prepare.progress) */
};

#define GD_MAX_WAITERS 8

struct gd_status_round {
    struct gd_waiter waiters[GD_MAX_WAITERS];
    size_t n_waiters;
    size_t outstanding;
    unsigned gen;                /* counts rounds */
    uv_timer_t timer;
    bool timer_armed;
};

/* The daemon.  Everything runs on one libuv loop. */
struct gd_daemon {
    uv_loop_t *loop;
    struct gd_config cfg;
    char self_exe[GD_TEXT];      /* for the GPU probe child */
    /* The shims' socket and every connected program. */
    union crn_listener shim_lis;
    bool shim_listening;
    char shim_path[108];
    struct gd_program *programs;
    const struct gd_program_events *program_events;
    uv_timer_t reg_timer;        /* closes those late to register */
    uint64_t n_evicted, n_refused;  /* at the max_programs bound */
    uint64_t next_id;            /* command ids, from 1 */
    /* The host side (host.c). */
    struct gd_host *host;
    /* Where the migration stands (kept in the state file). */
    Crane__Control__Phase phase;
    double phase_since;
    Crane__Control__MigrationMode mode;
    char proxy[GD_TEXT];
    /* The proxy's key from the host's prepare (handed to each shim with
     * the proxy; in memory only, never in the state file). */
    uint8_t proxy_key[4096];
    size_t proxy_key_len;
    size_t modules_unloaded;     /* cfg.modules[0..n) are out */
    struct gd_op *op;            /* the operation in flight, or NULL */
    uv_timer_t fan_timer;        /* the current fan-out's deadline */
    uv_timer_t progress_timer;   /* the operation's progress (progress.c) */
    uv_timer_t drv_timer;        /* GPU polling */
    struct gd_driver_run *drv;   /* the driver's run (driver.h), main's */
    /* Programs lost to a fault since the last prepare began (answers to
     * prepare, resume and abort list them). */
    struct gd_lost lost[GD_MAX_LOST];
    size_t n_lost;
    /* The last operation's result, for status. */
    Crane__Control__Op last_op;
    int last_err;
    char last_error[256];
    struct gd_status_round round;
    /* After a restart: programs expected back, and what to do then. */
    pid_t expected[256];
    size_t n_expected;
    uv_timer_t grace;
    uv_timer_t state_retry;      /* the state file again after a failure */
    bool state_unsaved;          /* the last write of it failed */
    bool recovering;
    Crane__Control__Op recover_op;
    void (*recover)(struct gd_daemon *d);  /* carries out recover_op */
    uv_signal_t sig_int, sig_term;
    bool stopping;
};

/* A status query unanswered this long, with no command in flight, makes a
 * program unresponsive (an idle shim answers at once; 2 s leaves room for
 * a slow machine). */
#define GD_QUERY_LATE_S 2.0

double gd_now(void);
const char *gd_phase_name(Crane__Control__Phase p);
const char *gd_pmode_name(Crane__Control__ProgramMode m);
const char *gd_op_name(Crane__Control__Op op);
const char *gd_mig_name(Crane__Control__MigrationMode m);

/* Sets the phase and writes the state file. */
void gd_set_phase(struct gd_daemon *d, Crane__Control__Phase phase);
/* A program registered in mode P->mode: a parked program while the phase
 * says idle means the state file was stale (a full disk refused the
 * prepared phase's write): the phase follows the program. */
struct gd_program;
void gd_adopt_program_phase(struct gd_daemon *d, const struct gd_program *p);
/* Writes the state file (phase, mode, modules, programs). */
void gd_save_state(struct gd_daemon *d);
/* At start: takes over what the state file says a previous daemon left
 * (initialises d->grace); RECOVER carries out the half-done migration once
 * the programs are back or the grace period ended. */
void gd_daemon_recover(struct gd_daemon *d,
                       void (*recover)(struct gd_daemon *d));

#endif /* GD_GUESTD_H */
