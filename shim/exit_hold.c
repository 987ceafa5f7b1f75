/* At the program's exit, a switch under way ends first and none starts. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "proto/log.h"
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
        CRN_WARN("exit: a switch still runs after 10 s; exiting under it");
}

/* The hold, then libc's exit(). */
static void exit_held(int status) __attribute__((noreturn));
static void exit_held(int status)
{
    void (*libc_exit)(int) = (void (*)(int))dlsym(RTLD_NEXT, "exit");

    hold_switches_at_exit();
    if (!libc_exit)
        _Exit(status);
    libc_exit(status);
    __builtin_unreachable();
}

/*
 * Handlers cannot cover a load already under way when exit() begins: the
 * vendor's libraries register theirs while they load (LLVM's, newer than
 * any of the shim's), and exit() runs those first, under the constructors
 * still running (the same crash, 1 churn run in 10).  So where the shim is
 * preloaded (crane-run) it takes exit() itself: the hold comes before any
 * handler.
 */
SHIM_EXPORT void exit(int status)
{
    exit_held(status);
}

/*
 * A return from main() reaches libc's exit() from inside libc, past the
 * exit() above.  So where the shim is preloaded it also takes
 * __libc_start_main (glibc's, which every program's _start calls) and
 * hands it a main that calls the real one and then goes out through the
 * same hold: a return from main is as safe as exit().  Where the shim is
 * only loaded as an ICD (dlopen'ed by a loader after the program started)
 * neither is taken and the handlers above are what applies.
 */
typedef int (*shim_main_fn)(int, char **, char **);
typedef int (*shim_start_main_fn)(shim_main_fn, int, char **, void (*)(void),
                                  void (*)(void), void (*)(void), void *);

static shim_main_fn program_main;

static int main_then_hold(int argc, char **argv, char **envp)
{
    int rc = program_main(argc, argv, envp);

    CRN_DEBUG("exit: main returned %d: out through the switches' hold", rc);
    exit_held(rc);
}

SHIM_EXPORT int __libc_start_main(shim_main_fn main, int argc, char **argv,
                                  void (*init)(void), void (*fini)(void),
                                  void (*rtld_fini)(void), void *stack_end)
{
    shim_start_main_fn real =
        (shim_start_main_fn)dlsym(RTLD_NEXT, "__libc_start_main");

    if (!real) {
        CRN_ERROR("exit: no __libc_start_main after the shim's");
        abort();
    }
    program_main = main;
    return real(main_then_hold, argc, argv, init, fini, rtld_fini,
                stack_end);
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
