/* proxy_test: malformed and oversized frames, clients killed mid-call,
 * quota, a failed command's event. */
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
int test_malformed(void)
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
int test_killed(void)
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
int test_quota(void)
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

/* A batched command that names an event and fails on the proxy: the
 * client holds that id as its event already, so queries on it answer the
 * failure as the event's status, never CL_INVALID_EVENT (a real program
 * remoted got CL_INVALID_EVENT for half its events). */
int test_failed_event(void)
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
