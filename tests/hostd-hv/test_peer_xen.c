/* Tests of libxl migration streams over the peer protocol (XenStream):
 * refused, before the handshake, accepted, handed to libxl's receiver. */
#include "harness.h"
#include "peer_standins.h"

#include "host-daemon/peer.h"
#include "proto/frame.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A daemon whose backend is not libxl refuses the stream, and so does any
 * daemon for a bad id or name, ending the connection. */
void test_peer_xen_stream_refused(void)
{
    const struct hv_ops *others[] = { NULL, &hv_libvirt_ops };
    Crane__Hostd__PeerRequest req = CRANE__HOSTD__PEER_REQUEST__INIT;
    Crane__Hostd__XenStream x = CRANE__HOSTD__XEN_STREAM__INIT;
    Crane__Hostd__Check c = CRANE__HOSTD__CHECK__INIT;
    Crane__Hostd__PeerReply *r = NULL;
    struct hd_peer *p = NULL;
    struct server s;
    char why[300] = "";
    int fd;

    for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
        fd = -1;
        server_start_ops(&s, "k", others[i]);
        CHECK_INT(open_stream(s.port, "k", "m-1", "vm1", &fd, why,
                              sizeof(why)), ==, -EOPNOTSUPP);
        CHECK_INT(fd, ==, -1);
        CHECK(strstr(why, "dst refused the stream") != NULL);
        CHECK(strstr(why, "not libxl") != NULL);
        server_stop(&s);
    }

    /* The server checks the names itself, even with libxl behind it. */
    server_start_ops(&s, "k", libxl_ops());
    CHECK_INT(open_peer(&s, "k", &p, why, sizeof(why)), ==, 0);
    x.migration_id = "../../etc/passwd";
    x.domain = "vm1";
    req.msg_case = CRANE__HOSTD__PEER_REQUEST__MSG_XEN_STREAM;
    req.xen_stream = &x;
    CHECK_INT(hd_peer_call(p, &req, 5000, &r), ==, 0);
    CHECK_INT(r->msg_case, ==, CRANE__HOSTD__PEER_REPLY__MSG_REFUSED);
    CHECK_INT(r->refused->err, ==, -EINVAL);
    CHECK(strstr(r->refused->error, "bad xen stream") != NULL);
    crane__hostd__peer_reply__free_unpacked(r, NULL);
    r = NULL;
    /* ... and the connection is over. */
    req.msg_case = CRANE__HOSTD__PEER_REQUEST__MSG_CHECK;
    req.check = &c;
    CHECK(hd_peer_call(p, &req, 5000, &r) < 0);
    hd_peer_close(p);
    server_stop(&s);

    /* The client checks them before it connects. */
    fd = -1;
    CHECK_INT(open_stream(1, NULL, "m 1", "vm1", &fd, why, sizeof(why)), ==,
              -EINVAL);
    CHECK_INT(open_stream(1, NULL, "", "vm1", &fd, why, sizeof(why)), ==,
              -EINVAL);
    CHECK_INT(open_stream(1, NULL, "m-1", "", &fd, why, sizeof(why)), ==,
              -EINVAL);
    CHECK_INT(open_stream(1, NULL, "m-1", "vm\n1", &fd, why, sizeof(why)),
              ==, -EINVAL);
    CHECK_INT(fd, ==, -1);
}

/* No stream without the handshake: not as the first request, not in
 * place of Auth, not with the wrong key. */
void test_peer_xen_stream_before_auth(void)
{
    Crane__Hostd__PeerRequest req = CRANE__HOSTD__PEER_REQUEST__INIT;
    Crane__Hostd__Hello hello = CRANE__HOSTD__HELLO__INIT;
    Crane__Hostd__PeerReply *r;
    uint8_t nonce[32] = { 1 }, b;
    struct server s;
    char why[300] = "";
    int fd = -1;

    server_start_ops(&s, "k", libxl_ops());
    fd = raw_connect(s.port);
    send_xen_stream(fd, 1);
    CHECK((r = read_reply(fd)) != NULL);
    CHECK_INT(r->msg_case, ==, CRANE__HOSTD__PEER_REPLY__MSG_REFUSED);
    CHECK(strstr(r->refused->error, "expected hello") != NULL);
    crane__hostd__peer_reply__free_unpacked(r, NULL);
    CHECK_INT(read(fd, &b, 1), ==, 0);
    close(fd);
    server_stop(&s);

    server_start_ops(&s, "k", libxl_ops());
    fd = raw_connect(s.port);
    hello.version = 1;
    hello.nonce.data = nonce;
    hello.nonce.len = sizeof(nonce);
    hello.host = "src";
    req.id = 1;
    req.msg_case = CRANE__HOSTD__PEER_REQUEST__MSG_HELLO;
    req.hello = &hello;
    CHECK_INT(crn_frame_write(fd, &req.base), ==, 0);
    CHECK((r = read_reply(fd)) != NULL);
    CHECK_INT(r->msg_case, ==, CRANE__HOSTD__PEER_REPLY__MSG_CHALLENGE);
    crane__hostd__peer_reply__free_unpacked(r, NULL);
    send_xen_stream(fd, 2);
    CHECK((r = read_reply(fd)) != NULL);
    CHECK_INT(r->msg_case, ==, CRANE__HOSTD__PEER_REPLY__MSG_REFUSED);
    CHECK_INT(r->refused->err, ==, -EACCES);
    crane__hostd__peer_reply__free_unpacked(r, NULL);
    CHECK_INT(read(fd, &b, 1), ==, 0);
    close(fd);
    server_stop(&s);

    fd = -1;
    server_start_ops(&s, "k", libxl_ops());
    CHECK_INT(open_stream(s.port, "not k", "m-1", "vm1", &fd, why,
                          sizeof(why)), ==, -EACCES);
    CHECK_INT(fd, ==, -1);
    server_stop(&s);
}

