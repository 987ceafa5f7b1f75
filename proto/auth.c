/* HMAC-SHA256 and random bytes (GnuTLS), key files, constant-time compare. */
#include "proto/auth.h"

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int crn_hmac_sha256(const void *key, size_t key_len, const void *msg,
                    size_t msg_len, uint8_t out[CRN_SHA256_LEN])
{
    if ((!key && key_len) || (!msg && msg_len) || !out)
        return -EINVAL;
    /* GnuTLS wants non-NULL pointers even for empty inputs. */
    return gnutls_hmac_fast(GNUTLS_MAC_SHA256, key ? key : "", key_len,
                            msg ? msg : "", msg_len, out) < 0
               ? -EIO
               : 0;
}

int crn_random_bytes(void *buf, size_t len)
{
    if (!buf && len)
        return -EINVAL;
    if (len == 0)
        return 0;
    /* GNUTLS_RND_NONCE: nonces and tokens, public values that must never
     * repeat or be guessed. */
    return gnutls_rnd(GNUTLS_RND_NONCE, buf, len) < 0 ? -EIO : 0;
}

int crn_auth_key_load(const char *path, uint8_t **key, size_t *len)
{
    uint8_t *buf;
    size_t have = 0;
    int fd, err = 0;

    if (!path || !key || !len)
        return -EINVAL;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    /* One byte more than allowed, to tell "at the limit" from "over". */
    buf = malloc(CRN_AUTH_KEY_MAX + 1);
    if (!buf) {
        close(fd);
        return -ENOMEM;
    }
    while (have <= CRN_AUTH_KEY_MAX) {
        ssize_t n = read(fd, buf + have, CRN_AUTH_KEY_MAX + 1 - have);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            err = -errno;
            goto fail;
        }
        if (n == 0)
            break;
        have += (size_t)n;
    }
    if (have == 0) {
        err = -EINVAL;
        goto fail;
    }
    if (have > CRN_AUTH_KEY_MAX) {
        err = -EFBIG;
        goto fail;
    }
    close(fd);
    *key = buf;
    *len = have;
    return 0;
fail:
    explicit_bzero(buf, CRN_AUTH_KEY_MAX + 1);
    free(buf);
    close(fd);
    return err;
}

int crn_auth_equal(const void *a, const void *b, size_t len)
{
    const uint8_t *x = a, *y = b;
    uint8_t diff = 0;

    for (size_t i = 0; i < len; i++)
        diff |= x[i] ^ y[i];
    return diff == 0;
}
