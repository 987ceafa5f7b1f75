/* Which processes hold the GPU's device nodes open (the prepare's check).
 *
 * A program that uses the GPU holds its device nodes open (/dev/nvidia*,
 * /dev/kfd, /dev/dri/renderD*) for as long as the vendor library has a
 * context.  Before the driver is unloaded every such process must be a
 * registered program that its shim says is off the GPU; this file only
 * finds them.
 */
#include "gpu_users.h"

#include "gpu_nodes.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void read_comm(pid_t pid, char *out, size_t len)
{
    char path[64];
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
    out[0] = '\0';
    if ((f = fopen(path, "re"))) {
        if (fgets(out, (int)len, f))
            out[strcspn(out, "\n")] = '\0';
        fclose(f);
    }
    if (!out[0])
        snprintf(out, len, "?");
}

/* The index in NODES of the node PID's descriptors point at, or -1. */
static int holds(pid_t pid, char nodes[][PATH_MAX], size_t n_nodes)
{
    char dir[64], link[64 + 256], target[PATH_MAX];
    struct dirent *e;
    DIR *fds;
    int found = -1;

    snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
    if (!(fds = opendir(dir)))
        return -1;       /* gone, or not ours to read */
    while (found < 0 && (e = readdir(fds))) {
        ssize_t len;
        if (e->d_name[0] == '.')
            continue;
        snprintf(link, sizeof(link), "%s/%s", dir, e->d_name);
        len = readlink(link, target, sizeof(target) - 1);
        if (len <= 0)
            continue;
        target[len] = '\0';
        for (size_t i = 0; i < n_nodes; i++)
            if (strcmp(target, nodes[i]) == 0)
                found = (int)i;
    }
    closedir(fds);
    return found;
}

int gd_gpu_users(const struct gd_config *cfg, struct gd_gpu_user *users,
                 size_t max)
{
    static char nodes[GD_MAX_NODES][PATH_MAX];
    size_t n_nodes;
    pid_t self = getpid();
    struct dirent *e;
    DIR *proc;
    int n = 0;

    /* The names the kernel shows for an open node: its real path. */
    n_nodes = gd_gpu_nodes(cfg, nodes, sizeof(nodes) / sizeof(nodes[0]));
    if (n_nodes == 0)
        return 0;
    if (!(proc = opendir("/proc")))
        return -errno;
    while ((e = readdir(proc))) {
        pid_t pid;
        int which;
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        pid = (pid_t)atoi(e->d_name);
        if (pid == self || (which = holds(pid, nodes, n_nodes)) < 0)
            continue;
        if ((size_t)n < max) {
            users[n].pid = pid;
            read_comm(pid, users[n].comm, sizeof(users[n].comm));
            snprintf(users[n].node, sizeof(users[n].node), "%.*s",
                     (int)sizeof(users[n].node) - 1, nodes[which]);
        }
        n++;
    }
    closedir(proc);
    return n;
}
