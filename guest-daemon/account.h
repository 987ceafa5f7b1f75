/* The last check before the GPU driver goes: every GPU user accounted for. */
#ifndef GD_ACCOUNT_H
#define GD_ACCOUNT_H

#include "guestd.h"

/*
 * Every process holding a gpu_device node is a registered program off the
 * GPU, and every registered program is off the GPU or provably holds no
 * node (then it is left out, with a note in the answer).  A program that
 * stopped answering before this prepare is named as such, with when.
 * Returns 0, or fails the operation in flight and returns -EBUSY (or
 * -ETIMEDOUT, or the /proc listing's error).
 */
int gd_account_gpu_users(struct gd_daemon *d);

#endif /* GD_ACCOUNT_H */
