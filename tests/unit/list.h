/* The one list of unit tests: a TEST_ENTRY(name) row per TEST(name) body. */

/*
 * runner.c expands this file twice (declarations, then the table), so it
 * has no include guard.  Keep rows grouped by area, in the order they should
 * run; a test's name starts with its area, which is also its file's name
 * (frame_* tests live in test_frame.c).  Add the file to UNIT_SRCS too.
 */

/* proto/frame.c: tests/unit/test_frame.c */
TEST_ENTRY(frame_roundtrip_pipe)
TEST_ENTRY(frame_partial_writes)
TEST_ENTRY(frame_survives_signals)
TEST_ENTRY(frame_truncated)
TEST_ENTRY(frame_oversized)
TEST_ENTRY(frame_decode_incremental)
TEST_ENTRY(frame_zero_length)
TEST_ENTRY(frame_write_errors)

/* proto/shm.c: tests/unit/test_shm.c */
TEST_ENTRY(shm_ring_wraps_in_order)
TEST_ENTRY(shm_ring_full_then_freed)
TEST_ENTRY(shm_take_refuses_pieces_out_of_place)
TEST_ENTRY(shm_reserve_distrusts_consumed)
TEST_ENTRY(shm_map_refuses_bad_areas)
TEST_ENTRY(shm_file_part_and_token)
TEST_ENTRY(shm_claim_holds_room_until_released)

/* proto/fastpack.c: tests/unit/test_fastpack.c */
TEST_ENTRY(fastpack_launch_matches_protobuf_c)
TEST_ENTRY(fastpack_other_messages_are_protobuf_c)
TEST_ENTRY(fastpack_any_message_matches_protobuf_c)
TEST_ENTRY(fastpack_knows_every_field)

/* proto/lane.c: tests/unit/test_lane.c */
TEST_ENTRY(lane_header_round_trip_and_refusals)
TEST_ENTRY(lane_piece_check_takes_only_the_owed_piece)
TEST_ENTRY(lane_transfers_both_ways)
TEST_ENTRY(lane_refuses_hostile_pieces)
TEST_ENTRY(lane_fails_a_broken_or_stalled_piece)

/* proto/pcopy.c: tests/unit/test_pcopy.c */
TEST_ENTRY(pcopy_matches_memcpy)
TEST_ENTRY(pcopy_concurrent_callers)

/* proto/auth.c: tests/unit/test_auth.c */
TEST_ENTRY(auth_hmac_rfc4231)
TEST_ENTRY(auth_hmac_edges)
TEST_ENTRY(auth_random_bytes)
TEST_ENTRY(auth_key_load)
TEST_ENTRY(auth_equal)
/* proto/tls.c: tests/unit/test_tls.c */
TEST_ENTRY(tls_psk_relay)
TEST_ENTRY(tls_psk_wrong_key_refused)
TEST_ENTRY(tls_plain_client_refused)
TEST_ENTRY(tls_x509_mutual)
TEST_ENTRY(tls_modes)

/* proto/conffile.c: tests/unit/test_conffile.c */
TEST_ENTRY(conffile_read)
TEST_ENTRY(conffile_values)
/* proto/conftable.c: tests/unit/test_conftable.c */
TEST_ENTRY(conftable_defaults_and_values)
TEST_ENTRY(conftable_errors)
TEST_ENTRY(conftable_load)
TEST_ENTRY(conftable_bad_default)

/* proto/log.c: tests/unit/test_log.c */
TEST_ENTRY(log_format_journal_stream)
TEST_ENTRY(log_prefix_formats)

/* proto/map.c: tests/unit/test_map.c */
TEST_ENTRY(map_random)
TEST_ENTRY(map_pointers)
TEST_ENTRY(map_each_replace_churn)

/* proto/deadline.c: tests/unit/test_deadline.c */
TEST_ENTRY(deadline_add_ms)
TEST_ENTRY(deadline_in)

/* proto/listen.c, endpoint.c: tests/unit/test_listen.c */
TEST_ENTRY(listen_endpoint_vsock_parse)
TEST_ENTRY(listen_vsock_error)
TEST_ENTRY(listen_unix)
TEST_ENTRY(listen_tcp_port0)
TEST_ENTRY(listen_uv_unix)

/* proto/spin.c: tests/unit/test_spin.c */
TEST_ENTRY(spin_readable)
TEST_ENTRY(spin_env)

/* proxy-domain/validate.c: tests/unit/test_px.c */
TEST_ENTRY(px_validate_launch)
TEST_ENTRY(px_validate_mem)
TEST_ENTRY(px_validate_other)
TEST_ENTRY(px_validate_spec)
TEST_ENTRY(px_validate_program_bulk)
TEST_ENTRY(px_validate_svm)
TEST_ENTRY(px_remote_calls_rows)

/* proto/control_ops.def: tests/unit/test_control.c */
TEST_ENTRY(control_ops_rows)

/* shim/objects.c, dirty.c, kernel.c: tests/unit/test_shadow.c */
TEST_ENTRY(shadow_refcounts)
TEST_ENTRY(shadow_children_keep_parents)
TEST_ENTRY(shadow_creation_order)
TEST_ENTRY(shadow_find_live)
TEST_ENTRY(dirty_ranges)
TEST_ENTRY(dirty_sub_buffer_marks_parent)
TEST_ENTRY(dirty_rect)
TEST_ENTRY(args_only_writable_buffers_get_dirty)
TEST_ENTRY(args_bad_handles_are_errors)
TEST_ENTRY(entry_table_complete)

/* shim/remote_map.c, remote_dispatch.c: tests/unit/test_remote.c */
TEST_ENTRY(remote_map_ids)
TEST_ENTRY(remote_map_addresses)
TEST_ENTRY(remote_map_churn)
TEST_ENTRY(remote_table_every_row)
TEST_ENTRY(remote_table_refusals_answer)

/* shim/check.c: tests/unit/test_check.c */
TEST_ENTRY(check_buffer_io)
TEST_ENTRY(check_passthrough_leaves_it_to_the_vendor)
TEST_ENTRY(check_fill_buffer)
TEST_ENTRY(check_copy_buffer)
TEST_ENTRY(check_buffer_rect)
TEST_ENTRY(check_images)
TEST_ENTRY(check_migrate)
TEST_ENTRY(check_buffer_size)
TEST_ENTRY(check_launch)
TEST_ENTRY(check_copies_and_maps)

/* shim/kernel_sig.c: tests/unit/test_kernel_sig.c */
TEST_ENTRY(kernel_sig_classes)
TEST_ENTRY(kernel_sig_says_nothing_when_unsure)

/* shim/bytepath.c: tests/unit/test_bytepath.c */
TEST_ENTRY(bytepath_device_and_host)
TEST_ENTRY(bytepath_streams)
TEST_ENTRY(bytepath_remote_wire)

/* shim/timebase.c: tests/unit/test_timebase.c */
TEST_ENTRY(timebase_continues_across_devices)
TEST_ENTRY(timebase_first_reading_is_the_timeline)
TEST_ENTRY(timebase_new_generation_starts_after_the_old_one_ended)

/* shim/hostmem.c: tests/unit/test_hostmem.c */
TEST_ENTRY(hostmem_region_allocations)
