/* A stand-in crane-hostd for crane-migrate's tests: scripted answers. */
/*
 *   hostd-fake SOCKET SCRIPT DUMP
 *
 * Listens on the unix socket SOCKET (bound under a temporary name and
 * renamed into place once listening, so that the path exists only when a
 * connect() will work), accepts one client, reads one ClientRequest (at
 * most 64 KiB, as crane-hostd), writes the MigrateRequest as "key = value"
 * lines to DUMP (and a non-empty dest_xml verbatim to DUMP.xml), then plays
 * SCRIPT and exits:
 *
 *   ok           phases check .. resume, MigrateDone OK with host steps and
 *                pre/post steps of two programs
 *   rolled-back  fails in migrate, rolls back: MigrateDone ROLLED_BACK
 *   failed       the rollback fails too: MigrateDone FAILED
 *   remoting     no GPU at the destination: MigrateDone REMOTING; one
 *                program's name is hostile (escape sequence, newline)
 *   lost         as ok, but one program died of a fault during the resume:
 *                a step "lost" with its reason, the result OK with an
 *                error naming it (what crane-hostd's run.c makes of a
 *                guest's answer that names a program lost)
 *   hang         never answers (until the client leaves)
 *   cancel       waits for the client's HostCancel on a second connection,
 *                takes it, then ends the migration rolled back
 *   close        two Progress, then closes without MigrateDone
 *   garbage      a frame that does not decode
 *   empty        a DaemonReply with neither Progress nor MigrateDone
 *   huge         a frame header announcing 2 MiB
 *   partial      one Progress, then half a frame header, then silence
 *   unknown      a MigrateDone with a result no crane-hostd sends
 *
 * Job progress (percent) is sent only when the request says verbose, as
 * crane-hostd does; phase messages carry percent -1.  Times are fixed, so
 * the output is the same on every run.  alarm() ends a forgotten fake.
 */
#include "proto/frame.h"
#include "tests/hostd-tools/listen_once.h"
#include "proto/hostd.pb-c.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <signal.h>
#include <unistd.h>

#define FAKE_MAX_REQUEST (64u << 10)
#define FAKE_LIFETIME_S 60

/* One Progress of a script; percent >= 0 only with a verbose request. */
struct fake_event {
    const char *phase, *text;
    double elapsed;
    int percent;
    unsigned long long bytes;
};

/* One Step of a MigrateDone. */
struct fake_step {
    const char *phase;
    unsigned pid;
    const char *program;
    double start, seconds;
    int err;
    const char *error;
};

struct fake_script {
    const char *name;
    const struct fake_event *events;
    size_t n_events;
    /* The MigrateDone; result 0: none is sent, the connection closes. */
    Crane__Hostd__Result result;
    const char *error;
    const struct fake_step *steps;
    size_t n_steps;
    double seconds;
    unsigned long long bytes;
    bool job_progress;  /* JobStats on progress and at the end */
};

#define N(a) (sizeof(a) / sizeof(*(a)))
#define GIB 1073741824ull

static const struct fake_event ok_events[] = {
    {"check", "host-b ready: 1 of 2 GPUs free", 0.010, -1, 0},
    {"prepare", "taking 2 programs off the GPU", 0.012, -1, 0},
    {"prepare", "programs taken off the GPU", 0.058, -1, 0},
    {"detach", "gpu0 detached", 0.180, -1, 0},
    {"migrate", "migrating to host-b", 0.181, -1, 0},
    {"migrate", "", 0.5, 10, GIB / 10},
    {"migrate", "", 0.7, 10, GIB / 10},
    {"migrate", "", 1.0, 20, GIB / 5},
    {"migrate", "", 1.5, 30, 3 * GIB / 10},
    {"migrate", "", 2.0, 40, 4 * GIB / 10},
    {"migrate", "", 2.5, 50, GIB / 2},
    {"migrate", "", 3.0, 60, 6 * GIB / 10},
    {"migrate", "", 3.2, 70, 7 * GIB / 10},
    {"migrate", "", 3.5, 80, 8 * GIB / 10},
    {"migrate", "", 3.8, 90, 9 * GIB / 10},
    {"migrate", "", 4.1, 100, GIB},
    {"migrate", "migrated: 1.0GiB", 4.200, -1, GIB},
    {"attach", "gpu1 attached at host-b", 4.300, -1, 0},
    {"resume", "programs back on the GPU", 4.420, -1, 0},
};

