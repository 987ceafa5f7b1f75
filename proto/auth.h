/* Shared keys: HMAC-SHA256 and random bytes from GnuTLS, key files. */
#ifndef CRANE_PROTO_AUTH_H
#define CRANE_PROTO_AUTH_H

#include <stddef.h>
#include <stdint.h>

/* Bytes of a SHA-256 digest, and so of an HMAC-SHA256 value. */
#define CRN_SHA256_LEN 32

/* The largest key file crn_auth_key_load() accepts. */
#define CRN_AUTH_KEY_MAX 4096

/*
 * Computes HMAC-SHA256 (GnuTLS's gnutls_hmac_fast) of the MSG_LEN bytes at
 * MSG with the KEY_LEN bytes at KEY into OUT.  Returns 0, -EINVAL for a
 * NULL pointer with a non-zero length or a NULL OUT, -EIO if GnuTLS fails.
 * The TCP links need none of this since they speak TLS (proto/tls.h); the
 * guest channel's challenge still does.
 */
int crn_hmac_sha256(const void *key, size_t key_len, const void *msg,
                    size_t msg_len, uint8_t out[32]);

/* 1 when the LEN bytes at A and B are equal, else 0, in a time that does
 * not depend on where they differ (for secrets and MACs). */
int crn_auth_equal(const void *a, const void *b, size_t len);

/* Fills the LEN bytes at BUF from GnuTLS's generator (gnutls_rnd).
 * Returns 0 or a negative errno. */
int crn_random_bytes(void *buf, size_t len);

/*
 * Reads the shared key file PATH whole: its bytes, unchanged (a trailing
 * newline is part of the key), are the key.  On success *KEY is a malloc()ed
 * copy the caller frees and *LEN its length.  Returns -EINVAL for an empty
 * file or a NULL argument, -EFBIG for a file over CRN_AUTH_KEY_MAX bytes,
 * or the errno of the failed open or read.
 */
int crn_auth_key_load(const char *path, uint8_t **key, size_t *len);

#endif /* CRANE_PROTO_AUTH_H */
