/* Integration tests of crane-proxy on PoCL: `proxy_test NAME` runs one. */
#include "client.h"

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

/* Ids a test client chooses. */
enum {
    CTX = 1,
    QUEUE = 2,
    BUF_A = 3,
    BUF_B = 4,
    PROG = 5,
    KERNEL = 6,
    EVENT = 7,
};

/* Items of the compute test: 6 MiB of ints, so reads come in chunks. */
#define ITEMS (6u << 18)

static void fill(int32_t *v, size_t n, int32_t base)
{
    for (size_t i = 0; i < n; i++)
        v[i] = base + (int32_t)i;
}

/*
 * The whole path: objects by client ids (batched, no replies), contents as
 * bulk at creation and by write, a launch, a blocking read of several
 * chunks, checked element by element.
 */
static void compute(struct client *c, int k)
{
    size_t bytes = ITEMS * sizeof(int32_t);
    int32_t *a = malloc(bytes), *b = malloc(bytes), *out = malloc(bytes);

    CHECK(a && b && out);
    fill(a, ITEMS, 1);
    fill(b, ITEMS, 1000);
    tc_context(c, CTX);
    tc_queue(c, QUEUE, CTX);
    tc_buffer(c, true, BUF_A, CTX, bytes, a);
    tc_buffer(c, true, BUF_B, CTX, bytes, NULL);
    /* B's contents in two writes: 4 MiB then the rest, not blocking. */
    tc_write(c, true, QUEUE, BUF_B, 0, b, 4u << 20);
    tc_write(c, true, QUEUE, BUF_B, 4u << 20, (uint8_t *)b + (4u << 20),
             bytes - (4u << 20));
    CHECK_EQ(tc_program_kernel(c, PROG, CTX, add_source, KERNEL, "add"), 0);
    tc_launch_add(c, QUEUE, KERNEL, BUF_A, BUF_B, k, ITEMS, 0);
    CHECK_EQ(tc_read(c, QUEUE, BUF_A, 0, out, bytes), 0);
    for (size_t i = 0; i < ITEMS; i++)
        if (out[i] != a[i] + b[i] * k) {
            fprintf(stderr, "item %zu: %d, want %d\n", i, out[i],
                    a[i] + b[i] * k);
            CHECK(0);
        }
    free(a);
    free(b);
    free(out);
}

static int test_basic(void)
{
    struct proxy p;
    struct client c;

    proxy_start(&p, NULL);
    CHECK(!client_open(&c, &p, NULL, 0, NULL, 0));
    CHECK_EQ(tc_ping(&c), 0);
    compute(&c, 3);
    CHECK_EQ(tc_finish(&c, QUEUE), 0);
    client_close(&c);
    CHECK(proxy_wait_log(&p, "released 6 objects", 1));
    proxy_stop(&p);
    return 0;
}


/* Sends a blocking read of LEN bytes at OFF of BUF_A (EV its event id, 0:
 * none) and returns its seq. */
static uint64_t send_read(struct client *c, uint64_t off, size_t len,
                          bool blocking, uint64_t ev)
{
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__MemCommand mc = CRANE__MEM_COMMAND__INIT;

    mc.queue = QUEUE;
    mc.op = CRANE__MEM_OP__MEM_READ;
    mc.src = BUF_A;
    mc.src_offset = off;
    mc.size = len;
    mc.blocking = blocking;
    mc.event = ev;
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_MEM_COMMAND;
    m.mem_command = &mc;
    m.want_reply = 1;
    client_send(c, &m, NULL, 0);
    return m.seq;
}

/* Reads the frames of read SEQ into OUT (LEN bytes) until its final one;
 * returns its err and how many frames it took. */
static int recv_read(struct client *c, uint64_t seq, void *out, size_t len,
                     int *frames)
{
    size_t got = 0;

    *frames = 0;
    for (;;) {
        Crane__ServerMessage *s = client_reply(c, seq);
        Crane__Reply *r = s->reply;
        bool last = !r->more;
        int err = r->err;
        (*frames)++;
        CHECK(!r->shm_bulk);
        if (r->bulk_len) {
            CHECK_EQ(r->bulk_offset, got);
            CHECK(got + r->bulk_len <= len);
            for (size_t have = 0; have < r->bulk_len;) {
                ssize_t n = read(c->fd, (uint8_t *)out + got + have,
                                 r->bulk_len - have);
                CHECK(n > 0);
                have += (size_t)n;
            }
            got += r->bulk_len;
        }
        crane__server_message__free_unpacked(s, NULL);
        if (last) {
            if (err == 0)
                CHECK_EQ(got, len);
            return err;
        }
    }
}

/*
 * Small blocking reads (exec_mem.c, read_small): one frame that carries
 * the bytes; its event kept and waited on; a read out of range answered
 * with its error and no bytes; and behind a big non-blocking read on the
 * same queue, whose bytes all come before the small read's answer.
 */
static int test_small_read(void)
{
    enum { WORDS = 1u << 20, BIG = WORDS * 4 };
    int32_t *a = malloc(BIG), *big = malloc(BIG), word = 0, words[16];
    struct proxy p;
    struct client c;
    uint64_t seq, big_seq, ev = EVENT;
    int frames;

    CHECK(a && big);
    fill(a, WORDS, 77);
    proxy_start(&p, NULL);
    CHECK(!client_open(&c, &p, NULL, 0, NULL, 0));
    tc_context(&c, CTX);
    tc_queue(&c, QUEUE, CTX);
    tc_buffer(&c, true, BUF_A, CTX, BIG, a);
    /* One frame, the bytes in it. */
    seq = send_read(&c, 4 * 1000, sizeof(word), true, 0);
    CHECK_EQ(recv_read(&c, seq, &word, sizeof(word), &frames), 0);
    CHECK_EQ(frames, 1);
    CHECK_EQ(word, a[1000]);
    /* With an event, which the client may wait on afterwards. */
    seq = send_read(&c, 4 * 64, sizeof(words), true, ev);
    CHECK_EQ(recv_read(&c, seq, words, sizeof(words), &frames), 0);
    CHECK_EQ(frames, 1);
    CHECK(memcmp(words, a + 64, sizeof(words)) == 0);
    {
        Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
        Crane__Sync sy = CRANE__SYNC__INIT;
        sy.op = CRANE__SYNC_OP__SYNC_WAIT;
        sy.n_events = 1;
        sy.events = &ev;
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_SYNC;
        m.sync = &sy;
        CHECK_EQ(client_call(&c, &m, NULL, 0, NULL), 0);
    }
    /* Out of range: the error, no bytes. */
    seq = send_read(&c, BIG - 2, sizeof(word), true, 0);
    CHECK(recv_read(&c, seq, &word, sizeof(word), &frames) != 0);
    CHECK_EQ(frames, 1);
    /* Behind a big non-blocking read on the same queue: every byte of it
     * has come when the small read is answered. */
    big_seq = send_read(&c, 0, BIG, false, 0);
    seq = send_read(&c, 4 * (WORDS - 1), sizeof(word), true, 0);
    {
        size_t got[2] = {0, 0};
        bool done[2] = {false, false};
        while (!done[1]) {
            Crane__ServerMessage *s = client_recv(&c);
            CHECK(s && s->msg_case == CRANE__SERVER_MESSAGE__MSG_REPLY);
            Crane__Reply *r = s->reply;
            int i = r->seq == seq;
            uint8_t *to = i ? (uint8_t *)&word : (uint8_t *)big;
            CHECK(r->seq == seq || r->seq == big_seq);
            CHECK(!done[i] && !r->shm_bulk && r->err == 0);
            CHECK(!r->bulk_len || r->bulk_offset == got[i]);
            CHECK(got[i] + r->bulk_len <= (i ? sizeof(word) : BIG));
            for (size_t have = 0; have < r->bulk_len;) {
                ssize_t n = read(c.fd, to + got[i] + have,
                                 r->bulk_len - have);
                CHECK(n > 0);
                have += (size_t)n;
            }
            got[i] += r->bulk_len;
            done[i] = !r->more;
            crane__server_message__free_unpacked(s, NULL);
        }
        CHECK(done[0]);
        CHECK_EQ(got[0], BIG);
        CHECK_EQ(got[1], sizeof(word));
    }
    CHECK(memcmp(big, a, BIG) == 0);
    CHECK_EQ(word, a[WORDS - 1]);
    client_close(&c);
    proxy_stop(&p);
    free(a);
    free(big);
    return 0;
}

