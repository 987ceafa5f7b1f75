/* The host end of a guest's channel: commands to crane-guestd, its answers. */
#ifndef HD_GUEST_H
#define HD_GUEST_H

#include "proto/control.pb-c.h"

#include <stddef.h>
#include <stdint.h>

/* An answer: MSG owns ACK; free with hd_guest_reply_free. */
struct hd_guest_reply {
    Crane__Control__GuestMessage *msg;
    const Crane__Control__Ack *ack;
};

/*
 * The key of guest channels reached over TCP (crane-hostd's guest_key,
 * crane-guestd's host_key): kept for the life of the process, set once at
 * start-up before any call.
 */
void hd_guest_set_key(uint8_t *key, size_t len);
/* TLS for tcp: channels (crane-guestd's host_tls), NULL: none; kept and
 * set like the key. */
struct crn_tls_config;
void hd_guest_set_tls(struct crn_tls_config *tls);

/*
 * Sends one command to crane-guestd and waits for its answer: OP is a row
 * of proto/control_ops.def that the host sends (HOST), CMD its message, of
 * the type of HostMessage's field named as the row (a Crane__Control__Shm
 * for OP_SHM, ...); -EINVAL (logged) for a row the host does not send or a
 * message of another type.  It connects to the channel PATH (the unix
 * socket of the virtio-serial port; or tcp:HOST:PORT, authenticated with
 * the key).  WAIT_MS: a command whose message has a deadline_ms (the guest
 * daemon's own bound) gets it there and is waited for that plus a margin
 * for the guest daemon to answer; one without (status) is waited for
 * WAIT_MS.  0 with *R filled when the guest daemon answered (look at
 * R->ack->err for its result); -ETIMEDOUT, -ECONNREFUSED, ... when it did
 * not (logged, with why).  With WATCH (or NULL, or a NULL fn), for a
 * command that asked for progress (Prepare's `progress`), the progress
 * crane-guestd sends on the command's own connection (the only one a
 * virtio-serial port takes at a time): WATCH->fn(arg, p) for each
 * OpProgress before the answer, on the caller's thread.  Each one shows
 * the guest alive: past the deadline the wait goes on while they keep
 * coming (at most 10 s apart, an hour in all).
 */
typedef void hd_guest_progress_fn(void *arg,
                                  const Crane__Control__OpProgress *p);
struct hd_guest_watch {
    hd_guest_progress_fn *fn;
    void *arg;
};
int hd_guest_send(const char *path, Crane__Control__Op op,
                  ProtobufCMessage *cmd, uint32_t wait_ms,
                  const struct hd_guest_watch *watch,
                  struct hd_guest_reply *r);
void hd_guest_reply_free(struct hd_guest_reply *r);

#endif /* HD_GUEST_H */
