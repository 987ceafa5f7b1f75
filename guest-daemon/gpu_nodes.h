/* The GPU device nodes gpu_device names: literal paths and patterns. */
#ifndef GD_GPU_NODES_H
#define GD_GPU_NODES_H

#include "config.h"

#include <limits.h>
#include <stddef.h>

/* The most nodes the gpu_device entries add up to (16 GPUs, a few each). */
#define GD_MAX_NODES 64

/*
 * A gpu_device entry with a wildcard (`*`, `?`, `[`) is a pattern that
 * matches one node per GPU (/dev/nvidia[0-9]*, /dev/dri/renderD*): the
 * GPU is usable once it matches at least `gpus` nodes, so that a VM with
 * several GPUs waits for every one of them whatever gpu_type says.  A
 * literal entry must simply exist.
 */

/*
 * 0 when every literal gpu_device of CFG exists and every pattern matches
 * at least CFG->gpus nodes; -EAGAIN with the first one short said in WHY
 * otherwise.
 */
int gd_gpu_nodes_ready(const struct gd_config *cfg, char *why, size_t len);

/*
 * The real paths of CFG's gpu_device nodes that exist now (patterns
 * expanded), each once, up to MAX into NODES: the names the kernel shows
 * in /proc/PID/fd for a process holding one open.  Returns how many.
 */
size_t gd_gpu_nodes(const struct gd_config *cfg, char nodes[][PATH_MAX],
                    size_t max);

#endif /* GD_GPU_NODES_H */