/* Reads until the stream ends; returns the Refused reason seen, if any
 * (malloc()ed), checking nothing but Refused comes. */
static char *expect_refused(struct client *c)
{
    Crane__ServerMessage *s = client_recv(c);
    char *why;

    CHECK(s != NULL);
    CHECK_EQ(s->msg_case, CRANE__SERVER_MESSAGE__MSG_REFUSED);
    why = strdup(s->refused->reason);
    fprintf(stderr, "test: refused as expected: %s\n", why);
    crane__server_message__free_unpacked(s, NULL);
    CHECK(client_recv(c) == NULL);
    return why;
}

static void send_hello(struct client *c, uint32_t version,
                       const uint8_t *token, size_t token_len)
{
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__Hello h = CRANE__HELLO__INIT;

    h.version = version;
    h.program = "proxy-test";
    h.pid = (uint32_t)getpid();
    h.resume_token.data = (uint8_t *)token;
    h.resume_token.len = token_len;
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_HELLO;
    m.hello = &h;
    client_send(c, &m, NULL, 0);
}

/* A GetInfo; returns err, the value into OUT (LEN bytes of room). */
static int get_info(struct client *c, int fn, uint64_t id, uint64_t other,
                    uint32_t param, void *out, size_t len, uint64_t *size_ret)
{
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__GetInfo g = CRANE__GET_INFO__INIT;
    Crane__ServerMessage *s;
    int err;

    g.fn = fn;
    g.id = id;
    g.other_id = other;
    g.param = param;
    g.size = len;
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_GET_INFO;
    m.get_info = &g;
    err = client_call(c, &m, NULL, 0, &s);
    if (err == 0) {
        CHECK(s->reply->value.len <= len);
        if (out)
            memcpy(out, s->reply->value.data, s->reply->value.len);
        if (size_ret)
            *size_ret = s->reply->size_ret;
    }
    crane__server_message__free_unpacked(s, NULL);
    return err;
}

/* Handshake rules: Welcome, version refusal, calls before Hello, resume
 * without --grace; device info through the proxy's ids. */
static int test_handshake(void)
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
static int test_auth(void)
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

/* Handle-valued info comes back as the tenant's ids; a non-blocking read
 * arrives before the Finish after it; a failure without want_reply comes
 * back as the deferred error of the next Reply. */
