/* Finds a client's shared area among the proxy domain's ivshmem BARs: the
 * guest and the proxy domain share an ivshmem-plain device (libvirt
 * <shmem>), which the proxy sees as a PCI device's BAR 2, not as a name the
 * client could give; the client's random token in the area's header says
 * which BAR is its. */
#include "shm_pci.h"

#include "log.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IVSHMEM_VENDOR 0x1af4
#define IVSHMEM_PLAIN 0x1110
/* PCI functions looked at, at most (a domain has a few dozen). */
#define MAX_FUNCTIONS 1024

/* The hexadecimal number in ROOT/DEV/FILE (sysfs: "0x1af4\n"), or -1. */
static long read_id(const char *root, const char *dev, const char *file)
{
    char path[512], text[32] = "";
    FILE *f;
    char *end;
    long v;

    snprintf(path, sizeof(path), "%s/%s/%s", root, dev, file);
    if (!(f = fopen(path, "re")))
        return -1;
    if (!fgets(text, sizeof(text), f))
        text[0] = '\0';
    fclose(f);
    v = strtol(text, &end, 16);
    return end == text ? -1 : v;
}

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
        char bar[512];

        if (e->d_name[0] == '.')
            continue;
        seen++;
        if (read_id(root, e->d_name, "vendor") != IVSHMEM_VENDOR ||
            read_id(root, e->d_name, "device") != IVSHMEM_PLAIN)
            continue;
        snprintf(bar, sizeof(bar), "%s/%s/resource2", root, e->d_name);
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
            PX_WARN("shared area: its token is in %s and %s; refused",
                    path, bar);
            break;
        }
        *out = s;
        snprintf(path, path_len, "%s", bar);
    }
    closedir(dir);
    return found == 1 ? 0 : found ? -EEXIST : -ENOENT;
}
