/* The host end of a guest's channel: commands to crane-guestd, its answers. */
#ifndef HD_GUEST_H
#define HD_GUEST_H

#include "proto/control.pb-c.h"

#include <stdbool.h>
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
 * Each connects to the channel PATH (the unix socket of the virtio-serial
 * port; or tcp:HOST:PORT, authenticated with the key), sends one command and
 * waits for its answer: the command's own deadline plus a margin for the
 * guest daemon to answer.  0 with *R filled when the guest daemon answered
 * (look at R->ack->err for its result); -ETIMEDOUT, -ECONNREFUSED, ... when
 * it did not (logged, with WHY).  MODE: CRANE__CONTROL__MIGRATION_MODE__*.
 * Prepare's KEY (KEY_LEN bytes, or NULL) is the proxy's key, passed on to
 * the programs so that they can authenticate to it.  With WATCH (or NULL)
 * it asks crane-guestd for its progress on the prepare's own connection
 * (the only one a virtio-serial port takes at a time): WATCH->fn(arg, p)
 * for each OpProgress before the answer, on the caller's thread.  Each one
 * shows the guest alive: past the deadline the wait goes on while they
 * keep coming (at most 10 s apart, an hour in all).  A guest daemon that
 * sends none is waited for as without WATCH.
 */
typedef void hd_guest_progress_fn(void *arg,
                                  const Crane__Control__OpProgress *p);
struct hd_guest_watch {
    hd_guest_progress_fn *fn;
    void *arg;
};
int hd_guest_prepare(const char *path, int mode, const char *proxy,
                     const uint8_t *key, size_t key_len, uint32_t deadline_ms,
                     const struct hd_guest_watch *watch,
                     struct hd_guest_reply *r);
int hd_guest_resume(const char *path, uint32_t deadline_ms,
                    struct hd_guest_reply *r);
int hd_guest_abort(const char *path, uint32_t deadline_ms,
                   struct hd_guest_reply *r);
int hd_guest_status(const char *path, uint32_t timeout_ms,
                    struct hd_guest_reply *r);
/* A shared area of SIZE bytes plugged in for the remoting programs (its
 * only ivshmem-plain device of that size), or with RELEASE its end. */
int hd_guest_shm(const char *path, bool release, uint64_t size,
                 uint32_t deadline_ms, struct hd_guest_reply *r);
void hd_guest_reply_free(struct hd_guest_reply *r);

#endif /* HD_GUEST_H */
