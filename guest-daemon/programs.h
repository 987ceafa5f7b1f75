/* crane-guestd's shim side: socket, registrations, commands, acks. */
#ifndef GD_PROGRAMS_H
#define GD_PROGRAMS_H

#include "guestd.h"

/* Listens on cfg.listen; what programs do is told to EVENTS (kept; every
 * member set).  Returns 0 or a negative errno with WHY set. */
int gd_programs_listen(struct gd_daemon *d,
                       const struct gd_program_events *events, char *why,
                       size_t why_len);
/* Stops listening and closes every program's connection. */
void gd_programs_close(struct gd_daemon *d);

/* Sends M (its msg set, its id filled here) to P as P's migration command
 * OP.  Returns 0 or a negative errno (P is then being closed). */
int gd_program_command(struct gd_program *p, Crane__Control__Op op,
                       Crane__Control__DaemonMessage *m);
/* Answers P's Register with `starting`: where its first OpenCL call goes
 * (S->wait: it waits for another Start, P is held meanwhile). */
int gd_program_start(struct gd_program *p, Crane__Control__Start *s);
/* Asks P for its mode and state size (a status refresh). */
int gd_program_query(struct gd_program *p);

/* Fills R (and T, which R points at) from P. */
void gd_program_report(const struct gd_program *p,
                       Crane__Control__ProgramReport *r,
                       Crane__Control__StepTimes *t);

size_t gd_programs_count(const struct gd_daemon *d);

#endif /* GD_PROGRAMS_H */
