/* A migration job's figures as virsh 11 prints them: domjobinfo's lines
 * and migrate --verbose's progress. */
#include "migrate_cli.h"

#include <stdio.h>

/* virsh's vshPrettyCapacity: the value in the largest unit it reaches. */
static double pretty(uint64_t v, const char **unit)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB",
                                        "PiB", "EiB"};
    double d = (double)v;
    size_t i = 0;

    while (i + 1 < sizeof(units) / sizeof(units[0]) && v >= 1024ull << (10 * i)
           && (i < 6))
        i++;
    for (size_t k = 0; k < i; k++)
        d /= 1024.0;
    *unit = units[i];
    return d;
}

static void bytes_line(FILE *out, const char *label, uint64_t v)
{
    const char *unit;
    double d = pretty(v, &unit);

    fprintf(out, "%-17s %-.3lf %s\n", label, d, unit);
}

static void ms_line(FILE *out, const char *label, double seconds)
{
    fprintf(out, "%-17s %-12llu ms\n", label,
            (unsigned long long)(seconds * 1000.0 + 0.5));
}

void mig_print_jobinfo(FILE *out, const Crane__Hostd__JobStats *j)
{
    const char *unit;
    double d;

    fprintf(out, "%-17s %-12s\n", "Job type:",
            j->active ? "Unbounded" : "Completed");
    fprintf(out, "%-17s %-12s\n", "Operation:", "Outgoing migration");
    ms_line(out, "Time elapsed:", j->elapsed);
    bytes_line(out, "Data processed:", j->data_processed);
    bytes_line(out, "Data remaining:", j->data_remaining);
    bytes_line(out, "Data total:", j->data_total);
    bytes_line(out, "Memory processed:", j->memory_processed);
    bytes_line(out, "Memory remaining:", j->memory_remaining);
    bytes_line(out, "Memory total:", j->memory_total);
    d = pretty(j->memory_bps, &unit);
    fprintf(out, "%-17s %-.3lf %s/s\n", "Memory bandwidth:", d, unit);
    fprintf(out, "%-17s %-12llu pages/s\n", "Dirty rate:",
            (unsigned long long)j->dirty_rate);
    fprintf(out, "%-17s %-12llu bytes\n", "Page size:",
            (unsigned long long)j->page_size);
    fprintf(out, "%-17s %-12llu\n", "Iteration:",
            (unsigned long long)j->iterations);
    if (j->disk_total || j->disk_processed) {
        bytes_line(out, "File processed:", j->disk_processed);
        bytes_line(out, "File remaining:", j->disk_remaining);
        bytes_line(out, "File total:", j->disk_total);
        d = pretty(j->disk_bps, &unit);
        fprintf(out, "%-17s %-.3lf %s/s\n", "File bandwidth:", d, unit);
    }
    if (j->active)
        ms_line(out, "Expected downtime:", j->expected_downtime);
    else
        ms_line(out, "Total downtime:", j->downtime);
    ms_line(out, "Setup time:", j->setup_time);
}

double mig_job_percent(uint64_t remaining, uint64_t total)
{
    double progress = 100.0;

    /* virsh's virshPrintJobProgress: 100 only once nothing remains. */
    if (remaining != 0 && total != 0) {
        progress = 100.0 - (double)remaining * 100.0 / (double)total;
        if (progress >= 100.0)
            progress = 99.99;
        if (progress < 0)
            progress = 0;
    }
    /* Two decimals kept, not rounded, as virsh does. */
    return (int)(progress * 100) / 100.0;
}
