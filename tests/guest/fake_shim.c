/* A stand-in shim for crane-guestd's tests: behaves well or badly on purpose.
 *
 *   fake_shim SOCKET NAME BEHAVIOUR [DELAY_MS]
 *
 * BEHAVIOUR:
 *   ok               answers every command as a shim would (prepare live:
 *                    remoting, offline: parked; resume, abort:
 *                    passthrough), after DELAY_MS
 *   silent           registers, then never answers
 *   exit-on-prepare  exits as soon as a prepare arrives
 *   fault-on-resume  answers as ok does, but when a resume arrives reports
 *                    a fault (a lost proxy) and exits, as a program dies
 *                    of its proxy's loss in the middle of the resume
 *   fail-prepare     refuses every prepare with -EBUSY
 *   garbage          sends bytes that are no message
 *   no-register      sends an ack before registering
 * Prints "registered" once its Register is sent; exits 0 when the daemon
 * closes the connection.  With FAKE_SHIM_HOLD=PATH in the environment it
 * holds PATH open all along, as a program holds the GPU's device node.
 */
#include "proto/control.pb-c.h"
#include "proto/frame.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000,
                          .tv_nsec = (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* HELD: seconds from the command's arrival to this answer, the time a real
 * shim would hold the program's calls. */
static int send_ack(int fd, uint64_t id, Crane__Control__Op op, int err,
                    Crane__Control__ProgramMode mode, double held)
{
    Crane__Control__ShimMessage m = CRANE__CONTROL__SHIM_MESSAGE__INIT;
    Crane__Control__ProgramAck a = CRANE__CONTROL__PROGRAM_ACK__INIT;
    Crane__Control__StepTimes t = CRANE__CONTROL__STEP_TIMES__INIT;

    t.total = held;
    a.op = op;
    a.err = err;
    a.error = err ? (char *)"refused on purpose" : (char *)"";
    a.mode = mode;
    a.state_bytes = 4096;
    a.times = &t;
    m.id = id;
    m.msg_case = CRANE__CONTROL__SHIM_MESSAGE__MSG_ACK;
    m.ack = &a;
    return crn_frame_write(fd, &m.base);
}

static int send_fault(int fd)
{
    Crane__Control__ShimMessage m = CRANE__CONTROL__SHIM_MESSAGE__INIT;
    Crane__Control__Fault f = CRANE__CONTROL__FAULT__INIT;

    f.err = -ENOTCONN;
    f.reason = (char *)"fake: the connection to the proxy was lost";
    m.msg_case = CRANE__CONTROL__SHIM_MESSAGE__MSG_FAULT;
    m.fault = &f;
    return crn_frame_write(fd, &m.base);
}

int main(int argc, char **argv)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    Crane__Control__ShimMessage m = CRANE__CONTROL__SHIM_MESSAGE__INIT;
    Crane__Control__Register reg = CRANE__CONTROL__REGISTER__INIT;
    Crane__Control__ProgramMode mode =
        CRANE__CONTROL__PROGRAM_MODE__PROGRAM_PASSTHROUGH;
    const char *how;
    long delay;
    int fd;

    if (argc < 4) {
        fprintf(stderr, "usage: fake_shim SOCKET NAME BEHAVIOUR [DELAY_MS]\n");
        return 2;
    }
    how = argv[3];
    delay = argc > 4 ? atol(argv[4]) : 0;
    if (getenv("FAKE_SHIM_HOLD") &&
        open(getenv("FAKE_SHIM_HOLD"), O_RDONLY) < 0) {
        perror("fake_shim: FAKE_SHIM_HOLD");
        return 1;
    }
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", argv[1]);
    fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        perror("fake_shim: connect");
        return 1;
    }
    if (strcmp(how, "no-register") == 0) {
        send_ack(fd, 1, CRANE__CONTROL__OP__OP_PREPARE, 0, mode, 0);
    } else {
        reg.version = 1;
        reg.pid = (uint32_t)getpid();
        reg.program = argv[2];
        reg.state_bytes = 4096;
        reg.mode = mode;
        m.msg_case = CRANE__CONTROL__SHIM_MESSAGE__MSG_REGISTER;
        m.register_ = &reg;
        if (crn_frame_write(fd, &m.base) < 0)
            return 1;
    }
    printf("registered\n");
    fflush(stdout);
    if (strcmp(how, "garbage") == 0) {
        static const char junk[] = "\x00\x00\x00\x05\xff\xff\xff\xff\xff";
        if (write(fd, junk, sizeof(junk) - 1) < 0)
            return 1;
    }
    for (;;) {
        uint8_t *buf;
        size_t len;
        Crane__Control__DaemonMessage *d;
        Crane__Control__Op op = CRANE__CONTROL__OP__OP_NONE;
        int err = 0;

        if (crn_frame_read(fd, &buf, &len, 1 << 16) < 0)
            return 0;
        d = crane__control__daemon_message__unpack(NULL, len, buf);
        free(buf);
        if (!d)
            return 1;
        switch (d->msg_case) {
        case CRANE__CONTROL__DAEMON_MESSAGE__MSG_PREPARE:
            op = CRANE__CONTROL__OP__OP_PREPARE;
            if (strcmp(how, "exit-on-prepare") == 0)
                _exit(0);
            if (strcmp(how, "fail-prepare") == 0)
                err = -EBUSY;
            else
                mode = d->prepare->mode ==
                               CRANE__CONTROL__MIGRATION_MODE__MIGRATION_OFFLINE
                           ? CRANE__CONTROL__PROGRAM_MODE__PROGRAM_PARKED
                           : CRANE__CONTROL__PROGRAM_MODE__PROGRAM_REMOTING;
            break;
        case CRANE__CONTROL__DAEMON_MESSAGE__MSG_RESUME:
            op = CRANE__CONTROL__OP__OP_RESUME;
            if (strcmp(how, "fault-on-resume") == 0)
                _exit(send_fault(fd) < 0);
            mode = CRANE__CONTROL__PROGRAM_MODE__PROGRAM_PASSTHROUGH;
            break;
        case CRANE__CONTROL__DAEMON_MESSAGE__MSG_ABORT:
            op = CRANE__CONTROL__OP__OP_ABORT;
            mode = CRANE__CONTROL__PROGRAM_MODE__PROGRAM_PASSTHROUGH;
            break;
        case CRANE__CONTROL__DAEMON_MESSAGE__MSG_QUERY:
            op = CRANE__CONTROL__OP__OP_QUERY;
            break;
        default:
            break;
        }
        uint64_t id = d->id;
        double arrived = now_s();
        crane__control__daemon_message__free_unpacked(d, NULL);
        if (strcmp(how, "silent") == 0)
            continue;
        if (delay && op != CRANE__CONTROL__OP__OP_QUERY)
            sleep_ms(delay);
        if (send_ack(fd, id, op, err, mode, now_s() - arrived) < 0)
            return 0;
    }
}
