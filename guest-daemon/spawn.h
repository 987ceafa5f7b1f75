/* Runs helper programs (modprobe, the GPU probe) with a time limit. */
#ifndef GD_SPAWN_H
#define GD_SPAWN_H

#include <stdint.h>
#include <uv.h>

/*
 * STATUS is the child's exit code (0..255), 128 + N when signal N ended
 * it, -ETIMEDOUT when it ran past its time and was killed, or the negative
 * errno that kept it from starting.  OUTPUT holds the start of what it
 * wrote to stderr, trimmed to one line ("" if nothing).
 */
typedef void (*gd_child_done_fn)(void *arg, int status, const char *output);

/* Starts ARGV[0] (a path, or a name searched in PATH) with ARGV; DONE runs
 * on the loop once it has ended and every handle is closed.  Returns 0 or
 * a negative errno (then DONE never runs). */
int gd_child_run(uv_loop_t *loop, char *const argv[], uint64_t timeout_ms,
                 gd_child_done_fn done, void *arg);

#endif /* GD_SPAWN_H */
