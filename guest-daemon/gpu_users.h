/* Which processes hold the GPU's device nodes open (the prepare's check). */
#ifndef GD_GPU_USERS_H
#define GD_GPU_USERS_H

#include "config.h"

#include <stddef.h>
#include <sys/types.h>

struct gd_gpu_user {
    pid_t pid;
    char comm[32];               /* /proc/PID/comm, for messages */
    char node[GD_TEXT];          /* the gpu_device it holds */
};

/*
 * Finds the processes other than this one that hold one of CFG's
 * gpu_device nodes open, by reading every /proc/PID/fd link (never
 * following it: a link to a hung file system cannot block the daemon).
 * Fills up to MAX of them into USERS and returns how many there are (may
 * be more than MAX), or a negative errno when /proc cannot be read.
 * Processes whose descriptors the daemon may not read (another user's,
 * when it does not run as root) are not seen.
 */
int gd_gpu_users(const struct gd_config *cfg, struct gd_gpu_user *users,
                 size_t max);

#endif /* GD_GPU_USERS_H */
