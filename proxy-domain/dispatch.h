/* Executing a tenant's requests in order: each by its row's executor. */
#ifndef PX_DISPATCH_H
#define PX_DISPATCH_H

#include "req.h"
#include "tenant.h"

#include <stdatomic.h>
#include <stddef.h>

void px_req_free(struct px_req *r);
/* Frees a list linked through next. */
void px_req_free_list(struct px_req *r);

/*
 * Executes REQS in order for T, freeing them, or with DONE not NULL
 * putting each executed one (its bulk bytes freed) on *DONE for the
 * caller to free: memory the loop thread allocated is best freed there
 * (malloc's per-thread caches; a free from another thread takes the
 * arena's lock each time).  Before anything else and before every Reply
 * it sends the data of completed pending reads.  Stops executing (and
 * only frees) once *STOP is set.  Runs on a worker thread.
 */
void px_exec_batch(struct px_tenant *t, struct px_req *reqs,
                   const atomic_bool *stop, struct px_req **done);

/* Executes one request and frees it.  Used by px_exec_batch and fuzzing. */
void px_exec_one(struct px_tenant *t, struct px_req *r);

/* Ends a tenant: aborts user events never set, waits for pending reads,
 * releases every object.  Returns how many objects were released. */
size_t px_exec_teardown(struct px_tenant *t);

#endif /* PX_DISPATCH_H */
