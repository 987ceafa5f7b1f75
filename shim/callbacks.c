/* Destructor callbacks the shim keeps itself (callbacks.h): a list per
 * object, newest first, fired once when the object is gone. */
#include <errno.h>
#include <stdlib.h>

#include "callbacks.h"

int shim_callback_push(struct shim_callback **list, shim_destructor_fn fn,
                       void *user_data)
{
    struct shim_callback *cb = malloc(sizeof(*cb));

    if (!cb)
        return -ENOMEM;
    cb->fn = fn;
    cb->user_data = user_data;
    cb->next = *list;
    *list = cb;
    return 0;
}

void shim_callback_fire(struct shim_callback **list, void *handle)
{
    struct shim_callback *cb = *list;

    *list = NULL;
    while (cb) {
        struct shim_callback *next = cb->next;
        cb->fn(handle, cb->user_data);
        free(cb);
        cb = next;
    }
}