static const struct fake_step ok_steps[] = {
    {"check", 0, "", 0.001, 0.009, 0, ""},
    {"prepare", 0, "", 0.012, 0.046, 0, ""},
    {"pre", 4242, "cl_worker", 0.013, 0.045, 0, ""},
    {"pre", 4243, "render farm", 0.013, 0.040, 0, ""},
    {"detach", 0, "", 0.060, 0.120, 0, ""},
    {"migrate", 0, "", 0.181, 4.019, 0, ""},
    {"attach", 0, "", 4.200, 0.100, 0, ""},
    {"resume", 0, "", 4.300, 0.120, 0, ""},
    {"post", 4242, "cl_worker", 4.301, 0.060, 0, ""},
    {"post", 4243, "render farm", 4.302, 0.110, 0, ""},
};

static const struct fake_event rolled_back_events[] = {
    {"check", "host-b ready: 1 of 2 GPUs free", 0.010, -1, 0},
    {"prepare", "programs taken off the GPU", 0.058, -1, 0},
    {"detach", "gpu0 detached", 0.180, -1, 0},
    {"migrate", "migrating to host-b", 0.181, -1, 0},
    {"migrate", "", 0.5, 10, GIB / 10},
    {"migrate", "", 1.0, 30, 3 * GIB / 10},
    {"migrate", "migration failed: connection reset by peer", 1.2, -1, 0},
    {"rollback", "gpu0 attached again", 1.350, -1, 0},
    {"rollback", "programs back on the GPU at the source", 1.420, -1, 0},
};

static const struct fake_step rolled_back_steps[] = {
    {"check", 0, "", 0.001, 0.009, 0, ""},
    {"prepare", 0, "", 0.012, 0.046, 0, ""},
    {"pre", 4242, "cl_worker", 0.013, 0.045, 0, ""},
    {"detach", 0, "", 0.060, 0.120, 0, ""},
    {"migrate", 0, "", 0.181, 1.019, -ECONNRESET,
     "migration job: connection reset by peer"},
    {"rollback", 0, "", 1.200, 0.220, 0, ""},
    {"post", 4242, "cl_worker", 1.360, 0.060, 0, ""},
};

static const struct fake_event failed_events[] = {
    {"check", "host-b ready: 1 of 2 GPUs free", 0.010, -1, 0},
    {"prepare", "programs taken off the GPU", 0.058, -1, 0},
    {"detach", "gpu0 detached", 0.180, -1, 0},
    {"migrate", "migration failed: connection reset by peer", 1.2, -1, 0},
    {"rollback", "gpu0 cannot be attached again: Device or resource busy",
     1.350, -1, 0},
};

static const struct fake_step failed_steps[] = {
    {"check", 0, "", 0.001, 0.009, 0, ""},
    {"prepare", 0, "", 0.012, 0.046, 0, ""},
    {"pre", 4242, "cl_worker", 0.013, 0.045, 0, ""},
    {"detach", 0, "", 0.060, 0.120, 0, ""},
    {"migrate", 0, "", 0.181, 1.019, -ECONNRESET, ""},
    {"rollback", 0, "", 1.200, 0.150, -EBUSY, "attach gpu0: device busy"},
};

static const struct fake_event remoting_events[] = {
    {"check", "host-b has no free GPU: programs will stay remote", 0.010, -1,
     0},
    {"prepare", "programs remote through the proxy", 0.058, -1, 0},
    {"detach", "gpu0 detached", 0.180, -1, 0},
    {"migrate", "migrated: 1.0GiB", 4.200, -1, GIB},
    {"attach", "no usable GPU at host-b", 4.300, -1, 0},
    {"resume", "\x1b[2Jforged\nresult: ok", 4.310, -1, 0},
};

