/* A stand-in crane-guestd whose program waits for a long kernel. */
/*
 *   hostd-fake-guest SOCKET LOG
 *
 * Listens on the unix socket SOCKET (bound under a temporary name and
 * renamed into place once listening) for crane-hostd's guest channel and
 * serves one connection at a time, as QEMU's socket behind a virtio-serial
 * port does (others wait in the backlog until it closes):
 *
 *   Prepare  with `progress`: an OpProgress every second, three in all,
 *            each listing program 4242 "longkernel" waiting ("waiting for a
 *            kernel running for M s (at most K s more)", M counting from
 *            30 s before the prepare came); then, with or without, refused
 *            as crane-guestd does when a program's switch passed the kernel
 *            wait's bound: err -ETIME, "pid 4242 (longkernel): waited N s
 *            for a kernel running for M s (...): nothing changed";
 *   Status   the program with nothing to wait for;
 *   others   ok.
 *
 * Each command is appended to LOG as one line ("prepare progress 3",
 * "prepare refused", "abort", "status"), so a test sees what the host
 * asked.  alarm() ends a forgotten stand-in.
 */
#include "proto/control.pb-c.h"
#include "proto/frame.h"
#include "tests/hostd-tools/listen_once.h"

#include <errno.h>
#include <signal.h>
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
/* Progress frames a prepare sends, a second apart, and the bound said. */
#define FAKE_PROGRESS_SENT 3
#define FAKE_PREPARE_MAX_S 120

static FILE *log_file;

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void note(const char *what)
{
    fprintf(log_file, "%s\n", what);
    fflush(log_file);
}

/* The Status answer: the program, waiting for nothing. */
static void status(Crane__Control__Ack *a, Crane__Control__ProgramReport *p)
{
    p->pid = FAKE_PID;
    p->program = FAKE_PROGRAM;
    p->waiting = "";
    a->n_programs = 1;
    note("status");
}

/* One OpProgress for the prepare ID, T0 its start: the program waits. */
static int progress(int fd, uint64_t id, double t0)
{
    Crane__Control__GuestMessage g = CRANE__CONTROL__GUEST_MESSAGE__INIT;
    Crane__Control__OpProgress pr = CRANE__CONTROL__OP_PROGRESS__INIT;
    Crane__Control__KernelWait k = CRANE__CONTROL__KERNEL_WAIT__INIT;
    Crane__Control__KernelWait *ks[1] = {&k};
    double ran = now_s() - t0 + FAKE_RAN_BEFORE_S;
    double left = FAKE_PREPARE_MAX_S - ran > 0 ? FAKE_PREPARE_MAX_S - ran : 0;
    char text[160];

    snprintf(text, sizeof(text), "waiting for a kernel running for %.0f s "
             "(at most %.0f s more)", ran, left);
    k.pid = FAKE_PID;
    k.program = FAKE_PROGRAM;
    k.running_s = ran;
    k.left_s = left;
    k.waiting = text;
    pr.op = CRANE__CONTROL__OP__OP_PREPARE;
    pr.seconds = now_s() - t0;
    pr.kernels = ks;
    pr.n_kernels = 1;
    g.id = id;
    g.msg_case = CRANE__CONTROL__GUEST_MESSAGE__MSG_PROGRESS;
    g.progress = &pr;
    return crn_frame_write(fd, &g.base);
}

/* The Prepare: its progress when asked, then refused. */
static void prepare(int fd, const Crane__Control__HostMessage *m,
                    Crane__Control__Ack *a, char *text, size_t len)
{
    double t0 = now_s(), waited;
    unsigned sent = 0;

    while (m->prepare->progress && sent < FAKE_PROGRESS_SENT) {
        struct timespec second = {1, 0};
        nanosleep(&second, NULL);
        if (progress(fd, m->id, t0) < 0)
            break;
        sent++;
    }
    snprintf(text, len, "prepare progress %u", sent);
    note(text);
    waited = now_s() - t0;
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
        status(&a, &p);
        break;
    case CRANE__CONTROL__HOST_MESSAGE__MSG_PREPARE:
        a.op = CRANE__CONTROL__OP__OP_PREPARE;
        prepare(fd, m, &a, text, sizeof(text));
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

/* One connection, until it closes. */
static void serve(int fd)
{
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
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

        if (fd < 0) {
            if (errno == EINTR)
                continue;
            fprintf(stderr, "hostd-fake-guest: accept: %s\n",
                    strerror(errno));
            return 1;
        }
        serve(fd);
    }
}
