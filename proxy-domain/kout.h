/* A worker's kernel output: what the vendor writes on fd 1 (a kernel's
 * printf), captured and handed to the tenant's next reply. */
#ifndef PX_KOUT_H
#define PX_KOUT_H

#include <stddef.h>
#include <stdint.h>

/*
 * A vendor prints a kernel's printf output on the standard output of the
 * process that runs the kernel (PoCL: one write(1) per work-group, before
 * the command completes).  Natively that is the program's; remoted it is
 * the proxy worker's, which serves one tenant, so the worker points fd 1
 * at a pipe before it loads the vendor.  A thread drains the pipe into
 * memory as it fills (a kernel never blocks on it), and every reply takes
 * what came so far (px_kout_take; a call that waited for the device has
 * its kernels' writes done by then), so the program gets the lines before
 * the call that synchronised returns, in the order they were written.
 * Without --isolation tenant, tenants share the process: nothing is
 * captured and the output stays on the proxy's standard output.
 */

/* The largest output one reply carries (the rest goes with the next), and
 * the most kept waiting for replies (beyond it output is dropped, with a
 * warning). */
#define PX_KOUT_REPLY_MAX (4u << 20)
#define PX_KOUT_KEEP_MAX (32u << 20)

/* Starts capturing fd 1; 0 or -errno (WHY says what failed). */
int px_kout_start(char *why, size_t why_len);
/* What was captured since the last take, at most PX_KOUT_REPLY_MAX bytes:
 * a malloc'd block of *LEN bytes the caller frees, or NULL (none, or not
 * capturing). */
uint8_t *px_kout_take(size_t *len);
/* Gives fd 1 back and writes there what no reply took. */
void px_kout_stop(void);

#endif /* PX_KOUT_H */
