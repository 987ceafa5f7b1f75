/* Large memory copies spread over a few helper threads (proto/pcopy.h).
 *
 * One copy at a time goes through the helpers (a caller that finds them
 * busy copies alone).  The copy is cut into parts; the caller and every
 * helper take parts until none is left, and the caller returns only once
 * every part is copied and no helper still looks at its job, which lives
 * on the caller's stack.
 *
 * Waking a sleeping helper takes tens to hundreds of microseconds on a
 * virtual machine (an idle vCPU is halted), about what a part of a few
 * MiB takes to copy: with one part per thread the caller took every part
 * itself before a helper woke, and large copies ran at one core's speed.
 * So a helper that finished a copy polls for the next one for 0.2 ms
 * before it sleeps (a switch's or a stream's copies come back to back),
 * and a copy has a few parts per thread, so that a helper that wakes late
 * still takes its share.
 */
#include "pcopy.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_STREAM_LOADS 1
#endif

/* Parts are no smaller than this, so that waking a helper pays. */
#define PART_MIN (256u << 10)
/* Parts per thread of a copy, and how long a helper polls for the next
 * copy before it sleeps (crn_pcopy_tune changes them, for pcopybw). */
static atomic_uint parts_per_thread = 4;
static atomic_long spin_ns = 200000L;

struct job {
    unsigned char *dst;
    const unsigned char *src;
    size_t len, part;
    unsigned n_parts;
    bool pinned;
    atomic_uint next;            /* the next part to take */
    atomic_uint done;            /* parts copied */
    unsigned active;             /* helpers inside it (under lock) */
};

static struct {
    pthread_mutex_t busy;        /* held by the one caller using helpers */
    pthread_mutex_t lock;        /* guards the fields below */
    pthread_cond_t wake, finished;
    struct job *job;             /* the current copy, NULL between copies */
    atomic_ulong generation;     /* bumped per copy (under lock) */
    unsigned want;               /* threads per copy, the caller included */
    unsigned started;            /* helpers running in owner */
    pid_t owner;                 /* the process they run in */
    bool quit;                   /* helpers end (set_threads joins them) */
    atomic_bool quit_flag;       /* the same, for a polling helper */
    pthread_t tids[CRN_PCOPY_MAX_THREADS];
} pc = {
    .busy = PTHREAD_MUTEX_INITIALIZER,
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
    .finished = PTHREAD_COND_INITIALIZER,
    .want = 1,
};

#ifdef HAVE_STREAM_LOADS
/* Reads SRC with MOVNTDQA, which fetches a whole line from write-combined
 * memory at once instead of one uncached read per load. */
__attribute__((target("sse4.1"))) static void copy_stream(
    unsigned char *dst, const unsigned char *src, size_t len)
{
    size_t head = (16 - ((uintptr_t)src & 15)) & 15;

    if (head > len)
        head = len;
    memcpy(dst, src, head);
    dst += head;
    src += head;
    len -= head;
    for (; len >= 64; len -= 64, src += 64, dst += 64) {
        __m128i a = _mm_stream_load_si128((__m128i *)(uintptr_t)src);
        __m128i b = _mm_stream_load_si128((__m128i *)(uintptr_t)(src + 16));
        __m128i c = _mm_stream_load_si128((__m128i *)(uintptr_t)(src + 32));
        __m128i d = _mm_stream_load_si128((__m128i *)(uintptr_t)(src + 48));
        _mm_storeu_si128((__m128i *)(void *)dst, a);
        _mm_storeu_si128((__m128i *)(void *)(dst + 16), b);
        _mm_storeu_si128((__m128i *)(void *)(dst + 32), c);
        _mm_storeu_si128((__m128i *)(void *)(dst + 48), d);
    }
    memcpy(dst, src, len);
}
#endif

static void copy_part(struct job *j, unsigned i)
{
    size_t off = (size_t)i * j->part;
    size_t n = j->len - off < j->part ? j->len - off : j->part;

#ifdef HAVE_STREAM_LOADS
    if (j->pinned && __builtin_cpu_supports("sse4.1")) {
        copy_stream(j->dst + off, j->src + off, n);
        return;
    }
#endif
    memcpy(j->dst + off, j->src + off, n);
}

/* Takes parts of J until none is left. */
static void work(struct job *j)
{
    unsigned i;

    while ((i = atomic_fetch_add(&j->next, 1)) < j->n_parts) {
        copy_part(j, i);
        atomic_fetch_add(&j->done, 1);
    }
}

static long elapsed_ns(const struct timespec *t0)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t0->tv_sec) * 1000000000L + (t.tv_nsec - t0->tv_nsec);
}

/* Polls up to SPIN_NS for a copy after SEEN (or the end). */
static void spin_for_next(unsigned long seen)
{
    struct timespec t0;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (unsigned i = 0;
         atomic_load_explicit(&pc.generation, memory_order_relaxed) == seen &&
         !atomic_load_explicit(&pc.quit_flag, memory_order_relaxed);
         i++) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
        if ((i & 63) == 0 && elapsed_ns(&t0) > atomic_load(&spin_ns))
            return;
    }
}

