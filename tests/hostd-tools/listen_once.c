/* The stand-ins' listening socket: made under a temporary name and renamed
 * into place once it listens, so a test that sees the path can connect. */
#include "listen_once.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int tool_listen_unix(const char *path, int backlog)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    char tmp[sizeof(sa.sun_path)];
    int fd;

    if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
        return -ENAMETOOLONG;
    memcpy(sa.sun_path, tmp, strlen(tmp) + 1);
    unlink(tmp);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        listen(fd, backlog) < 0 || rename(tmp, path) < 0) {
        int err = -errno;
        close(fd);
        unlink(tmp);
        return err;
    }
    return fd;
}
