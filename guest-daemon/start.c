/* Programs that start during a migration: where their first call goes.
 *
 * A shim registers with `starting` before its program's first OpenCL call
 * and waits for a Start.  In a VM the GPU is gone from the moment a
 * prepare unloads its driver until a resume loads it again, so a program
 * that starts in between cannot use it: during a live migration it goes
 * to the migration's proxy from its first call, as the others did, and
 * comes back with them (it is registered, so the resume's fan-out takes
 * it); during an offline one it waits, held, until the phase is idle
 * again.  A held program takes part in no fan-out and holds no GPU node. */
#include "start.h"

#include "proto/log.h"
#include "op.h"
#include "programs.h"

static void send_start(struct gd_program *p, Crane__Control__Phase phase,
                       bool wait)
{
    struct gd_daemon *d = p->d;
    Crane__Control__Start s = CRANE__CONTROL__START__INIT;
    bool live = phase != GD_PHASE(IDLE) && d->mode == GD_MIG(LIVE);

    s.phase = phase;
    s.mode = d->mode;
    s.wait = wait;
    s.proxy = (char *)"";
    if (live) {
        s.proxy = d->proxy;
        s.auth_key.data = d->proxy_key;
        s.auth_key.len = d->proxy_key_len;
    }
    if (gd_program_start(p, &s) < 0)
        return;
    /* What it says after its start (an unasked size refresh) is the
     * truth; until then, where it was sent. */
    p->mode = wait ? GD_PMODE(UNKNOWN)
              : live ? GD_PMODE(REMOTING)
                     : GD_PMODE(PASSTHROUGH);
    if (live)
        CRN_INFO("%s: started during the %s migration: to the proxy %s "
                "from its first call",
                p->conn.name, gd_phase_name(phase), d->proxy);
    else if (wait)
        CRN_INFO("%s: started while the GPU is away for an offline "
                "migration (%s): waits for it",
                p->conn.name, gd_phase_name(phase));
}

void gd_start_answer(struct gd_daemon *d, struct gd_program *p)
{
    /* A prepare sets PREPARING before its fan-out; the way back sets IDLE
     * only once every program was sent back: the phase says whether the
     * GPU may be away. */
    const struct gd_op *o = d->op;

    if (!p->starting)
        return;
    /* On the way back with the GPU usable (its fan-out running) too. */
    if (d->phase == GD_PHASE(IDLE) || d->phase == GD_PHASE(UNKNOWN) ||
        (o && o->fanning &&
         (o->fan_op == GD_OP(RESUME) || o->fan_op == GD_OP(ABORT))))
        send_start(p, GD_PHASE(IDLE), false);
    else
        send_start(p, d->phase, d->mode != GD_MIG(LIVE));
}

void gd_start_release_held(struct gd_daemon *d)
{
    for (struct gd_program *p = d->programs; p; p = p->next) {
        if (!p->held || p->conn.closing)
            continue;
        CRN_INFO("%s: the GPU is back: starts on it", p->conn.name);
        send_start(p, GD_PHASE(IDLE), false);
    }
}
