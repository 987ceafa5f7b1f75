/* The shim's start: the program's first OpenCL call (or crane_rehome)
 * loads the backend, makes the shadows of its platforms and devices and
 * starts the control thread.  The top of the shim's layers: here the
 * files below are handed what they call above themselves (the store the
 * twins' release, the gate's test hook the switch). */
#include "config.h"
#include "control.h"
#include "exit_hold.h"
#include "proto/log.h"
#include "shim.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

static void init_once(void)
{
    int fd = -1;

    crn_log_init_env("crane-shim");
    shim_config_load();
    shim_store_set_twin_release(shim_twin_release);
    /* Not told to remote: crane-guestd says where the first call goes (the
     * proxy while the VM is prepared for a live migration). */
    shim.backend = shim_config.start_remote ? shim_proxy_backend()
                                            : shim_control_begin(&fd);
    shim.init_err = shim.backend->load();
    if (shim.init_err && !shim_config.start_remote &&
        shim_is_proxy(shim.backend)) {
        CRN_WARN("control: the proxy %s refused the program's start (%d): "
                 "starting on the GPU",
                 shim_config.remote, shim.init_err);
        shim.backend = shim_vendor_backend();
        shim.init_err = shim.backend->load();
    }
    if (shim.init_err == 0)
        shim.init_err = shim_platforms_bind();
    if (shim.init_err == 0 && shim_config.rehome_every) {
        CRN_INFO("test hook: re-home before every %lu-th OpenCL call",
                 shim_config.rehome_every);
        shim_test_hook_arm(shim_config.rehome_every, shim_rehome);
    }
    if (shim.init_err != 0) {
        if (fd >= 0)
            close(fd);
        return;
    }
    /* The control thread takes FD (and closes it if it cannot start). */
    if (shim_control_start(fd) == 0 && shim_config.control_socket)
        shim_exit_hold_enable();
}

int shim_init(void)
{
    pthread_once(&shim.once, init_once);
    return shim.init_err;
}

/* The documented test hook: a program (or a debugger) may call this to
 * re-home at a moment of its choosing, before its first OpenCL call too.
 * Returns 0 or a negative errno. */
SHIM_EXPORT int crane_rehome(void)
{
    struct shim_rehome_times t;

    shim_init();  /* a failed start: the switch answers -ENODEV */
    return shim_rehome(&t);
}
