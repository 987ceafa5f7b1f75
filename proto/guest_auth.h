/* The guest daemon's host channel handshake: the proofs, and the client side. */
#ifndef CRANE_PROTO_GUEST_AUTH_H
#define CRANE_PROTO_GUEST_AUTH_H

#include <stddef.h>
#include <stdint.h>

/* Bytes of each side's nonce. */
#define CRN_GUEST_NONCE_LEN 32

enum crn_guest_side { CRN_GUEST_SERVER, CRN_GUEST_CLIENT };

/*
 * The proof that SIDE holds the key (control.proto, Hello/Challenge/Auth):
 * HMAC-SHA256(KEY, "crane-guestd server" || NONCE) for the guest daemon,
 * "crane-guestd client" for the host side, NONCE being the other side's.
 * Returns 0, or -EINVAL for a nonce that is not CRN_GUEST_NONCE_LEN bytes.
 */
int crn_guest_proof(const uint8_t *key, size_t key_len,
                    enum crn_guest_side side, const uint8_t *nonce,
                    size_t nonce_len, uint8_t out[32]);

/*
 * Authenticates the blocking socket FD to crane-guestd with the shared KEY:
 * sends Hello, checks the daemon's proof, sends its own, and waits for the
 * daemon's acceptance, all within TIMEOUT_MS.  Returns 0, or a negative
 * errno with one line in WHY: -EACCES when either side lacks the key,
 * -ETIMEDOUT, -EPROTO for an unexpected answer, or the socket's error.
 */
int crn_guest_auth_client(int fd, const uint8_t *key, size_t key_len,
                          unsigned timeout_ms, char *why, size_t why_len);

#endif /* CRANE_PROTO_GUEST_AUTH_H */
