/* TLS on crane's TCP links (GnuTLS): x509 in libvirt's PKI layout, or PSK. */
#ifndef CRANE_PROTO_TLS_H
#define CRANE_PROTO_TLS_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Every TCP link of crane (shim -> crane-proxy, crane-hostd peers and the
 * libxl stream, crane-hostd/cranectl -> crane-guestd's TCP host channel)
 * is wrapped the same way: connect or accept a plain socket, run the TLS
 * handshake on it with a deadline (crn_tls_client, crn_tls_server), then
 * either read and write records on the session itself where the bytes are
 * used (the shim's connection and lanes: a crn_stream, proto/stream.h), or
 * hand the session to a relay (crn_tls_relay) that gives back a socket
 * carrying the plaintext, for code that keeps reading and writing frames
 * on a descriptor, libuv loops included, or must pass it to another
 * process (crane-proxy's workers), which a live TLS session cannot.
 *
 * Modes (the `tls` setting of each daemon, CRANE_TLS for the shim):
 *   x509  mutual certificates in libvirt's layout under a PKI folder
 *         (default /etc/pki):  CA/cacert.pem,  libvirt/servercert.pem +
 *         libvirt/private/serverkey.pem (the accepting side),
 *         libvirt/clientcert.pem + libvirt/private/clientkey.pem (the
 *         connecting side).  Each side checks the other's certificate
 *         against the CA; a client also checks the server's name or
 *         address when it knows one.
 *   psk   TLS with a pre-shared key: the bytes of the existing key file.
 *   none  no TLS (unix sockets, or a TCP link an operator chose to leave
 *         in clear).
 *   auto  x509 when the PKI folder holds the CA and this side's pair,
 *         else psk when a key file is set, else none.
 */
enum crn_tls_mode { CRN_TLS_NONE, CRN_TLS_X509, CRN_TLS_PSK, CRN_TLS_AUTO };

/* Default PKI folder, libvirt's. */
#define CRN_TLS_PKI_DEFAULT "/etc/pki"

/* Which certificate pair a side presents (x509). */
enum crn_tls_role { CRN_TLS_CLIENT = 1, CRN_TLS_SERVER = 2,
                    CRN_TLS_BOTH = 3 };

struct crn_tls_config;
struct crn_tls;

/* Parses "x509", "psk", "none" or "auto" into *MODE; 0 or -EINVAL. */
int crn_tls_mode_parse(const char *text, enum crn_tls_mode *mode);
/* The TLS settings every daemon's config file takes: "tls" (auto, x509,
 * psk, none) into TLS and "pki_dir" (an absolute path) into PKI.  1 when
 * KEY is neither, else 0, or -EINVAL with *HINT saying what is wanted. */
int crn_tls_conf_setting(const char *key, const char *v, char *tls,
                         size_t tls_len, char *pki, size_t pki_len,
                         const char **hint);
const char *crn_tls_mode_name(enum crn_tls_mode mode);

/*
 * Makes the credentials of MODE for ROLE: PKI_DIR (NULL: /etc/pki) for
 * x509, the key file KEY_FILE for psk; auto is resolved here as the
 * comment above says.  *OUT is NULL for mode none (no TLS).  Returns 0, or
 * a negative errno with one line in WHY naming the file or setting at
 * fault.
 */
int crn_tls_config_new(enum crn_tls_mode mode, enum crn_tls_role role,
                       const char *pki_dir, const char *key_file,
                       struct crn_tls_config **out, char *why,
                       size_t why_len);
/* Drops the owner's reference; each session holds one of its own, so
 * relays still running keep their credentials. */
void crn_tls_config_free(struct crn_tls_config *cfg);
/* The resolved mode of CFG (none for NULL), for logs. */
enum crn_tls_mode crn_tls_config_mode(const struct crn_tls_config *cfg);

/*
 * The handshake on the connected, blocking socket FD, finished within
 * TIMEOUT_MS.  A client checks the server's certificate against PEER_NAME
 * (host name or address; NULL: the CA alone).  On success *OUT owns FD.
 * On failure FD is left open for the caller to close and WHY says what
 * went wrong (a peer without TLS, a certificate from another CA, a wrong
 * key, the deadline).  Returns 0, -EACCES (refused credentials), -ETIMEDOUT
 * or -EPROTO (anything else).
 */
int crn_tls_client(const struct crn_tls_config *cfg, int fd,
                   const char *peer_name, unsigned timeout_ms,
                   struct crn_tls **out, char *why, size_t why_len);
int crn_tls_server(const struct crn_tls_config *cfg, int fd,
                   unsigned timeout_ms, struct crn_tls **out, char *why,
                   size_t why_len);

/* Blocking record I/O on a session (proto/tls_io.c): read returns bytes
 * read, 0 at the peer's close, or a negative errno (-ETIMEDOUT past a
 * deadline); write_all writes all LEN bytes, a large write's records
 * gathered into sends of up to 256 KiB.  One thread may read while
 * another writes. */
long crn_tls_read(struct crn_tls *t, void *buf, size_t len);
int crn_tls_write_all(struct crn_tls *t, const void *buf, size_t len);
/* The same with a deadline of TIMEOUT_MS (-1: none) for the read, or for
 * each step of the write's progress. */
long crn_tls_read_timed(struct crn_tls *t, void *buf, size_t len,
                        int timeout_ms);
int crn_tls_write_all_timed(struct crn_tls *t, const void *buf, size_t len,
                            int timeout_ms);
/* Whether decrypted bytes wait in the session, to be read without the
 * socket being readable. */
bool crn_tls_pending(struct crn_tls *t);
/* Sends close_notify, closes the socket and frees T. */
void crn_tls_close(struct crn_tls *t);
/* Who the peer proved to be ("x509 CN=host1", "psk"), for logs. */
const char *crn_tls_peer(const struct crn_tls *t);

/*
 * Hands T to two threads that move bytes between it and a new socket pair
 * (one each way, so neither side can block the other), and returns the
 * descriptor of the pair's other end (close-on-exec, blocking): what the
 * caller writes there is sent encrypted, what the peer sends comes out
 * there.  Closing that descriptor ends the session (close_notify); the
 * peer closing ends it as end of file there.  T belongs to the relay from
 * then on, even on failure.  Returns the descriptor or a negative errno.
 */
int crn_tls_relay(struct crn_tls *t);

/*
 * The common case in one call: handshake on FD, then the relay.  Returns
 * the plaintext descriptor; on failure FD is closed and WHY says why.
 */
int crn_tls_wrap_client(const struct crn_tls_config *cfg, int fd,
                        const char *peer_name, unsigned timeout_ms,
                        char *why, size_t why_len);
int crn_tls_wrap_server(const struct crn_tls_config *cfg, int fd,
                        unsigned timeout_ms, char *why, size_t why_len);

#endif /* CRANE_PROTO_TLS_H */
