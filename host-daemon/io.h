/* Frames over blocking sockets with deadlines, for the daemon's threads. */
#ifndef HD_IO_H
#define HD_IO_H

#include <stddef.h>
#include <stdint.h>

/* Reads one frame (proto/frame.h) from FD by DEADLINE (hd_now() seconds;
 * 0: none).  *BUF is malloc'ed (caller frees).  -ETIMEDOUT, -ENODATA on a
 * clean close, -EPIPE mid-frame, -EMSGSIZE over MAX, or the read's errno. */
int hd_frame_read_by(int fd, size_t max, double deadline, uint8_t **buf,
                     size_t *len);

/* Sets SO_SNDTIMEO so that a stuck peer cannot block a writer forever. */
void hd_send_timeout(int fd, unsigned seconds);

#endif /* HD_IO_H */
