/* sockbw: what one stream of bytes through a local socket carries, and N
 * TCP streams together (lanes), the bound of remoting's bulk bytes over a
 * unix socket or TCP loopback. */

/*
 * Sends MiB mebibytes (default 2048) through one connection, in writes of
 * CHUNK bytes (default 4 MiB, as CRANE_REMOTE_CHUNK), from a child process
 * to its parent, which reads them into a buffer of the same size: the
 * shape of remoting's bulk bytes (one stream, a copy into the kernel and
 * one out of it).  Then one core's memcpy of the same buffer, for scale.
 * Prints one line per measure:
 *
 *     RESULT <name> <seconds> <GB/s> GB/s
 *
 * names: unix (a unix socket pair), tcp (a loopback TCP connection, no
 * Nagle), tcp-xN (N loopback TCP connections at once, N = 2, 4, 8: a
 * writer process and a reader thread each, the MiB shared among them, as
 * remoting's lanes carry one transfer; docs/remoting.md, "Lanes"),
 * memcpy.  Usage: sockbw [MiB [CHUNK]].  Exit status 0, or 2 when a
 * socket cannot be made.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int write_all(int fd, const char *p, size_t len)
{
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* The child writes TOTAL bytes in CHUNK writes to WFD; the parent reads
 * them from RFD.  Returns the parent's seconds, from the first byte
 * asked for to the last one read. */
static double stream(int rfd, int wfd, size_t total, size_t chunk)
{
    char *buf = malloc(chunk);
    pid_t pid;
    double t0;
    size_t got = 0;

    if (!buf)
        return -1;
    memset(buf, 0x5a, chunk);
    pid = fork();
    if (pid == 0) {
        close(rfd);
        for (size_t done = 0; done < total; done += chunk)
            if (write_all(wfd, buf, chunk) < 0)
                _exit(1);
        _exit(0);
    }
    close(wfd);
    t0 = now();
    while (got < total) {
        ssize_t n = read(rfd, buf, chunk);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    t0 = now() - t0;
    close(rfd);
    waitpid(pid, NULL, 0);
    free(buf);
    return got == total ? t0 : -1;
}

static int tcp_pair(int fd[2])
{
    struct sockaddr_in a = {.sin_family = AF_INET};
    socklen_t alen = sizeof(a);
    int one = 1, lis = socket(AF_INET, SOCK_STREAM, 0);

    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (lis < 0 || bind(lis, (struct sockaddr *)&a, sizeof(a)) < 0 ||
        listen(lis, 1) < 0 || getsockname(lis, (struct sockaddr *)&a, &alen))
        return -1;
    fd[1] = socket(AF_INET, SOCK_STREAM, 0);
    if (fd[1] < 0 || connect(fd[1], (struct sockaddr *)&a, sizeof(a)) < 0)
        return -1;
    fd[0] = accept(lis, NULL, NULL);
    close(lis);
    if (fd[0] < 0)
        return -1;
    setsockopt(fd[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(fd[1], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return 0;
}

/* N streams at once: reader thread I reads PER bytes from fds[I]. */
struct reader {
    int fd;
    size_t per, chunk, got;
    pthread_t th;
};

static void *read_main(void *arg)
{
    struct reader *r = arg;
    char *buf = malloc(r->chunk);

    while (buf && r->got < r->per) {
        ssize_t n = read(r->fd, buf, r->chunk);
        if (n <= 0)
            break;
        r->got += (size_t)n;
    }
    free(buf);
    return NULL;
}

/* TOTAL bytes over N loopback TCP connections together; the seconds from
 * the start until every reader had its share, or -1. */
static double streams(unsigned n, size_t total, size_t chunk)
{
    struct reader r[16];
    pid_t pids[16];
    size_t per = total / n / chunk * chunk;
    double t0;
    bool ok = per > 0;

    for (unsigned i = 0; i < n; i++) {
        int fd[2];
        if (tcp_pair(fd) < 0)
            return -1;
        r[i] = (struct reader){.fd = fd[0], .per = per, .chunk = chunk};
        pids[i] = fork();
        if (pids[i] == 0) {
            char *buf = malloc(chunk);
            close(fd[0]);
            if (!buf)
                _exit(1);
            memset(buf, 0x5a, chunk);
            for (size_t done = 0; done < per; done += chunk)
                if (write_all(fd[1], buf, chunk) < 0)
                    _exit(1);
            _exit(0);
        }
        close(fd[1]);
    }
    t0 = now();
    for (unsigned i = 0; i < n; i++)
        pthread_create(&r[i].th, NULL, read_main, &r[i]);
    for (unsigned i = 0; i < n; i++) {
        pthread_join(r[i].th, NULL);
        ok = ok && r[i].got == per;
    }
    t0 = now() - t0;
    for (unsigned i = 0; i < n; i++) {
        close(r[i].fd);
        waitpid(pids[i], NULL, 0);
    }
    return ok ? t0 : -1;
}

static void result(const char *name, double s, size_t total)
{
    if (s <= 0) {
        printf("RESULT %s failed\n", name);
        return;
    }
    printf("RESULT %s %.4f %.3f GB/s\n", name, s, total / s / 1e9);
}

int main(int argc, char **argv)
{
    size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 2048;
    size_t chunk = argc > 2 ? strtoul(argv[2], NULL, 10) : 4u << 20;
    size_t total;
    int fd[2];

    if (!mib || chunk < 4096) {
        fprintf(stderr, "usage: sockbw [MiB [CHUNK >= 4096]]\n");
        return 2;
    }
    total = (mib << 20) / chunk * chunk;
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, fd) < 0) {
        perror("sockbw: socketpair");
        return 2;
    }
    result("unix", stream(fd[0], fd[1], total, chunk), total);
    if (tcp_pair(fd) < 0) {
        perror("sockbw: loopback tcp");
        return 2;
    }
    result("tcp", stream(fd[0], fd[1], total, chunk), total);
    for (unsigned n = 2; n <= 8; n *= 2) {
        char name[16];
        size_t per = total / n / chunk * chunk;
        snprintf(name, sizeof(name), "tcp-x%u", n);
        result(name, streams(n, total, chunk), per * n);
    }

    char *a = malloc(chunk), *b = malloc(chunk);
    if (!a || !b)
        return 2;
    memset(a, 1, chunk);
    memset(b, 2, chunk);
    double t0 = now();
    for (size_t done = 0; done < total; done += chunk)
        memcpy((done / chunk) & 1 ? a : b, (done / chunk) & 1 ? b : a, chunk);
    result("memcpy", now() - t0, total);
    free(a);
    free(b);
    return 0;
}
