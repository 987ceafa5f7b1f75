/* The operation in flight's record: its steps, first failure, waiters, gone. */
#ifndef GD_OP_H
#define GD_OP_H

#include "guestd.h"

#define GD_MAX_STEPS 48
#define GD_MAX_GONE 32

/* One step the daemon took, reported in the ack. */
struct gd_step {
    char name[64];
    int err;
    char error[200];
    double seconds;
};

/* A program that exited while an operation waited for it. */
struct gd_gone {
    pid_t pid;
    char name[64];
    Crane__Control__Op during;
};

/*
 * The operation in flight.  Forward path: prepare fans out, then unloads
 * the modules.  Return path (resume, abort, and a prepare that failed or
 * was aborted): load the modules, wait until the GPU is usable, fan out.
 * `err` is the first failure of the operation itself; `back_err` the first
 * failure while a failed prepare was being undone.
 */
struct gd_op {
    Crane__Control__Op kind;
    Crane__Control__MigrationMode mode;
    double started;
    uint32_t deadline_ms;        /* the programs' part */
    uint32_t abort_deadline_ms;  /* of an abort that joined; 0: default */
    int err;
    char error[256];
    int back_err;
    char back_error[256];
    char note[1024];             /* said with a success (exclusions,
                                    programs lost) */
    bool cancelled;              /* an abort arrived during the prepare */
    bool rolling_back;
    bool force_load;             /* load modules even if none is out */
    struct gd_step steps[GD_MAX_STEPS];
    size_t n_steps;
    struct gd_waiter waiters[GD_MAX_WAITERS];
    size_t n_waiters;
    struct gd_gone gone[GD_MAX_GONE];
    size_t n_gone;
    /* A shared area's use or end (OP_SHM): the BAR, each program's part
     * of it, and the next part to hand out. */
    bool shm_release;
    char shm_path[GD_TEXT];
    uint64_t shm_size, shm_part, shm_next;
    /* The fan-out in progress. */
    bool fanning;
    Crane__Control__Op fan_op;
    double fan_started, fan_deadline;
    size_t fan_waiting, fan_sent;
    void (*fan_done)(struct gd_daemon *d);
};

/* Records the operation's first failure (or its undoing's). */
void gd_op_fail(struct gd_daemon *d, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* P's connection ended: recorded as lost (its shim reported a fault and
 * a migration is under way or done: d->lost) or, when it took part in the
 * operation in flight, as gone. */
void gd_op_note_gone(struct gd_daemon *d, struct gd_program *p);

/* Before the operation's answer: the programs lost since the prepare,
 * named in its note. */
void gd_op_note_lost(struct gd_daemon *d);

/* Records one step of the operation in flight (and logs it). */
void gd_op_step(struct gd_daemon *d, const char *name, int err,
                const char *error, double seconds);

#endif /* GD_OP_H */
