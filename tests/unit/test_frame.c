/* Unit tests of proto/frame.c: framing over pipes, sockets and buffers. */
#include "runner.h"

#include "proto/frame.h"
#include "proto/control.pb-c.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

/* Generous bound for the small messages of these tests. */
#define MAX_LEN (4u << 20)

/* Fills H with recognisable values; PROGRAM must outlive H. */
static void make_header(Crane__Control__Register *h, const char *program)
{
    crane__control__register__init(h);
    h->version = 1;
    h->pid = 4242;
    h->program = (char *)program;
    h->state_bytes = UINT64_C(0x123456789a);
    h->mode = CRANE__CONTROL__PROGRAM_MODE__PROGRAM_REMOTING;
}

/* Unpacks LEN bytes at BUF and checks they are the header EXPECT. */
static void check_header(const uint8_t *buf, size_t len,
                         const Crane__Control__Register *expect)
{
    Crane__Control__Register *h;

    h = crane__control__register__unpack(NULL, len, buf);
    ASSERT(h != NULL);
    ASSERT_EQ(h->version, expect->version);
    ASSERT_EQ(h->pid, expect->pid);
    ASSERT_STR_EQ(h->program, expect->program);
    ASSERT_EQ(h->state_bytes, expect->state_bytes);
    ASSERT_EQ(h->mode, expect->mode);
    crane__control__register__free_unpacked(h, NULL);
}

/* Reads one frame from FD and checks it holds the header EXPECT. */
static void read_header(int fd, const Crane__Control__Register *expect)
{
    uint8_t *buf = NULL;
    size_t len = 0;

    ASSERT_EQ(crn_frame_read(fd, &buf, &len, MAX_LEN), 0);
    check_header(buf, len, expect);
    free(buf);
}

/* Writes LEN raw bytes to FD, for frames built by hand. */
static void put_raw(int fd, const void *p, size_t len)
{
    ASSERT_EQ(write(fd, p, len), (ssize_t)len);
}

/* A string of LEN bytes, all different from their neighbours. */
static char *make_program_name(size_t len)
{
    char *s = malloc(len + 1);
    size_t i;

    ASSERT(s != NULL);
    for (i = 0; i < len; i++)
        s[i] = (char)('a' + i % 23);
    s[len] = '\0';
    return s;
}

struct writer {
    int fd;
    const ProtobufCMessage *msg;
    int count;
    int rc;
};

/* Thread body: writes the message COUNT times; assertions stay in the
 * test's thread, so this only records the result. */
static void *writer_main(void *arg)
{
    struct writer *w = arg;
    int i;

    w->rc = 0;
    for (i = 0; i < w->count && w->rc == 0; i++)
        w->rc = crn_frame_write(w->fd, w->msg);
    return NULL;
}

/* Makes a socket pair whose first end has a send buffer as small as the
 * kernel allows, and is non-blocking: a big frame cannot go in one write. */
static void small_socketpair(int sv[2])
{
    int size = 1;

    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    ASSERT_EQ(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &size, sizeof(size)),
              0);
    ASSERT_EQ(setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &size, sizeof(size)),
              0);
    ASSERT_EQ(fcntl(sv[0], F_SETFL, O_NONBLOCK), 0);
}

TEST(frame_roundtrip_pipe)
{
    Crane__Control__Register h1;
    Crane__Control__Register h2;
    uint8_t *buf = NULL;
    size_t len = 0;
    int fds[2];

    make_header(&h1, "vector-add");
    make_header(&h2, "");
    h2.pid = 1;
    ASSERT_EQ(pipe(fds), 0);
    ASSERT_EQ(crn_frame_write(fds[1], &h1.base), 0);
    ASSERT_EQ(crn_frame_write(fds[1], &h2.base), 0);
    ASSERT_EQ(close(fds[1]), 0);

    read_header(fds[0], &h1);
    read_header(fds[0], &h2);
    /* A close between frames is a clean end, and *buf is left alone. */
    ASSERT_EQ(crn_frame_read(fds[0], &buf, &len, MAX_LEN), -ENODATA);
    ASSERT(buf == NULL);
    ASSERT_EQ(close(fds[0]), 0);
}

