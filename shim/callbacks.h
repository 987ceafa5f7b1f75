/* Destructor-style callbacks the shim keeps itself, so that a re-home, which
 * releases and recreates vendor objects, never fires them early. */
#ifndef CRANE_SHIM_CALLBACKS_H
#define CRANE_SHIM_CALLBACKS_H

#include "shim.h"

typedef void(CL_CALLBACK *shim_destructor_fn)(void *handle, void *user_data);

struct shim_callback {
    shim_destructor_fn fn;
    void *user_data;
    struct shim_callback *next;  /* newest first: the spec's call order */
};

int shim_callback_push(struct shim_callback **list, shim_destructor_fn fn,
                       void *user_data);
/* Calls and frees every callback, newest first. */
void shim_callback_fire(struct shim_callback **list, void *handle);

#endif
