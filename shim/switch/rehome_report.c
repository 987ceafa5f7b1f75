/* The report of a switch: the log line and the line of CRANE_REPORT_FILE
 * with every phase's time, bytes and the pre-copy rounds. */
#include <stdio.h>
#include <string.h>

#include "rehome_int.h"

void shim_rehome_report_line(const char *line)
{
    FILE *f;

    if (!shim_config.report_file || !(f = fopen(shim_config.report_file, "ae")))
        return;
    fputs(line, f);
    fclose(f);
}

/* The bulk time between two snapshots A and B. */
void shim_rehome_bulk_since(struct shim_bulk *out, const struct shim_bulk *a,
                            const struct shim_bulk *b)
{
    out->out_copy_s = b->out_copy_s - a->out_copy_s;
    out->out_wait_s = b->out_wait_s - a->out_wait_s;
    out->in_copy_s = b->in_copy_s - a->in_copy_s;
}

void shim_rehome_report(const struct shim_rehome_times *t, int rc,
                        const char *from, const char *to)
{
    char line[1024];

    CRN_INFO("re-home #%u %s->%s %s: blocked %.3f ms = finish %.3f + extract %.3f "
             "+ release %.3f + unload %.3f + load %.3f + rebuild %.3f + "
             "reinject %.3f ms; %zu bytes out, %zu back (%zu with no CPU "
             "copy), %u objects",
             shim.rehomes, from, to, rc ? "FAILED" : "done", t->total * 1e3,
             t->finish * 1e3, t->extract * 1e3, t->release * 1e3,
             t->unload * 1e3, t->load * 1e3, t->rebuild * 1e3,
             t->reinject * 1e3, t->bytes_extracted, t->bytes_reinjected,
             t->ring.bytes, t->objects);
    snprintf(line, sizeof(line),
             "rehome n=%u rc=%d from=%s to=%s total=%.6f block=%.6f "
             "finish=%.6f extract=%.6f release=%.6f unload=%.6f load=%.6f "
             "rebuild=%.6f reinject=%.6f bytes_out=%zu bytes_back=%zu "
             "objects=%u\n",
             shim.rehomes, rc, from, to, t->total, t->block, t->finish,
             t->extract, t->release, t->unload, t->load, t->rebuild,
             t->reinject, t->bytes_extracted, t->bytes_reinjected,
             t->objects);
    /* Where extract and reinject spent their time (docs/results.md reads
     * these): the vendor's staged chunks (device waits, CPU copies) and
     * the proxy's bulk bytes as moved here (copies, waits for ring room;
     * the rest of a phase is the proxy's own work and the round trips). */
    size_t at = strlen(line) - 1;
    snprintf(line + at, sizeof(line) - at,
             " extract_dev=%.6f extract_copy=%.6f extract_ship=%.6f "
             "reinject_dev=%.6f reinject_copy=%.6f reinject_ship=%.6f "
             "reinject_ringwait=%.6f transport=%s streamed=%zu "
             "nocopy=%zu nocopy_dev=%.6f twins=%u prebuilt=%u "
             "prebuild=%.6f programs_kept=%u programs_compiled=%u\n",
             t->extract_staged.device_s, t->extract_staged.copy_s,
             t->extract_ship.in_copy_s, t->reinject_staged.device_s,
             t->reinject_staged.copy_s, t->reinject_ship.out_copy_s,
             t->reinject_ship.out_wait_s,
             t->transport ? t->transport : "none", t->bytes_streamed,
             t->ring.bytes, t->ring.device_s, t->twins, t->prebuilt,
             t->prebuild, t->programs_kept, t->programs_compiled);
    /* Pre-copy rounds before the stop, if any (precopy.c). */
    char pre[200];
    shim_precopy_describe(pre, sizeof(pre));
    if (pre[0]) {
        at = strlen(line) - 1;
        snprintf(line + at, sizeof(line) - at, "%s\n", pre);
    }
    /* A refused or failed move says why, on the same line. */
    const char *why = shim_devices_refusal()[0] ? shim_devices_refusal()
                                                : shim_rehome_reason();
    if (rc < 0 && why[0]) {
        at = strlen(line) - 1;
        snprintf(line + at, sizeof(line) - at, " reason=\"%s\"\n", why);
    }
    shim_rehome_report_line(line);
}