static const struct fake_step remoting_steps[] = {
    {"check", 0, "", 0.001, 0.009, 0, ""},
    {"prepare", 0, "", 0.012, 0.046, 0, ""},
    {"pre", 4242, "cl_worker", 0.013, 0.045, 0, ""},
    {"pre", 666, "evil\x1b]0;owned\x07\nresult: ok", 0.013, 0.030, 0, ""},
    {"detach", 0, "", 0.060, 0.120, 0, ""},
    {"migrate", 0, "", 0.181, 4.019, 0, ""},
    {"attach", 0, "", 4.200, 0.100, -ENODEV, "no free GPU in the pool"},
};

static const struct fake_step lost_steps[] = {
    {"check", 0, "", 0.001, 0.009, 0, ""},
    {"prepare", 0, "", 0.012, 0.046, 0, ""},
    {"pre", 4242, "cl_worker", 0.013, 0.045, 0, ""},
    {"pre", 4243, "render farm", 0.013, 0.040, 0, ""},
    {"detach", 0, "", 0.060, 0.120, 0, ""},
    {"migrate", 0, "", 0.181, 4.019, 0, ""},
    {"attach", 0, "", 4.200, 0.100, 0, ""},
    {"resume", 0, "", 4.300, 0.120, 0, ""},
    {"post", 4242, "cl_worker", 4.301, 0.060, 0, ""},
    {"lost", 4243, "render farm", 4.301, 0, -ENOTCONN,
     "the connection to the proxy tcp:px:7000 was lost"},
};

static const struct fake_event close_events[] = {
    {"check", "host-b ready: 1 of 2 GPUs free", 0.010, -1, 0},
    {"prepare", "programs taken off the GPU", 0.058, -1, 0},
};

static const struct fake_script scripts[] = {
    {"ok", ok_events, N(ok_events), CRANE__HOSTD__RESULT__RESULT_OK, "",
     ok_steps, N(ok_steps), 4.420, GIB, false},
    {"jobinfo", ok_events, N(ok_events), CRANE__HOSTD__RESULT__RESULT_OK, "",
     ok_steps, N(ok_steps), 4.420, GIB, true},
    {"rolled-back", rolled_back_events, N(rolled_back_events),
     CRANE__HOSTD__RESULT__RESULT_ROLLED_BACK,
     "migrate: connection reset by peer", rolled_back_steps,
     N(rolled_back_steps), 1.420, 3 * GIB / 10, false},
    {"failed", failed_events, N(failed_events),
     CRANE__HOSTD__RESULT__RESULT_FAILED,
     "rollback incomplete: gpu0 not attached again: Device or resource busy",
     failed_steps, N(failed_steps), 1.350, 0, false},
    {"remoting", remoting_events, N(remoting_events),
     CRANE__HOSTD__RESULT__RESULT_REMOTING,
     "host-b has no usable GPU: programs remote until one is attached",
     remoting_steps, N(remoting_steps), 4.310, GIB, false},
    {"lost", ok_events, N(ok_events), CRANE__HOSTD__RESULT__RESULT_OK,
     "1 program(s) lost to a fault: render farm[4243]: the connection to "
     "the proxy tcp:px:7000 was lost",
     lost_steps, N(lost_steps), 4.420, GIB, false},
    {"close", close_events, N(close_events), 0, "", NULL, 0, 0, 0, false},
    {"partial", close_events, 1, 0, "", NULL, 0, 0, 0, false},
    {"unknown", close_events, 1, (Crane__Hostd__Result)9, "", NULL, 0, 1, 0,
     false},
    {"hang", NULL, 0, 0, "", NULL, 0, 0, 0, false},
    {"cancel", NULL, 0, 0, "", NULL, 0, 0, 0, false},
    {"garbage", NULL, 0, 0, "", NULL, 0, 0, 0, false},
    {"empty", NULL, 0, 0, "", NULL, 0, 0, 0, false},
    {"huge", NULL, 0, 0, "", NULL, 0, 0, 0, false},
};

/* Writes S to F as a C string literal's inside. */
static void put_escaped(FILE *f, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '\\')
            fputs("\\\\", f);
        else if (c == '\n')
            fputs("\\n", f);
        else if (c < 0x20 || c == 0x7f)
            fprintf(f, "\\x%02x", c);
        else
            fputc(c, f);
    }
}

