/* The call gate that a re-home closes to hold every OpenCL call still. */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "log.h"
#include "shim.h"

__thread bool shim_in_callback;

struct shim_gate shim_gate = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .cond = PTHREAD_COND_INITIALIZER,
};

/* Called from shim_enter() when the gate was closed: step back out, wait for
 * it to open, step in again.  The thread that closed it passes (it may be
 * re-homing from inside a call, through the test hook). */
void shim_gate_wait_open(void)
{
    for (;;) {
        if (pthread_equal(shim_gate.owner, pthread_self()) || shim_in_callback)
            return;
        pthread_mutex_lock(&shim_gate.lock);
        atomic_fetch_sub(&shim_gate.inside, 1);
        pthread_cond_broadcast(&shim_gate.cond);
        while (atomic_load(&shim_gate.closed))
            pthread_cond_wait(&shim_gate.cond, &shim_gate.lock);
        atomic_fetch_add(&shim_gate.inside, 1);
        pthread_mutex_unlock(&shim_gate.lock);
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

/* Closes the gate and waits until no other thread is inside a call.
 * `self_inside` is 1 when the caller itself is inside a call. */
static int gate_close(long self_inside, long timeout_ms)
{
    struct timespec deadline;
    int rc = 0;

    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += timeout_ms / 1000;
    deadline.tv_nsec += (timeout_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&shim_gate.lock);
    shim_gate.owner = pthread_self();
    atomic_store(&shim_gate.closed, 1);
    while (atomic_load(&shim_gate.inside) > self_inside) {
        rc = pthread_cond_timedwait(&shim_gate.cond, &shim_gate.lock,
                                    &deadline);
        if (rc == ETIMEDOUT) {
            atomic_store(&shim_gate.closed, 0);
            shim_gate.owner = (pthread_t)0;
            pthread_cond_broadcast(&shim_gate.cond);
            pthread_mutex_unlock(&shim_gate.lock);
            LOG_ERROR("re-home: %ld call(s) still running after %ld ms; "
                      "giving up",
                      atomic_load(&shim_gate.inside) - self_inside,
                      timeout_ms);
            return -ETIMEDOUT;
        }
    }
    pthread_mutex_unlock(&shim_gate.lock);
    return 0;
}

static __thread long gate_self_inside;

int shim_gate_close(long timeout_ms)
{
    return gate_close(gate_self_inside, timeout_ms);
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

void shim_test_hook_arm(unsigned long every)
{
    rehome_every = every;
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
    gate_self_inside = 1;
    int rc = shim_rehome(&t);
    gate_self_inside = 0;
    if (rc < 0)
        LOG_WARN("test hook: re-home failed: %d; the program runs on", rc);
}
