/* What the files of a switch (rehome*.c) share, for them only. */
#ifndef SHIM_REHOME_INT_H
#define SHIM_REHOME_INT_H

#include "config.h"
#include "proto/log.h"
#include "shim.h"

extern atomic_long shim_svm_live;
extern atomic_long shim_event_callbacks_pending;
void shim_event_retire(struct shim_event *e);
void shim_event_drain_deferred(void);
void shim_image_region(const struct shim_mem *m, size_t region[3]);
size_t shim_image_row_bytes(const struct shim_mem *m);

/* rehome_common.c: the first cause of the switch under way's failure
 * (kept until cleared; more words added to it). */
void shim_rehome_note(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
void shim_rehome_note_clear(void);
void shim_rehome_note_add(const char *text);
/* Logs where a switch failed, and keeps the first such reason. */
#define SWITCH_FAIL(fmt, ...)                                   \
    do {                                                        \
        CRN_ERROR("re-home: " fmt, ##__VA_ARGS__);              \
        shim_rehome_note(fmt, ##__VA_ARGS__);                   \
    } while (0)

/* A user event the program has not set yet; completing one left on the
 * old side; objects whose bytes the shim moves itself (rehome_common.c). */
bool shim_user_event_pending(const struct shim_obj *o);
bool shim_user_event_abandon(void *real);
bool shim_mem_holds_bytes(const struct shim_obj *o);


/* A queue per context for the shim's own copies. */
struct helper_queue {
    struct shim_context *ctx;
    cl_command_queue q;
};

/* rehome_common.c: the helper queue for CTX, made on first use; waiting
 * for and releasing every helper queue (0 only when every copy
 * completed). */
int shim_helper_queue(struct helper_queue *hq, size_t *n, size_t cap,
                      struct shim_context *ctx, cl_command_queue *out);
int shim_helper_queues_finish(struct helper_queue *hq, size_t *n,
                              const char *what);
void shim_helper_queues_release(struct helper_queue *hq, size_t *n);

/* A buffer whose bytes a switch to the proxy streams from the vendor's
 * device straight to the proxy (each pinned chunk into the ring or the
 * socket), not through its RAM copy: its vendor handles, kept by the
 * background list until the gate opens. */
struct streamed {
    struct shim_mem *m;
    void *ctx;                   /* the vendor's context */
    cl_mem mem;                  /* the vendor's buffer */
    cl_command_queue q;          /* a vendor queue of the pass (sq) */
    cl_command_queue rq;         /* the proxy's, set by bring_back */
    size_t off, len;             /* the range to move: the whole buffer,
                                    or what a pre-copied one still lacks
                                    (the rest is in its RAM copy and in
                                    the buffer made ahead) */
};

/* Helper queues of one switch, released by whoever opens the gate. */
struct pass {
    struct helper_queue hq[16];
    size_t n_hq;
    bool background;
    /* Streamed buffers and the vendor queues that read them. */
    struct helper_queue sq[16];
    size_t n_sq;
    struct streamed *streamed;
    size_t n_streamed;
};

/* rehome_wait.c: before the gate closes, waits while the program's
 * kernels on FROM still run, up to CRANE_SWITCH_KERNEL_WAIT_MS and the
 * command's deadline; 0, or -ETIME (refused: the reason noted). */
int shim_rehome_wait_kernels(const struct shim_backend_ops *from);

/* rehome_out.c: steps 1-3; the host pitches of an image's bytes in RAM;
 * whether a switch to TO (ARG) fills M's RAM copy. */
int shim_rehome_take_out(const struct shim_backend_ops *from,
                         const struct shim_backend_ops *to, struct pass *ps,
                         struct shim_rehome_times *t);
void shim_image_host_steps(const struct shim_mem *m, size_t row,
                           size_t slice, size_t *row_step,
                           size_t *slice_step);
bool shim_rehome_shadow_needed(const struct shim_mem *m, void *arg);

/* rehome_in.c: steps 4b-6 and their undoing; the proxy connection the
 * devices were matched on (set by begin); the streamed buffers forgotten. */
extern unsigned long shim_rehome_checked_conn;
int shim_rehome_bring_back(const struct shim_backend_ops *to,
                           struct pass *ps, struct shim_rehome_times *t);
void shim_rehome_undo_bring_back(const struct shim_backend_ops *to,
                                 struct pass *ps);
void shim_rehome_streamed_forget(struct pass *ps);

/* rehome_fallback.c: after a bring_back failed with the old side gone
 * (RC its error), the program onto the proxy where one answers (0), else
 * onto the dead side (-ENODEV); leaving the dead side for a rebuild. */
int shim_rehome_fallback(const struct shim_backend_ops *to, struct pass *ps,
                         struct shim_rehome_times *t, int rc);
int shim_rehome_dead_leave(void);

/* rehome_linger.c: the old side's objects set aside (collect), dropped
 * (forget), waited for (join), released in the background (start), given
 * back (stay_on); twins taken for the rebuild or all dropped. */
int shim_rehome_bg_collect(const struct shim_backend_ops *from);
void shim_rehome_bg_forget(void);
void shim_rehome_bg_join(void);
void shim_rehome_bg_start(void);
void shim_rehome_stay_on(const struct shim_backend_ops *from,
                         const struct shim_backend_ops *to, struct pass *ps);
void *shim_twin_take(struct shim_obj *o);
void shim_twins_drop(void);

/* rehome_report.c: a line appended to CRANE_REPORT_FILE; the bulk time
 * between two snapshots; the report of a switch. */
void shim_rehome_report_line(const char *line);
void shim_rehome_bulk_since(struct shim_bulk *out, const struct shim_bulk *a,
                            const struct shim_bulk *b);
void shim_rehome_report(const struct shim_rehome_times *t, int rc,
                        const char *from, const char *to);

#endif /* SHIM_REHOME_INT_H */
