/* The stand-ins' listening socket (listen_once.c). */
#ifndef CRANE_TESTS_LISTEN_ONCE_H
#define CRANE_TESTS_LISTEN_ONCE_H

/* A blocking unix socket listening at PATH with BACKLOG, the path made
 * only once it listens: the fd, or -errno. */
int tool_listen_unix(const char *path, int backlog);

#endif
