/* ivshmem-plain devices in a guest's sysfs (proto/ivshmem.h). */
#include "ivshmem.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#define IVSHMEM_VENDOR 0x1af4
#define IVSHMEM_PLAIN 0x1110

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

/* Memory decoding on for DEV (pci_enable_device through sysfs). */
static void enable_device(const char *root, const char *dev)
{
    char path[512], v[8] = "";
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s/enable", root, dev);
    if (!(f = fopen(path, "r+e")))
        return;
    if (fgets(v, sizeof(v), f) && v[0] == '0') {
        rewind(f);
        fputs("1", f);
    }
    fclose(f);
}

int crn_ivshmem_bar(const char *root, const char *dev, char *path,
                    size_t path_len, uint64_t *size)
{
    struct stat st;

    if (read_id(root, dev, "vendor") != IVSHMEM_VENDOR ||
        read_id(root, dev, "device") != IVSHMEM_PLAIN)
        return -ENODEV;
    snprintf(path, path_len, "%s/%s/resource2", root, dev);
    if (stat(path, &st) < 0)
        return -errno;
    enable_device(root, dev);
    *size = (uint64_t)st.st_size;
    return 0;
}
