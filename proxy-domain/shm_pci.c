/* Finds a client's shared area among the proxy domain's ivshmem BARs: the
 * guest and the proxy domain share an ivshmem-plain device (libvirt
 * <shmem>), which the proxy sees as a PCI device's BAR 2, not as a name the
 * client could give; the client's random token in the area's header says
 * which BAR is its. */
#include "shm_pci.h"

#include "proto/log.h"

#include "proto/ivshmem.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* PCI functions looked at, at most (a domain has a few dozen). */
#define MAX_FUNCTIONS 1024

int px_shm_pci_find(const char *root, const uint8_t *token, size_t len,
                    uint64_t offset, struct crn_shm *out, char *path,
                    size_t path_len)
{
    DIR *dir = opendir(root);
    struct dirent *e;
    unsigned seen = 0;
    int found = 0;

    if (!dir)
        return -errno;
    while ((e = readdir(dir)) && seen < MAX_FUNCTIONS) {
        struct crn_shm s = {.fd = -1};
        uint64_t bar_size;
        char bar[512];

        if (e->d_name[0] == '.')
            continue;
        seen++;
        if (crn_ivshmem_bar(root, e->d_name, bar, sizeof(bar), &bar_size) < 0)
            continue;
        /* A BAR that holds no area at OFFSET is someone else's. */
        if (crn_shm_map_file_at(bar, offset, 0, 0, &s) < 0)
            continue;
        if (!crn_shm_token_is(&s, token, len)) {
            crn_shm_close(&s);
            continue;
        }
        if (found++) {
            crn_shm_close(&s);
            crn_shm_close(out);
            CRN_WARN("shared area: its token is in %s and %s; refused",
                    path, bar);
            break;
        }
        *out = s;
        snprintf(path, path_len, "%s", bar);
    }
    closedir(dir);
    return found == 1 ? 0 : found ? -EEXIST : -ENOENT;
}
