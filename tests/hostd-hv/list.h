/* The hostd-hv tests: one TEST_TIMED(name, timeout in seconds) row each. */

/*
 * Expanded by harness.h (declarations) and by tests/unit/runner.c (its
 * table, compiled by host-daemon/hostd.mk against this list), so no include
 * guard.  A test's name starts with its file's area: event_* in
 * test_event.c, xml_* in test_xml.c, libvirt_* in test_libvirt.c, e2e_* in
 * test_e2e.c.  Rows run in this order.
 */

/* host-daemon/hv/hv_xml.c */
TEST_TIMED(xml_channel_path, 10)
TEST_TIMED(xml_name_uuid, 10)
TEST_TIMED(xml_alias, 10)
TEST_TIMED(xml_pci_hostdev, 10)
TEST_TIMED(xml_device_alias, 10)
TEST_TIMED(xml_malformed, 10)
TEST_TIMED(xml_limits, 30)

/* host-daemon/hv/hv_event.c */
TEST_TIMED(event_handle_readable, 30)
TEST_TIMED(event_handle_hangup_error, 30)
TEST_TIMED(event_handle_disable, 30)
TEST_TIMED(event_ids, 30)
TEST_TIMED(event_timeouts, 30)
TEST_TIMED(event_off_thread, 60)
TEST_TIMED(event_threads_stress, 120)
TEST_TIMED(event_shutdown_reattach, 30)

/* host-daemon/hv/hv_libvirt.c against test:///default */
TEST_TIMED(libvirt_lifecycle, 60)
TEST_TIMED(libvirt_threads, 120)
TEST_TIMED(libvirt_pci_holders, 60)
TEST_TIMED(libvirt_unsupported, 60)
TEST_TIMED(libvirt_open_errors, 60)

/* The same over a socket to a real libvirtd (test driver behind it);
 * skipped without CRANE_E2E_URI. */
TEST_TIMED(libvirt_remote_lifecycle, 120)
TEST_TIMED(libvirt_remote_threads, 180)

/* A booted QEMU guest on a real libvirtd: unplug and re-plug of ua-gpu0;
 * skipped without CRANE_E2E_URI.  Then live migration there (p2p) and
 * back (client-driven); skipped without CRANE_E2E_DEST_URI too. */
TEST_TIMED(e2e_hotplug, 300)
TEST_TIMED(e2e_migrate, 400)

/* crane-hostd's own parts (test_daemon.c): settings, event waits, the
 * prepared VMs and their leases, peer endpoints; the peer protocol over
 * loopback in test_peer.c (its stand-ins in peer_standins.c). */
TEST_TIMED(config_keys, 10)
TEST_TIMED(config_file, 10)
TEST_TIMED(peer_endpoint_for, 10)
TEST_TIMED(waits, 20)
TEST_TIMED(prepared_leases, 10)
/* crane-hostd's guest client (test_guest.c): commands by their row. */
TEST_TIMED(guest_send_by_row, 20)
TEST_TIMED(guest_send_refused, 20)
/* The running migrations as a cancel finds them (test_running.c). */
TEST_TIMED(running_cancel_copy_outran, 30)
TEST_TIMED(running_cancel_after_end, 30)
TEST_TIMED(running_cancel_prepared, 10)
TEST_TIMED(peer_auth, 30)
TEST_TIMED(peer_wrong_key, 30)
TEST_TIMED(peer_bad_input, 30)
TEST_TIMED(peer_arrive_validated, 30)
/* TLS on peer links (proto/tls.c; test_peer.c). */
TEST_TIMED(peer_tls_psk, 30)
TEST_TIMED(peer_tls_x509, 60)

/* virsh migrate's options in crane-hostd (test_migrate_opts.c). */
TEST_TIMED(migrate_tls_setting, 10)
TEST_TIMED(migrate_opts_checked, 10)
TEST_TIMED(migrate_libvirt_args, 10)

/* libxl migration streams over the peer protocol (XenStream), without
 * Xen: refusals, the handshake first, the client's fd against a stand-in
 * destination, and the libxl server's accept path (skipped without
 * libxen-dev; test_peer_xen.c). */
TEST_TIMED(peer_xen_stream_refused, 30)
TEST_TIMED(peer_xen_stream_before_auth, 30)
TEST_TIMED(peer_xen_stream_accepted, 30)
TEST_TIMED(peer_xen_stream_libxl_receiver, 30)

/* A VM's several GPUs against a stand-in hypervisor (test_gpus.c): the
 * pool's models, reservations all or none, unplug and plug as one set,
 * one plug of three failing, a GPU the guest never lets go, an offline
 * migration to a host with too few free refused before anything changes;
 * crane-hostctl resume's count, the count kept over a restart, memory. */
TEST_TIMED(gpus_config_model, 10)
TEST_TIMED(gpus_reserve_all_or_none, 10)
TEST_TIMED(gpus_detach_attach_set, 10)
TEST_TIMED(gpus_one_plug_fails, 10)
TEST_TIMED(gpus_never_released, 20)
TEST_TIMED(gpus_too_few_refused, 30)
TEST_TIMED(gpus_want_steps, 10)
TEST_TIMED(gpus_resume_count, 30)
TEST_TIMED(gpus_restart_waits_all, 30)
TEST_TIMED(gpus_mem_capability, 10)
