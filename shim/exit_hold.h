/* The hold on switches at the program's exit (exit_hold.c). */
#ifndef CRANE_SHIM_EXIT_HOLD_H
#define CRANE_SHIM_EXIT_HOLD_H

#include <stdbool.h>

/* From the shim's start, once a control thread may switch the program:
 * exit() holds switches from then on. */
void shim_exit_hold_enable(void);

/* Before each vendor load: the hold runs before the handlers that load
 * registers. */
void shim_exit_hold_rearm(void);

/* Whether the program is in exit(): no vendor is loaded then. */
bool shim_exit_begun(void);

#endif