/* After acceptance the caller gets the connection, blocking and in step
 * right after the accepting frame; refusals and odd answers become
 * errors with the destination's reason. */
void test_peer_xen_stream_accepted(void)
{
    static const uint8_t header[16] = { 'C', 'R', 'N', 'X', 'L', 'M', 'I',
                                        'G', 0, 0, 0, 1, 0, 0, 0, 1 };
    struct double_server ds;
    char why[300] = "";
    uint8_t b;
    int fd = -1;

    double_start(&ds, "shared secret", DOUBLE_ACCEPT);
    CHECK_INT(open_stream(ds.port, "shared secret", "mig-42", "vm1", &fd, why,
                          sizeof(why)), ==, 0);
    CHECK(fd >= 0);
    CHECK_INT(fcntl(fd, F_GETFL) & O_NONBLOCK, ==, 0);
    CHECK_INT(read(fd, &b, 1), ==, 1);
    CHECK_INT(b, ==, 0x5a);
    CHECK_INT(write(fd, header, sizeof(header)), ==, sizeof(header));
    CHECK_INT(read(fd, &b, 1), ==, 1);
    CHECK_INT(b, ==, 0);
    close(fd);
    double_stop(&ds);
    CHECK_STR(ds.failed, "");
    CHECK_STR(ds.migration_id, "mig-42");
    CHECK_STR(ds.domain, "vm1");
    CHECK(memcmp(ds.header, header, sizeof(header)) == 0);

    fd = -1;
    double_start(&ds, "shared secret", DOUBLE_REFUSE);
    CHECK_INT(open_stream(ds.port, "shared secret", "mig-42", "vm1", &fd, why,
                          sizeof(why)), ==, -EBUSY);
    CHECK_STR(why, "double refused the stream: busy?now");
    double_stop(&ds);
    CHECK_STR(ds.failed, "");

    double_start(&ds, "shared secret", DOUBLE_REFUSE_ODD);
    CHECK_INT(open_stream(ds.port, "shared secret", "mig-42", "vm1", &fd, why,
                          sizeof(why)), ==, -EPROTO);
    double_stop(&ds);
    CHECK_STR(ds.failed, "");

    double_start(&ds, "shared secret", DOUBLE_WRONG_REPLY);
    CHECK_INT(open_stream(ds.port, "shared secret", "mig-42", "vm1", &fd, why,
                          sizeof(why)), ==, -EPROTO);
    CHECK(strstr(why, "unexpected answer") != NULL);
    double_stop(&ds);
    CHECK_STR(ds.failed, "");
    CHECK_INT(fd, ==, -1);
}

/* A daemon whose backend is libxl accepts the stream and hands the
 * connection to hv_libxl_receive, then ends it.  Without Xen its handle is
 * NULL here, so the receiver gives up at once: the source sees the
 * connection close (a real sender then fails before suspending). */
void test_peer_xen_stream_libxl_receiver(void)
{
#ifdef HD_HAVE_LIBXL
    struct server s;
    char why[300] = "";
    uint8_t b;
    int fd = -1;

    server_start_ops(&s, "k", &hv_libxl_ops);
    CHECK_INT(open_stream(s.port, "k", "m-1", "vm1", &fd, why, sizeof(why)),
              ==, 0);
    CHECK(fd >= 0);
    CHECK_INT(read(fd, &b, 1), ==, 0);
    close(fd);
    server_stop(&s);
#else
    hvt_skip("built without libxl (libxen-dev)");
#endif
}

