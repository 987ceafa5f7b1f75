/* crane-guestd's host side: host channel, cranectl socket, command table. */
#ifndef GD_HOST_H
#define GD_HOST_H

#include "guestd.h"

/*
 * Opens the host channel (cfg.host: a virtio-serial port path, or
 * unix:/tcp: to listen on) and cranectl's endpoint (cfg.control).  Both
 * carry HostMessage frames, answered with GuestMessage frames.  Returns 0
 * or a negative errno with WHY set.
 */
int gd_host_start(struct gd_daemon *d, char *why, size_t why_len);
void gd_host_stop(struct gd_daemon *d);

/* Handles one frame from PEER: decodes it, dispatches the command from
 * the table, or answers why not.  Never fails: bad input gets an Ack with
 * an error and the daemon serves on. */
void gd_host_frame(struct gd_daemon *d, struct gd_peer *peer,
                   const uint8_t *msg, size_t len);

#endif /* GD_HOST_H */
