/* The libxl backend's shared state, for its own files only. */
#ifndef HD_HV_LIBXL_INT_H
#define HD_HV_LIBXL_INT_H

/* The libxl API of Xen 4.14 and later (ao_how on pause and
 * retrieve_domain_configuration, send_back_fd on create_restore). */
#define LIBXL_API_VERSION 0x041400

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <libxl.h>
#include <libxl_event.h>
#include <libxl_utils.h>
#include <uv.h>

#include "hv.h"

/* Tells a struct hv of this backend from another backend's. */
#define HV_LIBXL_MAGIC 0x78656e6cu /* "xenl" */

/* How often the domain list is read again: libxl has no event for a
 * domain being created (only xenstore's @introduceDomain, and the daemon
 * does not link libxenstore), so new domains are found by looking. */
#define HV_LIBXL_RESCAN_MS 2000

struct hv_libxl_fdreg;
struct hv_libxl_timereg;
struct hv_libxl_note;
struct hv_libxl_dom;
struct hv_libxl_job;

struct hv {
    uint32_t magic;
    libxl_ctx *ctx;
    xentoollog_logger_stdiostream *logger;
    uv_loop_t *loop;
    hv_event_fn *fn;
    void *fn_arg;
    char channel_name[HV_NAME_MAX + 1];
    /* Set by libxl's disaster hook: libxl's event machinery is broken and
     * every later call fails until the daemon restarts. */
    atomic_bool broken;

    /* Written by libxl's hooks on any thread and by the loop thread; never
     * held while calling into libxl (libxl calls the hooks with its own
     * lock held, so taking libxl's lock under this one could deadlock). */
    pthread_mutex_t lock;
    int epfd;                          /* libxl's fds and timerfds */
    struct hv_libxl_fdreg *fdregs;     /* fds libxl wants polled */
    struct hv_libxl_timereg *timeregs; /* timeouts not yet fired */
    uint64_t next_timer_id;
    struct hv_libxl_note *notes;       /* for the loop thread, in order */
    struct hv_libxl_note **notes_tail;
    bool rescan_wanted;

    /* The loop thread's own. */
    uv_async_t wake;                   /* notes or a rescan are waiting */
    uv_timer_t rescan;
    uv_signal_t sigchld;               /* libxl's children (save helper) */
    uv_poll_t epoll;                   /* epfd */
    uv_handle_t *core[4];              /* the four above, once set up */
    unsigned ncore;
    unsigned handles_open;             /* not yet closed */
    struct hv_libxl_dom *doms;         /* domains known, with death events */
    bool closing;

    /* Migration jobs, one record per domain migrated from here. */
    pthread_mutex_t job_lock;
    struct hv_libxl_job *jobs;
};

/* The errno for libxl's error RC (ERROR_*), as a negative number. */
int hv_libxl__errno(int rc);
/* libxl's name for RC, for logs. */
const char *hv_libxl__strerror(int rc);
/* -EIO and a log line when libxl's event machinery has failed. */
int hv_libxl__check(struct hv *hv, const char *what);
/* The domid of domain NAME: 0, -ENOENT, or another -errno. */
int hv_libxl__domid(struct hv *hv, const char *name, uint32_t *domid);

/* --- hv_libxl_osevent.c: libxl's fds and timeouts in one epoll set ------ */

/* Makes hv->epfd, the one fd the loop polls for libxl. */
int hv_libxl__osevent_init(struct hv *hv);
/* The hooks libxl calls to have its fds polled and its timeouts kept. */
extern const libxl_osevent_hooks hv_libxl__osevent_hooks;
/* The loop's uv_poll callback for hv->epfd: hands what is due to libxl. */
void hv_libxl__epoll_ready(uv_poll_t *handle, int status, int events);
/* Frees what the hooks hold and hv->epfd, once the context and the
 * uv_poll on it are gone. */
void hv_libxl__osevent_free(struct hv *hv);

/* --- hv_libxl_loop.c: libxl's events on the daemon's libuv loop --------- */

/* Sets up the handles and hooks; called by open, right after
 * libxl_ctx_alloc and before anything else uses the context. */
int hv_libxl__loop_start(struct hv *hv);
/* Frees the context and closes the handles; HV is freed when the last
 * handle's close callback has run. */
void hv_libxl__loop_stop(struct hv *hv);
/* Queues an event for the daemon (any thread); delivered on the loop. */
void hv_libxl__post(struct hv *hv, enum hv_event_kind kind,
                    const char *domain, const char *alias);
/* Asks the loop thread to read the domain list now (any thread). */
void hv_libxl__rescan_soon(struct hv *hv);

/* --- hv_libxl_migrate.c: migrations from here, and the stream's I/O ----- */

/* The conversation's first frame, XenConfig (hv_libxl.h): its version, and
 * the most bytes it may take (the configuration and the fields' tags). */
#define HV_LIBXL_WIRE_VERSION 1u
#define HV_LIBXL_WIRE_FRAME_MAX (HV_LIBXL_CONFIG_MAX + 64)

/* libxl_domain_suspend writes stream version 2 (LIBXL_HAVE_SRM_V2);
 * libxl_domain_restore_params defaults to 1. */
#define HV_LIBXL_STREAM_VERSION 2

/* The header and the configuration are small: they come at once or the
 * peer is not a crane-hostd. */
#define HV_LIBXL_HEADER_TIMEOUT_MS 30000

/* CLOCK_MONOTONIC in milliseconds: the deadlines below. */
int64_t hv_libxl__now_ms(void);
/* Exactly LEN bytes before DEADLINE, on a blocking or non-blocking fd:
 * 0, -ETIMEDOUT, -ECONNRESET at end of stream, or -errno. */
int hv_libxl__read_full(int fd, void *buf, size_t len, int64_t deadline);
/* All of BUF before DEADLINE, never raising SIGPIPE on a socket. */
int hv_libxl__write_full(int fd, const void *buf, size_t len,
                         int64_t deadline);
uint32_t hv_libxl__get_be32(const unsigned char *p);

int hv_libxl__migrate(struct hv *hv, const char *domain,
                      const struct hv_migrate_args *args);
int hv_libxl__job(struct hv *hv, const char *domain, struct hv_job *out);
void hv_libxl__jobs_free(struct hv *hv);

#endif /* HD_HV_LIBXL_INT_H */
