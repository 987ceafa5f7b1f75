/* Length-prefixed framing of protobuf-c messages over fds and in buffers. */
#include "proto/frame.h"

#include "proto/stream.h"
#include "proto/tls.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

/* A frame up to this size is packed on the stack; a larger one is malloc()ed,
 * so that small control and RPC messages cost no allocation. */
#define FRAME_STACK_BYTES 512

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

void crn_frame_header(uint8_t *out, size_t len)
{
    put_be32(out, (uint32_t)len);
}

static uint32_t get_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
           (uint32_t)p[3];
}

/* Waits until FD is ready for EVENTS.  Errors and hang-ups count as ready:
 * the read or write that follows reports them. */
static int wait_fd(int fd, short events)
{
    struct pollfd pfd = {.fd = fd, .events = events};

    while (poll(&pfd, 1, -1) < 0)
        if (errno != EINTR)
            return -errno;
    return 0;
}

/*
 * Writes all LEN bytes at P.  send(MSG_NOSIGNAL) keeps a vanished socket
 * peer from killing the process with SIGPIPE; FDs that are not sockets fall
 * back to write() after the first ENOTSOCK.
 */
static int write_all(int fd, const uint8_t *p, size_t len)
{
    int is_socket = 1;
    ssize_t n;
    int rc;

    while (len > 0) {
        if (is_socket) {
            n = send(fd, p, len, MSG_NOSIGNAL);
            if (n < 0 && errno == ENOTSOCK) {
                is_socket = 0;
                continue;
            }
        } else {
            n = write(fd, p, len);
        }
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                return -errno;
            rc = wait_fd(fd, POLLOUT);
            if (rc < 0)
                return rc;
            continue;
        }
        if (n == 0)
            return -EIO;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Reads up to LEN bytes into P, stopping early only at end of file; *GOT
 * says how many arrived. */
static int read_all(int fd, uint8_t *p, size_t len, size_t *got)
{
    size_t done = 0;
    ssize_t n;
    int rc;

    while (done < len) {
        n = read(fd, p + done, len - done);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                return -errno;
            rc = wait_fd(fd, POLLIN);
            if (rc < 0)
                return rc;
            continue;
        }
        if (n == 0)
            break;
        done += (size_t)n;
    }
    *got = done;
    return 0;
}

/* The same on a stream: records of its TLS session, or its descriptor. */
static int stream_write_all(const struct crn_stream *s, const uint8_t *p,
                            size_t len)
{
    return s->tls ? crn_tls_write_all(s->tls, p, len)
                  : write_all(s->fd, p, len);
}

static int stream_read_all(const struct crn_stream *s, uint8_t *p,
                           size_t len, size_t *got)
{
    size_t done = 0;

    if (!s->tls)
        return read_all(s->fd, p, len, got);
    while (done < len) {
        long n = crn_tls_read(s->tls, p + done, len - done);
        if (n < 0)
            return (int)n;
        if (n == 0)
            break;
        done += (size_t)n;
    }
    *got = done;
    return 0;
}

int crn_frame_write(int fd, const ProtobufCMessage *msg)
{
    struct crn_stream s = {fd, NULL};

    return crn_frame_write_on(&s, msg);
}

int crn_frame_write_on(const struct crn_stream *s,
                       const ProtobufCMessage *msg)
{
    uint8_t stack[FRAME_STACK_BYTES];
    uint8_t *frame = stack;
    size_t size;
    int rc;

    if (msg == NULL)
        return -EINVAL;
    size = protobuf_c_message_get_packed_size(msg);
    if ((uint64_t)size > UINT32_MAX)
        return -EMSGSIZE;
    if (size > sizeof(stack) - CRN_FRAME_HEADER_LEN) {
        frame = malloc(CRN_FRAME_HEADER_LEN + size);
        if (frame == NULL)
            return -ENOMEM;
    }
    put_be32(frame, (uint32_t)size);
    if (protobuf_c_message_pack(msg, frame + CRN_FRAME_HEADER_LEN) != size) {
        rc = -EINVAL;
        goto out;
    }
    rc = stream_write_all(s, frame, CRN_FRAME_HEADER_LEN + size);
out:
    if (frame != stack)
        free(frame);
    return rc;
}

int crn_frame_read(int fd, uint8_t **buf, size_t *len, size_t max_len)
{
    struct crn_stream s = {fd, NULL};

    return crn_frame_read_on(&s, buf, len, max_len);
}

int crn_frame_read_on(const struct crn_stream *s, uint8_t **buf, size_t *len,
                      size_t max_len)
{
    uint8_t header[CRN_FRAME_HEADER_LEN];
    uint8_t *body;
    uint32_t body_len;
    size_t got;
    int rc;

    if (buf == NULL || len == NULL)
        return -EINVAL;
    rc = stream_read_all(s, header, sizeof(header), &got);
    if (rc < 0)
        return rc;
    if (got == 0)
        return -ENODATA;
    if (got < sizeof(header))
        return -EPIPE;
    body_len = get_be32(header);
    if (body_len > max_len)
        return -EMSGSIZE;

    body = malloc(body_len > 0 ? body_len : 1);
    if (body == NULL)
        return -ENOMEM;
    rc = stream_read_all(s, body, body_len, &got);
    if (rc == 0 && got < body_len)
        rc = -EPIPE;
    if (rc < 0) {
        free(body);
        return rc;
    }
    *buf = body;
    *len = body_len;
    return 0;
}

int crn_frame_decode(const uint8_t *in, size_t in_len, size_t max_len,
                     const uint8_t **msg, size_t *msg_len, size_t *consumed)
{
    uint32_t body_len;

    if ((in == NULL && in_len > 0) || msg == NULL || msg_len == NULL ||
        consumed == NULL)
        return -EINVAL;
    if (in_len < CRN_FRAME_HEADER_LEN)
        return -EAGAIN;
    body_len = get_be32(in);
    if (body_len > max_len)
        return -EMSGSIZE;
    if (in_len - CRN_FRAME_HEADER_LEN < body_len)
        return -EAGAIN;
    *msg = in + CRN_FRAME_HEADER_LEN;
    *msg_len = body_len;
    *consumed = CRN_FRAME_HEADER_LEN + (size_t)body_len;
    return 0;
}

int crn_bulk_write(int fd, const void *p, size_t len)
{
    return write_all(fd, p, len);
}

int crn_bulk_write_on(const struct crn_stream *s, const void *p, size_t len)
{
    return stream_write_all(s, p, len);
}

int crn_bulk_read(int fd, void *p, size_t len)
{
    struct crn_stream s = {fd, NULL};

    return crn_bulk_read_on(&s, p, len);
}

int crn_bulk_read_on(const struct crn_stream *s, void *p, size_t len)
{
    size_t got = 0;
    int rc = stream_read_all(s, p, len, &got);

    if (rc < 0)
        return rc;
    return got == len ? 0 : -EPIPE;
}
