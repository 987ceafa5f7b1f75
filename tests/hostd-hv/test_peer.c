/* Tests of crane-hostd's peer protocol: authentication, bad input, the
 * validation of an Arrive, TLS on peer links. */
#include "harness.h"
#include "peer_standins.h"

#include "host-daemon/peer.h"
#include "proto/frame.h"
#include "proto/tls.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void test_peer_auth(void)
{
    Crane__Hostd__PeerRequest req = CRANE__HOSTD__PEER_REQUEST__INIT;
    Crane__Hostd__Check c = CRANE__HOSTD__CHECK__INIT;
    Crane__Hostd__PeerReply *r = NULL;
    struct hd_peer *p = NULL;
    struct server s;
    char why[300] = "";

    server_start(&s, "shared secret");
    CHECK_INT(open_peer(&s, "shared secret", &p, why, sizeof(why)), ==, 0);
    CHECK_STR(hd_peer_host(p), "dst");
    req.msg_case = CRANE__HOSTD__PEER_REQUEST__MSG_CHECK;
    req.check = &c;
    CHECK_INT(hd_peer_call(p, &req, 5000, &r), ==, 0);
    CHECK_INT(r->msg_case, ==, CRANE__HOSTD__PEER_REPLY__MSG_CHECK);
    CHECK_INT(r->check->gpus_total, ==, 0);
    CHECK_STR(r->check->host, "dst");
    crane__hostd__peer_reply__free_unpacked(r, NULL);
    hd_peer_close(p);
    server_stop(&s);
}

void test_peer_wrong_key(void)
{
    struct hd_peer *p = NULL;
    struct server s;
    char why[300] = "";

    /* Each side checks the other: a wrong key on either is refused. */
    server_start(&s, "shared secret");
    CHECK_INT(open_peer(&s, "another secret", &p, why, sizeof(why)), ==,
              -EACCES);
    CHECK(strstr(why, "does not hold our key") != NULL);
    server_stop(&s);

    server_start(&s, "shared secret");
    CHECK_INT(open_peer(&s, NULL, &p, why, sizeof(why)), ==, -EACCES);
    CHECK(strstr(why, "asks for a key") != NULL);
    server_stop(&s);

    server_start(&s, NULL);
    CHECK_INT(open_peer(&s, "shared secret", &p, why, sizeof(why)), ==,
              -EACCES);
    CHECK(strstr(why, "does not authenticate") != NULL);
    server_stop(&s);

    server_start(&s, NULL);
    CHECK_INT(open_peer(&s, NULL, &p, why, sizeof(why)), ==, 0);
    hd_peer_close(p);
    server_stop(&s);
}

