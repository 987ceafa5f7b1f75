/* libvirt's event loop on crane-hostd's libuv loop: fd watches and timers. */
#ifndef HD_HV_EVENT_H
#define HD_HV_EVENT_H

#include <stdbool.h>
#include <uv.h>

/*
 * Makes LOOP run every libvirt event of this process (connection I/O,
 * keepalive, domain events): installs the hooks with virEventRegisterImpl
 * the first time, then attaches them to LOOP.  Call it on the thread that
 * runs LOOP, before the first virConnectOpen.  Returns 0 (also when already
 * attached to LOOP), -EBUSY when attached to another loop, or a uv error.
 *
 * libvirt may call the hooks from any thread: off the loop thread they only
 * record what libvirt wants and wake the loop, which applies it.
 */
int hv_event_register(uv_loop_t *loop);

/*
 * Detaches from the loop: closes every uv handle of the hooks, runs the
 * loop (UV_RUN_NOWAIT) until they are closed, and calls the free callbacks
 * of removed watches, so that uv_loop_close can succeed.  Call it on the
 * loop thread after uv_run has returned and after the last
 * virConnectClose.  Watches libvirt still holds stay registered, idle,
 * until hv_event_register attaches a loop again.
 */
void hv_event_shutdown(void);

/* Whether the caller runs on the attached loop's thread. */
bool hv_event_on_loop_thread(void);

#endif /* HD_HV_EVENT_H */
