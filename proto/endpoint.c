/* Endpoints written unix:PATH, tcp:HOST:PORT or vsock:CID:PORT: parsing
 * and connecting. */
#include "proto/endpoint.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <linux/vm_sockets.h>
#include <unistd.h>

static int parse_tcp(const char *s, struct crn_endpoint *ep)
{
    const char *colon, *host = s;
    size_t host_len;

    if (*s == '[') {
        const char *end = strchr(s, ']');
        if (!end || end[1] != ':')
            return -EINVAL;
        host = s + 1;
        host_len = (size_t)(end - host);
        colon = end + 1;
    } else {
        colon = strrchr(s, ':');
        if (!colon)
            return -EINVAL;
        host_len = (size_t)(colon - s);
    }
    if (host_len == 0 || host_len >= sizeof(ep->host))
        return -EINVAL;
    char *end;
    errno = 0;
    long port = strtol(colon + 1, &end, 10);
    if (errno || *end || end == colon + 1 || port < 0 || port > 65535)
        return -EINVAL;
    memcpy(ep->host, host, host_len);
    ep->host[host_len] = '\0';
    snprintf(ep->port, sizeof(ep->port), "%ld", port);
    ep->kind = CRN_EP_TCP;
    return 0;
}

/* A decimal 32-bit number, the whole of [S, END). */
static int parse_u32(const char *s, const char *end, unsigned *out)
{
    unsigned long long v = 0;

    if (s == end || end - s > 10)
        return -EINVAL;
    for (; s < end; s++) {
        if (*s < '0' || *s > '9')
            return -EINVAL;
        v = v * 10 + (unsigned)(*s - '0');
    }
    if (v > 0xffffffffull)
        return -EINVAL;
    *out = (unsigned)v;
    return 0;
}

static int parse_vsock(const char *s, struct crn_endpoint *ep)
{
    const char *colon = strchr(s, ':');
    unsigned cid, port;

    if (!colon)
        return -EINVAL;
    if (colon - s == 3 && strncmp(s, "any", 3) == 0)
        cid = CRN_VSOCK_CID_ANY;
    else if (parse_u32(s, colon, &cid) < 0)
        return -EINVAL;
    if (parse_u32(colon + 1, colon + 1 + strlen(colon + 1), &port) < 0)
        return -EINVAL;
    ep->cid = cid;
    snprintf(ep->port, sizeof(ep->port), "%u", port);
    ep->kind = CRN_EP_VSOCK;
    return 0;
}

int crn_endpoint_parse(const char *text, struct crn_endpoint *ep)
{
    if (!text || !ep)
        return -EINVAL;
    memset(ep, 0, sizeof(*ep));
    if (strncmp(text, "unix:", 5) == 0) {
        size_t n = strlen(text + 5);
        if (n == 0 || n >= sizeof(ep->path))
            return -EINVAL;
        memcpy(ep->path, text + 5, n + 1);
        ep->kind = CRN_EP_UNIX;
        return 0;
    }
    if (strncmp(text, "tcp:", 4) == 0)
        return parse_tcp(text + 4, ep);
    if (strncmp(text, "vsock:", 6) == 0)
        return parse_vsock(text + 6, ep);
    return -EINVAL;
}

static int connect_unix(const struct crn_endpoint *ep)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return -errno;
    memcpy(sa.sun_path, ep->path, strlen(ep->path) + 1);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        int err = -errno;
        close(fd);
        return err;
    }
    return fd;
}

static int connect_tcp(const struct crn_endpoint *ep, unsigned timeout_ms)
{
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    struct timeval none = {0, 0};
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res, *ai;
    int err = -ECONNREFUSED, one = 1;

    int gai = getaddrinfo(ep->host, ep->port, &hints, &res);
    if (gai != 0)
        return gai == EAI_SYSTEM ? -errno : -EHOSTUNREACH;
    for (ai = res; ai; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
                        ai->ai_protocol);
        if (fd < 0) {
            err = -errno;
            continue;
        }
        /* Linux bounds connect() by the send timeout. */
        if (timeout_ms)
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
            if (timeout_ms)
                setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &none, sizeof(none));
            freeaddrinfo(res);
            return fd;
        }
        err = -errno;
        close(fd);
    }
    freeaddrinfo(res);
    return err;
}

static int connect_vsock(const struct crn_endpoint *ep)
{
    struct sockaddr_vm sa = {.svm_family = AF_VSOCK,
                             .svm_cid = ep->cid,
                             .svm_port = (unsigned)strtoul(ep->port, NULL,
                                                           10)};
    int fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return -errno;
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        int err = -errno;
        close(fd);
        return err;
    }
    return fd;
}

int crn_endpoint_connect(const struct crn_endpoint *ep)
{
    if (!ep)
        return -EINVAL;
    switch (ep->kind) {
    case CRN_EP_UNIX: return connect_unix(ep);
    case CRN_EP_TCP: return connect_tcp(ep, 0);
    case CRN_EP_VSOCK: return connect_vsock(ep);
    default: return -EINVAL;
    }
}

int crn_endpoint_connect_within(const struct crn_endpoint *ep,
                                unsigned timeout_ms)
{
    if (ep == NULL)
        return -EINVAL;
    return ep->kind == CRN_EP_TCP ? connect_tcp(ep, timeout_ms ? timeout_ms : 1)
                                  : crn_endpoint_connect(ep);
}

void crn_endpoint_format(const struct crn_endpoint *ep, char *buf,
                         size_t len)
{
    if (ep->kind == CRN_EP_UNIX)
        snprintf(buf, len, "unix:%s", ep->path);
    else if (ep->kind == CRN_EP_VSOCK && ep->cid == CRN_VSOCK_CID_ANY)
        snprintf(buf, len, "vsock:any:%s", ep->port);
    else if (ep->kind == CRN_EP_VSOCK)
        snprintf(buf, len, "vsock:%u:%s", ep->cid, ep->port);
    else if (strchr(ep->host, ':'))
        snprintf(buf, len, "tcp:[%s]:%s", ep->host, ep->port);
    else
        snprintf(buf, len, "tcp:%s:%s", ep->host, ep->port);
}

void crn_endpoint_peer_name(int fd, char *out, size_t len)
{
    struct sockaddr_storage sa;
    socklen_t sl = sizeof(sa);

    snprintf(out, len, "?");
    if (getpeername(fd, (struct sockaddr *)&sa, &sl) < 0)
        return;
    if (sa.ss_family == AF_INET)
        inet_ntop(AF_INET, &((struct sockaddr_in *)&sa)->sin_addr, out,
                  (socklen_t)len);
    else if (sa.ss_family == AF_INET6)
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&sa)->sin6_addr, out,
                  (socklen_t)len);
}
