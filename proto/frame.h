/* Frames protobuf-c messages: a 32-bit big-endian length, then the message. */
#ifndef CRANE_PROTO_FRAME_H
#define CRANE_PROTO_FRAME_H

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Every crane channel carries frames: 4 bytes holding the message's length
 * in big-endian order, then that many bytes of packed protobuf-c message.
 * A message with only default values is empty, so a frame may be just its 4
 * length bytes.  Bulk bytes announced by a message (a `bulk_len` of the
 * remoting channel) follow its frame raw, unframed.
 *
 * All functions return 0 or a negative errno.
 */

/* Bytes of the length that starts every frame. */
#define CRN_FRAME_HEADER_LEN 4

/* Writes the header of a frame of LEN message bytes at OUT
 * (CRN_FRAME_HEADER_LEN bytes), for callers that pack into their own
 * buffers. */
void crn_frame_header(uint8_t *out, size_t len);

/*
 * Packs MSG and writes it to FD as one frame.  Loops over partial writes and
 * EINTR; a non-blocking FD is waited on with poll(), so the call always
 * writes the whole frame or fails.  Writing to a socket whose peer is gone
 * returns -EPIPE without raising SIGPIPE (a pipe still raises it unless the
 * program ignores SIGPIPE).  Returns -EMSGSIZE for a message over 4 GiB, or
 * the errno of the failed write; after an error part of the frame may have
 * been written, so the stream is no longer usable.
 */
int crn_frame_write(int fd, const ProtobufCMessage *msg);

/*
 * Reads one frame from FD.  On success *BUF is a malloc()ed copy of the
 * message bytes (never NULL, even when *LEN is 0) that the caller frees.
 * Returns -ENODATA on end of file before the frame's first byte (a clean
 * close), -EPIPE on end of file inside a frame, -EMSGSIZE for a frame longer
 * than MAX_LEN (found from the length alone: nothing is allocated and the
 * body is left unread), or the errno of the failed read (-ECONNRESET when a
 * peer resets a socket).  After any error the stream is no longer in step
 * and should be closed.  Loops over EINTR and waits with poll() on a
 * non-blocking FD; event loops use crn_frame_decode() instead.
 */
int crn_frame_read(int fd, uint8_t **buf, size_t *len, size_t max_len);

/*
 * Finds the first frame in the IN_LEN bytes at IN, for callers that buffer
 * a stream themselves.  On success *MSG points at the message inside IN,
 * *MSG_LEN is its length and *CONSUMED the frame's whole length (header
 * included) to drop from the buffer.  Returns -EAGAIN while IN holds less
 * than a whole frame (read more and call again), and -EMSGSIZE as soon as
 * the length says the message is longer than MAX_LEN.  Outputs are written
 * only on success; bytes past the frame are never read.
 */
int crn_frame_decode(const uint8_t *in, size_t in_len, size_t max_len,
                     const uint8_t **msg, size_t *msg_len, size_t *consumed);

/*
 * Bulk bytes that follow a frame raw: writes all LEN bytes at P, or reads
 * exactly LEN bytes into P (-EPIPE on end of file first), with the same
 * rules for EINTR, non-blocking FDs and SIGPIPE as the frame calls.
 */
int crn_bulk_write(int fd, const void *p, size_t len);
int crn_bulk_read(int fd, void *p, size_t len);

/*
 * The same calls on a stream (proto/stream.h): in clear as above, or as
 * records of its TLS session, blocking.
 */
struct crn_stream;
int crn_frame_write_on(const struct crn_stream *s,
                       const ProtobufCMessage *msg);
int crn_frame_read_on(const struct crn_stream *s, uint8_t **buf, size_t *len,
                      size_t max_len);
int crn_bulk_write_on(const struct crn_stream *s, const void *p, size_t len);
int crn_bulk_read_on(const struct crn_stream *s, void *p, size_t len);

#endif /* CRANE_PROTO_FRAME_H */
