/* Answers to the host: status (with fresh sizes from the programs) and acks. */
#ifndef GD_STATUS_H
#define GD_STATUS_H

#include "guestd.h"

struct gd_op;

/* Host command `status`: asks every idle program for its current size and
 * mode (at most 500 ms), then answers. */
void gd_status_request(struct gd_daemon *d, struct gd_peer *peer,
                       uint64_t id, const Crane__Control__StatusRequest *r);
/* P answered its query (or went away with one pending). */
void gd_status_on_answer(struct gd_daemon *d, struct gd_program *p);
void gd_status_forget_peer(struct gd_daemon *d, struct gd_peer *peer);
void gd_status_init(struct gd_daemon *d);
void gd_status_close(struct gd_daemon *d);

/* Sends PEER an Ack for OP with ERR and WHY: the phase, every program,
 * and, with O, the operation's steps and the programs that exited during
 * it (SECONDS: how long it took). */
void gd_ack_send_op(struct gd_daemon *d, struct gd_peer *peer, uint64_t id,
                    Crane__Control__Op op, int err, const char *why,
                    const struct gd_op *o, double seconds);
/* An Ack refusing a command: ERR and a formatted reason. */
void gd_reply_error(struct gd_daemon *d, struct gd_peer *peer, uint64_t id,
                    Crane__Control__Op op, int err, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

#endif /* GD_STATUS_H */
