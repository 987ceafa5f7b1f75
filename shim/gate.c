/* The call gate that a re-home closes to hold every OpenCL call still. */
#include <errno.h>
#include <linux/membarrier.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "proto/log.h"
#include "shim.h"

#include "proto/deadline.h"

SHIM_TLS bool shim_in_callback;
SHIM_TLS struct shim_gate_slot *shim_gate_slot;

struct shim_gate shim_gate = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .cond = PTHREAD_COND_INITIALIZER,
};

static pthread_key_t slot_key;
static pthread_once_t slot_once = PTHREAD_ONCE_INIT;

/* A thread that exits hands its slot to the next new thread. */
static void slot_free(void *p)
{
    struct shim_gate_slot *s = p;
    /* A later destructor of this thread may still call OpenCL: it must
     * claim a fresh slot, never write this one once another thread owns
     * it (slots are written without locked instructions). */
    shim_gate_slot = NULL;
    atomic_store(&s->inside, 0);
    atomic_store(&s->used, false);
}

/* membarrier(2) with the private expedited command needs registering once;
 * where the kernel (or a seccomp filter, or valgrind) refuses, every enter
 * pays a full fence instead. */
static void slot_setup(void)
{
    pthread_key_create(&slot_key, slot_free);
#ifdef __NR_membarrier
    shim_gate.asymmetric =
        syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,
                0, 0) == 0;
#endif
}

/* A full memory barrier on every CPU running one of our threads. */
static void fence_everyone(void)
{
#ifdef __NR_membarrier
    if (shim_gate.asymmetric &&
        syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0)
        return;
#endif
    atomic_thread_fence(memory_order_seq_cst);
}

struct shim_gate_slot *shim_gate_slot_claim(void)
{
    struct shim_gate_slot *s;

    pthread_once(&slot_once, slot_setup);
    for (s = atomic_load(&shim_gate.slots); s; s = s->next) {
        bool free_slot = false;
        if (atomic_compare_exchange_strong(&s->used, &free_slot, true))
            break;
    }
    if (!s) {
        /* Slots are never freed: the closer walks the list without a lock. */
        static struct shim_gate_slot spare;
        s = calloc(1, sizeof(*s));
        if (!s) {
            CRN_ERROR("gate: out of memory for a thread slot");
            s = &spare;  /* shared: still counts, only slower to close */
        }
        atomic_store(&s->used, true);
        s->next = atomic_load(&shim_gate.slots);
        while (!atomic_compare_exchange_weak(&shim_gate.slots, &s->next, s))
            ;
    }
    pthread_setspecific(slot_key, s);
    shim_gate_slot = s;
    return s;
}

/* Called from shim_enter() when the gate was closed: step back out, wait for
 * it to open, step in again.  The thread that closed it passes (it may be
 * re-homing from inside a call, through the test hook). */
void shim_gate_wait_open(void)
{
    struct shim_gate_slot *s = shim_gate_slot;

    for (;;) {
        if (pthread_equal(shim_gate.owner, pthread_self()) || shim_in_callback)
            return;
        pthread_mutex_lock(&shim_gate.lock);
        atomic_fetch_sub(&s->inside, 1);
        pthread_cond_broadcast(&shim_gate.cond);
        while (atomic_load(&shim_gate.closed))
            pthread_cond_wait(&shim_gate.cond, &shim_gate.lock);
        atomic_fetch_add(&s->inside, 1);
        pthread_mutex_unlock(&shim_gate.lock);
        atomic_thread_fence(memory_order_seq_cst);
        if (!atomic_load(&shim_gate.closed))
            return;
    }
}

void shim_gate_signal(void)
{
    pthread_mutex_lock(&shim_gate.lock);
    pthread_cond_broadcast(&shim_gate.cond);
    pthread_mutex_unlock(&shim_gate.lock);
}

/* Calls other threads are inside; the caller's own do not count (it may be
 * closing the gate from inside a call, through the test hook). */
static long others_inside(void)
{
    long n = 0;

    fence_everyone();
    for (struct shim_gate_slot *s = atomic_load(&shim_gate.slots); s;
         s = s->next)
        if (s != shim_gate_slot)
            n += atomic_load_explicit(&s->inside, memory_order_acquire);
    return n;
}

/* Closes the gate and waits until no other thread is inside a call.  A
 * leaving thread that sees the gate closed wakes us; the short timed wait
 * covers a wake-up that came between counting and waiting. */
int shim_gate_close(long timeout_ms)
{
    double deadline = shim_now() + timeout_ms / 1e3;

    pthread_once(&slot_once, slot_setup);
    pthread_mutex_lock(&shim_gate.lock);
    shim_gate.owner = pthread_self();
    atomic_store(&shim_gate.closed, 1);
    while (others_inside() > 0) {
        if (shim_now() > deadline) {
            atomic_store(&shim_gate.closed, 0);
            shim_gate.owner = (pthread_t)0;
            pthread_cond_broadcast(&shim_gate.cond);
            pthread_mutex_unlock(&shim_gate.lock);
            CRN_ERROR("re-home: %ld call(s) still running after %ld ms; "
                      "giving up",
                      others_inside(), timeout_ms);
            return -ETIMEDOUT;
        }
        struct timespec ts;
        crn_deadline_in(CLOCK_REALTIME, 1, &ts);
        pthread_cond_timedwait(&shim_gate.cond, &shim_gate.lock, &ts);
    }
    pthread_mutex_unlock(&shim_gate.lock);
    return 0;
}

void shim_gate_open(void)
{
    pthread_mutex_lock(&shim_gate.lock);
    shim_gate.owner = (pthread_t)0;
    atomic_store(&shim_gate.closed, 0);
    pthread_cond_broadcast(&shim_gate.cond);
    pthread_mutex_unlock(&shim_gate.lock);
}

/* --- the test hook: CRANE_REHOME_EVERY=N re-homes before every Nth call --- */

atomic_ulong shim_calls_until_rehome;
static unsigned long rehome_every;
/* The switch, handed down by the start: the gate is below it. */
static int (*hook_rehome)(struct shim_rehome_times *t);

void shim_test_hook_arm(unsigned long every,
                        int (*rehome)(struct shim_rehome_times *t))
{
    rehome_every = every;
    hook_rehome = rehome;
    atomic_store(&shim_calls_until_rehome, every);
}

void shim_test_hook_fire(void)
{
    if (atomic_fetch_sub(&shim_calls_until_rehome, 1) != 1 || shim_in_callback)
        return;
    atomic_store(&shim_calls_until_rehome, rehome_every);
    /* Another re-home under way: skip this one rather than deadlock. */
    if (pthread_mutex_trylock(&shim.rehome_lock) != 0)
        return;
    pthread_mutex_unlock(&shim.rehome_lock);
    struct shim_rehome_times t;
    int rc = hook_rehome(&t);
    if (rc < 0)
        CRN_WARN("test hook: re-home failed: %d; the program runs on", rc);
}