/* The MigrateOptions, one "options.NAME = VALUE" line each, or
 * "options = none". */
static void dump_options(FILE *f, const Crane__Hostd__MigrateOptions *o)
{
    if (!o) {
        fputs("options = none\n", f);
        return;
    }
    fprintf(f, "options.tls = %d\noptions.copy_storage_all = %d\n"
               "options.copy_storage_inc = %d\n"
               "options.copy_storage_synchronous_writes = %d\n"
               "options.auto_converge = %d\noptions.abort_on_error = %d\n"
               "options.parallel = %d\noptions.compressed = %d\n"
               "options.unsafe = %d\noptions.change_protection = %d\n"
               "options.tunnelled = %d\noptions.zerocopy = %d\n"
               "options.bandwidth_mib = %llu\n"
               "options.parallel_connections = %u\n"
               "options.disks_port = %u\n",
            o->tls, o->copy_storage_all, o->copy_storage_inc,
            o->copy_storage_synchronous_writes, o->auto_converge,
            o->abort_on_error, o->parallel, o->compressed, o->unsafe,
            o->change_protection, o->tunnelled, o->zerocopy,
            (unsigned long long)o->bandwidth_mib, o->parallel_connections,
            o->disks_port);
    fputs("options.listen_address = ", f);
    put_escaped(f, o->listen_address);
    fputs("\noptions.dname = ", f);
    put_escaped(f, o->dname);
    fputs("\noptions.disks_uri = ", f);
    put_escaped(f, o->disks_uri);
    fputs("\noptions.tls_destination = ", f);
    put_escaped(f, o->tls_destination);
    fputs("\noptions.migrate_disks =", f);
    for (size_t i = 0; i < o->n_migrate_disks; i++) {
        fputc(' ', f);
        put_escaped(f, o->migrate_disks[i]);
    }
    fputc('\n', f);
}

static int dump(const char *path, const Crane__Hostd__MigrateRequest *r)
{
    const struct {
        const char *key, *val;
    } strs[] = {
        {"domain", r->domain},       {"dest_uri", r->dest_uri},
        {"migrate_uri", r->migrate_uri}, {"proxy", r->proxy},
        {"peer", r->peer},
    };
    char xml_path[4096];
    FILE *f = fopen(path, "w");

    if (!f)
        return -errno;
    for (size_t i = 0; i < N(strs); i++) {
        fprintf(f, "%s = ", strs[i].key);
        put_escaped(f, strs[i].val);
        fputc('\n', f);
    }
    fprintf(f, "live = %d\np2p = %d\npersistent = %d\n"
               "undefine_source = %d\ntimeout_s = %u\nverbose = %d\n"
               "dest_xml = %zu bytes\n",
            r->live, r->p2p, r->persistent, r->undefine_source, r->timeout_s,
            r->verbose, strlen(r->dest_xml));
    dump_options(f, r->options);
    if (fclose(f) != 0)
        return -errno;
    if (*r->dest_xml) {
        snprintf(xml_path, sizeof(xml_path), "%s.xml", path);
        if (!(f = fopen(xml_path, "w")))
            return -errno;
        fputs(r->dest_xml, f);
        if (fclose(f) != 0)
            return -errno;
    }
    return 0;
}

static int send_reply(int fd, Crane__Hostd__DaemonReply *m)
{
    int rc = crn_frame_write(fd, &m->base);

    if (rc < 0)
        fprintf(stderr, "hostd-fake: write: %s\n", strerror(-rc));
    return rc;
}

/* "cancel": the client's HostCancel on a second connection, answered as
 * taken (its domain appended to DUMP as "cancel = DOMAIN"), then the
 * migration's MigrateDone rolled back on the first. */
