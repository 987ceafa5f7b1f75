/* crane-hostd's client of the guest channel (host-daemon/guest.c), alone:
 * sends one status to crane-guestd and prints the phase, for the tests.
 *
 *   hostd_guest_call CHANNEL [KEYFILE [TLS [PKIDIR]]]
 *
 * CHANNEL is what crane-hostd would use: a unix socket path, or
 * tcp:HOST:PORT (authenticated with KEYFILE, as guest_key, over TLS as
 * crane-hostd's tls and pki_dir say: auto by default).  Prints
 * "phase N" and exits 0 on an answer; exits 1 when there was none.
 */
#include "guest.h"

#include "proto/auth.h"
#include "proto/tls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* host-daemon/jobs.c's clock, which guest.c and io.c use. */
double hd_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    struct hd_guest_reply r;
    Crane__Control__StatusRequest q = CRANE__CONTROL__STATUS_REQUEST__INIT;
    uint8_t *key;
    size_t len;
    int rc;

    if (argc < 2 || argc > 5) {
        fprintf(stderr, "usage: hostd_guest_call CHANNEL [KEYFILE [TLS "
                        "[PKIDIR]]]\n");
        return 2;
    }
    if (argc >= 3) {
        enum crn_tls_mode mode = CRN_TLS_AUTO;
        struct crn_tls_config *tls = NULL;
        char why[400];
        if ((argc >= 4 && crn_tls_mode_parse(argv[3], &mode) < 0) ||
            crn_tls_config_new(mode, CRN_TLS_CLIENT,
                               argc >= 5 ? argv[4] : NULL, argv[2], &tls,
                               why, sizeof(why)) < 0) {
            fprintf(stderr, "hostd_guest_call: TLS: %s\n", why);
            return 2;
        }
        hd_guest_set_tls(tls);
        if ((rc = crn_auth_key_load(argv[2], &key, &len)) < 0) {
            fprintf(stderr, "hostd_guest_call: %s: %s\n", argv[2],
                    strerror(-rc));
            return 2;
        }
        hd_guest_set_key(key, len);
    }
    if ((rc = hd_guest_send(argv[1], CRANE__CONTROL__OP__OP_STATUS, &q.base,
                            10000, NULL, &r)) < 0) {
        printf("no answer: %s\n", strerror(-rc));
        return 1;
    }
    printf("phase %d, err %d\n", (int)r.ack->phase, r.ack->err);
    rc = r.ack->err ? 1 : 0;
    hd_guest_reply_free(&r);
    return rc;
}
