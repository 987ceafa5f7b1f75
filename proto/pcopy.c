/* Large memory copies spread over a few helper threads (proto/pcopy.h).
 *
 * One copy at a time goes through the helpers (a caller that finds them
 * busy copies alone).  The copy is cut into parts; the caller and every
 * helper take parts until none is left, and the caller returns only once
 * every part is copied and no helper still looks at its job, which lives
 * on the caller's stack.
 */
#include "pcopy.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_STREAM_LOADS 1
#endif

/* Parts are no smaller than this, so that waking a helper pays. */
#define PART_MIN (256u << 10)

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
    unsigned long generation;    /* bumped per copy */
    unsigned want;               /* threads per copy, the caller included */
    unsigned started;            /* helpers running in owner */
    pid_t owner;                 /* the process they run in */
    bool quit;                   /* helpers end (set_threads joins them) */
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

static void *helper_main(void *arg)
{
    unsigned long seen = 0;

    (void)arg;
    for (;;) {
        pthread_mutex_lock(&pc.lock);
        while (pc.generation == seen && !pc.quit)
            pthread_cond_wait(&pc.wake, &pc.lock);
        if (pc.quit) {
            pthread_mutex_unlock(&pc.lock);
            return NULL;
        }
        seen = pc.generation;
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
    if (parts > n)
        parts = n;
    if (parts < 1)
        parts = 1;
    j.part = (len / parts + 63) & ~(size_t)63;
    j.n_parts = (unsigned)((len + j.part - 1) / j.part);
    if (j.n_parts > 1) {
        pthread_mutex_lock(&pc.lock);
        pc.job = &j;
        pc.generation++;
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
        pthread_cond_broadcast(&pc.wake);
        pthread_mutex_unlock(&pc.lock);
        for (unsigned i = 0; i < pc.started; i++)
            pthread_join(pc.tids[i], NULL);
        pc.quit = false;
        pc.started = 0;
    }
    pc.want = n;
    pthread_mutex_unlock(&pc.busy);
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