TEST(frame_partial_writes)
{
    Crane__Control__Register h;
    struct writer w;
    pthread_t thread;
    char *program = make_program_name(1 << 20);
    int probe[2];
    int sv[2];

    /* The setup really forces short writes: 1 MiB does not fit at once. */
    small_socketpair(probe);
    ASSERT(write(probe[0], program, 1 << 20) < (1 << 20));
    close(probe[0]);
    close(probe[1]);

    make_header(&h, program);
    small_socketpair(sv);
    w = (struct writer){.fd = sv[0], .msg = &h.base, .count = 3};
    ASSERT_EQ(pthread_create(&thread, NULL, writer_main, &w), 0);
    read_header(sv[1], &h);
    read_header(sv[1], &h);
    read_header(sv[1], &h);
    ASSERT_EQ(pthread_join(thread, NULL), 0);
    ASSERT_EQ(w.rc, 0);
    close(sv[0]);
    close(sv[1]);
    free(program);
}

static void on_alarm(int sig)
{
    (void)sig;
}

/* Frames cross a socket intact while a timer interrupts both ends' system
 * calls with EINTR or short counts (the handler has no SA_RESTART). */
TEST(frame_survives_signals)
{
    struct itimerval tick = {{0, 200}, {0, 200}};
    struct itimerval off = {{0, 0}, {0, 0}};
    struct sigaction sa = {.sa_handler = on_alarm};
    struct sigaction old_sa;
    Crane__Control__Register h;
    char *program = make_program_name(256 << 10);
    struct writer w;
    pthread_t thread;
    uint8_t *bufs[8] = {NULL};
    size_t lens[8];
    int rcs[8];
    int sv[2];
    int i;

    make_header(&h, program);
    small_socketpair(sv);
    ASSERT_EQ(fcntl(sv[0], F_SETFL, 0), 0);
    sigemptyset(&sa.sa_mask);
    ASSERT_EQ(sigaction(SIGALRM, &sa, &old_sa), 0);
    ASSERT_EQ(setitimer(ITIMER_REAL, &tick, NULL), 0);

    w = (struct writer){.fd = sv[0], .msg = &h.base, .count = 8};
    ASSERT_EQ(pthread_create(&thread, NULL, writer_main, &w), 0);
    for (i = 0; i < 8; i++)
        rcs[i] = crn_frame_read(sv[1], &bufs[i], &lens[i], MAX_LEN);
    ASSERT_EQ(pthread_join(thread, NULL), 0);

    /* Stop the timer before any assertion can leave the test.  Ignoring
     * SIGALRM for a moment discards a tick still pending, which the old
     * (default) action would turn into death. */
    setitimer(ITIMER_REAL, &off, NULL);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGALRM, &sa, NULL);
    sigaction(SIGALRM, &old_sa, NULL);
    ASSERT_EQ(w.rc, 0);
    for (i = 0; i < 8; i++) {
        ASSERT_EQ(rcs[i], 0);
        check_header(bufs[i], lens[i], &h);
        free(bufs[i]);
    }
    close(sv[0]);
    close(sv[1]);
    free(program);
}

TEST(frame_truncated)
{
    static const uint8_t body_cut[] = {0, 0, 0, 100, 1, 2, 3};
    static const uint8_t header_cut[] = {0, 0};
    uint8_t *buf = NULL;
    size_t len = 0;
    int fds[2];

    /* End of file inside the body. */
    ASSERT_EQ(pipe(fds), 0);
    put_raw(fds[1], body_cut, sizeof(body_cut));
    close(fds[1]);
    ASSERT_EQ(crn_frame_read(fds[0], &buf, &len, MAX_LEN), -EPIPE);
    ASSERT(buf == NULL);
    close(fds[0]);

    /* End of file inside the length. */
    ASSERT_EQ(pipe(fds), 0);
    put_raw(fds[1], header_cut, sizeof(header_cut));
    close(fds[1]);
    ASSERT_EQ(crn_frame_read(fds[0], &buf, &len, MAX_LEN), -EPIPE);
    ASSERT(buf == NULL);
    close(fds[0]);

    /* A peer that closes a socket with data left unread resets it: the
     * reader gets the bytes sent, then -ECONNRESET, not a clean end. */
    {
        int sv[2];

        ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
        put_raw(sv[1], "x", 1);
        put_raw(sv[0], body_cut, sizeof(body_cut));
        close(sv[0]);
        ASSERT_EQ(crn_frame_read(sv[1], &buf, &len, MAX_LEN), -ECONNRESET);
        ASSERT(buf == NULL);
        close(sv[1]);
    }
}

