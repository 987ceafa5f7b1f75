/* JSON rendering of the migration history for the HTTP API. */
#ifndef HD_JSON_H
#define HD_JSON_H

#include <stddef.h>

#include "buf.h"
#include "host-daemon/history/history.h"
#include "stats.h"

/*
 * Appends S as a JSON string, quotes included: '"' and '\\' escaped,
 * control characters as \n, \t, ... or \u00XX, DEL as \u007f, valid UTF-8
 * copied as is, and each byte of an invalid UTF-8 sequence (overlong forms,
 * surrogates, past U+10FFFF, truncated) as \ufffd, so that the output is
 * always valid JSON in valid UTF-8.  Returns 0 or OUT's error.
 */
int hd_json_put_string(struct hd_buf *out, const char *s);

/*
 * One migration as an object:
 *   {"id":..,"domain":..,"source":..,"destination":..,"mode":"live",
 *    "start_time":S,"end_time":S|null,"result":"ok","error":..,
 *    "bytes_moved":N}
 * then "steps":[{"phase":..,"pid":N|null,"program":..|null,
 * "start_offset":S,"duration":S},...] (STEPS may be NULL when N_STEPS is
 * 0).  -EINVAL: a mode or result out of range.
 */
int hd_json_migration(struct hd_buf *out, const struct hd_migration *m,
                      const struct hd_step *steps, size_t n_steps);

/* {"migrations":[...]}, each without steps. */
int hd_json_migration_list(struct hd_buf *out,
                           const struct hd_migration *list, size_t n);

/* json_views.c: the dashboard's views. */

/* {"migrations":[...],"total":T,"offset":O,"limit":L}: one page of LIST[N]
 * out of TOTAL that the filter took. */
int hd_json_page(struct hd_buf *out, const struct hd_migration *list,
                 size_t n, uint64_t total, uint64_t offset, size_t limit);

/*
 * ST as {"count":N (migrations the figures are over), "total":TOTAL (how
 * many the filter took), "all":G, "modes":[G live, G offline],
 * "trend":[{"start":S,"end":S,"count":N,"failed":N,"pre":D,"post":D,
 * "downtime":D,"downtime_live":D,"downtime_offline":D},...], "hosts":[G,...], "hosts_left_out":N,
 * "domains":[G,...], "domains_left_out":N}, where a group G is
 * {"name":..,"count":N,"results":{"running":N,"ok":N,...},"as_source":N,
 * "as_destination":N,"bytes_moved":N,"last_start":S|null,"pre":D,
 * "post":D,"downtime":D,"duration":D} and a distribution D is
 * {"n":N,"p50":S|null,"p95":S|null,"max":S|null,"sum":S|null}.
 */
int hd_json_stats(struct hd_buf *out, const struct hd_stats *st,
                  uint64_t total);


/* hd_json_migration with the hypervisor's job figures as "job" (JOB NULL:
 * none). */
int hd_json_migration_job(struct hd_buf *out, const struct hd_migration *m,
                          const struct hd_step *steps, size_t n_steps,
                          const struct hd_job_stats *job);

#endif /* HD_JSON_H */
