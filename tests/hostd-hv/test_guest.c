/* Tests of crane-hostd's guest client (guest.c): each command goes as the
 * field its row of proto/control_ops.def names, with its deadline, and a
 * message that is not the row's is refused before anything is sent. */
#include "harness.h"

#include "host-daemon/guest.h"
#include "proto/frame.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* A stand-in crane-guestd answering one command on a unix socket: what it
 * got, and an Ack with ERR. */
struct fake_guestd {
    char path[108];
    int lfd;
    pthread_t thread;
    int got_case;                /* the HostMessage's case, -1: none */
    uint32_t got_deadline_ms;    /* an Abort's or Shm's */
    uint64_t got_size;           /* a Shm's */
};

static void *fake_serve(void *arg)
{
    struct fake_guestd *g = arg;
    Crane__Control__GuestMessage r = CRANE__CONTROL__GUEST_MESSAGE__INIT;
    Crane__Control__Ack ack = CRANE__CONTROL__ACK__INIT;
    Crane__Control__HostMessage *m;
    uint8_t *buf;
    size_t len;
    int fd = accept(g->lfd, NULL, NULL);

    if (fd < 0)
        return NULL;
    if (crn_frame_read(fd, &buf, &len, 1 << 20) == 0) {
        if ((m = crane__control__host_message__unpack(NULL, len, buf))) {
            g->got_case = m->msg_case;
            if (m->msg_case == CRANE__CONTROL__HOST_MESSAGE__MSG_ABORT)
                g->got_deadline_ms = m->abort->deadline_ms;
            if (m->msg_case == CRANE__CONTROL__HOST_MESSAGE__MSG_SHM) {
                g->got_deadline_ms = m->shm->deadline_ms;
                g->got_size = m->shm->size;
            }
            ack.err = -EALREADY;
            r.id = m->id;
            r.msg_case = CRANE__CONTROL__GUEST_MESSAGE__MSG_ACK;
            r.ack = &ack;
            crn_frame_write(fd, &r.base);
            crane__control__host_message__free_unpacked(m, NULL);
        }
        free(buf);
    }
    close(fd);
    return NULL;
}

static void fake_start(struct fake_guestd *g)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };

    memset(g, 0, sizeof(*g));
    g->got_case = -1;
    snprintf(g->path, sizeof(g->path), "/tmp/crane-hvt-guest-%d.sock",
             (int)getpid());
    unlink(g->path);
    memcpy(sa.sun_path, g->path, strlen(g->path) + 1);
    g->lfd = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK(g->lfd >= 0);
    CHECK_INT(bind(g->lfd, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
    CHECK_INT(listen(g->lfd, 1), ==, 0);
    CHECK_INT(pthread_create(&g->thread, NULL, fake_serve, g), ==, 0);
}

static void fake_stop(struct fake_guestd *g)
{
    shutdown(g->lfd, SHUT_RDWR);
    pthread_join(g->thread, NULL);
    close(g->lfd);
    unlink(g->path);
}

void test_guest_send_by_row(void)
{
    Crane__Control__Abort a = CRANE__CONTROL__ABORT__INIT;
    Crane__Control__Shm s = CRANE__CONTROL__SHM__INIT;
    struct hd_guest_reply r;
    struct fake_guestd g;

    /* Abort as HostMessage's abort, its deadline written in. */
    fake_start(&g);
    CHECK_INT(hd_guest_send(g.path, CRANE__CONTROL__OP__OP_ABORT, &a.base,
                            1234, NULL, &r), ==, 0);
    CHECK_INT(r.ack->err, ==, -EALREADY);
    hd_guest_reply_free(&r);
    fake_stop(&g);
    CHECK_INT(g.got_case, ==, CRANE__CONTROL__HOST_MESSAGE__MSG_ABORT);
    CHECK_INT(g.got_deadline_ms, ==, 1234);
    /* Shm with its own fields kept. */
    fake_start(&g);
    s.size = 1 << 20;
    CHECK_INT(hd_guest_send(g.path, CRANE__CONTROL__OP__OP_SHM, &s.base,
                            99, NULL, &r), ==, 0);
    hd_guest_reply_free(&r);
    fake_stop(&g);
    CHECK_INT(g.got_case, ==, CRANE__CONTROL__HOST_MESSAGE__MSG_SHM);
    CHECK_INT(g.got_deadline_ms, ==, 99);
    CHECK_INT(g.got_size, ==, 1 << 20);
}

void test_guest_send_refused(void)
{
    Crane__Control__Abort a = CRANE__CONTROL__ABORT__INIT;
    struct hd_guest_reply r;
    struct fake_guestd g;

    fake_start(&g);
    /* Another row's message (Abort and Resume have the same fields). */
    CHECK_INT(hd_guest_send(g.path, CRANE__CONTROL__OP__OP_RESUME, &a.base,
                            10, NULL, &r), ==, -EINVAL);
    /* A row of the shim hop only, one no row names, no message. */
    CHECK_INT(hd_guest_send(g.path, CRANE__CONTROL__OP__OP_QUERY, &a.base,
                            10, NULL, &r), ==, -EINVAL);
    CHECK_INT(hd_guest_send(g.path, (Crane__Control__Op)999, &a.base, 10,
                            NULL, &r), ==, -EINVAL);
    CHECK_INT(hd_guest_send(g.path, CRANE__CONTROL__OP__OP_ABORT, NULL, 10,
                            NULL, &r), ==, -EINVAL);
    CHECK(r.msg == NULL);
    fake_stop(&g);
    /* Nothing reached the guest daemon. */
    CHECK_INT(g.got_case, ==, -1);
}
