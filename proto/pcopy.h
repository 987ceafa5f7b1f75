/* Large memory copies spread over a few helper threads, for bulk bytes
 * that one core copies slower than the memory (or the bus) carries. */
#ifndef CRANE_PROTO_PCOPY_H
#define CRANE_PROTO_PCOPY_H

#include <stddef.h>

/* Copies below this many bytes stay on the calling thread. */
#define CRN_PCOPY_MIN (1u << 20)
/* Most threads one copy uses (the caller included). */
#define CRN_PCOPY_MAX_THREADS 16

/*
 * How many threads a large copy uses, the caller included: 1 copies on the
 * caller alone (the default until this is called); more starts that many
 * minus one helpers the first time a large copy runs, in this process
 * (children of a fork start their own).  Clamped to 1..CRN_PCOPY_MAX_THREADS.
 * Helpers already running end first (joined): 1 leaves none behind.
 */
void crn_pcopy_set_threads(unsigned n);
/* A sensible default for this machine: a quarter of its online CPUs,
 * between 1 and 8 (1 on a 2-core machine, 4 on a 16-core one). */
unsigned crn_pcopy_default_threads(void);

/* How long a helper polls for the next copy before it sleeps (SPIN_NS,
 * default 200000) and how many parts a copy has per thread (PARTS,
 * default 4): for benchmarks that compare (bench/remote/pcopybw). */
void crn_pcopy_tune(long spin_ns, unsigned parts);

/* memcpy (no overlap), spread over the helpers when LEN is large and none
 * is busy with another caller's copy (then it runs on the caller alone). */
void crn_pcopy(void *dst, const void *src, size_t len);

/* The same for a source that may be write-combined or uncached memory
 * (a vendor's pinned staging buffer): read with streaming loads where the
 * CPU has them, many times faster there, as fast as memcpy elsewhere. */
void crn_pcopy_from_pinned(void *dst, const void *src, size_t len);

#endif /* CRANE_PROTO_PCOPY_H */
