/* The GPU driver: its modules out and in, and waiting for a usable GPU.
 *
 * "Usable" is observed, never assumed after a fixed sleep: the device
 * nodes exist and the vendor library, loaded in a child process so the
 * daemon itself never holds the device open (which would keep the module
 * from unloading), enumerates at least one device.
 */
#include "driver.h"

#include "gpu_nodes.h"
#include "guestd.h"
#include "proto/log.h"
#include "spawn.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* --- modules ------------------------------------------------------------- */

static void modprobe_next(struct gd_daemon *d);

static void driver_end(struct gd_daemon *d, int err, const char *why)
{
    gd_driver_done_fn done = d->drv->done;

    d->drv->done = NULL;
    done(d, err, err ? why : NULL);
}

static void step(struct gd_daemon *d, const char *name, int err,
                 const char *error, double seconds)
{
    d->drv->report->step(d, name, err, error, seconds);
}

static void modprobe_done(void *arg, int status, const char *output)
{
    struct gd_daemon *d = arg;
    struct gd_driver_run *o = d->drv;
    const char *mod = d->cfg.modules[o->i];
    char name[96], why[300];
    int err = 0;

    if (d->stopping)
        return;
    snprintf(name, sizeof(name), "modprobe %s%s", o->unload ? "-r " : "",
             mod);
    if (status != 0) {
        /* modprobe says why on stderr; a module in use is the usual. */
        err = status < 0 ? status : -EBUSY;
        if (status > 0)
            snprintf(why, sizeof(why), "exit %d%s%s", status,
                     *output ? ": " : "", output);
        else
            snprintf(why, sizeof(why), "%s", strerror(-status));
    }
    step(d, name, err, err ? why : NULL, gd_now() - o->t0);
    if (err) {
        char fail[420];
        snprintf(fail, sizeof(fail), "%s failed: %s", name, why);
        driver_end(d, err, fail);
        return;
    }
    o->left--;
    if (o->unload) {
        d->modules_unloaded = o->i + 1;
        o->i++;
    } else {
        if (o->left == 0)
            d->modules_unloaded = 0;
        o->i--;
    }
    gd_save_state(d);
    modprobe_next(d);
}

static void modprobe_next(struct gd_daemon *d)
{
    struct gd_driver_run *o = d->drv;
    char *argv[4];
    int rc;

    /* An abort that arrived during the unloading stops it between
     * modules; the way back loads what went. */
    if (o->left == 0 ||
        (o->unload && o->report->cancelled && o->report->cancelled(d))) {
        if (!o->unload)
            d->modules_unloaded = 0;
        driver_end(d, 0, NULL);
        return;
    }
    argv[0] = d->cfg.modprobe;
    argv[1] = o->unload ? (char *)"-r" : d->cfg.modules[o->i];
    argv[2] = o->unload ? d->cfg.modules[o->i] : NULL;
    argv[3] = NULL;
    o->t0 = gd_now();
    rc = gd_child_run(d->loop, argv, d->cfg.modprobe_timeout_ms,
                      modprobe_done, d);
    if (rc < 0) {
        char why[300];
        snprintf(why, sizeof(why), "cannot run %s: %s", argv[0],
                 strerror(-rc));
        step(d, "modprobe", rc, why, 0);
        driver_end(d, rc, why);
    }
}

/* The driver's run begins: REPORT told each step, DONE called at its end. */
static struct gd_driver_run *run_begin(struct gd_daemon *d,
                                       const struct gd_driver_report *report,
                                       gd_driver_done_fn done)
{
    struct gd_driver_run *o = d->drv;

    o->report = report;
    o->done = done;
    return o;
}

void gd_driver_unload(struct gd_daemon *d,
                      const struct gd_driver_report *report,
                      gd_driver_done_fn done)
{
    struct gd_driver_run *o = run_begin(d, report, done);

    o->unload = true;
    o->i = d->modules_unloaded;
    o->left = d->cfg.n_modules - d->modules_unloaded;
    modprobe_next(d);
}