TEST(frame_oversized)
{
    static const uint8_t huge[] = {0x7f, 0xff, 0xff, 0xff, 'a', 'b', 'c'};
    static const uint8_t just_over[] = {0, 0, 4, 1};
    static uint8_t sentinel[1];
    const uint8_t *msg = NULL;
    size_t msg_len = 7;
    size_t consumed = 7;
    uint8_t *buf = sentinel;
    size_t len = 99;
    uint8_t rest[8];
    int fds[2];

    /* The writer stays open: a reader that believed the length would wait
     * for 2 GiB and time out instead of failing fast. */
    ASSERT_EQ(pipe(fds), 0);
    put_raw(fds[1], huge, sizeof(huge));
    ASSERT_EQ(crn_frame_read(fds[0], &buf, &len, 1024), -EMSGSIZE);
    ASSERT(buf == sentinel);
    ASSERT_EQ(len, 99);
    /* The body was left unread. */
    ASSERT_EQ(read(fds[0], rest, sizeof(rest)), 3);
    ASSERT_MEM_EQ(rest, "abc", 3);

    /* One byte over the limit is refused. */
    put_raw(fds[1], just_over, sizeof(just_over));
    ASSERT_EQ(crn_frame_read(fds[0], &buf, &len, 1024), -EMSGSIZE);
    ASSERT(buf == sentinel);
    close(fds[0]);
    close(fds[1]);

    /* The buffer decoder refuses as soon as it sees the length. */
    ASSERT_EQ(crn_frame_decode(huge, 4, 1024, &msg, &msg_len, &consumed),
              -EMSGSIZE);
    ASSERT_EQ(crn_frame_decode(just_over, 4, 1024, &msg, &msg_len, &consumed),
              -EMSGSIZE);
    /* At the limit the length is fine, and the body is still to come. */
    ASSERT_EQ(crn_frame_decode(just_over, 4, 1025, &msg, &msg_len, &consumed),
              -EAGAIN);
    ASSERT(msg == NULL);
    ASSERT_EQ(msg_len, 7);
    ASSERT_EQ(consumed, 7);
}

TEST(frame_decode_incremental)
{
    Crane__Control__Register h1;
    Crane__Control__Register h2;
    Crane__Control__ProgramAck chunk = CRANE__CONTROL__PROGRAM_ACK__INIT;
    Crane__Control__ProgramAck *c;
    uint8_t stream[256];
    size_t stream_len = 0;
    size_t frame_len;
    size_t pos = 0;
    size_t n;
    int round;

    /* Three frames back to back, packed by hand. */
    make_header(&h1, "decode");
    make_header(&h2, "second");
    h2.mode = CRANE__CONTROL__PROGRAM_MODE__PROGRAM_UNKNOWN;
    chunk.err = -7;
    chunk.error = "4096";
    chunk.state_bytes = 65536;
    {
        const ProtobufCMessage *msgs[] = {&h1.base, &chunk.base, &h2.base};
        size_t i;

        for (i = 0; i < 3; i++) {
            size_t size = protobuf_c_message_get_packed_size(msgs[i]);

            ASSERT(stream_len + 4 + size <= sizeof(stream));
            stream[stream_len] = 0;
            stream[stream_len + 1] = 0;
            stream[stream_len + 2] = (uint8_t)(size >> 8);
            stream[stream_len + 3] = (uint8_t)size;
            ASSERT_EQ(protobuf_c_message_pack(msgs[i],
                                              stream + stream_len + 4),
                      size);
            stream_len += 4 + size;
        }
    }

    /* Feed each frame one byte at a time, each prefix in an allocation of
     * exactly its size, so that AddressSanitizer and valgrind catch any
     * read past the input. */
    for (round = 0; round < 3; round++) {
        const uint8_t *msg = NULL;
        size_t msg_len = 0;
        size_t consumed = 0;
        uint8_t *in = NULL;
        int rc = -EAGAIN;

        for (n = 0; pos + n <= stream_len; n++) {
            free(in);
            in = malloc(n > 0 ? n : 1);
            ASSERT(in != NULL);
            memcpy(in, stream + pos, n);
            rc = crn_frame_decode(n > 0 ? in : NULL, n, MAX_LEN, &msg,
                                  &msg_len, &consumed);
            if (rc != -EAGAIN)
                break;
        }
        ASSERT_EQ(rc, 0);
        frame_len = n;
        ASSERT_EQ(consumed, frame_len);
        ASSERT(msg == in + 4);
        ASSERT_EQ(msg_len, frame_len - 4);
        ASSERT_MEM_EQ(in, stream + pos, frame_len);
        if (round == 1) {
            c = crane__control__program_ack__unpack(NULL, msg_len, msg);
            ASSERT(c != NULL);
            ASSERT_EQ(c->err, -7);
            ASSERT_STR_EQ(c->error, "4096");
            ASSERT_EQ(c->state_bytes, 65536);
            crane__control__program_ack__free_unpacked(c, NULL);
        } else {
            check_header(msg, msg_len, round == 0 ? &h1 : &h2);
        }
        free(in);
        pos += consumed;
    }
    ASSERT_EQ(pos, stream_len);

    /* With all three frames in one buffer, decode finds just the first. */
    {
        const uint8_t *msg;
        size_t msg_len;
        size_t consumed;

        ASSERT_EQ(crn_frame_decode(stream, stream_len, MAX_LEN, &msg,
                                   &msg_len, &consumed),
                  0);
        ASSERT(msg == stream + 4);
        ASSERT(consumed < stream_len);
        ASSERT_EQ(crn_frame_decode(stream, stream_len, MAX_LEN, NULL,
                                   &msg_len, &consumed),
                  -EINVAL);
    }
}

