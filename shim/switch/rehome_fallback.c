/* A re-home that lost its old side (a re-home on the vendor released
 * everything and unloaded it) and whose new side did not come up: the
 * program goes on remoted where a proxy answers, else onto the dead side
 * (dead.c), where every call answers an OpenCL error; and the way back
 * from there, from the state in RAM. */
#include <errno.h>

#include "rehome_int.h"

/* Every shadow on the dead side's handle: a call reaches an error, never
 * a freed vendor table.  Retired events keep no handle (event.c). */
static void go_dead(void)
{
    for (struct shim_obj *o = shim_store_first(); o; o = o->next) {
        if (o->kind == SHIM_EVENT && ((struct shim_event *)o)->retired)
            continue;
        o->real = shim_dead_handle;
    }
    shim.backend = shim_backend_for(SHIM_SIDE_NONE);
}

int shim_rehome_fallback(const struct shim_backend_ops *to, struct pass *ps,
                         struct shim_rehome_times *t, int rc)
{
    /* What the failed bring_back made on TO goes, and TO with it. */
    shim_rehome_undo_bring_back(to, ps);
    if (!shim_is_proxy(to) && shim_config.remote) {
        CRN_WARN("re-home: %s did not come back (%d); bringing the program "
                 "up on the proxy %s from its state in RAM",
                 to->name, rc, shim_config.remote);
        int prc = shim_rehome_bring_back(shim_proxy_backend(), ps, t);
        if (prc == 0) {
            CRN_WARN("re-home: the program goes on remoted (a later "
                     "re-home may bring it back to %s)",
                     to->name);
            shim_rehome_note_add("; the program goes on remoted on the "
                                 "proxy");
            return 0;
        }
        shim_rehome_undo_bring_back(shim_proxy_backend(), ps);
    }
    go_dead();
    CRN_ERROR("re-home: %s did not come back (%d)%s; every OpenCL call "
              "answers CL_DEVICE_NOT_AVAILABLE until a re-home brings the "
              "program back from its state in RAM",
              to->name, rc,
              shim_config.remote ? " and neither did the proxy"
                                 : " and no proxy is set (CRANE_PROXY)");
    shim_rehome_note_add("; every OpenCL call fails (CL_DEVICE_NOT_AVAILABLE)"
                         " until a re-home works");
    return -ENODEV;
}

/* Off the dead side: no real handle to release, every byte in RAM; the
 * rebuild makes every object anew. */
int shim_rehome_dead_leave(void)
{
    for (struct shim_obj *o = shim_store_first(); o; o = o->next)
        if (o->real == shim_dead_handle)
            o->real = NULL;
    CRN_INFO("re-home: bringing the program back from its state in RAM");
    return 0;
}
