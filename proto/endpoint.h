/* Endpoints written unix:PATH, tcp:HOST:PORT or vsock:CID:PORT: parsing
 * and connecting. */
#ifndef CRANE_PROTO_ENDPOINT_H
#define CRANE_PROTO_ENDPOINT_H

#include <stddef.h>

enum crn_endpoint_kind { CRN_EP_UNIX = 1, CRN_EP_TCP, CRN_EP_VSOCK };

/* vsock:any:PORT listens on every local CID (VMADDR_CID_ANY). */
#define CRN_VSOCK_CID_ANY 0xffffffffu

struct crn_endpoint {
    enum crn_endpoint_kind kind;
    char path[108];              /* unix: the socket path */
    char host[256];              /* tcp: host name or address */
    char port[12];               /* tcp, vsock: port number, as text */
    unsigned cid;                /* vsock: context id (2: the host) */
};

/* Parses TEXT into EP.  Returns 0, or -EINVAL for anything but a well-formed
 * unix:PATH (path fits a sockaddr_un) or tcp:HOST:PORT (port 0-65535, 0
 * for a listener that takes any free port, as crane-proxy logs; an IPv6
 * host is written in brackets, tcp:[::1]:7000) or vsock:CID:PORT (CID and
 * PORT 32-bit numbers, CID also "any"). */
int crn_endpoint_parse(const char *text, struct crn_endpoint *ep);

/* Connects a blocking, close-on-exec stream socket to EP (TCP with
 * TCP_NODELAY).  Returns the descriptor, or a negative errno. */
int crn_endpoint_connect(const struct crn_endpoint *ep);

/* The same, giving up on a TCP connect after TIMEOUT_MS (a host that
 * drops packets: -ETIMEDOUT or -EINPROGRESS instead of the kernel's two
 * minutes); the socket is blocking, without timeouts, once connected. */
int crn_endpoint_connect_within(const struct crn_endpoint *ep,
                                unsigned timeout_ms);

/* Writes EP back as text into BUF of LEN bytes, for logs. */
void crn_endpoint_format(const struct crn_endpoint *ep, char *buf,
                         size_t len);

/* The numeric IPv4 or IPv6 address of the peer of socket FD into OUT (LEN
 * bytes), for logs; "?" when it has none (a unix socket) or getpeername
 * fails. */
void crn_endpoint_peer_name(int fd, char *out, size_t len);

#endif /* CRANE_PROTO_ENDPOINT_H */
