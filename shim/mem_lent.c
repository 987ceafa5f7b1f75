/* Whether the program still lends a CL_MEM_USE_HOST_PTR object its host
 * memory: once it has released every memory object over that memory, the
 * memory is the program's again (it may free it), whatever the shim still
 * keeps alive for a kernel's arguments. */
#include "mem_int.h"

/* Whether a memory object over ROOT's host memory is still the program's
 * (its own references): ROOT itself, its sub-buffers, images over it. */
static bool still_named(const struct shim_mem *root)
{
    for (const struct shim_obj *o = shim_store_first(); o; o = o->next) {
        if (o->kind != SHIM_MEM || atomic_load(&o->app_refs) == 0)
            continue;
        if (shim_mem_root((struct shim_mem *)o) == root)
            return true;
    }
    return false;
}

/*
 * The program's last reference to M is gone, while the shim keeps M for
 * a kernel argument, a sub-buffer or an event.  If no object over the
 * same host memory is the program's any longer, that memory is no longer
 * lent: from now on no switch reads it, writes it or makes a real object
 * over it (its bytes are dead: nothing the program may still name can
 * reach them, and OpenCL lets it free the memory).  Without this a switch
 * copied the object's bytes into memory the program had freed.
 */
void shim_mem_unnamed(struct shim_obj *o)
{
    struct shim_mem *root = shim_mem_root((struct shim_mem *)o);

    if (!(root->flags & CL_MEM_USE_HOST_PTR) ||
        atomic_load(&root->host_returned))
        return;
    shim_store_lock();
    if (!still_named(root)) {
        atomic_store(&root->host_returned, true);
        CRN_DEBUG("memory: a %zu-byte object over the program's memory %p "
                  "is no longer the program's; a switch leaves its bytes",
                  root->size, root->host_ptr);
    }
    shim_store_unlock();
}

bool shim_mem_host_returned(struct shim_mem *m)
{
    return atomic_load(&shim_mem_root(m)->host_returned);
}