static int test_info_and_order(void)
{
    struct proxy p;
    struct client c;
    int32_t data[1024], out[1024];
    uint64_t v = 0;
    Crane__ServerMessage *s;

    fill(data, 1024, 7);
    proxy_start(&p, NULL);
    client_open(&c, &p, NULL, 0, NULL, 0);
    tc_context(&c, CTX);
    tc_queue(&c, QUEUE, CTX);
    CHECK_EQ(tc_buffer(&c, false, BUF_A, CTX, sizeof(data), data), 0);
    CHECK_EQ(get_info(&c, CRANE__INFO_FN__INFO_MEM, BUF_A, 0, CL_MEM_CONTEXT,
                      &v, sizeof(v), NULL), 0);
    CHECK_EQ(v, CTX);
    CHECK_EQ(get_info(&c, CRANE__INFO_FN__INFO_QUEUE, QUEUE, 0,
                      CL_QUEUE_CONTEXT, &v, sizeof(v), NULL), 0);
    CHECK_EQ(v, CTX);
    CHECK_EQ(get_info(&c, CRANE__INFO_FN__INFO_QUEUE, QUEUE, 0,
                      CL_QUEUE_DEVICE, &v, sizeof(v), NULL), 0);
    CHECK_EQ(v, c.device);
    CHECK_EQ(get_info(&c, CRANE__INFO_FN__INFO_CONTEXT, CTX, 0,
                      CL_CONTEXT_DEVICES, &v, sizeof(v), NULL), 0);
    CHECK_EQ(v, c.device);
    CHECK_EQ(get_info(&c, CRANE__INFO_FN__INFO_MEM, BUF_A, 0,
                      CL_MEM_HOST_PTR, &v, sizeof(v), NULL), 0);
    CHECK_EQ(v, 0);
    CHECK_EQ(get_info(&c, CRANE__INFO_FN__INFO_MEM, BUF_A, 0, CL_MEM_SIZE,
                      &v, sizeof(v), NULL), 0);
    CHECK_EQ(v, sizeof(data));
    /* Too little room. */
    CHECK_EQ(get_info(&c, CRANE__INFO_FN__INFO_MEM, BUF_A, 0, CL_MEM_SIZE,
                      &v, 4, NULL), CL_INVALID_VALUE);
    CHECK_EQ(tc_program_kernel(&c, PROG, CTX, add_source, KERNEL, "add"), 0);
    CHECK_EQ(get_info(&c, CRANE__INFO_FN__INFO_KERNEL, KERNEL, 0,
                      CL_KERNEL_PROGRAM, &v, sizeof(v), NULL), 0);
    CHECK_EQ(v, PROG);
    {
        char log[4096];
        CHECK_EQ(get_info(&c, CRANE__INFO_FN__INFO_PROGRAM_BUILD, PROG,
                          c.device, CL_PROGRAM_BUILD_LOG, log, sizeof(log),
                          NULL), 0);
    }

    /* A non-blocking read, then Finish: the data comes first. */
    {
        Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
        Crane__MemCommand mc = CRANE__MEM_COMMAND__INIT;
        uint64_t read_seq, got = 0;
        mc.queue = QUEUE;
        mc.op = CRANE__MEM_OP__MEM_READ;
        mc.src = BUF_A;
        mc.size = sizeof(out);
        mc.event = EVENT;
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_MEM_COMMAND;
        m.mem_command = &mc;
        m.want_reply = 1;
        client_send(&c, &m, NULL, 0);
        read_seq = m.seq;
        crane__client_message__init(&m);
        Crane__Sync sy = CRANE__SYNC__INIT;
        sy.op = CRANE__SYNC_OP__SYNC_FINISH;
        sy.queue = QUEUE;
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_SYNC;
        m.sync = &sy;
        m.want_reply = 1;
        client_send(&c, &m, NULL, 0);
        for (;;) {
            s = client_recv(&c);
            CHECK(s && s->msg_case == CRANE__SERVER_MESSAGE__MSG_REPLY);
            if (s->reply->seq == m.seq) {
                CHECK_EQ(got, sizeof(out));
                CHECK_EQ(s->reply->err, 0);
                crane__server_message__free_unpacked(s, NULL);
                break;
            }
            CHECK_EQ(s->reply->seq, read_seq);
            CHECK_EQ(s->reply->err, 0);
            if (s->reply->bulk_len) {
                CHECK_EQ(s->reply->bulk_offset, got);
                for (size_t have = 0; have < s->reply->bulk_len;) {
                    ssize_t n = read(c.fd, (uint8_t *)out + got + have,
                                     s->reply->bulk_len - have);
                    CHECK(n > 0);
                    have += (size_t)n;
                }
                got += s->reply->bulk_len;
            }
            crane__server_message__free_unpacked(s, NULL);
        }
        CHECK(memcmp(out, data, sizeof(out)) == 0);
        CHECK_EQ(get_info(&c, CRANE__INFO_FN__INFO_EVENT, EVENT, 0,
                          CL_EVENT_COMMAND_QUEUE, &v, sizeof(v), NULL), 0);
        CHECK_EQ(v, QUEUE);
    }

    /* Deferred: release an unknown buffer without want_reply. */
    {
        uint64_t bad_seq;
        tc_release(&c, true, CRANE__OBJ_KIND__OBJ_MEM, 999);
        bad_seq = c.seq;
        Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
        Crane__Sync sy = CRANE__SYNC__INIT;
        sy.op = CRANE__SYNC_OP__SYNC_PING;
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_SYNC;
        m.sync = &sy;
        CHECK_EQ(client_call(&c, &m, NULL, 0, &s), 0);
        CHECK_EQ(s->reply->deferred_seq, bad_seq);
        CHECK_EQ(s->reply->deferred_err, CL_INVALID_MEM_OBJECT);
        crane__server_message__free_unpacked(s, NULL);
        /* Reported once. */
        CHECK_EQ(client_call(&c, &m, NULL, 0, &s), 0);
        CHECK_EQ(s->reply->deferred_seq, 0);
        crane__server_message__free_unpacked(s, NULL);
    }
    client_close(&c);
    CHECK(proxy_wait_log(&p, "released 6 objects", 1));
    proxy_stop(&p);
    return 0;
}

struct worker {
    struct proxy *p;
    int k;
};

static void *concurrent_client(void *arg)
{
    struct worker *w = arg;
    struct client c;

    client_open(&c, w->p, NULL, 0, NULL, 0);
    compute(&c, w->k);
    client_close(&c);
    return NULL;
}

/* Several clients at once, each computing on its own objects. */
static int test_concurrent(void)
{
    enum { N = 6 };
    struct proxy p;
    pthread_t th[N];
    struct worker w[N];

    proxy_start(&p, NULL);
    for (int i = 0; i < N; i++) {
        w[i].p = &p;
        w[i].k = i + 2;
        CHECK(pthread_create(&th[i], NULL, concurrent_client, &w[i]) == 0);
    }
    for (int i = 0; i < N; i++)
        pthread_join(th[i], NULL);
    CHECK(proxy_wait_log(&p, "released 6 objects", N));
    proxy_stop(&p);
    return 0;
}

/* Client B names client A's ids: unknown to B, and A carries on. */
static int test_isolation(void)
{
    struct proxy p;
    struct client a, b;
    int32_t data[256], out[256];

    fill(data, 256, 42);
    proxy_start(&p, NULL);
    client_open(&a, &p, NULL, 0, NULL, 0);
    client_open(&b, &p, NULL, 0, NULL, 0);
    tc_context(&a, CTX);
    tc_queue(&a, QUEUE, CTX);
    CHECK_EQ(tc_buffer(&a, false, BUF_A, CTX, sizeof(data), data), 0);

    CHECK_EQ(tc_read(&b, QUEUE, BUF_A, 0, out, sizeof(out)),
             CL_INVALID_COMMAND_QUEUE);
    CHECK_EQ(tc_release(&b, false, CRANE__OBJ_KIND__OBJ_MEM, BUF_A),
             CL_INVALID_MEM_OBJECT);
    CHECK_EQ(tc_buffer(&b, false, BUF_B, CTX, 64, NULL), CL_INVALID_CONTEXT);
    CHECK_EQ(tc_finish(&b, QUEUE), CL_INVALID_COMMAND_QUEUE);
    /* B's own objects may reuse A's ids. */
    tc_context(&b, CTX);
    tc_queue(&b, QUEUE, CTX);
    CHECK_EQ(tc_buffer(&b, false, BUF_A, CTX, sizeof(data), NULL), 0);
    CHECK_EQ(tc_write(&b, false, QUEUE, BUF_A, 0, out, sizeof(out)), 0);

    CHECK_EQ(tc_read(&a, QUEUE, BUF_A, 0, out, sizeof(out)), 0);
    CHECK(memcmp(out, data, sizeof(out)) == 0);
    client_close(&b);
    CHECK_EQ(tc_read(&a, QUEUE, BUF_A, 0, out, sizeof(out)), 0);
    CHECK(memcmp(out, data, sizeof(out)) == 0);
    client_close(&a);
    CHECK(proxy_wait_log(&p, "released 3 objects", 2));
    proxy_stop(&p);
    return 0;
}

