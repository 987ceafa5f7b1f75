/* Programs that start during a migration: where their first call goes. */
#ifndef GD_START_H
#define GD_START_H

#include "guestd.h"

/* P registered with `starting`: sends its Start (docs/guest.md,
 * "Programs that start during a migration").  Idle: the GPU.  A live
 * migration under way or done: the proxy (P is then remoting, and the
 * next resume brings it back with the others).  An offline one: P waits,
 * held, for gd_start_release_held. */
void gd_start_answer(struct gd_daemon *d, struct gd_program *p);

/* The phase is idle again (the GPU back): every held program starts. */
void gd_start_release_held(struct gd_daemon *d);

#endif /* GD_START_H */
