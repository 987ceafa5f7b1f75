/* What proto/tls.c and proto/tls_io.c share of a TLS session: for them only. */
#ifndef CRANE_PROTO_TLS_INT_H
#define CRANE_PROTO_TLS_INT_H

#include "proto/tls.h"

#include <gnutls/gnutls.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct crn_tls_config {
    atomic_int refs;             /* the owner's, and one per session */
    enum crn_tls_mode mode;
    enum crn_tls_role role;
    gnutls_certificate_credentials_t x509_server, x509_client;
    gnutls_psk_client_credentials_t psk_client;
    gnutls_psk_server_credentials_t psk_server;
    uint8_t *key;
    size_t key_len;
    gnutls_priority_t prio;
};

struct crn_tls {
    gnutls_session_t s;
    struct crn_tls_config *cfg;  /* a reference: credentials outlive us */
    int fd;
    char peer[256];
    /* Records of one write gathered so that a piece goes out in a few
     * large sends, not one per 16 KiB record (tls_io.c). */
    pthread_mutex_t out_lock;
    uint8_t *out;                /* OUT_CAP bytes once first needed */
    size_t out_len;
    bool out_on;                 /* gathering for OUT_OWNER's write */
    pthread_t out_owner;
    int send_timeout_ms;         /* SO_SNDTIMEO now set on FD (0: none) */
};

/* The session's transport on T->fd (its send gathering), set before the
 * handshake; fini frees what it holds. */
void crn_tls_io_init(struct crn_tls *t);
void crn_tls_io_fini(struct crn_tls *t);

#endif /* CRANE_PROTO_TLS_INT_H */