TEST(frame_zero_length)
{
    static const uint8_t empty_frame[] = {0, 0, 0, 0};
    Crane__Control__Register h = CRANE__CONTROL__REGISTER__INIT;
    Crane__Control__Register *got;
    const uint8_t *msg = NULL;
    size_t msg_len = 99;
    size_t consumed = 0;
    uint8_t *buf = NULL;
    size_t len = 99;
    uint8_t raw[8];
    int fds[2];

    /* A message of default values packs to nothing: the frame is its
     * length alone. */
    ASSERT_EQ(protobuf_c_message_get_packed_size(&h.base), 0);
    ASSERT_EQ(pipe(fds), 0);
    ASSERT_EQ(crn_frame_write(fds[1], &h.base), 0);
    ASSERT_EQ(read(fds[0], raw, sizeof(raw)), 4);
    ASSERT_MEM_EQ(raw, empty_frame, 4);

    /* Read back, even with no room at all for a body. */
    ASSERT_EQ(crn_frame_write(fds[1], &h.base), 0);
    ASSERT_EQ(crn_frame_read(fds[0], &buf, &len, 0), 0);
    ASSERT_EQ(len, 0);
    ASSERT(buf != NULL);
    got = crane__control__register__unpack(NULL, len, buf);
    ASSERT(got != NULL);
    ASSERT_EQ(got->version, 0);
    ASSERT_STR_EQ(got->program, "");
    crane__control__register__free_unpacked(got, NULL);
    free(buf);
    close(fds[0]);
    close(fds[1]);

    ASSERT_EQ(crn_frame_decode(empty_frame, 4, 0, &msg, &msg_len, &consumed),
              0);
    ASSERT(msg == empty_frame + 4);
    ASSERT_EQ(msg_len, 0);
    ASSERT_EQ(consumed, 4);
}

TEST(frame_write_errors)
{
    Crane__Control__Register h;
    uint8_t *buf = NULL;
    size_t len;
    int sv[2];
    int fds[2];
    int rc;

    /* A descriptor just closed is a bad one (-1 would upset valgrind). */
    make_header(&h, "errors");
    ASSERT_EQ(pipe(fds), 0);
    close(fds[0]);
    close(fds[1]);
    ASSERT_EQ(crn_frame_write(fds[1], &h.base), -EBADF);
    ASSERT_EQ(crn_frame_write(1, NULL), -EINVAL);
    ASSERT_EQ(crn_frame_read(fds[0], &buf, &len, MAX_LEN), -EBADF);
    ASSERT_EQ(crn_frame_read(0, NULL, &len, MAX_LEN), -EINVAL);

    /* A socket whose peer is gone fails with -EPIPE; SIGPIPE would have
     * killed this process instead. */
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    close(sv[1]);
    ASSERT_EQ(crn_frame_write(sv[0], &h.base), -EPIPE);
    close(sv[0]);

    /* A pipe raises SIGPIPE as any write would; ignored, it is -EPIPE. */
    {
        struct sigaction ign = {.sa_handler = SIG_IGN};
        struct sigaction old;

        sigemptyset(&ign.sa_mask);
        ASSERT_EQ(pipe(fds), 0);
        close(fds[0]);
        ASSERT_EQ(sigaction(SIGPIPE, &ign, &old), 0);
        rc = crn_frame_write(fds[1], &h.base);
        sigaction(SIGPIPE, &old, NULL);
        ASSERT_EQ(rc, -EPIPE);
        close(fds[1]);
    }
}