/* Unknown, wrong-kind, duplicate, zero and proxy-range ids. */
static int test_ids(void)
{
    struct proxy p;
    struct client c;
    int32_t out[16];

    proxy_start(&p, NULL);
    client_open(&c, &p, NULL, 0, NULL, 0);
    tc_context(&c, CTX);
    tc_queue(&c, QUEUE, CTX);
    CHECK_EQ(tc_buffer(&c, false, BUF_A, CTX, sizeof(out), NULL), 0);
    /* Unknown. */
    CHECK_EQ(tc_read(&c, QUEUE, 12345, 0, out, sizeof(out)),
             CL_INVALID_MEM_OBJECT);
    CHECK_EQ(tc_finish(&c, 777), CL_INVALID_COMMAND_QUEUE);
    /* Wrong kind: the queue as a buffer, the buffer as a queue. */
    CHECK_EQ(tc_read(&c, QUEUE, QUEUE, 0, out, sizeof(out)),
             CL_INVALID_MEM_OBJECT);
    CHECK_EQ(tc_read(&c, BUF_A, BUF_A, 0, out, sizeof(out)),
             CL_INVALID_COMMAND_QUEUE);
    CHECK_EQ(tc_release(&c, false, CRANE__OBJ_KIND__OBJ_KERNEL, BUF_A),
             CL_INVALID_KERNEL);
    /* Duplicate: a buffer under the queue's id, a context twice. */
    CHECK_EQ(tc_buffer(&c, false, QUEUE, CTX, 64, NULL),
             CL_INVALID_MEM_OBJECT);
    {
        Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
        Crane__CreateContext cc = CRANE__CREATE_CONTEXT__INIT;
        cc.id = CTX;
        cc.n_devices = 1;
        cc.devices = &c.device;
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_CREATE_CONTEXT;
        m.create_context = &cc;
        CHECK_EQ(client_call(&c, &m, NULL, 0, NULL), CL_INVALID_CONTEXT);
        /* Id 0 and ids with the top bit are not the client's to use. */
        cc.id = 0;
        CHECK_EQ(client_call(&c, &m, NULL, 0, NULL), CL_INVALID_VALUE);
        cc.id = c.device;
        CHECK_EQ(client_call(&c, &m, NULL, 0, NULL), CL_INVALID_VALUE);
        /* A device that is not offered. */
        uint64_t nodev = c.device + 1000;
        cc.id = 50;
        cc.devices = &nodev;
        CHECK_EQ(client_call(&c, &m, NULL, 0, NULL), CL_INVALID_DEVICE);
    }
    /* The proxy's device cannot be released by a tenant, only ignored. */
    CHECK_EQ(tc_release(&c, false, CRANE__OBJ_KIND__OBJ_DEVICE, c.device), 0);
    /* Released ids are unknown afterwards, and free again. */
    CHECK_EQ(tc_release(&c, false, CRANE__OBJ_KIND__OBJ_MEM, BUF_A), 0);
    CHECK_EQ(tc_release(&c, false, CRANE__OBJ_KIND__OBJ_MEM, BUF_A),
             CL_INVALID_MEM_OBJECT);
    CHECK_EQ(tc_buffer(&c, false, BUF_A, CTX, sizeof(out), NULL), 0);
    /* A failed creation leaves its id unknown. */
    CHECK_EQ(tc_buffer(&c, false, BUF_B, CTX, 0, NULL),
             CL_INVALID_BUFFER_SIZE);
    CHECK_EQ(tc_read(&c, QUEUE, BUF_B, 0, out, sizeof(out)),
             CL_INVALID_MEM_OBJECT);
    CHECK_EQ(tc_ping(&c), 0);
    client_close(&c);
    CHECK(proxy_wait_log(&p, "released 3 objects", 1));
    proxy_stop(&p);
    return 0;
}

/* Writes LEN raw bytes to FD. */
static void raw(int fd, const void *p, size_t len)
{
    const uint8_t *b = p;

    while (len > 0) {
        ssize_t n = write(fd, b, len);
        if (n < 0 && errno == EINTR)
            continue;
        CHECK(n > 0);
        b += n;
        len -= (size_t)n;
    }
}

static void frame_header(int fd, uint32_t len)
{
    uint8_t h[4] = {(uint8_t)(len >> 24), (uint8_t)(len >> 16),
                    (uint8_t)(len >> 8), (uint8_t)len};

    raw(fd, h, 4);
}

/* Expects Reply{SEQ, CL_INVALID_VALUE, error}, then (CLOSED) the end. */
static void expect_bad(struct client *c, uint64_t seq, bool closed)
{
    Crane__ServerMessage *s = client_recv(c);

    CHECK(s && s->msg_case == CRANE__SERVER_MESSAGE__MSG_REPLY);
    CHECK_EQ(s->reply->seq, seq);
    CHECK_EQ(s->reply->err, CL_INVALID_VALUE);
    CHECK(s->reply->error[0] != '\0');
    fprintf(stderr, "test: refused as expected: %s\n", s->reply->error);
    crane__server_message__free_unpacked(s, NULL);
    if (closed)
        CHECK(client_recv(c) == NULL);
}

/* Garbage, calls without a call, bad fields, oversized frames and bulk,
 * truncated frames: each answered or closed, and the proxy serves on. */