static int serve_cancel(int lfd, int fd, const char *dump_path,
                        const char *domain)
{
    Crane__Hostd__DaemonReply m = CRANE__HOSTD__DAEMON_REPLY__INIT;
    Crane__Hostd__MigrateDone done = CRANE__HOSTD__MIGRATE_DONE__INIT;
    Crane__Hostd__ClientRequest *q = NULL;
    uint8_t *buf = NULL;
    size_t len;
    FILE *f;
    int cfd, rc;

    if ((cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) < 0)
        return -errno;
    rc = crn_frame_read(cfd, &buf, &len, FAKE_MAX_REQUEST);
    if (rc == 0 && !(q = crane__hostd__client_request__unpack(NULL, len, buf)))
        rc = -EPROTO;
    free(buf);
    if (rc == 0 && (q->msg_case != CRANE__HOSTD__CLIENT_REQUEST__MSG_CANCEL ||
                    strcmp(q->cancel->domain, domain) != 0))
        rc = -EPROTO;
    if (rc == 0 && (f = fopen(dump_path, "a"))) {
        fprintf(f, "cancel = %s\n", q->cancel->domain);
        fclose(f);
    }
    if (q)
        crane__hostd__client_request__free_unpacked(q, NULL);
    done.result = rc == 0 ? CRANE__HOSTD__RESULT__RESULT_OK
                          : CRANE__HOSTD__RESULT__RESULT_ROLLED_BACK;
    done.id = "20240517-101500-vm1";
    m.msg_case = CRANE__HOSTD__DAEMON_REPLY__MSG_DONE;
    m.done = &done;
    send_reply(cfd, &m);
    close(cfd);
    if (rc < 0) {
        fprintf(stderr, "hostd-fake: no HostCancel of %s\n", domain);
        return rc;
    }
    done.result = CRANE__HOSTD__RESULT__RESULT_ROLLED_BACK;
    done.error = "cancelled by the operator while the hypervisor copied";
    done.seconds = 2.5;
    return send_reply(fd, &m);
}

static int play(int fd, const struct fake_script *s, bool verbose)
{
    Crane__Hostd__DaemonReply m = CRANE__HOSTD__DAEMON_REPLY__INIT;
    Crane__Hostd__MigrateDone done = CRANE__HOSTD__MIGRATE_DONE__INIT;
    Crane__Hostd__JobStats job = CRANE__HOSTD__JOB_STATS__INIT;
    Crane__Hostd__Step steps[16], *sp[16];
    int rc;

    for (size_t i = 0; i < s->n_events; i++) {
        const struct fake_event *e = &s->events[i];
        Crane__Hostd__Progress p = CRANE__HOSTD__PROGRESS__INIT;
        Crane__Hostd__JobStats j = CRANE__HOSTD__JOB_STATS__INIT;

        if (e->percent >= 0 && !verbose)
            continue;
        p.phase = (char *)e->phase;
        p.text = (char *)e->text;
        p.elapsed = e->elapsed;
        p.percent = e->percent;
        p.bytes = e->bytes;
        if (e->percent >= 0 && s->job_progress) {
            /* 1000 bytes in all; at 50 % 5 more remain: virsh's 49.50. */
            j.active = true;
            j.data_total = 1000;
            j.data_remaining = 1000 - 10 * (uint64_t)e->percent +
                               (e->percent == 50 ? 5 : 0);
            p.job = &j;
        }
        m.msg_case = CRANE__HOSTD__DAEMON_REPLY__MSG_PROGRESS;
        m.progress = &p;
        if ((rc = send_reply(fd, &m)) < 0)
            return rc;
    }
    if (!s->result)
        return 0;
    for (size_t i = 0; i < s->n_steps && i < N(steps); i++) {
        const struct fake_step *t = &s->steps[i];

        steps[i] = (Crane__Hostd__Step)CRANE__HOSTD__STEP__INIT;
        steps[i].phase = (char *)t->phase;
        steps[i].pid = t->pid;
        steps[i].program = (char *)t->program;
        steps[i].start = t->start;
        steps[i].seconds = t->seconds;
        steps[i].err = t->err;
        steps[i].error = (char *)t->error;
        sp[i] = &steps[i];
    }
    done.result = s->result;
    done.error = (char *)s->error;
    done.id = "20240517-101500-vm1";
    done.n_steps = s->n_steps < N(steps) ? s->n_steps : N(steps);
    done.steps = sp;
    done.seconds = s->seconds;
    done.bytes = s->bytes;
    done.dest_host = "host-b";
    if (s->job_progress) {
        /* domjobinfo --completed of a 1 GiB VM. */
        job.data_total = job.data_processed = job.memory_total = GIB;
        job.memory_processed = GIB;
        job.elapsed = 4.019;
        job.memory_bps = 256ull << 20;
        job.dirty_rate = 120;
        job.page_size = 4096;
        job.iterations = 3;
        job.downtime = 0.042;
        job.setup_time = 0.012;
        done.job = &job;
    }
    m.msg_case = CRANE__HOSTD__DAEMON_REPLY__MSG_DONE;
    m.done = &done;
    return send_reply(fd, &m);
}