/* A client that skips the handshake, or sends garbage, gets nothing done. */
void test_peer_bad_input(void)
{
    Crane__Hostd__PeerRequest req = CRANE__HOSTD__PEER_REQUEST__INIT;
    Crane__Hostd__Check c = CRANE__HOSTD__CHECK__INIT;
    struct sockaddr_in sa = { .sin_family = AF_INET };
    static const uint8_t garbage[] = { 0, 0, 0, 3, 0xff, 0xff, 0xff };
    struct server s;
    uint8_t buf[64];
    int fd;

    server_start(&s, "k");
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = htons(s.port);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK_INT(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
    req.msg_case = CRANE__HOSTD__PEER_REQUEST__MSG_CHECK;
    req.check = &c;
    CHECK_INT(crn_frame_write(fd, &req.base), ==, 0);
    /* A Refused answer, then the connection closes. */
    {
        Crane__Hostd__PeerReply *r;
        uint8_t *frame;
        size_t len;

        CHECK_INT(crn_frame_read(fd, &frame, &len, 4096), ==, 0);
        r = crane__hostd__peer_reply__unpack(NULL, len, frame);
        free(frame);
        CHECK(r != NULL);
        CHECK_INT(r->msg_case, ==, CRANE__HOSTD__PEER_REPLY__MSG_REFUSED);
        crane__hostd__peer_reply__free_unpacked(r, NULL);
    }
    CHECK_INT(read(fd, buf, sizeof(buf)), ==, 0);
    close(fd);
    server_stop(&s);

    server_start(&s, "k");
    fd = socket(AF_INET, SOCK_STREAM, 0);
    sa.sin_port = htons(s.port);
    CHECK_INT(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
    CHECK_INT(write(fd, garbage, sizeof(garbage)), ==, sizeof(garbage));
    CHECK_INT(read(fd, buf, sizeof(buf)), ==, 0);   /* closed, no answer */
    close(fd);
    server_stop(&s);
}

/* An Arrive with an id that could not be stored is refused before
 * anything is looked up. */
void test_peer_arrive_validated(void)
{
    Crane__Hostd__PeerRequest req = CRANE__HOSTD__PEER_REQUEST__INIT;
    Crane__Hostd__Arrive a = CRANE__HOSTD__ARRIVE__INIT;
    Crane__Hostd__PeerReply *r = NULL;
    struct hd_peer *p = NULL;
    struct server s;
    char why[300];

    server_start(&s, "k");
    CHECK_INT(open_peer(&s, "k", &p, why, sizeof(why)), ==, 0);
    a.migration_id = "../../etc/passwd";
    a.domain = "vm1";
    req.msg_case = CRANE__HOSTD__PEER_REQUEST__MSG_ARRIVE;
    req.arrive = &a;
    CHECK_INT(hd_peer_call(p, &req, 5000, &r), ==, 0);
    CHECK_INT(r->msg_case, ==, CRANE__HOSTD__PEER_REPLY__MSG_ARRIVE);
    CHECK_INT(r->arrive->result, ==, CRANE__HOSTD__RESULT__RESULT_FAILED);
    CHECK(strstr(r->arrive->error, "bad arrive") != NULL);
    crane__hostd__peer_reply__free_unpacked(r, NULL);
    hd_peer_close(p);
    server_stop(&s);
}

/* --- TLS on peer links (proto/tls.c) -------------------------------------- */

static char *tls_key_file(const char *bytes)
{
    char *path = strdup("/tmp/crane-peer-key-XXXXXX");
    int fd = mkstemp(path);

    CHECK(fd >= 0);
    CHECK_INT(write(fd, bytes, strlen(bytes)), ==, (ssize_t)strlen(bytes));
    close(fd);
    return path;
}

static struct crn_tls_config *tls_config(enum crn_tls_mode mode,
                                         const char *pki, const char *key)
{
    struct crn_tls_config *cfg = NULL;
    char why[300] = "";

    if (crn_tls_config_new(mode, CRN_TLS_BOTH, pki, key, &cfg, why,
                           sizeof(why)) < 0)
        fprintf(stderr, "tls config: %s\n", why);
    CHECK(cfg != NULL);
    return cfg;
}

/* One Check call over an open peer: the link carries the protocol. */
static void peer_check(struct hd_peer *p)
{
    Crane__Hostd__PeerRequest req = CRANE__HOSTD__PEER_REQUEST__INIT;
    Crane__Hostd__Check c = CRANE__HOSTD__CHECK__INIT;
    Crane__Hostd__PeerReply *r = NULL;

    req.msg_case = CRANE__HOSTD__PEER_REQUEST__MSG_CHECK;
    req.check = &c;
    CHECK_INT(hd_peer_call(p, &req, 5000, &r), ==, 0);
    CHECK_INT(r->msg_case, ==, CRANE__HOSTD__PEER_REPLY__MSG_CHECK);
    crane__hostd__peer_reply__free_unpacked(r, NULL);
}

/* psk from the peer key file: the right key connects (the HMAC handshake
 * then runs inside TLS), a wrong one and a client without TLS are
 * refused. */
void test_peer_tls_psk(void)
{
    char *key = tls_key_file("shared secret"), *wrong = tls_key_file("nope");
    struct crn_tls_config *good = tls_config(CRN_TLS_PSK, NULL, key);
    struct crn_tls_config *bad = tls_config(CRN_TLS_PSK, NULL, wrong);
    struct hd_peer *p = NULL;
    struct server s;
    char why[300] = "";

    server_start(&s, "shared secret");
    s.d.tls = good;
    client_tls = good;
    CHECK_INT(open_peer(&s, "shared secret", &p, why, sizeof(why)), ==, 0);
    CHECK_STR(hd_peer_host(p), "dst");
    peer_check(p);
    hd_peer_close(p);
    server_stop(&s);

    server_start(&s, "shared secret");
    s.d.tls = good;
    client_tls = bad;
    CHECK(open_peer(&s, "shared secret", &p, why, sizeof(why)) < 0);
    CHECK(strstr(why, "TLS") != NULL);
    server_stop(&s);

    /* In clear to a TLS peer: the server's handshake fails on the Hello,
     * the client sees the connection end. */
    server_start(&s, "shared secret");
    s.d.tls = good;
    client_tls = NULL;
    CHECK(open_peer(&s, "shared secret", &p, why, sizeof(why)) < 0);
    server_stop(&s);

    crn_tls_config_free(good);
    crn_tls_config_free(bad);
    unlink(key);
    unlink(wrong);
    free(key);
    free(wrong);
}

/* x509 in libvirt's layout (tests/tls/mkpki.sh): mutual certificates pass,
 * a host whose certificate another CA signed is refused; then a libxl
 * stream accepted over TLS carries its bytes unchanged. */
void test_peer_tls_x509(void)
{
    static const uint8_t header[16] = { 'C', 'R', 'N', 'X', 'L', 'M', 'I',
                                        'G', 0, 0, 0, 1, 0, 0, 0, 1 };
    char dir[] = "/tmp/crane-peer-pki-XXXXXX", cmd[600], good_dir[100],
         other_dir[100], why[300] = "";
    struct crn_tls_config *good, *other;
    struct double_server ds;
    struct hd_peer *p = NULL;
    struct server s;
    uint8_t b;
    int fd = -1;

    CHECK(mkdtemp(dir) != NULL);
    snprintf(good_dir, sizeof(good_dir), "%s/good", dir);
    snprintf(other_dir, sizeof(other_dir), "%s/other", dir);
    snprintf(cmd, sizeof(cmd),
             "tests/tls/mkpki.sh %s good && tests/tls/mkpki.sh %s other && "
             "cp %s/CA/cacert.pem %s/CA/cacert.pem",
             good_dir, other_dir, good_dir, other_dir);
    CHECK_INT(system(cmd), ==, 0);
    good = tls_config(CRN_TLS_X509, good_dir, NULL);
    other = tls_config(CRN_TLS_X509, other_dir, NULL);

    server_start(&s, NULL);
    s.d.tls = good;
    client_tls = good;
    CHECK_INT(open_peer(&s, NULL, &p, why, sizeof(why)), ==, 0);
    peer_check(p);
    hd_peer_close(p);
    server_stop(&s);

    server_start(&s, NULL);
    s.d.tls = good;
    client_tls = other;
    p = NULL;
    if (open_peer(&s, NULL, &p, why, sizeof(why)) == 0) {
        /* TLS 1.3: the client finishes first; the server's refusal
         * ends the link before any answer. */
        Crane__Hostd__PeerRequest req = CRANE__HOSTD__PEER_REQUEST__INIT;
        Crane__Hostd__Check c = CRANE__HOSTD__CHECK__INIT;
        Crane__Hostd__PeerReply *r = NULL;
        req.msg_case = CRANE__HOSTD__PEER_REQUEST__MSG_CHECK;
        req.check = &c;
        CHECK(hd_peer_call(p, &req, 5000, &r) < 0);
        hd_peer_close(p);
    }
    server_stop(&s);

    client_tls = good;
    double_start_tls(&ds, good, "shared secret", DOUBLE_ACCEPT);
    CHECK_INT(open_stream(ds.port, "shared secret", "mig-43", "vm1", &fd, why,
                          sizeof(why)), ==, 0);
    CHECK_INT(read(fd, &b, 1), ==, 1);
    CHECK_INT(b, ==, 0x5a);
    CHECK_INT(write(fd, header, sizeof(header)), ==, sizeof(header));
    CHECK_INT(read(fd, &b, 1), ==, 1);
    CHECK_INT(b, ==, 0);
    close(fd);
    double_stop(&ds);
    CHECK_STR(ds.failed, "");
    CHECK_STR(ds.migration_id, "mig-43");
    CHECK(memcmp(ds.header, header, sizeof(header)) == 0);

    client_tls = NULL;
    crn_tls_config_free(good);
    crn_tls_config_free(other);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    CHECK_INT(system(cmd), ==, 0);
}
