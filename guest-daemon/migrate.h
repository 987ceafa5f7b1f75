/* Prepare, resume and abort: the phases of a migration across every program. */
#ifndef GD_MIGRATE_H
#define GD_MIGRATE_H

#include "guestd.h"
#include "op.h"

/* Host commands.  Each answers PEER (id ID) now or when it ends. */
void gd_migrate_prepare(struct gd_daemon *d, struct gd_peer *peer,
                        uint64_t id, const Crane__Control__Prepare *p);
void gd_migrate_resume(struct gd_daemon *d, struct gd_peer *peer,
                       uint64_t id, const Crane__Control__Resume *r);
void gd_migrate_abort(struct gd_daemon *d, struct gd_peer *peer, uint64_t id,
                      const Crane__Control__Abort *a);
/* A shared area for the remoting programs, or its release (Shm). */
void gd_migrate_shm(struct gd_daemon *d, struct gd_peer *peer, uint64_t id,
                    const Crane__Control__Shm *s);

/* Events from the programs' side. */
void gd_migrate_on_registered(struct gd_daemon *d, struct gd_program *p);
void gd_migrate_on_ack(struct gd_daemon *d, struct gd_program *p);
void gd_migrate_on_gone(struct gd_daemon *d, struct gd_program *p);

/* A peer went away: nothing is sent to it any more. */
void gd_migrate_forget_peer(struct gd_daemon *d, struct gd_peer *peer);

/* After a restart: OP (RESUME or ABORT) is carried out once the programs
 * named in the state file are back, or the grace period ended. */
void gd_migrate_recover(struct gd_daemon *d);

#endif /* GD_MIGRATE_H */
