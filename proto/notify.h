/* Readiness and stopping told to systemd (sd_notify's protocol, no libsystemd). */
#ifndef CRANE_PROTO_NOTIFY_H
#define CRANE_PROTO_NOTIFY_H

/* Takes $NOTIFY_SOCKET (set by systemd for a Type=notify service) out of
 * the environment, so that no child ever speaks for this process; call it
 * first in main, before any child starts. */
void crn_notify_init(void);
/* Sends STATE ("READY=1" once listening, "STOPPING=1" when a clean stop
 * begins) to the socket crn_notify_init took: one datagram.  Returns 0
 * (also when there is no socket: not started by systemd), or -errno. */
int crn_notify(const char *state);

#endif /* CRANE_PROTO_NOTIFY_H */
