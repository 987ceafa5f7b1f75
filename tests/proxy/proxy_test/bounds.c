/* proxy_test: the bounds per peer: lockout by idle connections, handshake
 * and idle timeouts, connections per peer, objects per tenant. */
#include "cases.h"

#include "proto/auth.h"
#include "proto/frame.h"
#include "proto/lane.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* Writes KEY into a fresh private file; returns its path (static). */
static const char *key_file(const uint8_t *key, size_t len)
{
    static char path[] = "/tmp/crane-key-XXXXXX";
    int fd = mkstemp(path);

    CHECK(fd >= 0);
    CHECK_EQ(write(fd, key, len), (ssize_t)len);
    close(fd);
    return path;
}

/* 300 connections that never say Hello, then one that holds the key: it
 * gets in (the idle ones are closed, oldest first), and computes.  The
 * proxy runs with 128 file descriptors, so that without the bound the idle
 * connections would take them all. */
int test_lockout(void)
{
    static const uint8_t key[] = "the key of the lockout test";
    const char *path = key_file(key, sizeof(key) - 1);
    enum { IDLE = 300 };
    int idle[IDLE];
    struct proxy p;
    struct client c;

    struct rlimit saved, low;
    CHECK(getrlimit(RLIMIT_NOFILE, &saved) == 0);
    low = saved;
    low.rlim_cur = 128;
    CHECK(setrlimit(RLIMIT_NOFILE, &low) == 0);
    proxy_start(&p, "--auth-key", path, "--max-unauthenticated", "16",
                NULL);
    CHECK(setrlimit(RLIMIT_NOFILE, &saved) == 0);
    for (int i = 0; i < IDLE; i++)
        idle[i] = client_connect(&p);
    client_open(&c, &p, key, sizeof(key) - 1, NULL, 0);
    CHECK_EQ(tc_ping(&c), 0);
    compute(&c, 2);
    client_close(&c);
    CHECK(proxy_wait_log(&p, "connections in their handshake", IDLE - 16));
    for (int i = 0; i < IDLE; i++)
        close(idle[i]);
    unlink(path);
    proxy_stop(&p);
    return 0;
}

/* A connection that stays silent is refused and closed once the handshake
 * timeout is over; one that said Hello but never answers the Challenge
 * too. */
int test_handshake_timeout(void)
{
    static const uint8_t key[] = "the key of the timeout test";
    const char *path = key_file(key, sizeof(key) - 1);
    struct proxy p;
    struct client silent, half;
    Crane__ServerMessage *s;
    char *why;

    proxy_start(&p, "--auth-key", path, "--handshake-timeout", "0.3", NULL);
    memset(&silent, 0, sizeof(silent));
    silent.fd = client_connect(&p);
    why = expect_refused(&silent);
    CHECK(strstr(why, "handshake not done") != NULL);
    free(why);
    client_close(&silent);

    memset(&half, 0, sizeof(half));
    half.fd = client_connect(&p);
    send_hello(&half, 1, NULL, 0);
    s = client_recv(&half);
    CHECK(s && s->msg_case == CRANE__SERVER_MESSAGE__MSG_CHALLENGE);
    crane__server_message__free_unpacked(s, NULL);
    why = expect_refused(&half);
    CHECK(strstr(why, "handshake not done") != NULL);
    free(why);
    client_close(&half);
    unlink(path);
    proxy_stop(&p);
    return 0;
}

/* --idle-timeout: a tenant that sends nothing is disconnected (its stream
 * ends); one busy in a long call is not. */
int test_idle_timeout(void)
{
    struct proxy p;
    struct client c;

    proxy_start(&p, "--idle-timeout", "0.3", NULL);
    client_open(&c, &p, NULL, 0, NULL, 0);
    CHECK_EQ(tc_ping(&c), 0);
    CHECK(client_recv(&c) == NULL);
    CHECK(proxy_wait_log(&p, "idle timeout", 1));
    client_close(&c);
    proxy_stop(&p);
    return 0;
}

/* --max-peer-connections 2: the third connection of the same user is
 * refused, and gets in once one of the two has gone. */
int test_peer_connections(void)
{
    struct proxy p;
    struct client a, b, c;
    char *why;

    proxy_start(&p, "--max-peer-connections", "2", NULL);
    client_open(&a, &p, NULL, 0, NULL, 0);
    client_open(&b, &p, NULL, 0, NULL, 0);
    memset(&c, 0, sizeof(c));
    c.fd = client_connect(&p);
    send_hello(&c, 1, NULL, 0);
    why = expect_refused(&c);
    CHECK(strstr(why, "connections already") != NULL);
    free(why);
    client_close(&c);
    client_close(&a);
    CHECK(proxy_wait_log(&p, "released 0 objects", 1));
    client_open(&c, &p, NULL, 0, NULL, 0);
    CHECK_EQ(tc_ping(&c), 0);
    client_close(&b);
    client_close(&c);
    proxy_stop(&p);
    return 0;
}

/* --max-objects 3: a context, a queue and a buffer; the fourth object is
 * refused with CL_OUT_OF_RESOURCES, and fits once one is released. */
int test_max_objects(void)
{
    struct proxy p;
    struct client c;

    proxy_start(&p, "--max-objects", "3", NULL);
    client_open(&c, &p, NULL, 0, NULL, 0);
    tc_context(&c, CTX);
    tc_queue(&c, QUEUE, CTX);
    CHECK_EQ(tc_buffer(&c, false, BUF_A, CTX, 64, NULL), 0);
    CHECK_EQ(tc_buffer(&c, false, BUF_B, CTX, 64, NULL), CL_OUT_OF_RESOURCES);
    CHECK_EQ(tc_release(&c, false, CRANE__OBJ_KIND__OBJ_MEM, BUF_A), 0);
    CHECK_EQ(tc_buffer(&c, false, BUF_B, CTX, 64, NULL), 0);
    client_close(&c);
    proxy_stop(&p);
    return 0;
}
