/* The backends' rows found by side, and the optional hooks asked with the
 * answer of a backend that has no connection where one has none. */
#include "backend.h"

#include "proto/log.h"

/* One row per side at most: the sides are the switch's only question. */
static const struct shim_backend_ops *rows[SHIM_SIDE_PROXY + 1];

void shim_backend_add(const struct shim_backend_ops *row)
{
    if ((unsigned)row->side >= sizeof(rows) / sizeof(rows[0]) ||
        rows[row->side]) {
        CRN_ERROR("backend %s: a second row for its side, not registered",
                  row->name);
        return;
    }
    rows[row->side] = row;
}

const struct shim_backend_ops *shim_backend_for(enum shim_side side)
{
    return (unsigned)side < sizeof(rows) / sizeof(rows[0]) ? rows[side] : NULL;
}

unsigned long shim_backend_generation(const struct shim_backend_ops *b)
{
    return b && b->generation ? b->generation() : 0;
}

bool shim_backend_alive(const struct shim_backend_ops *b)
{
    return !b || !b->alive || b->alive();
}

bool shim_backend_running(const struct shim_backend_ops *b, char *what,
                          size_t len, double *for_s)
{
    return b && b->running && b->running(what, len, for_s);
}

size_t shim_backend_reads_outstanding(const struct shim_backend_ops *b)
{
    return b && b->reads_outstanding ? b->reads_outstanding() : 0;
}

cl_int shim_backend_hand_over_deferred(const struct shim_backend_ops *b)
{
    return b && b->hand_over_deferred ? b->hand_over_deferred() : CL_SUCCESS;
}

void shim_backend_bulk_stats(const struct shim_backend_ops *b,
                             struct shim_bulk *out)
{
    if (b && b->bulk_stats)
        b->bulk_stats(out);
    else
        *out = (struct shim_bulk){0};
}

const char *shim_backend_transport(const struct shim_backend_ops *b)
{
    return b && b->transport ? b->transport() : NULL;
}

bool shim_backend_host_on(const struct shim_backend_ops *b)
{
    return b && b->host_on && b->host_on();
}

cl_ulong shim_backend_device_max_alloc(const struct shim_backend_ops *b,
                                       void *dev)
{
    return b && b->device_max_alloc ? b->device_max_alloc(dev) : 0;
}
