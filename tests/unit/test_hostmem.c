/* Unit tests of shim/hostmem.c: the host-memory region's allocations, their
 * references, and which ranges lie wholly inside it (only those go in
 * place; a range half in, half out is copied). */
#include "runner.h"

#include "shim/config.h"
#include "shim/hostmem.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

TEST(hostmem_region_allocations)
{
    size_t size, full = 1u << 20;
    uint64_t off;
    int fd;

    shim_config.shm_host_mb = 1;
    ASSERT_EQ(shim_hostmem_region(&fd, &size), 0);
    ASSERT_EQ(size, full);
    ASSERT(fd >= 0);
    unsigned char *a = shim_hostmem_alloc(0x60000);
    ASSERT(a != NULL);
    ASSERT(shim_hostmem_owns(a));
    ASSERT(!shim_hostmem_owns(a + 4096));
    ASSERT_EQ(shim_hostmem_used(), 0x60000u);
    /* The region's memory is ours to use. */
    memset(a, 0x5a, 0x60000);
    /* Ranges inside, and the first allocation starts the region. */
    ASSERT(shim_hostmem_find(a, 0x60000, &off));
    ASSERT_EQ(off, 0u);
    ASSERT(shim_hostmem_find(a + full - 16, 16, &off));
    ASSERT_EQ(off, full - 16);
    /* Half in, half out, either end; outside; NULL. */
    ASSERT(!shim_hostmem_find(a - 8, 16, &off));
    ASSERT(!shim_hostmem_find(a + full - 8, 16, &off));
    ASSERT(!shim_hostmem_find(a + full, 1, &off));
    ASSERT(!shim_hostmem_find(a, full + 1, &off));
    ASSERT(!shim_hostmem_find(NULL, 16, &off));
    unsigned char heap[64];
    ASSERT(!shim_hostmem_find(heap, sizeof(heap), &off));
    /* No room left: the caller takes the heap. */
    ASSERT(shim_hostmem_alloc(0xB0000) == NULL);
    /* A second reference keeps it (a switch carrying the map). */
    shim_hostmem_retain(a);
    shim_hostmem_free(a);
    ASSERT(shim_hostmem_owns(a));
    ASSERT(shim_hostmem_alloc(0xB0000) == NULL);
    shim_hostmem_free(a);
    ASSERT(!shim_hostmem_owns(a));
    ASSERT_EQ(shim_hostmem_used(), 0u);
    /* Room back; first fit reuses a hole. */
    unsigned char *b = shim_hostmem_alloc(0xB0000);
    ASSERT(b == a);
    unsigned char *c = shim_hostmem_alloc(1), *d = shim_hostmem_alloc(4096);
    ASSERT(c == a + 0xB0000 && d == c + 4096);
    shim_hostmem_free(c);
    ASSERT(shim_hostmem_alloc(100) == c);
    shim_hostmem_free(b);
    shim_hostmem_free(c);
    shim_hostmem_free(d);
    ASSERT_EQ(shim_hostmem_used(), 0u);
    /* Memory outside the region is the heap's: freed as such. */
    shim_hostmem_free(malloc(100));
    /* A child of fork keeps the parent's mapping but takes nothing from
     * it and names it to no proxy; the parent's allocation stays. */
    unsigned char *e = shim_hostmem_alloc(4096);
    ASSERT(e != NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int bad = shim_hostmem_alloc(4096) != NULL ||
                  shim_hostmem_find(e, 16, &off) ||
                  shim_hostmem_region(&fd, &size) != -ECHILD;
        shim_hostmem_free(e);
        e[0] = 1;                /* still mapped */
        _exit(bad);
    }
    int status = -1;
    ASSERT(pid > 0 && waitpid(pid, &status, 0) == pid);
    ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    ASSERT(shim_hostmem_owns(e));
    ASSERT_EQ(e[0], 1);
    shim_hostmem_free(e);
}
