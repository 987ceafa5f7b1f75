/* A byte stream: a connected socket in clear, or a TLS session on one. */
#ifndef CRANE_PROTO_STREAM_H
#define CRANE_PROTO_STREAM_H

#include <stdbool.h>
#include <stddef.h>

struct crn_tls;

/*
 * Where a stream's bytes are used, they are read and written here: on the
 * descriptor FD itself, or, with TLS set, as records of that session on FD
 * (proto/tls.h; the session owns FD then).  No relay, no thread in between:
 * each stream's crypto runs on the thread that reads or writes it.  Frames
 * travel on a stream with proto/frame.h's *_on calls.
 */
struct crn_stream {
    int fd;
    struct crn_tls *tls;         /* NULL: in clear */
};

/* Reads up to LEN bytes, waiting at most TIMEOUT_MS (-1: without end) for
 * the first: the bytes read, 0 at end of stream, -ETIMEDOUT, or a negative
 * errno. */
long crn_stream_read(const struct crn_stream *s, void *p, size_t len,
                     int timeout_ms);
/* Writes all LEN bytes, waiting at most TIMEOUT_MS (-1: without end) for
 * each step of progress: 0, -ETIMEDOUT or a negative errno. */
int crn_stream_write_all(const struct crn_stream *s, const void *p,
                         size_t len, int timeout_ms);
/* Whether bytes wait to be read without the socket being readable (a TLS
 * record decrypted in part). */
bool crn_stream_pending(const struct crn_stream *s);
/* Waits as crn_spin_readable (proto/spin.h) does, true at once when bytes
 * are pending. */
bool crn_stream_readable(const struct crn_stream *s, long spin_ns,
                         int timeout_ms);
/* Ends S: close_notify and the socket closed (TLS), or the descriptor
 * closed; S is left closed (fd -1). */
void crn_stream_close(struct crn_stream *s);

#endif /* CRANE_PROTO_STREAM_H */
