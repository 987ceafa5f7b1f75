/* A stand-in crane-guestd whose program waits for a long kernel. */
/*
 *   hostd-fake-guest SOCKET LOG
 *
 * Listens on the unix socket SOCKET (bound under a temporary name and
 * renamed into place once listening) for crane-hostd's guest channel and
 * answers each connection's commands (a thread each, as crane-guestd takes
 * several connections):
 *
 *   Prepare  holds its answer until two Status requests were answered
 *            while it waited (at most 120 s), then refuses as crane-guestd
 *            does when a program's switch passed the kernel wait's bound:
 *            err -ETIME, "pid 4242 (longkernel): waited N s for a kernel
 *            running for M s (...): nothing changed";
 *   Status   while a Prepare waits: program 4242 "longkernel" waiting
 *            ("waiting for a kernel running for M s (at most K s more)",
 *            M counting from 30 s before the prepare came); otherwise
 *            the program with nothing to wait for;
 *   others   ok.
 *
 * Each command is appended to LOG as one line ("status waiting", "prepare
 * refused", "abort"), so a test sees what the host asked.  alarm() ends a
 * forgotten stand-in.
 */
#include "proto/control.pb-c.h"
#include "proto/frame.h"
#include "tests/hostd-tools/listen_once.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define FAKE_LIFETIME_S 300
#define FAKE_MAX_FRAME (64u * 1024)
#define FAKE_PID 4242
#define FAKE_PROGRAM "longkernel"
/* The kernel had run this long when the prepare came. */
#define FAKE_RAN_BEFORE_S 30
/* Status answers a prepare waits for, and its bound. */
#define FAKE_STATUS_WANTED 2
#define FAKE_PREPARE_MAX_S 120

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static bool preparing;
static double prepare_t0;
static unsigned status_seen;
static FILE *log_file;

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void note(const char *what)
{
    pthread_mutex_lock(&lock);
    fprintf(log_file, "%s\n", what);
    fflush(log_file);
    pthread_mutex_unlock(&lock);
}

/* The Status answer: the program, waiting while a prepare waits. */
static void status(Crane__Control__Ack *a, Crane__Control__ProgramReport *p,
                   char *text, size_t len)
{
    bool waiting;
    long ran;

    pthread_mutex_lock(&lock);
    waiting = preparing;
    ran = (long)(now_s() - prepare_t0) + FAKE_RAN_BEFORE_S;
    if (waiting) {
        status_seen++;
        pthread_cond_broadcast(&cond);
    }
    pthread_mutex_unlock(&lock);
    p->pid = FAKE_PID;
    p->program = FAKE_PROGRAM;
    p->waiting = "";
    if (waiting) {
        snprintf(text, len, "waiting for a kernel running for %ld s (at "
                 "most %ld s more)", ran, FAKE_PREPARE_MAX_S - ran > 0
                                          ? FAKE_PREPARE_MAX_S - ran : 0);
        p->waiting = text;
    }
    a->n_programs = 1;
    note(waiting ? "status waiting" : "status idle");
}

/* The Prepare: held until the host asked for the status twice. */
static void prepare(Crane__Control__Ack *a, char *text, size_t len)
{
    struct timespec until;
    double waited;

    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += FAKE_PREPARE_MAX_S;
    pthread_mutex_lock(&lock);
    preparing = true;
    prepare_t0 = now_s();
    status_seen = 0;
    while (status_seen < FAKE_STATUS_WANTED &&
           pthread_cond_timedwait(&cond, &lock, &until) != ETIMEDOUT)
        ;
    preparing = false;
    waited = now_s() - prepare_t0;
    pthread_mutex_unlock(&lock);
    a->err = -ETIME;
    snprintf(text, len, "1 program(s) refused: pid %d (%s): waited %.0f s "
             "for a kernel running for %.0f s "
             "(CRANE_SWITCH_KERNEL_WAIT_MS=20000, or the deadline): nothing "
             "changed", FAKE_PID, FAKE_PROGRAM, waited,
             waited + FAKE_RAN_BEFORE_S);
    a->error = text;
    note("prepare refused");
}

static int answer(int fd, const Crane__Control__HostMessage *m)
{
    Crane__Control__GuestMessage g = CRANE__CONTROL__GUEST_MESSAGE__INIT;
    Crane__Control__Ack a = CRANE__CONTROL__ACK__INIT;
    Crane__Control__ProgramReport p = CRANE__CONTROL__PROGRAM_REPORT__INIT;
    Crane__Control__ProgramReport *ps[1] = {&p};
    char text[512];

    g.id = m->id;
    g.msg_case = CRANE__CONTROL__GUEST_MESSAGE__MSG_ACK;
    g.ack = &a;
    a.programs = ps;
    switch (m->msg_case) {
    case CRANE__CONTROL__HOST_MESSAGE__MSG_STATUS:
        a.op = CRANE__CONTROL__OP__OP_STATUS;
        status(&a, &p, text, sizeof(text));
        break;
    case CRANE__CONTROL__HOST_MESSAGE__MSG_PREPARE:
        a.op = CRANE__CONTROL__OP__OP_PREPARE;
        prepare(&a, text, sizeof(text));
        break;
    case CRANE__CONTROL__HOST_MESSAGE__MSG_ABORT:
        a.op = CRANE__CONTROL__OP__OP_ABORT;
        note("abort");
        break;
    default:
        note("other");
        break;
    }
    return crn_frame_write(fd, &g.base);
}

static void *serve(void *arg)
{
    int fd = (int)(intptr_t)arg;
    uint8_t *buf;
    size_t len;

    while (crn_frame_read(fd, &buf, &len, FAKE_MAX_FRAME) == 0) {
        Crane__Control__HostMessage *m =
            crane__control__host_message__unpack(NULL, len, buf);
        free(buf);
        if (!m || answer(fd, m) < 0) {
            if (m)
                crane__control__host_message__free_unpacked(m, NULL);
            break;
        }
        crane__control__host_message__free_unpacked(m, NULL);
    }
    close(fd);
    return NULL;
}

int main(int argc, char **argv)
{
    int lfd;

    if (argc != 3) {
        fprintf(stderr, "usage: hostd-fake-guest SOCKET LOG\n");
        return 2;
    }
    if (!(log_file = fopen(argv[2], "a"))) {
        fprintf(stderr, "hostd-fake-guest: %s: %s\n", argv[2],
                strerror(errno));
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    alarm(FAKE_LIFETIME_S);
    if ((lfd = tool_listen_unix(argv[1], 16)) < 0) {
        fprintf(stderr, "hostd-fake-guest: cannot listen on %s: %s\n",
                argv[1], strerror(-lfd));
        return 1;
    }
    for (;;) {
        pthread_t t;
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

        if (fd < 0) {
            if (errno == EINTR)
                continue;
            fprintf(stderr, "hostd-fake-guest: accept: %s\n",
                    strerror(errno));
            return 1;
        }
        if (pthread_create(&t, NULL, serve, (void *)(intptr_t)fd) != 0) {
            close(fd);
            continue;
        }
        pthread_detach(t);
    }
}