/* Writes raw bytes, for the scripts that break the framing. */
static int raw(int fd, const void *p, size_t len)
{
    return crn_bulk_write(fd, p, len);
}

/* Waits until the client leaves. */
static void until_closed(int fd)
{
    char buf[256];

    while (read(fd, buf, sizeof(buf)) > 0)
        ;
}

int main(int argc, char **argv)
{
    const struct fake_script *s = NULL;
    Crane__Hostd__ClientRequest *req = NULL;
    uint8_t *buf = NULL;
    size_t len;
    int lfd = -1, fd = -1, rc, status = 1;

    if (argc != 4) {
        fprintf(stderr, "usage: hostd-fake SOCKET SCRIPT DUMP\n");
        return 2;
    }
    for (size_t i = 0; i < N(scripts); i++)
        if (!strcmp(scripts[i].name, argv[2]))
            s = &scripts[i];
    if (!s) {
        fprintf(stderr, "hostd-fake: unknown script '%s'\n", argv[2]);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    alarm(FAKE_LIFETIME_S);
    if ((lfd = tool_listen_unix(argv[1], 4)) < 0) {
        fprintf(stderr, "hostd-fake: cannot listen on %s: %s\n", argv[1],
                strerror(-lfd));
        return 1;
    }
    fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "hostd-fake: accept: %s\n", strerror(errno));
        goto out;
    }
    if ((rc = crn_frame_read(fd, &buf, &len, FAKE_MAX_REQUEST)) < 0) {
        fprintf(stderr, "hostd-fake: reading the request: %s\n",
                strerror(-rc));
        goto out;
    }
    req = crane__hostd__client_request__unpack(NULL, len, buf);
    if (!req || req->msg_case != CRANE__HOSTD__CLIENT_REQUEST__MSG_MIGRATE) {
        fprintf(stderr, "hostd-fake: not a MigrateRequest\n");
        goto out;
    }
    if ((rc = dump(argv[3], req->migrate)) < 0) {
        fprintf(stderr, "hostd-fake: writing %s: %s\n", argv[3],
                strerror(-rc));
        goto out;
    }
    if (!strcmp(s->name, "hang")) {
        until_closed(fd);
    } else if (!strcmp(s->name, "cancel")) {
        if (serve_cancel(lfd, fd, argv[3], req->migrate->domain) < 0)
            goto out;
    } else if (!strcmp(s->name, "garbage")) {
        /* Field 1 with wire type 7, which does not exist. */
        static const uint8_t g[] = {0, 0, 0, 3, 0x0f, 0x0f, 0x0f};
        if (raw(fd, g, sizeof(g)) < 0)
            goto out;
    } else if (!strcmp(s->name, "empty")) {
        static const uint8_t e[] = {0, 0, 0, 0};
        if (raw(fd, e, sizeof(e)) < 0)
            goto out;
    } else if (!strcmp(s->name, "huge")) {
        static const uint8_t h[] = {0, 0x20, 0, 0, 1, 2, 3};
        if (raw(fd, h, sizeof(h)) < 0)
            goto out;
        until_closed(fd);
    } else {
        if (play(fd, s, req->migrate->verbose) < 0)
            goto out;
        if (!strcmp(s->name, "partial")) {
            static const uint8_t p[] = {0, 0};
            if (raw(fd, p, sizeof(p)) < 0)
                goto out;
            until_closed(fd);
        }
    }
    status = 0;
out:
    if (req)
        crane__hostd__client_request__free_unpacked(req, NULL);
    free(buf);
    if (fd >= 0)
        close(fd);
    close(lfd);
    unlink(argv[1]);
    return status;
}
