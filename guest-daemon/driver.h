/* The GPU driver: its modules out and in, and waiting for a usable GPU. */
#ifndef GD_DRIVER_H
#define GD_DRIVER_H

#include "guestd.h"

typedef void (*gd_driver_done_fn)(struct gd_daemon *d, int err);

/*
 * Each runs as steps of the operation in flight (d->op) and calls DONE
 * with 0 or the negative errno of the first failure (recorded with
 * gd_op_fail):
 *   unload    `MODPROBE -r M` for each configured module in order; stops at
 *             the first that will not go (d->modules_unloaded counts those
 *             that went);
 *   load      `MODPROBE M` for each, in reverse order;
 *   wait_gpu  polls until every configured device node exists and a probe
 *             child (crane-guestd --probe-gpu) finds a device through the
 *             vendor library, or gpu_wait_ms passes.
 */
void gd_driver_unload(struct gd_daemon *d, gd_driver_done_fn done);
void gd_driver_load(struct gd_daemon *d, gd_driver_done_fn done);
void gd_driver_wait_gpu(struct gd_daemon *d, gd_driver_done_fn done);

/* The probe child's work: loads LIB (or, if empty, every library named by
 * DIR's .icd files) and counts devices of TYPE.  Returns the exit status:
 * 0 with at least one device, 1 otherwise (why on stderr). */
int gd_probe_gpu(const char *lib, const char *type, const char *dir);

#endif /* GD_DRIVER_H */