static int test_malformed(void)
{
    static const uint8_t garbage[10] = {0xff, 0xff, 0xff, 0xff, 0xff,
                                        0xff, 0xff, 0xff, 0xff, 0xff};
    struct proxy p;
    struct client good, c;

    proxy_start(&p, NULL);
    client_open(&good, &p, NULL, 0, NULL, 0);
    tc_context(&good, CTX);
    tc_queue(&good, QUEUE, CTX);

    /* A frame that does not decode: answered, the stream goes on. */
    client_open(&c, &p, NULL, 0, NULL, 0);
    frame_header(c.fd, sizeof(garbage));
    raw(c.fd, garbage, sizeof(garbage));
    expect_bad(&c, 0, false);
    CHECK_EQ(tc_ping(&c), 0);
    /* A message without a call, even without want_reply. */
    {
        Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
        client_send(&c, &m, NULL, 0);
        expect_bad(&c, m.seq, false);
    }
    /* Bad fields: work_dim 5, a region of 2 values. */
    {
        Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
        Crane__LaunchKernel l = CRANE__LAUNCH_KERNEL__INIT;
        l.work_dim = 5;
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_LAUNCH_KERNEL;
        m.launch_kernel = &l;
        CHECK_EQ(client_call(&c, &m, NULL, 0, NULL), CL_INVALID_VALUE);
    }
    {
        Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
        Crane__MemCommand mc = CRANE__MEM_COMMAND__INIT;
        uint64_t region[2] = {4, 4};
        mc.op = CRANE__MEM_OP__MEM_READ_RECT;
        mc.n_region = 2;
        mc.region = region;
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_MEM_COMMAND;
        m.mem_command = &mc;
        CHECK_EQ(client_call(&c, &m, NULL, 0, NULL), CL_INVALID_VALUE);
        mc.op = 99;
        mc.n_region = 0;
        CHECK_EQ(client_call(&c, &m, NULL, 0, NULL), CL_INVALID_VALUE);
    }
    CHECK_EQ(tc_ping(&c), 0);

    /* A frame over 1 MiB: answered, then closed. */
    frame_header(c.fd, 2u << 20);
    expect_bad(&c, 0, true);
    client_close(&c);

    /* Bulk over 64 MiB: answered with the message's seq, then closed. */
    client_open(&c, &p, NULL, 0, NULL, 0);
    {
        Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
        Crane__MemCommand mc = CRANE__MEM_COMMAND__INIT;
        mc.queue = 1;
        mc.op = CRANE__MEM_OP__MEM_WRITE;
        mc.size = mc.bulk_len = 100u << 20;
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_MEM_COMMAND;
        m.mem_command = &mc;
        client_send(&c, &m, NULL, 0);
        expect_bad(&c, m.seq, true);
    }
    client_close(&c);

    /* A truncated frame, then the end. */
    client_open(&c, &p, NULL, 0, NULL, 0);
    frame_header(c.fd, 100);
    raw(c.fd, garbage, sizeof(garbage));
    client_close(&c);

    /* Garbage instead of Hello. */
    memset(&c, 0, sizeof(c));
    c.fd = client_connect(&p);
    frame_header(c.fd, sizeof(garbage));
    raw(c.fd, garbage, sizeof(garbage));
    free(expect_refused(&c));
    client_close(&c);

    /* Garbage without any frame: a huge length first. */
    c.fd = client_connect(&p);
    raw(c.fd, garbage, sizeof(garbage));
    free(expect_refused(&c));
    client_close(&c);

    CHECK(proxy_wait_log(&p, "released 0 objects", 3));
    CHECK_EQ(tc_ping(&good), 0);
    compute(&good, 5);
    client_close(&good);
    proxy_stop(&p);
    return 0;
}

/* Creates objects, then dies in the middle of a bulk write (HOW 0) or
 * without reading a large read's data (HOW 1). */
static void die_mid_call(struct proxy *p, int how)
{
    struct client c;
    size_t big = 32u << 20;
    uint8_t *data = calloc(1, big);

    CHECK(data != NULL);
    client_open(&c, p, NULL, 0, NULL, 0);
    tc_context(&c, CTX);
    tc_queue(&c, QUEUE, CTX);
    tc_buffer(&c, true, BUF_A, CTX, big, NULL);
    tc_buffer(&c, true, BUF_B, CTX, big, data);
    CHECK_EQ(tc_program_kernel(&c, PROG, CTX, add_source, KERNEL, "add"), 0);
    if (how == 0) {
        Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
        Crane__MemCommand mc = CRANE__MEM_COMMAND__INIT;
        mc.queue = QUEUE;
        mc.op = CRANE__MEM_OP__MEM_WRITE;
        mc.dst = BUF_A;
        mc.size = mc.bulk_len = big;
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_MEM_COMMAND;
        m.mem_command = &mc;
        client_send(&c, &m, NULL, 0);
        raw(c.fd, data, big / 3);
    } else {
        Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
        Crane__MemCommand mc = CRANE__MEM_COMMAND__INIT;
        mc.queue = QUEUE;
        mc.op = CRANE__MEM_OP__MEM_READ;
        mc.src = BUF_B;
        mc.size = big;
        mc.blocking = 1;
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_MEM_COMMAND;
        m.mem_command = &mc;
        m.want_reply = 1;
        client_send(&c, &m, NULL, 0);
        /* Wait for the first chunk so that the read is under way. */
        Crane__ServerMessage *s = client_recv(&c);
        CHECK(s && s->msg_case == CRANE__SERVER_MESSAGE__MSG_REPLY);
    }
    raise(SIGKILL);
}

/* A client killed mid-call: its objects are released and the proxy
 * serves others. */
static int test_killed(void)
{
    struct proxy p;
    struct client good;
    char *stats;

    proxy_start(&p, NULL);
    client_open(&good, &p, NULL, 0, NULL, 0);
    for (int how = 0; how < 2; how++) {
        int status;
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0)
            die_mid_call(&p, how);
        CHECK(waitpid(pid, &status, 0) == pid);
        CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        CHECK(proxy_wait_log(&p, "released 6 objects", how + 1));
    }
    stats = proxy_stats(&p);
    fprintf(stderr, "test: %s\n", stats);
    CHECK(strstr(stats, "tenants=1 ") != NULL);
    CHECK(strstr(stats, "objects=0 ") != NULL);
    free(stats);
    compute(&good, 4);
    client_close(&good);
    CHECK(proxy_wait_log(&p, "released 6 objects", 3));
    stats = proxy_stats(&p);
    CHECK(strstr(stats, "connections=0 tenants=0 ") != NULL);
    free(stats);
    proxy_stop(&p);
    return 0;
}

/* --quota: buffers and images count, sub-buffers do not. */
static int test_quota(void)
{
    struct proxy p;
    struct client c;

    proxy_start(&p, "--quota", "1M", NULL);
    client_open(&c, &p, NULL, 0, NULL, 0);
    tc_context(&c, CTX);
    CHECK_EQ(tc_buffer(&c, false, BUF_A, CTX, 512u << 10, NULL), 0);
    CHECK_EQ(tc_buffer(&c, false, BUF_B, CTX, 768u << 10, NULL),
             CL_MEM_OBJECT_ALLOCATION_FAILURE);
    CHECK_EQ(tc_buffer(&c, false, BUF_B, CTX, UINT64_MAX, NULL),
             CL_MEM_OBJECT_ALLOCATION_FAILURE);
    {
        Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
        Crane__CreateSubBuffer sb = CRANE__CREATE_SUB_BUFFER__INIT;
        sb.id = 20;
        sb.buffer = BUF_A;
        sb.size = 256u << 10;
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_CREATE_SUB_BUFFER;
        m.create_sub_buffer = &sb;
        CHECK_EQ(client_call(&c, &m, NULL, 0, NULL), 0);
    }
    {
        Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
        Crane__CreateImage im = CRANE__CREATE_IMAGE__INIT;
        im.id = 21;
        im.context = CTX;
        im.channel_order = CL_RGBA;
        im.channel_type = CL_UNSIGNED_INT8;
        im.image_type = CL_MEM_OBJECT_IMAGE2D;
        im.width = 512;
        im.height = 512;    /* 1 MiB */
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_CREATE_IMAGE;
        m.create_image = &im;
        CHECK_EQ(client_call(&c, &m, NULL, 0, NULL),
                 CL_MEM_OBJECT_ALLOCATION_FAILURE);
        im.height = 128;    /* 256 KiB */
        CHECK_EQ(client_call(&c, &m, NULL, 0, NULL), 0);
    }
    CHECK_EQ(tc_release(&c, false, CRANE__OBJ_KIND__OBJ_MEM, BUF_A), 0);
    CHECK_EQ(tc_buffer(&c, false, BUF_B, CTX, 768u << 10, NULL), 0);
    client_close(&c);
    CHECK(proxy_wait_log(&p, "released 4 objects", 1));
    proxy_stop(&p);
    return 0;
}

