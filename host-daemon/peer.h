/* The host-to-host protocol: the source's client, the destination's server. */
#ifndef HD_PEER_H
#define HD_PEER_H

#include "daemon.h"
#include "proto/hostd.pb-c.h"
#include "proto/tls.h"

#include <stddef.h>
#include <stdint.h>

/* What a peer may send in one frame. */
#define HD_PEER_MAX_FRAME (64u * 1024)

struct hd_peer;

/*
 * Connects to the crane-hostd at ENDPOINT (tcp:HOST:PORT), speaks TLS
 * with TLS (NULL: in clear; x509 checks the peer's certificate against
 * HOST), and authenticates both ways with KEY (NULL: none; then a peer that asks for
 * one is refused, and so is one that does not when we have one).  WHY
 * gets one line on failure.  -ECONNREFUSED, -ETIMEDOUT, -EACCES (keys
 * differ), -EPROTO.
 */
int hd_peer_open(const char *endpoint, const struct crn_tls_config *tls,
                 const uint8_t *key, size_t key_len,
                 const char *my_host, struct hd_peer **out, char *why,
                 size_t why_len);
/* The peer's host name, as it said. */
const char *hd_peer_host(const struct hd_peer *p);
/* Sends REQ (its id is set here) and waits up to TIMEOUT_MS for the reply
 * with its id; *OUT is freed with crane__hostd__peer_reply__free_unpacked. */
int hd_peer_call(struct hd_peer *p, Crane__Hostd__PeerRequest *req,
                 uint32_t timeout_ms, Crane__Hostd__PeerReply **out);
void hd_peer_close(struct hd_peer *p);

/*
 * Opens a connection of its own to the crane-hostd at ENDPOINT,
 * authenticated as hd_peer_open does, and asks it to receive a libxl
 * migration stream (XenStream, proto/hostd.proto) of DOMAIN for migration
 * MIGRATION_ID.  Once it accepts, *FD is that connection's socket, blocking,
 * in step just after the accepting frame (with TLS, the plaintext socket
 * of its relay, proto/tls.h, so the stream is encrypted): the caller owns it, writes the
 * conversation of hv_libxl.h on it, and closes it.  WHY gets one line on
 * failure.  The errors of hd_peer_open; -EINVAL for a bad id or name;
 * the destination's own -errno when it refuses (-EOPNOTSUPP: its backend
 * is not libxl); -EPROTO for any other answer.
 */
int hd_peer_open_xen_stream(const char *endpoint,
                            const struct crn_tls_config *tls,
                            const uint8_t *key, size_t key_len, const char *my_host,
                            const char *migration_id, const char *domain,
                            int *fd, char *why, size_t why_len);

/* Serves one accepted peer connection FD until it closes (a job thread);
 * owns FD.  With d->tls it first runs the TLS handshake and serves the
 * relay's plaintext socket.  A XenStream request, when this host's backend is libxl, hands
 * the rest of the connection to hv_libxl_receive on this thread and ends
 * it after; any other backend refuses it. */
void hd_peer_serve(struct hd_daemon *d, int fd);

#endif /* HD_PEER_H */
