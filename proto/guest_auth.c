/* The guest daemon's host channel handshake: the proofs, and the client side.
 *
 * Mutual: the host side proves it holds the key by answering the guest
 * daemon's fresh nonce, and the daemon proves the same by answering the
 * host's, so neither talks to an impostor.  The labels keep a proof made
 * by one side from being replayed as the other's.
 */
#include "proto/guest_auth.h"

#include "proto/auth.h"
#include "proto/control.pb-c.h"
#include "proto/frame.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

#define GUEST_AUTH_VERSION 1
/* A Challenge or an Ack of the handshake: small. */
#define GUEST_AUTH_MAX_FRAME (64u << 10)

int crn_guest_proof(const uint8_t *key, size_t key_len,
                    enum crn_guest_side side, const uint8_t *nonce,
                    size_t nonce_len, uint8_t out[32])
{
    const char *label = side == CRN_GUEST_SERVER ? "crane-guestd server"
                                                 : "crane-guestd client";
    uint8_t msg[32 + CRN_GUEST_NONCE_LEN];
    size_t l = strlen(label);

    if (!nonce || nonce_len != CRN_GUEST_NONCE_LEN)
        return -EINVAL;
    memcpy(msg, label, l);
    memcpy(msg + l, nonce, nonce_len);
    return crn_hmac_sha256(key, key_len, msg, l + nonce_len, out);
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Reads exactly LEN bytes by DEADLINE (a peer that stalls mid-frame
 * cannot hold the caller longer). */
static int read_by(int fd, uint8_t *p, size_t len, double deadline)
{
    while (len > 0) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        double left = deadline - now_s();
        ssize_t n;
        int r;

        if (left <= 0)
            return -ETIMEDOUT;
        r = poll(&pfd, 1, (int)(left * 1e3) + 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -errno;
        if (r == 0)
            return -ETIMEDOUT;
        n = read(fd, p, len);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            return -ENODATA;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Reads the next GuestMessage by DEADLINE. */
static int read_answer(int fd, double deadline,
                       Crane__Control__GuestMessage **out)
{
    uint8_t hdr[CRN_FRAME_HEADER_LEN], *buf;
    size_t len;
    int rc;

    if ((rc = read_by(fd, hdr, sizeof(hdr), deadline)) < 0)
        return rc;
    len = (size_t)hdr[0] << 24 | (size_t)hdr[1] << 16 | (size_t)hdr[2] << 8 |
          hdr[3];
    if (len > GUEST_AUTH_MAX_FRAME)
        return -EMSGSIZE;
    if (!(buf = malloc(len ? len : 1)))
        return -ENOMEM;
    if ((rc = read_by(fd, buf, len, deadline)) == 0) {
        *out = crane__control__guest_message__unpack(NULL, len, buf);
        rc = *out ? 0 : -EPROTO;
    }
    free(buf);
    return rc;
}

/* An Ack refusing the handshake: its reason, printable only. */
static void refusal(const Crane__Control__GuestMessage *g, char *why,
                    size_t why_len)
{
    const char *e = g->ack->error ? g->ack->error : "";
    size_t i = 0;
    char text[200];

    for (; e[i] && i + 1 < sizeof(text); i++)
        text[i] = e[i] >= 32 && e[i] < 127 ? e[i] : '?';
    text[i] = '\0';
    snprintf(why, why_len, "refused: %s", text);
}

static int handshake(int fd, const uint8_t *key, size_t key_len,
                     double deadline, char *why, size_t why_len)
{
    Crane__Control__HostMessage m = CRANE__CONTROL__HOST_MESSAGE__INIT;
    Crane__Control__Hello hello = CRANE__CONTROL__HELLO__INIT;
    Crane__Auth auth = CRANE__AUTH__INIT;
    Crane__Control__GuestMessage *g = NULL;
    uint8_t nonce[CRN_GUEST_NONCE_LEN], mac[CRN_SHA256_LEN];
    int rc;

    if ((rc = crn_random_bytes(nonce, sizeof(nonce))) < 0) {
        snprintf(why, why_len, "no random bytes: %s", strerror(-rc));
        return rc;
    }
    hello.version = GUEST_AUTH_VERSION;
    hello.nonce.data = nonce;
    hello.nonce.len = sizeof(nonce);
    m.id = 1;
    m.msg_case = CRANE__CONTROL__HOST_MESSAGE__MSG_HELLO;
    m.hello = &hello;
    if ((rc = crn_frame_write(fd, &m.base)) < 0 ||
        (rc = read_answer(fd, deadline, &g)) < 0) {
        snprintf(why, why_len, "no challenge: %s", strerror(-rc));
        return rc;
    }
    if (g->msg_case == CRANE__CONTROL__GUEST_MESSAGE__MSG_ACK) {
        refusal(g, why, why_len);
        rc = -EACCES;
    } else if (g->msg_case != CRANE__CONTROL__GUEST_MESSAGE__MSG_CHALLENGE) {
        snprintf(why, why_len, "unexpected answer to hello");
        rc = -EPROTO;
    } else if (crn_guest_proof(key, key_len, CRN_GUEST_SERVER, nonce,
                               sizeof(nonce), mac) < 0 ||
               g->challenge->mac.len != sizeof(mac) ||
               !crn_auth_equal(mac, g->challenge->mac.data, sizeof(mac))) {
        snprintf(why, why_len, "the guest daemon does not hold our key");
        rc = -EACCES;
    } else if (crn_guest_proof(key, key_len, CRN_GUEST_CLIENT,
                               g->challenge->nonce.data,
                               g->challenge->nonce.len, mac) < 0) {
        snprintf(why, why_len, "bad challenge from the guest daemon");
        rc = -EPROTO;
    }
    crane__control__guest_message__free_unpacked(g, NULL);
    g = NULL;
    if (rc < 0)
        return rc;
    auth.mac.data = mac;
    auth.mac.len = sizeof(mac);
    m.id = 2;
    m.msg_case = CRANE__CONTROL__HOST_MESSAGE__MSG_AUTH;
    m.auth = &auth;
    if ((rc = crn_frame_write(fd, &m.base)) < 0 ||
        (rc = read_answer(fd, deadline, &g)) < 0) {
        snprintf(why, why_len, "no answer to our proof: %s",
                 rc == -ENODATA ? "connection closed" : strerror(-rc));
        return rc == -ENODATA ? -EACCES : rc;
    }
    if (g->msg_case != CRANE__CONTROL__GUEST_MESSAGE__MSG_ACK) {
        snprintf(why, why_len, "unexpected answer to our proof");
        rc = -EPROTO;
    } else if (g->ack->err) {
        refusal(g, why, why_len);
        rc = -EACCES;
    }
    crane__control__guest_message__free_unpacked(g, NULL);
    return rc;
}

int crn_guest_auth_client(int fd, const uint8_t *key, size_t key_len,
                          unsigned timeout_ms, char *why, size_t why_len)
{
    if (!key || !key_len) {
        snprintf(why, why_len, "no key");
        return -EINVAL;
    }
    return handshake(fd, key, key_len, now_s() + timeout_ms / 1e3, why,
                     why_len);
}
