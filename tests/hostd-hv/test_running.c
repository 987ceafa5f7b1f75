/* Tests of crane-hostd's running-migration table (running.c) as a cancel
 * finds it: one the copy outran, one after the end, a prepared VM's. */
#include "harness.h"

#include "host-daemon/daemon.h"
#include "host-daemon/handoff.h"
#include "host-daemon/prepared.h"
#include "host-daemon/running.h"
#include "proto/frame.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* One cancel of DOMAIN served on a thread of its own (running.c may make
 * it wait for the copy's end). */
struct asked {
    const char *domain;
    int fds[2];
    pthread_t thread;
};

static void *serve_cancel(void *arg)
{
    struct asked *a = arg;
    Crane__Hostd__ClientRequest q = CRANE__HOSTD__CLIENT_REQUEST__INIT;
    Crane__Hostd__HostCancel c = CRANE__HOSTD__HOST_CANCEL__INIT;

    c.domain = (char *)a->domain;
    q.msg_case = CRANE__HOSTD__CLIENT_REQUEST__MSG_CANCEL;
    q.cancel = &c;
    hd_running_serve(NULL, a->fds[1], &q);
    return NULL;
}

static void ask(struct asked *a, const char *domain)
{
    a->domain = domain;
    CHECK_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, a->fds), ==,
              0);
    CHECK_INT(pthread_create(&a->thread, NULL, serve_cancel, a), ==, 0);
}

/* The answer: its MigrateDone (freed by the caller). */
static Crane__Hostd__DaemonReply *answer(struct asked *a)
{
    Crane__Hostd__DaemonReply *r;
    uint8_t *buf = NULL;
    size_t len = 0;

    pthread_join(a->thread, NULL);
    CHECK_INT(crn_frame_read(a->fds[0], &buf, &len, 65536), ==, 0);
    r = crane__hostd__daemon_reply__unpack(NULL, len, buf);
    free(buf);
    close(a->fds[0]);
    close(a->fds[1]);
    CHECK(r != NULL);
    CHECK_INT(r->msg_case, ==, CRANE__HOSTD__DAEMON_REPLY__MSG_DONE);
    return r;
}

/* Waits (bounded) until the cancel reached R's flag. */
static void wait_cancelled(const struct hd_running *r)
{
    double until = hd_now() + hvt_ms(10000) / 1000.0;

    while (!hd_running_cancelled(r) && hd_now() < until)
        usleep(1000);
    CHECK(hd_running_cancelled(r));
}

static void free_reply(Crane__Hostd__DaemonReply *r)
{
    crane__hostd__daemon_reply__free_unpacked(r, NULL);
}

/* A cancel during the hypervisor's copy waits for it: a copy that finished
 * first (the VM left) is answered "already completed", refused; one that
 * stopped is answered taken. */
void test_running_cancel_copy_outran(void)
{
    struct hd_running *r = hd_running_add("vm-late", "m-late");
    Crane__Hostd__DaemonReply *rep;
    struct asked a;

    CHECK(r != NULL);
    hd_running_set_phase(r, "migrate");
    ask(&a, "vm-late");
    wait_cancelled(r);
    hd_running_copied(r, true);
    rep = answer(&a);
    CHECK_INT(rep->done->result, ==, CRANE__HOSTD__RESULT__RESULT_ROLLED_BACK);
    CHECK(rep->done->refused);
    CHECK(strstr(rep->done->error, "migration m-late of vm-late already "
                                   "completed") != NULL);
    CHECK_STR(rep->done->id, "m-late");
    free_reply(rep);
    hd_running_remove(r);

    r = hd_running_add("vm-stop", "m-stop");
    CHECK(r != NULL);
    hd_running_set_phase(r, "migrate");
    ask(&a, "vm-stop");
    wait_cancelled(r);
    hd_running_copied(r, false);
    rep = answer(&a);
    CHECK_INT(rep->done->result, ==, CRANE__HOSTD__RESULT__RESULT_OK);
    CHECK(!rep->done->refused);
    CHECK_STR(rep->done->id, "m-stop");
    free_reply(rep);
    hd_running_remove(r);
}

/* After the end: one that moved its VM still says it completed; one that
 * rolled back is gone ("no migration runs"). */
void test_running_cancel_after_end(void)
{
    struct hd_running *r = hd_running_add("vm-done", "m-done");
    Crane__Hostd__DaemonReply *rep;
    struct asked a;

    CHECK(r != NULL);
    hd_running_set_phase(r, "migrate");
    hd_running_copied(r, true);
    hd_running_remove(r);
    ask(&a, "vm-done");
    rep = answer(&a);
    CHECK(rep->done->refused);
    CHECK(strstr(rep->done->error, "already completed") != NULL);
    free_reply(rep);

    r = hd_running_add("vm-back", "m-back");
    CHECK(r != NULL);
    hd_running_set_phase(r, "migrate");
    hd_running_copied(r, false);
    hd_running_remove(r);
    ask(&a, "vm-back");
    rep = answer(&a);
    CHECK(rep->done->refused);
    CHECK(strstr(rep->done->error, "no migration of vm-back runs here") !=
          NULL);
    free_reply(rep);
    /* A new migration of the VM that moved (it came back) is the one a
     * cancel finds. */
    r = hd_running_add("vm-done", "m-again");
    CHECK(r != NULL);
    hd_running_set_phase(r, "prepare");
    ask(&a, "vm-done");
    rep = answer(&a);
    CHECK_INT(rep->done->result, ==, CRANE__HOSTD__RESULT__RESULT_OK);
    CHECK_STR(rep->done->id, "m-again");
    CHECK(hd_running_cancelled(r));
    free_reply(rep);
    hd_running_remove(r);
}

/* crane-hostctl prepare: while it prepares, a cancel is taken by the
 * prepare's own entry; once ready (and prepared), the cancel is its
 * abort (hd_handoff_cancels). */
void test_running_cancel_prepared(void)
{
    Crane__Hostd__HostCancel c = CRANE__HOSTD__HOST_CANCEL__INIT;
    struct hd_running *r = hd_running_add("vm-prep", "m-prep");
    struct hd_prepared p;

    CHECK(r != NULL);
    c.domain = "vm-prep";
    hd_running_set_phase(r, "detach");
    CHECK(hd_running_busy("vm-prep"));
    CHECK(!hd_handoff_cancels(&c));
    hd_running_set_phase(r, "ready");
    CHECK(!hd_running_busy("vm-prep"));
    CHECK(!hd_handoff_cancels(&c));   /* not prepared (yet) */
    struct hd_gpu_want none = { .n = 0 };

    hd_prepared_add("m-prep", "vm-prep", 1000, 0, &none);
    CHECK(hd_handoff_cancels(&c));
    hd_running_remove(r);
    CHECK(hd_handoff_cancels(&c));
    c.migration_id = "m-other";
    CHECK(!hd_handoff_cancels(&c));
    c.migration_id = "m-prep";
    CHECK(hd_handoff_cancels(&c));
    CHECK(hd_prepared_take("vm-prep", "", &p));
    CHECK(!hd_handoff_cancels(&c));
}
