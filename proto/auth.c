/* SHA-256 (FIPS 180-4), HMAC-SHA256 (RFC 2104), random bytes and key files. */
#include "proto/auth.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#define SHA256_BLOCK 64

struct sha256 {
    uint32_t h[8];
    uint8_t block[SHA256_BLOCK];
    size_t fill;            /* bytes in block */
    uint64_t total;         /* bytes hashed so far */
};

/* FIPS 180-4 section 4.2.2: the first 32 bits of the fractional parts of
 * the cube roots of the first 64 primes. */
static const uint32_t k256[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
    0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
    0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
    0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
    0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t ror(uint32_t x, unsigned n)
{
    return x >> n | x << (32 - n);
}

/* Processes one 64-byte block (FIPS 180-4 section 6.2.2). */
static void sha256_block(struct sha256 *s, const uint8_t *p)
{
    uint32_t w[64], v[8];
    int i;

    for (i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | (uint32_t)p[4 * i + 3];
    for (i = 16; i < 64; i++) {
        uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ w[i - 15] >> 3;
        uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ w[i - 2] >> 10;
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    memcpy(v, s->h, sizeof(v));
    for (i = 0; i < 64; i++) {
        uint32_t e = v[4], a = v[0];
        uint32_t t1 = v[7] + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) +
                      ((e & v[5]) ^ (~e & v[6])) + k256[i] + w[i];
        uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) +
                      ((a & v[1]) ^ (a & v[2]) ^ (v[1] & v[2]));
        memmove(v + 1, v, 7 * sizeof(v[0]));
        v[4] += t1;
        v[0] = t1 + t2;
    }
    for (i = 0; i < 8; i++)
        s->h[i] += v[i];
}

static void sha256_init(struct sha256 *s)
{
    static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372,
                                   0xa54ff53a, 0x510e527f, 0x9b05688c,
                                   0x1f83d9ab, 0x5be0cd19};

    memcpy(s->h, h0, sizeof(h0));
    s->fill = 0;
    s->total = 0;
}

static void sha256_update(struct sha256 *s, const void *data, size_t len)
{
    const uint8_t *p = data;

    s->total += len;
    while (len > 0) {
        size_t n = SHA256_BLOCK - s->fill;
        if (n > len)
            n = len;
        memcpy(s->block + s->fill, p, n);
        s->fill += n;
        p += n;
        len -= n;
        if (s->fill == SHA256_BLOCK) {
            sha256_block(s, s->block);
            s->fill = 0;
        }
    }
}

/* Pads with 0x80, zeros and the 64-bit big-endian bit length. */
static void sha256_final(struct sha256 *s, uint8_t out[CRN_SHA256_LEN])
{
    uint64_t bits = s->total * 8;
    uint8_t pad[SHA256_BLOCK + 8] = {0x80};
    size_t pad_len = (s->fill < 56 ? 56 : 120) - s->fill;
    int i;

    for (i = 0; i < 8; i++)
        pad[pad_len + (size_t)i] = (uint8_t)(bits >> (56 - 8 * i));
    sha256_update(s, pad, pad_len + 8);
    for (i = 0; i < 8; i++) {
        out[4 * i] = (uint8_t)(s->h[i] >> 24);
        out[4 * i + 1] = (uint8_t)(s->h[i] >> 16);
        out[4 * i + 2] = (uint8_t)(s->h[i] >> 8);
        out[4 * i + 3] = (uint8_t)s->h[i];
    }
}

int crn_hmac_sha256(const void *key, size_t key_len, const void *msg,
                    size_t msg_len, uint8_t out[32])
{
    uint8_t k[SHA256_BLOCK] = {0};
    uint8_t pad[SHA256_BLOCK];
    uint8_t inner[CRN_SHA256_LEN];
    struct sha256 s;
    int i;

    if (!out || (!key && key_len) || (!msg && msg_len))
        return -EINVAL;
    if (key_len > SHA256_BLOCK) {
        sha256_init(&s);
        sha256_update(&s, key, key_len);
        sha256_final(&s, k);
    } else if (key_len > 0) {
        memcpy(k, key, key_len);
    }
    for (i = 0; i < SHA256_BLOCK; i++)
        pad[i] = k[i] ^ 0x36;
    sha256_init(&s);
    sha256_update(&s, pad, sizeof(pad));
    sha256_update(&s, msg, msg_len);
    sha256_final(&s, inner);
    for (i = 0; i < SHA256_BLOCK; i++)
        pad[i] = k[i] ^ 0x5c;
    sha256_init(&s);
    sha256_update(&s, pad, sizeof(pad));
    sha256_update(&s, inner, sizeof(inner));
    sha256_final(&s, out);
    return 0;
}

int crn_random_bytes(void *buf, size_t len)
{
    uint8_t *p = buf;

    if (!buf && len)
        return -EINVAL;
    while (len > 0) {
        ssize_t n = getrandom(p, len, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
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
