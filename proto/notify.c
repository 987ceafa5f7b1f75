/* Readiness and stopping told to systemd (sd_notify's protocol, no libsystemd). */
#include "notify.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* The socket's address, taken once at start-up; empty: none. */
static struct sockaddr_un notify_addr;
static socklen_t notify_addr_len;

void crn_notify_init(void)
{
    const char *path = getenv("NOTIFY_SOCKET");
    size_t len;

    if (!path || (path[0] != '/' && path[0] != '@') ||
        (len = strlen(path)) >= sizeof(notify_addr.sun_path) || len < 2) {
        unsetenv("NOTIFY_SOCKET");
        return;
    }
    notify_addr.sun_family = AF_UNIX;
    memcpy(notify_addr.sun_path, path, len);
    /* "@NAME" is a name in the abstract namespace: a leading NUL byte. */
    if (path[0] == '@')
        notify_addr.sun_path[0] = '\0';
    notify_addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
                                  len + (path[0] == '/'));
    unsetenv("NOTIFY_SOCKET");
}

int crn_notify(const char *state)
{
    ssize_t n;
    int fd, err = 0;

    if (!notify_addr_len)
        return 0;
    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    n = sendto(fd, state, strlen(state), MSG_NOSIGNAL,
               (const struct sockaddr *)&notify_addr, notify_addr_len);
    if (n < 0)
        err = -errno;
    close(fd);
    return err;
}
