/* cranectl's output: the daemon's answers as tables for operators. */
#ifndef CTL_PRINT_H
#define CTL_PRINT_H

#include "proto/control.pb-c.h"

#include <stdio.h>

/* Prints ACK to OUT; returns ack->err (0 or a negative errno). */
int ctl_print_ack(FILE *out, const Crane__Control__Ack *ack);

#endif /* CTL_PRINT_H */
