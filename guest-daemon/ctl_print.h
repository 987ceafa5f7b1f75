/* cranectl's output: the daemon's answers as tables for operators. */
#ifndef CTL_PRINT_H
#define CTL_PRINT_H

#include "proto/control.pb-c.h"

#include <stdio.h>

/* Prints ACK to OUT; returns ack->err (0 or a negative errno), and sets
 * *LOST to the programs it names lost to a fault. */
int ctl_print_ack(FILE *out, const Crane__Control__Ack *ack, size_t *lost);

#endif /* CTL_PRINT_H */
