/* The host daemon's unit tests: a TEST_ENTRY(name) row per TEST(name). */

/*
 * Expanded twice by tests/unit/runner.c (compiled by host-daemon/hostd.mk
 * against this list), so it has no include guard.  A test's name starts
 * with its area, which is also its file's name (history_* tests live in
 * test_history.c).
 */

/* host-daemon/history/history_write.c: tests/hostd/test_history.c */
TEST_ENTRY(history_roundtrip)
TEST_ENTRY(history_live_progress)
TEST_ENTRY(history_record_is_atomic)
TEST_ENTRY(history_reopen_keeps_everything)
TEST_ENTRY(history_newer_schema_refused)
TEST_ENTRY(history_concurrent_writer)
TEST_ENTRY(history_bad_inputs)
TEST_ENTRY(history_prune)

/* host-daemon/history/history_counters.c: tests/hostd/test_counters.c */
TEST_ENTRY(counters_survive_prune_and_restart)
TEST_ENTRY(counters_seeded_from_older_file)
TEST_ENTRY(counters_store_counts_once)
/* host-daemon/history/history_job.c: tests/hostd/test_history_job.c */
TEST_ENTRY(history_job_roundtrip)

/* host-daemon/history/backlog.c: tests/hostd/test_backlog.c */
TEST_ENTRY(backlog_history_store)
TEST_ENTRY(backlog_keep_and_flush)
TEST_ENTRY(backlog_dropped_survive_restart)

/* host-daemon/history/history_query.c, history_stats.c:
 * tests/hostd/test_history_query.c */
TEST_ENTRY(history_query_filters)
TEST_ENTRY(history_query_paging)
TEST_ENTRY(history_query_summaries)
TEST_ENTRY(history_query_destination_named)

/* host-daemon/web/stats.c: tests/hostd/test_stats.c */
TEST_ENTRY(stats_percentile)
TEST_ENTRY(stats_dist_skips_missing)
TEST_ENTRY(stats_groups_and_trend)
TEST_ENTRY(stats_groups_bounded)

/* host-daemon/web/metrics.c: tests/hostd/test_metrics.c */
TEST_ENTRY(metrics_golden)
TEST_ENTRY(metrics_empty_history)
TEST_ENTRY(metrics_bucket_bounds)
TEST_ENTRY(metrics_label_escaping)

/* host-daemon/web/json.c: tests/hostd/test_json.c */
TEST_ENTRY(json_string_escaping)
TEST_ENTRY(json_invalid_utf8)
TEST_ENTRY(json_migration_with_steps)
TEST_ENTRY(json_migration_list)
TEST_ENTRY(json_bad_inputs)

/* host-daemon/web/pool_report.c: tests/hostd/test_pool_report.c */
TEST_ENTRY(pool_report_json)
TEST_ENTRY(pool_report_placement)
TEST_ENTRY(pool_report_kubernetes)
TEST_ENTRY(pool_report_unknown_holders)
TEST_ENTRY(pool_report_empty)
TEST_ENTRY(pool_report_bad_inputs)

/* host-daemon/web/http.c: tests/hostd/test_http.c (built with libmicrohttpd) */
#ifdef HD_HAVE_HTTP
TEST_ENTRY(http_routes)
TEST_ENTRY(http_errors)
TEST_ENTRY(http_odd_requests)
TEST_ENTRY(http_filters_and_stats)
TEST_ENTRY(http_pool_and_gauges)
TEST_ENTRY(http_history_unreadable)
#endif
