/* proxy_test: computing, chunked and small reads, ordering, several clients
 * at once (unix and TCP), isolation, ids, build options. */
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

int test_basic(void)
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

/*
 * Small blocking reads (exec_mem.c, read_small): one frame that carries
 * the bytes; its event kept and waited on; a read out of range answered
 * with its error and no bytes; and behind a big non-blocking read on the
 * same queue, whose bytes all come before the small read's answer.
 */
int test_small_read(void)
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

/* Handle-valued info comes back as the tenant's ids; a non-blocking read
 * arrives before the Finish after it; a failure without want_reply comes
 * back as the deferred error of the next Reply. */
int test_info_and_order(void)
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
int test_concurrent(void)
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
int test_isolation(void)
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
int test_ids(void)
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

/* The same over TCP, two clients at once. */
int test_tcp(void)
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

/* The proxy builds with -cl-kernel-arg-info added (to check argument
 * kinds); the program still reads back the options it gave. */
int test_build_options(void)
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