static void *helper_main(void *arg)
{
    unsigned long seen = 0;

    (void)arg;
    for (;;) {
        spin_for_next(seen);
        pthread_mutex_lock(&pc.lock);
        while (atomic_load(&pc.generation) == seen && !pc.quit)
            pthread_cond_wait(&pc.wake, &pc.lock);
        if (pc.quit) {
            pthread_mutex_unlock(&pc.lock);
            return NULL;
        }
        seen = atomic_load(&pc.generation);
        struct job *j = pc.job;
        if (j)
            j->active++;
        pthread_mutex_unlock(&pc.lock);
        if (!j)
            continue;
        work(j);
        pthread_mutex_lock(&pc.lock);
        j->active--;
        pthread_cond_broadcast(&pc.finished);
        pthread_mutex_unlock(&pc.lock);
    }
    return NULL;
}

/* Helpers for this process, started once (a fork's child has none of its
 * parent's threads).  Caller holds busy.  How many run. */
static unsigned helpers(void)
{
    pid_t self = getpid();

    if (pc.owner != self) {
        pc.owner = self;
        pc.started = 0;
    }
    while (pc.started + 1 < pc.want) {
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setstacksize(&a, 64u << 10);
        int rc = pthread_create(&pc.tids[pc.started], &a, helper_main, NULL);
        pthread_attr_destroy(&a);
        if (rc != 0) {
            pc.want = pc.started + 1;  /* as many as we could get */
            break;
        }
        pc.started++;
    }
    return pc.started;
}

static void copy(void *dst, const void *src, size_t len, bool pinned)
{
    struct job j = {.dst = dst, .src = src, .len = len, .pinned = pinned};
    unsigned threads = pc.want;  /* set once, at configuration */

    if (len < CRN_PCOPY_MIN || threads < 2 ||
        pthread_mutex_trylock(&pc.busy) != 0) {
        j.part = len ? len : 1;
        j.n_parts = len ? 1 : 0;
        work(&j);
        return;
    }
    unsigned n = helpers() + 1;
    size_t parts = len / PART_MIN;
    size_t most = (size_t)n * atomic_load(&parts_per_thread);
    if (parts > most)
        parts = most;
    if (parts < 1)
        parts = 1;
    j.part = (len / parts + 63) & ~(size_t)63;
    j.n_parts = (unsigned)((len + j.part - 1) / j.part);
    if (j.n_parts > 1) {
        pthread_mutex_lock(&pc.lock);
        pc.job = &j;
        atomic_fetch_add(&pc.generation, 1);
        pthread_cond_broadcast(&pc.wake);
        pthread_mutex_unlock(&pc.lock);
    }
    work(&j);
    if (j.n_parts > 1) {
        pthread_mutex_lock(&pc.lock);
        while (atomic_load(&j.done) < j.n_parts || j.active > 0)
            pthread_cond_wait(&pc.finished, &pc.lock);
        pc.job = NULL;
        pthread_mutex_unlock(&pc.lock);
    }
    pthread_mutex_unlock(&pc.busy);
}

void crn_pcopy(void *dst, const void *src, size_t len)
{
    copy(dst, src, len, false);
}

void crn_pcopy_from_pinned(void *dst, const void *src, size_t len)
{
    copy(dst, src, len, true);
}

void crn_pcopy_set_threads(unsigned n)
{
    if (n < 1)
        n = 1;
    if (n > CRN_PCOPY_MAX_THREADS)
        n = CRN_PCOPY_MAX_THREADS;
    pthread_mutex_lock(&pc.busy);
    /* The helpers end and start again, as many as wanted, at the next
     * large copy (those of another process, before a fork, are not ours
     * to join). */
    if (pc.owner == getpid() && pc.started > 0) {
        pthread_mutex_lock(&pc.lock);
        pc.quit = true;
        atomic_store(&pc.quit_flag, true);
        pthread_cond_broadcast(&pc.wake);
        pthread_mutex_unlock(&pc.lock);
        for (unsigned i = 0; i < pc.started; i++)
            pthread_join(pc.tids[i], NULL);
        pc.quit = false;
        atomic_store(&pc.quit_flag, false);
        pc.started = 0;
    }
    pc.want = n;
    pthread_mutex_unlock(&pc.busy);
}

void crn_pcopy_tune(long spin, unsigned parts)
{
    atomic_store(&spin_ns, spin < 0 ? 0 : spin);
    atomic_store(&parts_per_thread, parts < 1 ? 1 : parts);
}

unsigned crn_pcopy_default_threads(void)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    long n = cpus / 4;

    if (n < 1)
        n = 1;
    if (n > 8)
        n = 8;
    return (unsigned)n;
}
