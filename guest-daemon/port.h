/* The host channel on a virtio-serial port: one fd kept, host may be away. */
#ifndef GD_PORT_H
#define GD_PORT_H

#include "guestd.h"

struct gd_port;

/* A whole frame arrived from the host; MSG NULL: one over the limit was
 * announced (and dropped). */
typedef void (*gd_port_frame_fn)(void *arg, struct gd_peer *peer,
                                 const uint8_t *msg, size_t len);

/*
 * Opens the character device PATH (a virtio-serial port such as
 * /dev/virtio-ports/org.crane.guest.0; a tty is put in raw mode) and
 * serves frames from it.  The port is opened once and kept: end of file
 * or EIO means the host side is not connected, which is normal (no host
 * daemon yet, or the VM is migrating); the port is polled again every
 * 250 ms.  A port that does not exist yet is retried every second.
 * Returns 0 or -ENOMEM.
 */
int gd_port_open(uv_loop_t *loop, const char *path, gd_port_frame_fn fn,
                 void *arg, struct gd_port **out);
/* Closes the port; P is freed once libuv is done with it. */
void gd_port_close(struct gd_port *p);

#endif /* GD_PORT_H */
