/* ivshmem-plain devices as a Linux guest's sysfs shows them: the shared
 * memory between a guest and the proxy domain on one host. */
#ifndef CRANE_PROTO_IVSHMEM_H
#define CRANE_PROTO_IVSHMEM_H

#include <stddef.h>
#include <stdint.h>

/* Where a guest's PCI devices are. */
#define CRN_PCI_ROOT "/sys/bus/pci/devices"

/*
 * Whether the PCI device DEV under ROOT (a folder of devices named by
 * address, each with vendor, device, resource2) is ivshmem-plain (PCI
 * 1af4:1110): 0 with the resource file of its BAR 2 in PATH and its size
 * in *SIZE; -ENODEV when it is another device.  A device no driver took
 * may not decode its memory yet: enabled through its sysfs `enable` file
 * where that says 0.
 */
int crn_ivshmem_bar(const char *root, const char *dev, char *path,
                    size_t path_len, uint64_t *size);

#endif /* CRANE_PROTO_IVSHMEM_H */
