/* The GPU driver: its modules out and in, and waiting for a usable GPU. */
#ifndef GD_DRIVER_H
#define GD_DRIVER_H

#include <stdbool.h>
#include <stddef.h>

struct gd_daemon;

/*
 * What the driver tells the operation that runs it (migrate.c), passed
 * down so that the driver never calls back up into it:
 *   step       each step as it ends: ERR 0 or -errno, ERROR why it failed;
 *   cancelled  asked between modules of an unload: stop there (an abort
 *              arrived); NULL: never.
 */
struct gd_driver_report {
    void (*step)(struct gd_daemon *d, const char *name, int err,
                 const char *error, double seconds);
    bool (*cancelled)(struct gd_daemon *d);
};

/* Called once when a run ends: ERR 0 or the first failure's -errno, WHY
 * that failure in words (NULL on success). */
typedef void (*gd_driver_done_fn)(struct gd_daemon *d, int err,
                                  const char *why);

/* The run in progress (one at a time, kept in the daemon): the module at
 * `i` is being unloaded or loaded; `left` counts those still to run. */
struct gd_driver_run {
    const struct gd_driver_report *report;
    gd_driver_done_fn done;      /* NULL: no run in progress */
    bool unload;
    size_t i, left;
    double t0;
    unsigned probes;
    char probe_why[200];
};

/*
 * Each reports its steps through REPORT and calls DONE once:
 *   unload    `MODPROBE -r M` for each configured module in order; stops at
 *             the first that will not go (d->modules_unloaded counts those
 *             that went);
 *   load      `MODPROBE M` for each, in reverse order;
 *   wait_gpu  polls until every configured device node exists and a probe
 *             child (crane-guestd --probe-gpu) finds a device through the
 *             vendor library, or gpu_wait_ms passes.
 */
void gd_driver_unload(struct gd_daemon *d,
                      const struct gd_driver_report *report,
                      gd_driver_done_fn done);
void gd_driver_load(struct gd_daemon *d, const struct gd_driver_report *report,
                    gd_driver_done_fn done);
void gd_driver_wait_gpu(struct gd_daemon *d,
                        const struct gd_driver_report *report,
                        gd_driver_done_fn done);

/* The probe child's work: loads LIB (or, if empty, every library named by
 * DIR's .icd files) and counts devices of TYPE.  Returns the exit status:
 * 0 with at least one device, 1 otherwise (why on stderr). */
int gd_probe_gpu(const char *lib, const char *type, const char *dir,
                 long want);

#endif /* GD_DRIVER_H */
