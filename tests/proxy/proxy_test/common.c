/* The helpers of proxy_test's cases: buffers filled, a computation, reads, a
 * Hello, a GetInfo, refusals. */
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

void fill(int32_t *v, size_t n, int32_t base)
{
    for (size_t i = 0; i < n; i++)
        v[i] = base + (int32_t)i;
}

/*
 * The whole path: objects by client ids (batched, no replies), contents as
 * bulk at creation and by write, a launch, a blocking read of several
 * chunks, checked element by element.
 */
void compute(struct client *c, int k)
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

/* Sends a blocking read of LEN bytes at OFF of BUF_A (EV its event id, 0:
 * none) and returns its seq. */
uint64_t send_read(struct client *c, uint64_t off, size_t len,
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
int recv_read(struct client *c, uint64_t seq, void *out, size_t len,
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

/* Reads until the stream ends; returns the Refused reason seen, if any
 * (malloc()ed), checking nothing but Refused comes. */
char *expect_refused(struct client *c)
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

void send_hello(struct client *c, uint32_t version,
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
int get_info(struct client *c, int fn, uint64_t id, uint64_t other,
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
