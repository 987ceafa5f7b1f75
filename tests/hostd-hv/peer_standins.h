/* Stand-ins the peer protocol's tests share (peer_standins.c). */
#ifndef HVT_PEER_STANDINS_H
#define HVT_PEER_STANDINS_H

#include "host-daemon/daemon.h"
#include "host-daemon/peer.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

struct crn_tls_config;

/* A destination crane-hostd serving one connection on a loopback port. */
struct server {
    struct hd_daemon d;
    int lfd;
    uint16_t port;
    pthread_t thread;
};

/* With KEY (NULL: none), backend OPS (NULL: none) and an empty pool. */
void server_start_ops(struct server *s, const char *key,
                      const struct hv_ops *ops);
void server_start(struct server *s, const char *key);
void server_stop(struct server *s);

/* The source's TLS in the tests that set it (NULL: in clear). */
extern struct crn_tls_config *client_tls;

/* hd_peer_open to S as host "src" with KEY (NULL: none). */
int open_peer(struct server *s, const char *key, struct hd_peer **p,
              char *why, size_t why_len);

/* The backend that accepts a XenStream, or NULL in a build without it. */
const struct hv_ops *libxl_ops(void);
/* A plain TCP connection to the loopback PORT. */
int raw_connect(uint16_t port);
/* One PeerReply frame from FD; NULL at the end of the stream or on
 * garbage. */
Crane__Hostd__PeerReply *read_reply(int fd);
/* Sends a XenStream for vm1 on FD, raw. */
void send_xen_stream(int fd, uint64_t id);
/* hd_peer_open_xen_stream to the loopback PORT as host "src". */
int open_stream(uint16_t port, const char *key, const char *id,
                const char *domain, int *fd, char *why, size_t len);

/*
 * A stand-in destination for the client side: the server's half of the
 * handshake with a key, then one answer to the XenStream request (MODE).
 */
enum double_mode {
    DOUBLE_ACCEPT,
    DOUBLE_REFUSE,          /* Refused{-EBUSY, text with a control byte} */
    DOUBLE_REFUSE_ODD,      /* Refused{err 7}: not an -errno */
    DOUBLE_WRONG_REPLY,     /* a CheckReply */
};

struct double_server {
    struct crn_tls_config *tls;  /* TLS first (double_start_tls) */
    int lfd;
    uint16_t port;
    pthread_t thread;
    const char *key;
    enum double_mode mode;
    char failed[200];       /* what went wrong there, "" when nothing */
    char migration_id[80], domain[300];
    uint8_t header[16];
};

/* TLS (NULL: none) is what the stand-in speaks under the protocol. */
void double_start_tls(struct double_server *ds, struct crn_tls_config *tls,
                      const char *key, enum double_mode mode);
void double_start(struct double_server *ds, const char *key,
                  enum double_mode mode);
void double_stop(struct double_server *ds);

#endif /* HVT_PEER_STANDINS_H */