void gd_driver_load(struct gd_daemon *d, const struct gd_driver_report *report,
                    gd_driver_done_fn done)
{
    struct gd_driver_run *o = run_begin(d, report, done);

    o->unload = false;
    o->left = d->cfg.n_modules;
    o->i = d->cfg.n_modules ? d->cfg.n_modules - 1 : 0;
    modprobe_next(d);
}

/* --- waiting for the GPU ------------------------------------------------- */

static void poll_gpu(struct gd_daemon *d);

static void gpu_end(struct gd_daemon *d, int err)
{
    struct gd_driver_run *o = d->drv;
    char why[300];
    double waited = gd_now() - o->t0;

    if (err) {
        snprintf(why, sizeof(why), "GPU not usable after %.1f s: %s", waited,
                 o->probe_why);
        step(d, "wait for the GPU", err, why, waited);
    } else {
        if (o->probes == 0)
            snprintf(why, sizeof(why), "wait for the GPU (device nodes)");
        else
            snprintf(why, sizeof(why), "wait for the GPU (%u probe%s)",
                     o->probes, o->probes == 1 ? "" : "s");
        step(d, why, 0, NULL, waited);
    }
    driver_end(d, err, why);
}

static void on_poll_timer(uv_timer_t *t);

static void retry_or_fail(struct gd_daemon *d)
{
    struct gd_driver_run *o = d->drv;

    if ((gd_now() - o->t0) * 1e3 >= d->cfg.gpu_wait_ms) {
        gpu_end(d, -ETIMEDOUT);
        return;
    }
    uv_timer_start(&d->drv_timer, on_poll_timer, d->cfg.gpu_poll_ms, 0);
}

static void probe_done(void *arg, int status, const char *output)
{
    struct gd_daemon *d = arg;
    struct gd_driver_run *o = d->drv;

    if (d->stopping)
        return;
    o->probes++;
    if (status == 0) {
        gpu_end(d, 0);
        return;
    }
    if (status == -ETIMEDOUT)
        snprintf(o->probe_why, sizeof(o->probe_why),
                 "the vendor library hung enumerating devices");
    else
        snprintf(o->probe_why, sizeof(o->probe_why), "%s",
                 *output ? output : "the vendor library found no device");
    retry_or_fail(d);
}

static void poll_gpu(struct gd_daemon *d)
{
    struct gd_driver_run *o;
    char *argv[10], gpus[16];
    int rc;

    o = d->drv;
    if (d->stopping || !o->done)
        return;
    if (gd_gpu_nodes_ready(&d->cfg, o->probe_why, sizeof(o->probe_why)) < 0) {
        retry_or_fail(d);
        return;
    }
    /* No OpenCL in the guest (gpu_type = none): the nodes are the test
     * (a gpu_device pattern counts one node per GPU). */
    if (strcmp(d->cfg.gpu_type, "none") == 0) {
        gpu_end(d, 0);
        return;
    }
    argv[0] = d->self_exe;
    argv[1] = (char *)"--probe-gpu";
    argv[2] = d->cfg.vendor_lib;
    argv[3] = (char *)"--gpu-type";
    argv[4] = d->cfg.gpu_type;
    argv[5] = (char *)"--vendors-dir";
    argv[6] = d->cfg.vendors_dir;
    snprintf(gpus, sizeof(gpus), "%u", d->cfg.gpus);
    argv[7] = (char *)"--gpus";
    argv[8] = gpus;
    argv[9] = NULL;
    rc = gd_child_run(d->loop, argv, d->cfg.probe_timeout_ms, probe_done, d);
    if (rc < 0) {
        snprintf(o->probe_why, sizeof(o->probe_why),
                 "cannot run the probe: %s", strerror(-rc));
        retry_or_fail(d);
    }
}

static void on_poll_timer(uv_timer_t *t)
{
    poll_gpu(t->data);
}

void gd_driver_wait_gpu(struct gd_daemon *d,
                        const struct gd_driver_report *report,
                        gd_driver_done_fn done)
{
    struct gd_driver_run *o = run_begin(d, report, done);

    o->t0 = gd_now();
    o->probes = 0;
    o->probe_why[0] = '\0';
    poll_gpu(d);
}
