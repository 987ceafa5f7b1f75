/* A program's stoppage from the times its shim reports (control.proto). */
#include "stoppage.h"

double crn_held_seconds(const Crane__Control__StepTimes *t)
{
    if (!t)
        return 0;
    return t->block > t->total ? t->block + t->total : t->total;
}
