/* Finds a client's shared area among the proxy domain's ivshmem BARs. */
#ifndef PX_SHM_PCI_H
#define PX_SHM_PCI_H

#include "proto/shm.h"

#include <stddef.h>
#include <stdint.h>

/*
 * Maps the area whose header holds TOKEN (LEN bytes), at OFFSET of the
 * BAR 2 (`resource2`) of one of the ivshmem-plain devices (vendor 0x1af4,
 * device 0x1110) under ROOT.  Exactly one BAR may hold it: none is
 * -ENOENT, several -EEXIST (an area copied by someone who saw it), and
 * nothing stays mapped then.  PATH (PATH_LEN bytes) names the BAR found.
 */
int px_shm_pci_find(const char *root, const uint8_t *token, size_t len,
                    uint64_t offset, struct crn_shm *out, char *path,
                    size_t path_len);

#endif /* PX_SHM_PCI_H */
