/* crane-migrate's shared parts: exit statuses, options, the output view. */
#ifndef HD_MIGRATE_CLI_H
#define HD_MIGRATE_CLI_H

#include "proto/hostd.pb-c.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>


#define MIG_DEFAULT_CONNECT "unix:/run/crane/hostd.sock"
#define MIG_CONNECT_ENV "CRANE_HOSTD_CONNECT"
#define MIG_MAX_REPLY (1u << 20)    /* bytes of one reply from the daemon */
#define MIG_MAX_REQUEST (64u << 10) /* what crane-hostd reads of a frame */
#define MIG_MAX_WAIT 1000000.0      /* --wait, seconds (fits poll's int ms) */
#define MIG_MAX_DISKS 64            /* --migrate-disks targets */
#define MIG_VIRSH_BASE 512          /* migrate_virsh.c's option ids */
#define MIG_FOLLOW "follow it on crane-hostd's dashboard or in its history"

/* Exit statuses; --help and docs/host.md list them. */
enum mig_exit {
    MIG_EXIT_OK = 0,          /* moved, programs back on a GPU */
    MIG_EXIT_ROLLED_BACK = 1, /* failed; runs on at the source as before */
    MIG_EXIT_FAILURE = 1,     /* nothing started: --xml file unusable */
    MIG_EXIT_USAGE = 2,
    MIG_EXIT_NO_ANSWER = 3,   /* no (usable) answer from crane-hostd */
    MIG_EXIT_REMOTING = 4,    /* moved; programs remote until a GPU comes */
    MIG_EXIT_FAILED = 5,      /* failed and not fully restored */
    MIG_EXIT_LOST = 6,        /* moved, but programs died of a fault */
    MIG_EXIT_SIGNAL = 128,    /* + the signal: stopped watching */
};

/* What the command line asks for. */
struct mig_opts {
    Crane__Hostd__MigrateRequest req; /* strings point into argv or xml */
    bool offline;
    const char *connect;
    const char *connect_from;         /* "--connect" or the variable */
    double wait;                      /* seconds; 0: forever */
    char *xml;                        /* --xml's text, owned */
    Crane__Hostd__MigrateOptions vopts; /* req.options once one is set */
    char *disks[MIG_MAX_DISKS];       /* --migrate-disks, owned */
    const char *named_domain;         /* --domain, --desturi, --migrateuri */
    const char *named_desturi;
    const char *named_migrateuri;
};

/* The terminal or log that stdout is; progress goes to ERR, as virsh
 * writes it. */
struct mig_view {
    FILE *out;
    FILE *err;        /* NULL: stderr */
    char last_progress[16]; /* the percent text shown last, "" none */
    bool tty;         /* update the progress line in place with \r */
    bool line_open;   /* a progress line without its newline is shown
                         (on ERR) */
    int last_percent; /* -1: none shown yet */
    bool quiet;       /* mig_print_done writes no stderr line: the
                         caller says it in its own words (crane-hostctl) */
};

/* Frames read from the daemon, buffered so that --wait holds inside a
 * frame as well as between frames. */
struct mig_reader {
    int fd;
    uint8_t *buf;
    size_t len, cap;
};


/* migrate_args.c: the command line.  Returns -1 to go on with O filled,
 * else the exit status (--help, --version, bad usage). */
int mig_parse_args(int argc, char **argv, struct mig_opts *o);

/* Frees what O owns. */
void mig_opts_free(struct mig_opts *o);

/* migrate_virsh.c: virsh migrate's further options, ids from
 * MIG_VIRSH_BASE; the table ends with a NULL name. */
extern const struct option mig_virsh_options[];
/* Takes option ID with ARG: -1 to go on, else the exit status. */
int mig_virsh_option(int id, const char *arg, struct mig_opts *o);
/* The checks between them once all are read: -1 or the exit status. */
int mig_virsh_check(const struct mig_opts *o);

/* migrate_cancel.c: asks the crane-hostd at CONNECT to cancel DOMAIN's
 * running migration (ID, or NULL for any).  0: taken, its id in MIG_ID;
 * -ESRCH: refused (nothing runs, or it already completed), WHY says so;
 * another -errno: no usable answer, WHY says so.  A VM that waited
 * prepared (crane-hostctl prepare) has its prepare undone: then
 * MIG_CANCEL_UNDONE, or MIG_EXIT_REMOTING / MIG_EXIT_FAILED as abort's. */
#define MIG_CANCEL_UNDONE 1
int mig_cancel(const char *connect, const char *domain, const char *id,
               char *why, size_t why_len, char *mig_id, size_t id_len);
/* crane-hostctl cancel: says what happened; the exit status (0 taken or
 * the prepare undone, 1 refused or already completed as virsh domjobabort
 * exits, 3 no answer, 4 and 5 as abort's). */
int mig_cancel_command(const char *connect, const char *domain,
                       const char *id);

/* migrate_jobinfo.c: a job's figures as virsh domjobinfo prints them,
 * and virsh's progress percent of REMAINING of TOTAL bytes (two
 * decimals, truncated; 100 only when nothing remains). */
void mig_print_jobinfo(FILE *out, const Crane__Hostd__JobStats *j);
double mig_job_percent(uint64_t remaining, uint64_t total);

/* migrate_print.c: what crane-migrate shows, every string from the daemon
 * cleaned first. */
/* S fit for a terminal and a log in BUF (SIZE >= 8): controls and invalid
 * UTF-8 as '?', too long cut with "..."; a TOKEN also has spaces as '_'
 * and "-" when empty.  Returns BUF. */
const char *mig_clean(char *buf, size_t size, const char *s, bool token);
void mig_view_break(struct mig_view *v);
void mig_show_progress(struct mig_view *v, const Crane__Hostd__Progress *p,
                       bool verbose);
const char *mig_result_name(Crane__Hostd__Result r);
int mig_print_done(struct mig_view *v, const Crane__Hostd__MigrateDone *d,
                   const char *domain);

#endif /* HD_MIGRATE_CLI_H */