/* --grace: a tenant outlives its connection and comes back with its
 * objects; after the grace period it is gone; a second connection with the
 * token takes over from a first that is still open. */
static int test_grace(void)
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

/* User events, callbacks (Notify), a non-blocking read held back by a user
 * event whose data leaves once the event is set. */
static int test_events(void)
{
    enum { USER = 30, READ_EV = 31, USER2 = 32 };
    struct proxy p;
    struct client c;
    int32_t data[2048], out[2048];
    uint64_t read_seq, got = 0;
    bool notified = false, read_done = false;

    fill(data, 2048, -5);
    proxy_start(&p, NULL);
    client_open(&c, &p, NULL, 0, NULL, 0);
    tc_context(&c, CTX);
    tc_queue(&c, QUEUE, CTX);
    tc_buffer(&c, true, BUF_A, CTX, sizeof(data), data);
    {
        Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
        Crane__CreateUserEvent u = CRANE__CREATE_USER_EVENT__INIT;
        u.id = USER;
        u.context = CTX;
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_CREATE_USER_EVENT;
        m.create_user_event = &u;
        client_post(&c, &m, NULL, 0);
        u.id = USER2;
        client_post(&c, &m, NULL, 0);
    }
    {
        Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
        Crane__WatchEvent w = CRANE__WATCH_EVENT__INIT;
        w.event = USER;
        w.status = CL_COMPLETE;
        w.cookie = 0xc00c1e;
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_WATCH_EVENT;
        m.watch_event = &w;
        client_post(&c, &m, NULL, 0);
    }
    {
        Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
        Crane__MemCommand mc = CRANE__MEM_COMMAND__INIT;
        uint64_t wait = USER;
        mc.queue = QUEUE;
        mc.op = CRANE__MEM_OP__MEM_READ;
        mc.src = BUF_A;
        mc.size = sizeof(out);
        mc.n_wait = 1;
        mc.wait = &wait;
        mc.event = READ_EV;
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_MEM_COMMAND;
        m.mem_command = &mc;
        m.want_reply = 1;
        client_send(&c, &m, NULL, 0);
        read_seq = m.seq;
    }
    /* The stream is not held up by the pending read. */
    CHECK_EQ(tc_ping(&c), 0);
    CHECK_EQ(c.nnotes, 0);
    {
        Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
        Crane__SetUserEventStatus us = CRANE__SET_USER_EVENT_STATUS__INIT;
        us.event = USER;
        us.status = CL_COMPLETE;
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_SET_USER_EVENT_STATUS;
        m.set_user_event_status = &us;
        client_post(&c, &m, NULL, 0);
    }
    {
        Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
        Crane__Sync sy = CRANE__SYNC__INIT;
        uint64_t ev = READ_EV;
        sy.op = CRANE__SYNC_OP__SYNC_WAIT;
        sy.n_events = 1;
        sy.events = &ev;
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_SYNC;
        m.sync = &sy;
        m.want_reply = 1;
        client_send(&c, &m, NULL, 0);
        for (;;) {
            Crane__ServerMessage *s = client_recv(&c);
            CHECK(s != NULL);
            if (s->msg_case == CRANE__SERVER_MESSAGE__MSG_NOTIFY) {
                CHECK_EQ(s->notify->event, USER);
                CHECK_EQ(s->notify->cookie, 0xc00c1e);
                CHECK_EQ(s->notify->status, CL_COMPLETE);
                notified = true;
                crane__server_message__free_unpacked(s, NULL);
                continue;
            }
            CHECK_EQ(s->msg_case, CRANE__SERVER_MESSAGE__MSG_REPLY);
            if (s->reply->seq == m.seq) {
                CHECK_EQ(s->reply->err, 0);
                CHECK(read_done);
                crane__server_message__free_unpacked(s, NULL);
                break;
            }
            CHECK_EQ(s->reply->seq, read_seq);
            CHECK_EQ(s->reply->err, 0);
            if (s->reply->bulk_len) {
                for (size_t have = 0; have < s->reply->bulk_len;) {
                    ssize_t n = read(c.fd, (uint8_t *)out + got + have,
                                     s->reply->bulk_len - have);
                    CHECK(n > 0);
                    have += (size_t)n;
                }
                got += s->reply->bulk_len;
            }
            if (!s->reply->more)
                read_done = true;
            crane__server_message__free_unpacked(s, NULL);
        }
    }
    CHECK_EQ(got, sizeof(out));
    CHECK(memcmp(out, data, sizeof(out)) == 0);
    /* The Notify may come after the Wait's reply. */
    while (!notified) {
        CHECK_EQ(tc_ping(&c), 0);
        for (int i = 0; i < c.nnotes; i++)
            notified |= c.notes[i]->notify->cookie == 0xc00c1e;
    }
    /* A non-blocking read with nothing after it: its data comes anyway,
     * when the read completes. */
    {
        Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
        Crane__MemCommand mc = CRANE__MEM_COMMAND__INIT;
        Crane__ServerMessage *s;
        mc.queue = QUEUE;
        mc.op = CRANE__MEM_OP__MEM_READ;
        mc.src = BUF_A;
        mc.size = 64;
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_MEM_COMMAND;
        m.mem_command = &mc;
        m.want_reply = 1;
        client_send(&c, &m, NULL, 0);
        s = client_reply(&c, m.seq);
        CHECK(s->reply->more);
        CHECK_EQ(s->reply->bulk_len, 64);
        crane__server_message__free_unpacked(s, NULL);
        CHECK_EQ(read(c.fd, out, 64), 64);
        CHECK(memcmp(out, data, 64) == 0);
        s = client_reply(&c, m.seq);
        CHECK(!s->reply->more);
        CHECK_EQ(s->reply->err, 0);
        crane__server_message__free_unpacked(s, NULL);
    }
    /* A wait that can never end (USER2 is never set); the client leaves:
     * the proxy sets the event to an error and releases everything. */
    {
        Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
        Crane__Sync sy = CRANE__SYNC__INIT;
        uint64_t ev = USER2;
        sy.op = CRANE__SYNC_OP__SYNC_WAIT;
        sy.n_events = 1;
        sy.events = &ev;
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_SYNC;
        m.sync = &sy;
        m.want_reply = 1;
        client_send(&c, &m, NULL, 0);
    }
    client_close(&c);
    CHECK(proxy_wait_log(&p, "released 6 objects", 1));

    /* A read held back by a user event the client released unset. */
    client_open(&c, &p, NULL, 0, NULL, 0);
    tc_context(&c, CTX);
    tc_queue(&c, QUEUE, CTX);
    tc_buffer(&c, true, BUF_A, CTX, sizeof(data), data);
    {
        Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
        Crane__CreateUserEvent u = CRANE__CREATE_USER_EVENT__INIT;
        Crane__MemCommand mc = CRANE__MEM_COMMAND__INIT;
        uint64_t wait = USER;
        u.id = USER;
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
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_MEM_COMMAND;
        m.mem_command = &mc;
        m.want_reply = 1;
        client_send(&c, &m, NULL, 0);
        tc_release(&c, true, CRANE__OBJ_KIND__OBJ_EVENT, USER);
        CHECK_EQ(tc_ping(&c), 0);
    }
    client_close(&c);
    CHECK(proxy_wait_log(&p, "released 3 objects", 1));
    proxy_stop(&p);
    return 0;
}

