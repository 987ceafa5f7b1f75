/* Host memory in the shared area: the region a remoted program's mapped
 * pointers live in, so that bytes from and to them are never copied by
 * the shim (docs/remoting.md, "Host memory in the shared area"). */
#ifndef SHIM_HOSTMEM_H
#define SHIM_HOSTMEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * One region per process: a sealed memfd of CRANE_SHM_HOST_MB MiB, made
 * the first time a connection with a memfd area (never an ivshmem BAR,
 * which is unplugged before its VM migrates) offers it to the proxy,
 * mapped until the process ends: a pointer into it stays valid whatever
 * happens to connections, areas and backends.  The proxy maps it and pins
 * it for its device (proxy-domain/hostmem.h); a buffer read or write
 * (plain or rect) whose host bytes lie wholly inside it names an offset
 * instead of carrying bytes.
 *
 * A child of fork keeps the mapping (its inherited pointers stay valid,
 * shared with the parent as MAP_SHARED memory is) but never allocates
 * from it nor offers it to a proxy: its maps live in the heap.
 *
 * Allocations are page-aligned and counted: the remote backend's map
 * holds one reference, a switch that carries the map (map.c) takes
 * another, and the memory returns to the region when the last goes.
 */

/* The region, made on the first call (CRANE_SHM_HOST_MB=0: none): its fd
 * (the process keeps it, each connection sends it) and size.  0 or a
 * negative errno. */
int shim_hostmem_region(int *fd, size_t *size);

/* LEN bytes (page-rounded) of the region with one reference; NULL when
 * there is no region or no room (the caller takes heap memory instead). */
void *shim_hostmem_alloc(size_t len);

/* Whether P is the start of a live allocation of the region. */
bool shim_hostmem_owns(const void *p);

/* Another reference to the allocation starting at P (shim_hostmem_owns). */
void shim_hostmem_retain(void *p);

/* Drops a reference to the allocation starting at P; P not in the region
 * is heap memory and is freed. */
void shim_hostmem_free(void *p);

/* Whether LEN bytes at P lie wholly inside the region; their offset in
 * it in *OFF. */
bool shim_hostmem_find(const void *p, size_t len, uint64_t *off);

/* Bytes of the region in use (allocated). */
size_t shim_hostmem_used(void);

#endif /* SHIM_HOSTMEM_H */
