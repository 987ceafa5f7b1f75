/* What reports show: a program's stoppage from its shim's times
 * (control.proto), sizes for people. */
#include "report.h"

#include <stdio.h>

double crn_held_seconds(const Crane__Control__StepTimes *t)
{
    if (!t)
        return 0;
    return t->block > t->total ? t->block + t->total : t->total;
}

void crn_format_bytes(char *buf, size_t len, unsigned long long b)
{
    if (b >= 1ull << 30)
        snprintf(buf, len, "%.1fGiB", b / 1073741824.0);
    else if (b >= 1ull << 20)
        snprintf(buf, len, "%.1fMiB", b / 1048576.0);
    else if (b >= 1ull << 10)
        snprintf(buf, len, "%.1fKiB", b / 1024.0);
    else
        snprintf(buf, len, "%lluB", b);
}
