/* The GPU device nodes gpu_device names: which exist, and are there enough. */
#include "gpu_nodes.h"

#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int is_pattern(const char *path)
{
    return strpbrk(path, "*?[") != NULL;
}

/* How many nodes PATTERN matches now (0 on no match or an error). */
static size_t pattern_count(const char *pattern)
{
    glob_t g;
    size_t n = 0;

    if (glob(pattern, GLOB_NOSORT, NULL, &g) == 0)
        n = g.gl_pathc;
    globfree(&g);
    return n;
}

int gd_gpu_nodes_ready(const struct gd_config *cfg, char *why, size_t len)
{
    for (size_t i = 0; i < cfg->n_gpu_devices; i++) {
        const char *p = cfg->gpu_devices[i];
        size_t n;

        if (!is_pattern(p)) {
            if (access(p, F_OK) < 0) {
                snprintf(why, len, "%s is missing", p);
                return -EAGAIN;
            }
            continue;
        }
        if ((n = pattern_count(p)) < cfg->gpus) {
            snprintf(why, len, "%s matches %zu node%s of the %u GPU%s", p, n,
                     n == 1 ? "" : "s", cfg->gpus, cfg->gpus == 1 ? "" : "s");
            return -EAGAIN;
        }
    }
    return 0;
}

/* Adds PATH's real path to NODES unless it is there already. */
static void add_node(const char *path, char nodes[][PATH_MAX], size_t *n,
                     size_t max)
{
    char real[PATH_MAX];

    if (*n >= max || !realpath(path, real))
        return;
    for (size_t i = 0; i < *n; i++)
        if (strcmp(nodes[i], real) == 0)
            return;
    memcpy(nodes[(*n)++], real, sizeof(real));
}

size_t gd_gpu_nodes(const struct gd_config *cfg, char nodes[][PATH_MAX],
                    size_t max)
{
    size_t n = 0;

    for (size_t i = 0; i < cfg->n_gpu_devices; i++) {
        const char *p = cfg->gpu_devices[i];
        glob_t g;

        if (!is_pattern(p)) {
            add_node(p, nodes, &n, max);
            continue;
        }
        if (glob(p, GLOB_NOSORT, NULL, &g) == 0)
            for (size_t j = 0; j < g.gl_pathc; j++)
                add_node(g.gl_pathv[j], nodes, &n, max);
        globfree(&g);
    }
    return n;
}
