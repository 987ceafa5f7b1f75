/* proxy_test: the handshake and its refusals, authentication, lanes,
 * stopping, grace and resume. */
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

/* Handshake rules: Welcome, version refusal, calls before Hello, resume
 * without --grace; device info through the proxy's ids. */
int test_handshake(void)
{
    struct proxy p;
    struct client c, bad;
    uint64_t plat = 0, size = 0;
    char name[256] = "";
    char *why;

    proxy_start(&p, NULL);
    client_open(&c, &p, NULL, 0, NULL, 0);
    CHECK_EQ(get_info(&c, CRANE__INFO_FN__INFO_DEVICE, c.device, 0,
                      CL_DEVICE_NAME, name, sizeof(name) - 1, &size),
             0);
    CHECK(size > 1 && strlen(name) + 1 == size);
    fprintf(stderr, "test: device '%s'\n", name);
    CHECK_EQ(get_info(&c, CRANE__INFO_FN__INFO_DEVICE, c.device, 0,
                      CL_DEVICE_PLATFORM, &plat, sizeof(plat), NULL),
             0);
    CHECK_EQ(plat, c.platform);
    CHECK_EQ(get_info(&c, CRANE__INFO_FN__INFO_PLATFORM, c.platform, 0,
                      CL_PLATFORM_NAME, name, sizeof(name) - 1, NULL),
             0);

    /* Version 2: refused, then closed. */
    memset(&bad, 0, sizeof(bad));
    bad.fd = client_connect(&p);
    send_hello(&bad, 2, NULL, 0);
    why = expect_refused(&bad);
    CHECK(strstr(why, "version") != NULL);
    free(why);
    client_close(&bad);

    /* A call before Hello. */
    bad.fd = client_connect(&p);
    {
        Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
        Crane__Sync sy = CRANE__SYNC__INIT;
        sy.op = CRANE__SYNC_OP__SYNC_PING;
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_SYNC;
        m.sync = &sy;
        m.want_reply = 1;
        client_send(&bad, &m, NULL, 0);
    }
    free(expect_refused(&bad));
    client_close(&bad);

    /* A resume token with no --grace. */
    bad.fd = client_connect(&p);
    send_hello(&bad, 1, c.token, c.token_len);
    why = expect_refused(&bad);
    CHECK(strstr(why, "grace") != NULL);
    free(why);
    client_close(&bad);

    /* The first client never noticed. */
    CHECK_EQ(tc_ping(&c), 0);
    client_close(&c);
    proxy_stop(&p);
    return 0;
}

/* --auth-key: Challenge, then a wrong MAC, no Auth at all, or the right
 * one. */
int test_auth(void)
{
    static const uint8_t key[] = "a shared secret, not a password\n";
    char path[] = "/tmp/crane-key-XXXXXX";
    struct proxy p;
    struct client c, bad;
    Crane__ServerMessage *s;
    int fd = mkstemp(path);

    CHECK(fd >= 0);
    CHECK_EQ(write(fd, key, sizeof(key) - 1), (ssize_t)sizeof(key) - 1);
    close(fd);
    proxy_start(&p, "--auth-key", path, NULL);

    /* Wrong MAC. */
    memset(&bad, 0, sizeof(bad));
    bad.fd = client_connect(&p);
    send_hello(&bad, 1, NULL, 0);
    s = client_recv(&bad);
    CHECK(s && s->msg_case == CRANE__SERVER_MESSAGE__MSG_CHALLENGE);
    crane__server_message__free_unpacked(s, NULL);
    {
        Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
        Crane__Auth au = CRANE__AUTH__INIT;
        uint8_t mac[32] = {0};
        au.mac.data = mac;
        au.mac.len = sizeof(mac);
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_AUTH;
        m.auth = &au;
        client_send(&bad, &m, NULL, 0);
    }
    free(expect_refused(&bad));
    client_close(&bad);

    /* A call instead of Auth. */
    bad.fd = client_connect(&p);
    send_hello(&bad, 1, NULL, 0);
    s = client_recv(&bad);
    CHECK(s && s->msg_case == CRANE__SERVER_MESSAGE__MSG_CHALLENGE);
    crane__server_message__free_unpacked(s, NULL);
    {
        Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
        Crane__Sync sy = CRANE__SYNC__INIT;
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_SYNC;
        m.sync = &sy;
        sy.op = CRANE__SYNC_OP__SYNC_PING;
        client_send(&bad, &m, NULL, 0);
    }
    free(expect_refused(&bad));
    client_close(&bad);

    /* A key that differs by its last byte. */
    {
        uint8_t other[sizeof(key) - 1];
        memcpy(other, key, sizeof(other));
        other[sizeof(other) - 1] = '!';
        bad.fd = client_connect(&p);
        send_hello(&bad, 1, NULL, 0);
        s = client_recv(&bad);
        CHECK(s && s->msg_case == CRANE__SERVER_MESSAGE__MSG_CHALLENGE);
        {
            Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
            Crane__Auth au = CRANE__AUTH__INIT;
            uint8_t mac[32];
            CHECK(crn_hmac_sha256(other, sizeof(other),
                                  s->challenge->nonce.data, 32, mac) == 0);
            au.mac.data = mac;
            au.mac.len = sizeof(mac);
            m.msg_case = CRANE__CLIENT_MESSAGE__MSG_AUTH;
            m.auth = &au;
            client_send(&bad, &m, NULL, 0);
        }
        crane__server_message__free_unpacked(s, NULL);
        free(expect_refused(&bad));
        client_close(&bad);
    }

    /* The right key. */
    client_open(&c, &p, key, sizeof(key) - 1, NULL, 0);
    CHECK_EQ(tc_ping(&c), 0);
    client_close(&c);
    /* The log is read by another thread: wait for the lines, then count. */
    CHECK(proxy_wait_log(&p, "refused: authentication failed", 2));
    CHECK_EQ(proxy_log_count(&p, "refused: authentication failed"), 2);
    proxy_stop(&p);
    unlink(path);
    return 0;
}

