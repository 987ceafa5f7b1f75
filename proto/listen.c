/* The one listener: a listening socket on unix:PATH, tcp:HOST:PORT or
 * vsock:CID:PORT, as a plain descriptor or on a libuv loop. */
#include "proto/listen.h"

#include <errno.h>
#include <linux/vm_sockets.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* mkdir -p of PATH's folder (mode 0755 for new ones). */
static void make_parent(const char *path)
{
    char dir[108];
    char *slash;

    snprintf(dir, sizeof(dir), "%s", path);
    slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return;
    *slash = '\0';
    for (char *p = dir + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            mkdir(dir, 0755);
            *p = '/';
        }
    }
    mkdir(dir, 0755);
}

/* A unix socket file left by a process that died: nobody accepts on it. */
static bool stale_socket(const struct sockaddr_un *sa)
{
    struct stat st;
    bool stale;
    int fd;

    if (stat(sa->sun_path, &st) < 0 || !S_ISSOCK(st.st_mode))
        return false;
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    stale = connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) < 0 &&
            errno == ECONNREFUSED;
    close(fd);
    return stale;
}

/* Closes FD (if any), says in WHY why EP cannot be listened on (WHAT, or
 * ERR in words), returns ERR. */
static int fail(int fd, int err, char *why, size_t why_len,
                const struct crn_endpoint *ep, const char *what)
{
    char name[300];

    if (fd >= 0)
        close(fd);
    crn_endpoint_format(ep, name, sizeof(name));
    if (!what)
        what = err == -EADDRINUSE ? "another process listens there"
                                  : strerror(-err);
    snprintf(why, why_len, "cannot listen on %s: %s", name, what);
    return err;
}

static int listen_unix(struct crn_endpoint *ep, unsigned mode, int backlog,
                       char *why, size_t why_len)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int fd;

    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", ep->path);
    make_parent(ep->path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return fail(-1, -errno, why, why_len, ep, NULL);
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        if (errno != EADDRINUSE || !stale_socket(&sa))
            return fail(fd, -errno, why, why_len, ep, NULL);
        unlink(sa.sun_path);
        if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
            return fail(fd, -errno, why, why_len, ep, NULL);
    }
    if ((mode && chmod(sa.sun_path, mode) < 0) || listen(fd, backlog) < 0) {
        int err = -errno;
        unlink(sa.sun_path);
        return fail(fd, err, why, why_len, ep, NULL);
    }
    return fd;
}

static int listen_tcp(struct crn_endpoint *ep, int backlog, char *why,
                      size_t why_len)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    struct sockaddr_storage sa;
    socklen_t len = sizeof(sa);
    int fd, one = 1, gai;

    gai = getaddrinfo(ep->host, ep->port, &hints, &ai);
    if (gai != 0) {
        snprintf(why, why_len, "cannot resolve %s: %s", ep->host,
                 gai_strerror(gai));
        return -EINVAL;
    }
    fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        freeaddrinfo(ai);
        return fail(-1, -errno, why, why_len, ep, NULL);
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 ||
        listen(fd, backlog) < 0) {
        freeaddrinfo(ai);
        return fail(fd, -errno, why, why_len, ep, NULL);
    }
    freeaddrinfo(ai);
    /* Port 0: the kernel chose a free one; the caller tells which. */
    if (getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
        snprintf(ep->port, sizeof(ep->port), "%u",
                 ntohs(sa.ss_family == AF_INET
                           ? ((struct sockaddr_in *)&sa)->sin_port
                           : ((struct sockaddr_in6 *)&sa)->sin6_port));
    return fd;
}

static int listen_vsock(struct crn_endpoint *ep, int backlog, char *why,
                        size_t why_len)
{
    struct sockaddr_vm sa = {.svm_family = AF_VSOCK,
                             .svm_cid = ep->cid,
                             .svm_port = (unsigned)strtoul(ep->port, NULL,
                                                           10)};
    int fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

    if (fd < 0)
        return fail(-1, -errno, why, why_len, ep,
                    errno == EAFNOSUPPORT
                        ? "no vsock here (load vmw_vsock_virtio_transport "
                          "in a guest, vhost_vsock on a host)"
                        : NULL);
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        listen(fd, backlog) < 0)
        return fail(fd, -errno, why, why_len, ep, NULL);
    return fd;
}

int crn_listen(struct crn_endpoint *ep, unsigned mode, int backlog, char *why,
               size_t why_len)
{
    if (!ep || backlog <= 0) {
        snprintf(why, why_len, "cannot listen: bad arguments");
        return -EINVAL;
    }
    switch (ep->kind) {
    case CRN_EP_UNIX: return listen_unix(ep, mode, backlog, why, why_len);
    case CRN_EP_TCP: return listen_tcp(ep, backlog, why, why_len);
    case CRN_EP_VSOCK: return listen_vsock(ep, backlog, why, why_len);
    }
    snprintf(why, why_len, "cannot listen: unknown endpoint kind");
    return -EINVAL;
}

int crn_listen_uv(uv_loop_t *loop, union crn_listener *l,
                  struct crn_endpoint *ep, unsigned mode, int backlog,
                  uv_connection_cb cb, char *why, size_t why_len)
{
    int fd = crn_listen(ep, mode, backlog, why, why_len);
    int rc;

    if (fd < 0)
        return fd;
    if (ep->kind == CRN_EP_TCP) {
        rc = uv_tcp_init(loop, &l->tcp);
        if (rc == 0 && (rc = uv_tcp_open(&l->tcp, fd)) < 0)
            uv_close(&l->handle, NULL);
    } else {
        rc = uv_pipe_init(loop, &l->pipe, 0);
        if (rc == 0 && (rc = uv_pipe_open(&l->pipe, fd)) < 0)
            uv_close(&l->handle, NULL);
    }
    if (rc == 0 && (rc = uv_listen(&l->stream, backlog, cb)) < 0)
        uv_close(&l->handle, NULL); /* closes FD too */
    else if (rc < 0)
        close(fd);
    if (rc < 0) {
        char name[300];
        crn_endpoint_format(ep, name, sizeof(name));
        snprintf(why, why_len, "cannot listen on %s: %s", name,
                 uv_strerror(rc));
        if (ep->kind == CRN_EP_UNIX)
            unlink(ep->path);
    }
    return rc;
}
