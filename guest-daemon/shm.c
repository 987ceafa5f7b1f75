/* The host's shared-memory area for remoting to a proxy domain on the same
 * host: an ivshmem-plain device (PCI 1af4:1110) the host plugged into this
 * VM and the proxy domain; each remoting program gets a part of its BAR 2
 * (docs/remoting.md, "Shared memory"). */
#include "shm.h"

#include "proto/ivshmem.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FUNCTIONS 1024
#define PAGE 4096u
/* The smallest part worth a program: the header and two 64 KiB rings. */
#define MIN_PART (PAGE + (128u << 10))

int gd_shm_find(const char *root, const char *pci, uint64_t size, char *path,
                size_t path_len, uint64_t *bar_size, char *why,
                size_t why_len)
{
    char one[512] = "";
    uint64_t one_size = 0;
    unsigned found = 0, seen = 0;
    struct dirent *e;
    DIR *dir;

    /* The host's address names the device where the guest numbers its
     * buses as the host does (the root bus); elsewhere the scan finds it. */
    if (pci && *pci && !strchr(pci, '/') && strcmp(pci, "..") != 0 &&
        crn_ivshmem_bar(root, pci, path, path_len, bar_size) == 0 &&
        (!size || *bar_size == size))
        return 0;
    if (!(dir = opendir(root))) {
        int rc = -errno;
        snprintf(why, why_len, "cannot list %s: %s", root, strerror(-rc));
        return rc;
    }
    while ((e = readdir(dir)) && seen++ < MAX_FUNCTIONS) {
        char p[512];
        uint64_t s;
        if (e->d_name[0] == '.' ||
            crn_ivshmem_bar(root, e->d_name, p, sizeof(p), &s) < 0 ||
            (size && s != size))
            continue;
        if (found++ == 0) {
            snprintf(one, sizeof(one), "%s", p);
            one_size = s;
        }
    }
    closedir(dir);
    if (found != 1) {
        snprintf(why, why_len, "%s ivshmem-plain device%s of %llu bytes in "
                 "%s (the host named %s)", found ? "more than one" : "no",
                 found ? "s" : "", (unsigned long long)size, root,
                 pci && *pci ? pci : "none");
        return found ? -EEXIST : -ENOENT;
    }
    snprintf(path, path_len, "%s", one);
    *bar_size = one_size;
    return 0;
}

uint64_t gd_shm_part(uint64_t size, size_t n)
{
    uint64_t part;

    if (n == 0)
        n = 1;
    part = size / n;
    part = part >= (2u << 20) ? part / (1u << 20) * (1u << 20)
                              : part / PAGE * PAGE;
    return part >= MIN_PART ? part : 0;
}