/* --grace: a tenant outlives its connection and comes back with its
 * objects; after the grace period it is gone; a second connection with the
 * token takes over from a first that is still open. */
int test_grace(void)
{
    struct proxy p;
    struct client c, d;
    int32_t data[4096], out[4096];
    uint8_t token[64];
    size_t token_len;
    char *why;

    fill(data, 4096, 99);
    proxy_start(&p, "--grace", "30", NULL);
    CHECK(!client_open(&c, &p, NULL, 0, NULL, 0));
    tc_context(&c, CTX);
    tc_queue(&c, QUEUE, CTX);
    tc_buffer(&c, true, BUF_A, CTX, sizeof(data), data);
    CHECK_EQ(tc_finish(&c, QUEUE), 0);
    /* A read held back by a user event: pending when the client goes. */
    {
        Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
        Crane__CreateUserEvent u = CRANE__CREATE_USER_EVENT__INIT;
        Crane__MemCommand mc = CRANE__MEM_COMMAND__INIT;
        uint64_t wait = 40;
        u.id = 40;
        u.context = CTX;
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_CREATE_USER_EVENT;
        m.create_user_event = &u;
        client_post(&c, &m, NULL, 0);
        crane__client_message__init(&m);
        mc.queue = QUEUE;
        mc.op = CRANE__MEM_OP__MEM_READ;
        mc.src = BUF_A;
        mc.size = sizeof(out);
        mc.n_wait = 1;
        mc.wait = &wait;
        mc.event = 41;
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_MEM_COMMAND;
        m.mem_command = &mc;
        m.want_reply = 1;
        client_send(&c, &m, NULL, 0);
        CHECK_EQ(tc_ping(&c), 0);
    }
    token_len = c.token_len;
    memcpy(token, c.token, token_len);
    client_close(&c);
    CHECK(proxy_wait_log(&p, "kept for 30000 ms", 1));

    CHECK(client_open(&c, &p, NULL, 0, token, token_len));
    /* The old stream's read completes now and sends nothing here. */
    {
        Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
        Crane__SetUserEventStatus us = CRANE__SET_USER_EVENT_STATUS__INIT;
        Crane__Sync sy = CRANE__SYNC__INIT;
        uint64_t ev = 41;
        us.event = 40;
        us.status = CL_COMPLETE;
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_SET_USER_EVENT_STATUS;
        m.set_user_event_status = &us;
        client_post(&c, &m, NULL, 0);
        crane__client_message__init(&m);
        sy.op = CRANE__SYNC_OP__SYNC_WAIT;
        sy.n_events = 1;
        sy.events = &ev;
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_SYNC;
        m.sync = &sy;
        CHECK_EQ(client_call(&c, &m, NULL, 0, NULL), 0);
        CHECK_EQ(tc_ping(&c), 0);
    }
    CHECK_EQ(tc_read(&c, QUEUE, BUF_A, 0, out, sizeof(out)), 0);
    CHECK(memcmp(out, data, sizeof(out)) == 0);

    /* Take-over: D resumes while C is still connected. */
    CHECK(client_open(&d, &p, NULL, 0, token, token_len));
    CHECK(client_recv(&c) == NULL);
    client_close(&c);
    CHECK_EQ(tc_read(&d, QUEUE, BUF_A, 0, out, sizeof(out)), 0);
    CHECK(memcmp(out, data, sizeof(out)) == 0);
    client_close(&d);
    CHECK(proxy_wait_log(&p, "kept for 30000 ms", 2));
    /* A wrong token. */
    memset(&c, 0, sizeof(c));
    c.fd = client_connect(&p);
    token[0] ^= 1;
    send_hello(&c, 1, token, token_len);
    why = expect_refused(&c);
    CHECK(strstr(why, "unknown resume token") != NULL);
    free(why);
    client_close(&c);
    /* The stop releases tenants kept for their grace period. */
    proxy_stop(&p);

    /* A short grace period runs out. */
    proxy_start(&p, "--grace", "0.2", NULL);
    client_open(&c, &p, NULL, 0, NULL, 0);
    tc_context(&c, CTX);
    CHECK_EQ(tc_buffer(&c, false, BUF_A, CTX, 64, NULL), 0);
    token_len = c.token_len;
    memcpy(token, c.token, token_len);
    client_close(&c);
    CHECK(proxy_wait_log(&p, "grace period over", 1));
    CHECK(proxy_wait_log(&p, "released 2 objects", 1));
    c.fd = client_connect(&p);
    send_hello(&c, 1, token, token_len);
    free(expect_refused(&c));
    client_close(&c);
    proxy_stop(&p);
    return 0;
}

