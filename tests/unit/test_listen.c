/* Unit tests of proto/listen.c and proto/endpoint.c: the one listener on
 * unix, tcp and vsock endpoints.  A vsock connection cannot be tested here
 * (no vhost-vsock or loopback transport on the test machine): its parsing
 * and its error path are. */
#include "runner.h"

#include "proto/endpoint.h"
#include "proto/listen.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

TEST(listen_endpoint_vsock_parse)
{
    static const char *const bad[] = {
        "vsock:", "vsock:3", "vsock:3:", "vsock::5", "vsock:x:1",
        "vsock:4294967296:1", "vsock:3:4294967296", "vsock:-1:2",
        "vsock:3:5x", "vsock:anyx:5", "vsock:3:5:6",
    };
    struct crn_endpoint ep;
    char text[64];

    ASSERT_EQ(crn_endpoint_parse("vsock:3:5000", &ep), 0);
    ASSERT_EQ(ep.kind, CRN_EP_VSOCK);
    ASSERT_EQ(ep.cid, 3);
    ASSERT_STR_EQ(ep.port, "5000");
    crn_endpoint_format(&ep, text, sizeof(text));
    ASSERT_STR_EQ(text, "vsock:3:5000");
    ASSERT_EQ(crn_endpoint_parse("vsock:any:1024", &ep), 0);
    ASSERT_EQ(ep.cid, CRN_VSOCK_CID_ANY);
    crn_endpoint_format(&ep, text, sizeof(text));
    ASSERT_STR_EQ(text, "vsock:any:1024");
    ASSERT_EQ(crn_endpoint_parse("vsock:4294967295:4294967295", &ep), 0);
    ASSERT_STR_EQ(ep.port, "4294967295");
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
        ASSERT_EQ(crn_endpoint_parse(bad[i], &ep), -EINVAL);
}

/* A vsock address no local context owns: the listen fails with the
 * kernel's reason in words (or no vsock at all), never a descriptor. */
TEST(listen_vsock_error)
{
    struct crn_endpoint ep;
    char why[300] = "";
    int fd;

    ASSERT_EQ(crn_endpoint_parse("vsock:12345:7000", &ep), 0);
    fd = crn_listen(&ep, 0, 4, why, sizeof(why));
    ASSERT(fd == -EADDRNOTAVAIL || fd == -EAFNOSUPPORT);
    ASSERT(strstr(why, "cannot listen on vsock:12345:7000: ") != NULL);
}

static char *temp_dir(void)
{
    char *dir = strdup("/tmp/crane-listen-XXXXXX");

    ASSERT(dir != NULL);
    ASSERT(mkdtemp(dir) != NULL);
    return dir;
}

/* unix: the folder made, the mode set, a live listener refused, a stale
 * socket file (its listener gone) replaced. */
TEST(listen_unix)
{
    char *dir = temp_dir();
    char text[200], why[300] = "";
    struct crn_endpoint ep;
    struct stat st;
    int fd, fd2, c;

    snprintf(text, sizeof(text), "unix:%s/sub/l.sock", dir);
    ASSERT_EQ(crn_endpoint_parse(text, &ep), 0);
    fd = crn_listen(&ep, 0600, 4, why, sizeof(why));
    ASSERT(fd >= 0);
    ASSERT_EQ(stat(ep.path, &st), 0);
    ASSERT_EQ(st.st_mode & 0777, 0600);
    c = crn_endpoint_connect(&ep);
    ASSERT(c >= 0);
    close(c);
    fd2 = crn_listen(&ep, 0600, 4, why, sizeof(why));
    ASSERT_EQ(fd2, -EADDRINUSE);
    ASSERT(strstr(why, "another process listens there") != NULL);
    close(fd);
    fd2 = crn_listen(&ep, 0600, 4, why, sizeof(why));
    ASSERT(fd2 >= 0);
    close(fd2);
    unlink(ep.path);
    snprintf(text, sizeof(text), "%s/sub", dir);
    rmdir(text);
    rmdir(dir);
    free(dir);
}

/* tcp: port 0 takes a free port, written back; a connection arrives. */
TEST(listen_tcp_port0)
{
    struct crn_endpoint ep;
    char why[300] = "";
    int fd, c;

    ASSERT_EQ(crn_endpoint_parse("tcp:127.0.0.1:0", &ep), 0);
    fd = crn_listen(&ep, 0, 4, why, sizeof(why));
    ASSERT(fd >= 0);
    ASSERT(atoi(ep.port) > 0);
    c = crn_endpoint_connect(&ep);
    ASSERT(c >= 0);
    close(c);
    close(fd);
    ASSERT_EQ(crn_endpoint_parse("tcp:no.such.host.invalid:1", &ep), 0);
    ASSERT_EQ(crn_listen(&ep, 0, 4, why, sizeof(why)), -EINVAL);
    ASSERT(strstr(why, "cannot resolve no.such.host.invalid") != NULL);
}

struct accepted {
    int n;
    int status;
    uv_pipe_t client;            /* lives until the loop closed it */
};

static void on_conn(uv_stream_t *s, int status)
{
    struct accepted *a = s->data;

    a->status = status;
    uv_pipe_init(s->loop, &a->client, 0);
    if (uv_accept(s, (uv_stream_t *)&a->client) == 0)
        a->n++;
    uv_close((uv_handle_t *)&a->client, NULL);
    uv_close((uv_handle_t *)s, NULL);
}

/* On a libuv loop: the callback runs and the connection is accepted. */
TEST(listen_uv_unix)
{
    char *dir = temp_dir();
    char text[200], why[300] = "";
    struct crn_endpoint ep;
    union crn_listener l;
    struct accepted a = {.n = 0, .status = -1};
    uv_loop_t loop;
    int c;

    snprintf(text, sizeof(text), "unix:%s/uv.sock", dir);
    ASSERT_EQ(crn_endpoint_parse(text, &ep), 0);
    ASSERT_EQ(uv_loop_init(&loop), 0);
    ASSERT_EQ(crn_listen_uv(&loop, &l, &ep, 0600, 4, on_conn, why,
                            sizeof(why)), 0);
    l.handle.data = &a;
    c = crn_endpoint_connect(&ep);
    ASSERT(c >= 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    ASSERT_EQ(a.status, 0);
    ASSERT_EQ(a.n, 1);
    ASSERT_EQ(uv_loop_close(&loop), 0);
    close(c);
    unlink(ep.path);
    rmdir(dir);
    free(dir);
}
