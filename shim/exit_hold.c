/* At the program's exit, a switch under way ends first and none starts. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "log.h"
#include "shim.h"

/*
 * exit() runs its handlers newest first, and a vendor's libraries (PoCL's
 * LLVM) register theirs when they load.  A resume's switch that loaded the
 * vendor while the main thread was already in exit() had LLVM's statics
 * destroyed under its constructors (SIGSEGV in PassRegistry, guest/churn).
 * So the hold is registered again before every vendor load, and is then
 * the first handler to run: it takes the switches' lock, waiting for a
 * switch under way (bounded: one stuck past 10 s is left to the exit), and
 * keeps it to the end.  A switch that reaches a vendor load once the
 * program is exiting loads nothing (shim_exit_begun): the load would run
 * the vendor's constructors beside exit's teardown (the same crash where
 * exit began before the load's re-registration).  Registered once per load (a handful in a
 * program's life: a re-home keeps the vendor loaded by default); every
 * call after the first does nothing.
 */
static atomic_bool enabled;
static atomic_bool held;
static atomic_bool exiting;

static void hold_switches_at_exit(void)
{
    struct timespec until;

    if (!atomic_load(&enabled))
        return;
    atomic_store(&exiting, true);
    if (atomic_exchange(&held, true))
        return;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    if (pthread_mutex_timedlock(&shim.rehome_lock, &until) != 0)
        LOG_WARN("exit: a switch still runs after 10 s; exiting under it");
}

/*
 * Handlers cannot cover a load already under way when exit() begins: the
 * vendor's libraries register theirs while they load (LLVM's, newer than
 * any of the shim's), and exit() runs those first, under the constructors
 * still running (the same crash, 1 churn run in 10).  So where the shim is
 * preloaded (crane-run) it takes exit() itself: the hold comes before any
 * handler.  A return from main() reaches libc's exit() without it (libc
 * calls its own); the handlers above still cover that.
 */
SHIM_EXPORT void exit(int status)
{
    void (*libc_exit)(int) = (void (*)(int))dlsym(RTLD_NEXT, "exit");

    hold_switches_at_exit();
    if (!libc_exit)
        _Exit(status);
    libc_exit(status);
    __builtin_unreachable();
}

void shim_exit_hold_enable(void)
{
    if (!atomic_exchange(&enabled, true))
        atexit(hold_switches_at_exit);
}

void shim_exit_hold_rearm(void)
{
    if (atomic_load(&enabled) && !atomic_load(&held))
        atexit(hold_switches_at_exit);
}

bool shim_exit_begun(void)
{
    return atomic_load(&exiting);
}