/* SIGTERM with a client connected, its worker blocked on a user event:
 * everything is released, the socket removed, the exit status 0. */
int test_stop(void)
{
    struct proxy p;
    struct client c;

    proxy_start(&p, "--grace", "60", NULL);
    client_open(&c, &p, NULL, 0, NULL, 0);
    tc_context(&c, CTX);
    tc_queue(&c, QUEUE, CTX);
    CHECK_EQ(tc_buffer(&c, false, BUF_A, CTX, 4096, NULL), 0);
    {
        Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
        Crane__CreateUserEvent u = CRANE__CREATE_USER_EVENT__INIT;
        Crane__Sync sy = CRANE__SYNC__INIT;
        uint64_t ev = EVENT;
        u.id = EVENT;
        u.context = CTX;
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_CREATE_USER_EVENT;
        m.create_user_event = &u;
        client_post(&c, &m, NULL, 0);
        crane__client_message__init(&m);
        sy.op = CRANE__SYNC_OP__SYNC_WAIT;
        sy.n_events = 1;
        sy.events = &ev;
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_SYNC;
        m.sync = &sy;
        m.want_reply = 1;
        client_send(&c, &m, NULL, 0);
    }
    /* Another tenant, disconnected, kept for its grace period. */
    {
        struct client d;
        client_open(&d, &p, NULL, 0, NULL, 0);
        tc_context(&d, CTX);
        CHECK_EQ(tc_ping(&d), 0);
        client_close(&d);
        CHECK(proxy_wait_log(&p, "kept for", 1));
    }
    proxy_stop(&p);
    client_close(&c);
    return 0;
}

/* A lane's Hello on a new connection L for the tenant of TOKEN: index
 * INDEX of generation GEN, the MAC made with KEY (NULL: all zero). */
static void lane_hello_gen(struct client *l, struct proxy *p,
                           const uint8_t *token, size_t token_len,
                           uint32_t index, uint32_t gen, const uint8_t *key)
{
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__Hello h = CRANE__HELLO__INIT;
    uint8_t mac[32] = {0};

    memset(l, 0, sizeof(*l));
    l->fd = client_connect(p);
    if (key)
        CHECK(crn_lane_mac(key, token, token_len, index, gen, mac) == 0);
    h.version = 1;
    h.program = "lane";
    h.lane_of.data = (uint8_t *)token;
    h.lane_of.len = token_len;
    h.lane_index = index;
    h.lane_generation = gen;
    h.lane_mac.data = mac;
    h.lane_mac.len = sizeof(mac);
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_HELLO;
    m.hello = &h;
    client_send(l, &m, NULL, 0);
}

/* ... of the first generation. */
static void lane_hello(struct client *l, struct proxy *p, const uint8_t *token,
                       size_t token_len, uint32_t index, const uint8_t *key)
{
    lane_hello_gen(l, p, token, token_len, index, 0, key);
}

