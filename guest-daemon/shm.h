/* The host's shared-memory area for remoting: finding its ivshmem device
 * and sharing it out among the programs. */
#ifndef GD_SHM_H
#define GD_SHM_H

#include <stddef.h>
#include <stdint.h>

/*
 * The resource file of the ivshmem-plain device's BAR 2 under ROOT into
 * PATH: the device PCI (as the host's libvirt addressed it) if it is one,
 * else the only ivshmem-plain device whose BAR is SIZE bytes (SIZE 0: of
 * any size).  *BAR_SIZE gets its size.  Returns 0, or a negative errno
 * with WHY set.
 */
int gd_shm_find(const char *root, const char *pci, uint64_t size, char *path,
                size_t path_len, uint64_t *bar_size, char *why,
                size_t why_len);

/* Each of N programs' part of a BAR of SIZE bytes: equal, whole MiB where
 * the parts are that large, else whole pages; 0 when too small. */
uint64_t gd_shm_part(uint64_t size, size_t n);

#endif /* GD_SHM_H */
