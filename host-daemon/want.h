/* The GPUs a VM needs, as the wire says them and as the history keeps
 * them so that a VM waiting for them still does after a restart. */
#ifndef HD_WANT_H
#define HD_WANT_H

#include "pool.h"
#include "host-daemon/history/history.h"

#include <stddef.h>
#include <stdint.h>

/* The history step (phase) that keeps one GPU a waiting VM needs:
 * "gpu-want" (any model) or "gpu-want:MODEL", with "@GIB" after it when
 * its memory is said. */
#define HD_WANT_STEP "gpu-want"
/* The longest model a gpu-want step keeps (the phase's bound less the
 * prefix); a longer one is kept as any model. */
#define HD_WANT_STEP_MODEL_MAX (HD_PHASE_MAX - 9 - 6)

/* OUT from the wire: COUNT GPUs (0: as many as MODELS names, at least one
 * when that is none too), MODELS[0..N_MODELS) the models of the first ones
 * ("" any), the others any model.  -EINVAL: COUNT over HD_MAX_GPUS, more
 * models than COUNT, or a model that is not [A-Za-z0-9_.-] under 64. */
int hd_want_parse(uint32_t count, char *const *models, size_t n_models,
                  struct hd_gpu_want *out);

/* The memory of WANT's first N GPUs, MEM[0..N) GiB (0: not said).
 * -EINVAL: more than WANT's GPUs, or one over 65536. */
int hd_want_set_mem(struct hd_gpu_want *want, const uint32_t *mem,
                    size_t n);

/* A want of N GPUs (N 0 or 1: one, as hd_gpu_want's N 0 says) of any
 * model. */
void hd_want_any(struct hd_gpu_want *out, size_t n);

/* How many GPUs WANT stands for (its N 0 is one). */
size_t hd_want_count(const struct hd_gpu_want *want);

/* The phase of the history step that keeps GPU K of WANT, into OUT. */
void hd_want_step(const struct hd_gpu_want *want, size_t k, char *out,
                  size_t len);

/* The want STEPS[0..N) keep (their gpu-want steps, the newest set of
 * them); one GPU of any model when none does (a history written before
 * they were). */
void hd_want_from_steps(const struct hd_step *steps, size_t n,
                        struct hd_gpu_want *out);

#endif /* HD_WANT_H */