/* SIGTERM with a client connected, its worker blocked on a user event:
 * everything is released, the socket removed, the exit status 0. */
static int test_stop(void)
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

/* The same over TCP, two clients at once. */
static int test_tcp(void)
{
    struct proxy p;
    struct client other;
    pthread_t th;
    struct worker w = {&p, 7};

    proxy_start(&p, "tcp", NULL);
    client_open(&other, &p, NULL, 0, NULL, 0);
    CHECK(pthread_create(&th, NULL, concurrent_client, &w) == 0);
    compute(&other, 9);
    pthread_join(th, NULL);
    client_close(&other);
    CHECK(proxy_wait_log(&p, "released 6 objects", 2));
    proxy_stop(&p);
    return 0;
}
/* A lane's Hello on a new connection L for the tenant of TOKEN: index
 * INDEX, the MAC made with KEY (NULL: all zero). */
static void lane_hello(struct client *l, struct proxy *p, const uint8_t *token,
                       size_t token_len, uint32_t index, const uint8_t *key)
{
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__Hello h = CRANE__HELLO__INIT;
    uint8_t mac[32] = {0};

    memset(l, 0, sizeof(*l));
    l->fd = client_connect(p);
    if (key)
        CHECK(crn_lane_mac(key, token, token_len, index, mac) == 0);
    h.version = 1;
    h.program = "lane";
    h.lane_of.data = (uint8_t *)token;
    h.lane_of.len = token_len;
    h.lane_index = index;
    h.lane_mac.data = mac;
    h.lane_mac.len = sizeof(mac);
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_HELLO;
    m.hello = &h;
    client_send(l, &m, NULL, 0);
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
static int test_lanes(void)
{
    struct proxy p;
    struct client c, l0, l1, l;
    uint8_t other[32] = {1};
    Crane__ServerMessage *s;
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
    s = client_recv(&l0);
    CHECK(s && s->msg_case == CRANE__SERVER_MESSAGE__MSG_WELCOME);
    crane__server_message__free_unpacked(s, NULL);
    lane_hello(&l, &p, c.token, c.token_len, 0, c.lane_key);
    lane_refused(&l, "out of turn");
    lane_hello(&l1, &p, c.token, c.token_len, 1, c.lane_key);
    s = client_recv(&l1);
    CHECK(s && s->msg_case == CRANE__SERVER_MESSAGE__MSG_WELCOME);
    crane__server_message__free_unpacked(s, NULL);
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
    client_close(&c);
    proxy_stop(&p);
    proxy_start(&p, NULL);
    client_open(&c, &p, NULL, 0, NULL, 0);
    CHECK_EQ(c.lanes_max, 0);
    client_close(&c);
    proxy_stop(&p);
    return 0;
}

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
static int test_lockout(void)
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
static int test_handshake_timeout(void)
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
static int test_idle_timeout(void)
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
static int test_peer_connections(void)
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
static int test_max_objects(void)
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

/* A batched command that names an event and fails on the proxy: the
 * client holds that id as its event already, so queries on it answer the
 * failure as the event's status, never CL_INVALID_EVENT (a real program
 * remoted got CL_INVALID_EVENT for half its events). */
static int test_failed_event(void)
{
    enum { FAILED_EV = 40 };
    struct proxy p;
    struct client c;
    cl_int status = 0;

    proxy_start(&p, NULL);
    client_open(&c, &p, NULL, 0, NULL, 0);
    tc_context(&c, CTX);
    tc_queue(&c, QUEUE, CTX);
    {
        Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
        Crane__MemCommand mc = CRANE__MEM_COMMAND__INIT;
        mc.queue = QUEUE;
        mc.op = CRANE__MEM_OP__MEM_COPY;
        mc.src = 998;       /* no such buffer */
        mc.dst = 999;
        mc.size = 64;
        mc.event = FAILED_EV;
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_MEM_COMMAND;
        m.mem_command = &mc;
        client_post(&c, &m, NULL, 0);
    }
    CHECK_EQ(get_info(&c, CRANE__INFO_FN__INFO_EVENT, FAILED_EV, 0,
                      CL_EVENT_COMMAND_EXECUTION_STATUS, &status,
                      sizeof(status), NULL),
             CL_SUCCESS);
    CHECK_EQ(status, CL_INVALID_MEM_OBJECT);
    client_close(&c);
    proxy_stop(&p);
    return 0;
}

/* A tenant whose call crashes the vendor (CRANE_PROXY_TEST_ABORT makes its
 * worker abort) ends alone: another tenant, mid-computation, keeps
 * computing with exact results, new tenants get in, and the supervisor
 * logs how the worker ended. */
static int test_crash_isolation(void)
{
    struct proxy p;
    struct client a, b, c;

    setenv("CRANE_PROXY_TEST_ABORT", "crash-me", 1);
    proxy_start(&p, NULL);
    unsetenv("CRANE_PROXY_TEST_ABORT");
    client_open(&a, &p, NULL, 0, NULL, 0);
    compute(&a, 2);
    client_program = "crash-me";
    client_open(&b, &p, NULL, 0, NULL, 0);
    client_program = "proxy-test";
    {
        Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
        Crane__Sync sy = CRANE__SYNC__INIT;
        sy.op = CRANE__SYNC_OP__SYNC_PING;
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_SYNC;
        m.sync = &sy;
        m.want_reply = 1;
        client_send(&b, &m, NULL, 0);
    }
    CHECK(client_recv(&b) == NULL);
    client_close(&b);
    CHECK(proxy_wait_log(&p, "killed by signal 6", 1));
    p.allowed_errors = 1;
    /* A's objects are whole: the same buffers, a second launch. */
    {
        size_t bytes = ITEMS * sizeof(int32_t);
        int32_t *out = malloc(bytes);
        CHECK(out != NULL);
        tc_launch_add(&a, QUEUE, KERNEL, BUF_A, BUF_B, 1, ITEMS, 0);
        CHECK_EQ(tc_read(&a, QUEUE, BUF_A, 0, out, bytes), 0);
        /* a = 1 + i, b = 1000 + i: after k=2 then k=1, a + 3 b. */
        for (size_t i = 0; i < ITEMS; i++)
            if (out[i] != (int32_t)(1 + i + 3 * (1000 + i))) {
                fprintf(stderr, "item %zu: %d\n", i, out[i]);
                CHECK(0);
            }
        free(out);
    }
    client_open(&c, &p, NULL, 0, NULL, 0);
    compute(&c, 7);
    client_close(&c);
    client_close(&a);
    CHECK(proxy_wait_log(&p, "released 6 objects", 2));
    proxy_stop(&p);
    return 0;
}

/* The proxy builds with -cl-kernel-arg-info added (to check argument
 * kinds); the program still reads back the options it gave. */
static int test_build_options(void)
{
    struct proxy p;
    struct client c;
    char opts[64] = "";
    uint64_t size = 0;

    proxy_start(&p, NULL);
    client_open(&c, &p, NULL, 0, NULL, 0);
    tc_context(&c, CTX);
    {
        Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
        Crane__CreateProgram pr = CRANE__CREATE_PROGRAM__INIT;
        Crane__BuildProgram b = CRANE__BUILD_PROGRAM__INIT;
        pr.id = PROG;
        pr.context = CTX;
        pr.source.data = (uint8_t *)add_source;
        pr.source.len = strlen(add_source);
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_CREATE_PROGRAM;
        m.create_program = &pr;
        client_post(&c, &m, NULL, 0);
        crane__client_message__init(&m);
        b.program = PROG;
        b.options = "-DX=1";
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_BUILD_PROGRAM;
        m.build_program = &b;
        CHECK_EQ(client_call(&c, &m, NULL, 0, NULL), 0);
    }
    CHECK_EQ(get_info(&c, CRANE__INFO_FN__INFO_PROGRAM_BUILD, PROG, c.device,
                      CL_PROGRAM_BUILD_OPTIONS, NULL, 0, &size),
             0);
    CHECK_EQ(size, 6);
    CHECK_EQ(get_info(&c, CRANE__INFO_FN__INFO_PROGRAM_BUILD, PROG, c.device,
                      CL_PROGRAM_BUILD_OPTIONS, opts, sizeof(opts), &size),
             0);
    CHECK(strcmp(opts, "-DX=1") == 0);
    client_close(&c);
    proxy_stop(&p);
    return 0;
}

/* Child processes of PID (its workers). */
static int children_of(pid_t pid)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    int n = 0;

    if (!d)
        return -1;
    while ((e = readdir(d))) {
        char path[300], buf[512], *rp;
        int ppid = 0;
        FILE *f;
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
        if (!(f = fopen(path, "r")))
            continue;
        if (fgets(buf, sizeof(buf), f) && (rp = strrchr(buf, ')')) &&
            sscanf(rp + 1, " %*c %d", &ppid) == 1 && ppid == pid)
            n++;
        fclose(f);
    }
    closedir(d);
    return n;
}

