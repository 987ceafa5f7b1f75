/* proxy_test: events, user events, callbacks and their Notify. */
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

/* User events, callbacks (Notify), a non-blocking read held back by a user
 * event whose data leaves once the event is set. */
int test_events(void)
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