/* Welcomed. */
static void lane_welcomed(struct client *l)
{
    Crane__ServerMessage *s = client_recv(l);
    CHECK(s && s->msg_case == CRANE__SERVER_MESSAGE__MSG_WELCOME);
    crane__server_message__free_unpacked(s, NULL);
}

/* Refused with a reason holding WANT. */
static void lane_refused(struct client *l, const char *want)
{
    char *why = expect_refused(l);
    CHECK(strstr(why, want) != NULL);
    free(why);
    close(l->fd);
}

/* Lanes (docs/remoting.md, "Lanes"): a TCP Welcome offers --max-lanes and
 * a key; a lane's Hello is refused with a wrong MAC, out of turn, past the
 * bound or for no tenant, and welcomed otherwise; a frame that is no lane
 * piece ends the lanes; a unix Welcome offers none. */
int test_lanes(void)
{
    struct proxy p;
    struct client c, l0, l1, l;
    uint8_t other[32] = {1};
    uint8_t junk[32];

    proxy_start(&p, "tcp", "--max-lanes", "2", NULL);
    client_open(&c, &p, NULL, 0, NULL, 0);
    CHECK_EQ(c.lanes_max, 2);
    lane_hello(&l, &p, c.token, c.token_len, 0, NULL);
    lane_refused(&l, "lane authentication failed");
    lane_hello(&l, &p, c.token, c.token_len, 1, c.lane_key);
    lane_refused(&l, "out of turn");
    lane_hello(&l, &p, other, sizeof(other), 0, c.lane_key);
    lane_refused(&l, "no connected tenant");
    lane_hello(&l0, &p, c.token, c.token_len, 0, c.lane_key);
    lane_welcomed(&l0);
    lane_hello(&l, &p, c.token, c.token_len, 0, c.lane_key);
    lane_refused(&l, "out of turn");
    lane_hello(&l1, &p, c.token, c.token_len, 1, c.lane_key);
    lane_welcomed(&l1);
    lane_hello(&l, &p, c.token, c.token_len, 2, c.lane_key);
    lane_refused(&l, "at most 2");
    CHECK(proxy_wait_log(&p, "lane 1 from 127.0.0.1", 1));
    /* Bytes that are no piece's header: every lane ends. */
    memset(junk, 0x5a, sizeof(junk));
    CHECK(write(l0.fd, junk, sizeof(junk)) == (ssize_t)sizeof(junk));
    CHECK(proxy_wait_log(&p, "lanes off: lane 0: a frame that is no lane "
                             "piece", 1));
    /* The connection itself goes on. */
    CHECK_EQ(tc_ping(&c), 0);
    close(l0.fd);
    close(l1.fd);
    /* Lanes rejoined after they failed: a new generation, its MAC over
     * the generation too, begins at lane 0 and replaces the old set,
     * whose lanes are stale from then on. */
    lane_hello_gen(&l, &p, c.token, c.token_len, 1, 1, c.lane_key);
    lane_refused(&l, "a new generation begins with lane 0");
    lane_hello_gen(&l, &p, c.token, c.token_len, 0, 1, other);
    lane_refused(&l, "lane authentication failed");
    lane_hello_gen(&l0, &p, c.token, c.token_len, 0, 1, c.lane_key);
    lane_welcomed(&l0);
    CHECK(proxy_wait_log(&p, "lanes rejoined: generation 1 replaces 0", 1));
    lane_hello(&l, &p, c.token, c.token_len, 1, c.lane_key);
    lane_refused(&l, "lane 1 of generation 0 is stale");
    lane_hello(&l, &p, c.token, c.token_len, 0, c.lane_key);
    lane_refused(&l, "is stale");
    lane_hello_gen(&l1, &p, c.token, c.token_len, 1, 1, c.lane_key);
    lane_welcomed(&l1);
    CHECK(proxy_wait_log(&p, "lane 1 from 127.0.0.1 (rejoined)", 1));
    /* The new set is the live one: junk on it ends it too. */
    CHECK(write(l1.fd, junk, sizeof(junk)) == (ssize_t)sizeof(junk));
    CHECK(proxy_wait_log(&p, "lanes off: lane 1: a frame that is no lane "
                             "piece", 1));
    CHECK_EQ(tc_ping(&c), 0);
    close(l0.fd);
    close(l1.fd);
    client_close(&c);
    proxy_stop(&p);
    proxy_start(&p, NULL);
    client_open(&c, &p, NULL, 0, NULL, 0);
    CHECK_EQ(c.lanes_max, 0);
    client_close(&c);
    proxy_stop(&p);
    return 0;
}