/* Waits up to 60 s for PID to have N children. */
static bool children_become(pid_t pid, int n)
{
    for (int i = 0; i < 600; i++) {
        if (children_of(pid) == n)
            return true;
        usleep(100000);
    }
    fprintf(stderr, "%d workers, expected %d\n", children_of(pid), n);
    return false;
}

/* --spares 3: three idle workers wait from the start; each tenant takes
 * one and another starts, so that programs connecting together (a
 * migration's resume) each find one ready; a tenant's worker ends with it. */
static int test_spares(void)
{
    struct proxy p;
    struct client a, b;

    proxy_start(&p, "--spares", "3", NULL);
    CHECK(children_become(p.pid, 3));
    client_open(&a, &p, NULL, 0, NULL, 0);
    client_open(&b, &p, NULL, 0, NULL, 0);
    compute(&a, 2);
    compute(&b, 3);
    CHECK(children_become(p.pid, 5));
    client_close(&a);
    client_close(&b);
    CHECK(children_become(p.pid, 3));
    proxy_stop(&p);
    return 0;
}

/* --isolation none: every tenant in the one process, as before workers;
 * two tenants at once still compute exactly and are released. */
static int test_single_process(void)
{
    struct proxy p;
    struct client a, b;

    proxy_start(&p, "--isolation", "none", NULL);
    CHECK(proxy_log_count(&p, "tenants in one process") == 1);
    client_open(&a, &p, NULL, 0, NULL, 0);
    client_open(&b, &p, NULL, 0, NULL, 0);
    compute(&a, 3);
    compute(&b, 5);
    client_close(&a);
    client_close(&b);
    CHECK(proxy_wait_log(&p, "released 6 objects", 2));
    proxy_stop(&p);
    return 0;
}

static const struct {
    const char *name;
    int (*fn)(void);
} tests[] = {
    {"failed-event", test_failed_event},
    {"basic", test_basic},
    {"small-read", test_small_read},
    {"handshake", test_handshake},
    {"auth", test_auth},
    {"info-order", test_info_and_order},
    {"concurrent", test_concurrent},
    {"isolation", test_isolation},
    {"ids", test_ids},
    {"malformed", test_malformed},
    {"killed", test_killed},
    {"quota", test_quota},
    {"grace", test_grace},
    {"events", test_events},
    {"stop", test_stop},
    {"tcp", test_tcp},
    {"lanes", test_lanes},
    {"lockout", test_lockout},
    {"handshake-timeout", test_handshake_timeout},
    {"idle-timeout", test_idle_timeout},
    {"peer-connections", test_peer_connections},
    {"max-objects", test_max_objects},
    {"crash-isolation", test_crash_isolation},
    {"single-process", test_single_process},
    {"spares", test_spares},
    {"build-options", test_build_options},
};

int main(int argc, char **argv)
{
    size_t n = sizeof(tests) / sizeof(tests[0]);

    signal(SIGPIPE, SIG_IGN);
    srandom((unsigned)getpid());
    if (argc == 2 && strcmp(argv[1], "--list") == 0) {
        for (size_t i = 0; i < n; i++)
            puts(tests[i].name);
        return 0;
    }
    if (argc != 2) {
        fprintf(stderr, "usage: proxy_test --list | NAME\n");
        return 2;
    }
    for (size_t i = 0; i < n; i++)
        if (strcmp(argv[1], tests[i].name) == 0)
            return tests[i].fn();
    fprintf(stderr, "proxy_test: no test named '%s'\n", argv[1]);
    return 2;
}
