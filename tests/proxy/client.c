/* Test side of crane-proxy's integration tests: a proxy process and clients. */
#include "client.h"

#include "proto/auth.h"
#include "proto/endpoint.h"
#include "proto/frame.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Largest frame a test accepts from the proxy. */
#define MAX_FRAME (80u << 20)

const char add_source[] =
    "__kernel void add(__global int *a, __global const int *b, int k)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    a[i] = a[i] + b[i] * k;\n"
    "}\n";

void check_failed(const char *file, int line, const char *what)
{
    fprintf(stderr, "FAIL %s:%d: %s\n", file, line, what);
    exit(1);
}

void check_failed_eq(const char *file, int line, const char *a,
                     const char *b, long long va, long long vb)
{
    fprintf(stderr, "FAIL %s:%d: %s == %s (%lld != %lld)\n", file, line, a,
            b, va, vb);
    exit(1);
}

/* --- the proxy process ---------------------------------------------------- */

static void *read_log(void *arg)
{
    struct proxy *p = arg;
    char buf[4096];
    ssize_t n;

    while ((n = read(p->log_fd, buf, sizeof(buf))) != 0) {
        if (n < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        /* The proxy's log goes to the test's log too. */
        fwrite(buf, 1, (size_t)n, stderr);
        pthread_mutex_lock(&p->lock);
        if (p->log_len + (size_t)n + 1 > p->log_cap) {
            size_t cap = (p->log_len + (size_t)n + 1) * 2;
            char *nl = realloc(p->log, cap);
            CHECK(nl != NULL);
            p->log = nl;
            p->log_cap = cap;
        }
        memcpy(p->log + p->log_len, buf, (size_t)n);
        p->log_len += (size_t)n;
        p->log[p->log_len] = '\0';
        pthread_cond_broadcast(&p->grew);
        pthread_mutex_unlock(&p->lock);
    }
    pthread_mutex_lock(&p->lock);
    p->log_eof = true;
    pthread_cond_broadcast(&p->grew);
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

void proxy_start(struct proxy *p, const char *arg, ...)
{
    const char *bin = getenv("CRANE_PROXY");
    const char *argv[32];
    int pipefd[2];
    int argc = 0;
    va_list ap;

    memset(p, 0, sizeof(*p));
    if (!bin)
        bin = "build/bin/crane-proxy";
    if (arg && strcmp(arg, "tcp") == 0) {
        /* Port 0: the proxy binds a free port and logs which (below), so
         * that no other process can take it in between. */
        snprintf(p->endpoint, sizeof(p->endpoint), "tcp:127.0.0.1:0");
    } else {
        snprintf(p->sock, sizeof(p->sock),
                 "/tmp/crane-proxy-test-%d-%ld.sock", (int)getpid(),
                 (long)random());
        snprintf(p->endpoint, sizeof(p->endpoint), "unix:%s", p->sock);
    }
    argv[argc++] = bin;
    argv[argc++] = "--listen";
    argv[argc++] = p->endpoint;
    argv[argc++] = "--log-level";
    argv[argc++] = "debug";
    va_start(ap, arg);
    for (const char *a = arg; a && argc < 30; a = va_arg(ap, const char *))
        if (strcmp(a, "tcp") != 0)
            argv[argc++] = a;
    va_end(ap);
    argv[argc] = NULL;
    CHECK(pipe2(pipefd, O_CLOEXEC) == 0);
    p->pid = fork();
    CHECK(p->pid >= 0);
    if (p->pid == 0) {
        /* A test that fails takes its proxy with it. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(pipefd[1], 2);
        execv(bin, (char *const *)argv);
        fprintf(stderr, "cannot run %s: %s\n", bin, strerror(errno));
        _exit(127);
    }
    close(pipefd[1]);
    p->log_fd = pipefd[0];
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->grew, NULL);
    CHECK(pthread_create(&p->reader, NULL, read_log, p) == 0);
    if (!proxy_wait_log(p, "listening on", 1)) {
        fprintf(stderr, "FAIL: the proxy did not start\n");
        kill(p->pid, SIGKILL);
        exit(1);
    }
    if (strcmp(p->endpoint, "tcp:127.0.0.1:0") == 0) {
        /* The port it chose, from "listening on tcp:127.0.0.1:PORT". */
        static const char at[] = "listening on tcp:127.0.0.1:";
        int port = 0;
        pthread_mutex_lock(&p->lock);
        const char *s = strstr(p->log, at);
        if (s)
            port = atoi(s + sizeof(at) - 1);
        pthread_mutex_unlock(&p->lock);
        CHECK(port > 0);
        snprintf(p->endpoint, sizeof(p->endpoint), "tcp:127.0.0.1:%d",
                 port);
    }
}

static int count_in(const char *log, const char *needle)
{
    int n = 0;

    for (const char *s = log; s && (s = strstr(s, needle)) != NULL;
         s += strlen(needle))
        n++;
    return n;
}

int proxy_log_count(struct proxy *p, const char *needle)
{
    int n;

    pthread_mutex_lock(&p->lock);
    n = count_in(p->log, needle);
    pthread_mutex_unlock(&p->lock);
    return n;
}

bool proxy_wait_log(struct proxy *p, const char *needle, int count)
{
    struct timespec until;
    bool ok;

    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 30;
    pthread_mutex_lock(&p->lock);
    while (!(ok = count_in(p->log, needle) >= count) && !p->log_eof)
        if (pthread_cond_timedwait(&p->grew, &p->lock, &until) == ETIMEDOUT)
            break;
    pthread_mutex_unlock(&p->lock);
    if (!ok)
        fprintf(stderr, "test: no %d lines with '%s' in the proxy's log\n",
                count, needle);
    return ok;
}

char *proxy_stats(struct proxy *p)
{
    int before = proxy_log_count(p, "stats: ");
    char *line, *s, *end;

    CHECK(kill(p->pid, SIGUSR1) == 0);
    CHECK(proxy_wait_log(p, "stats: ", before + 1));
    pthread_mutex_lock(&p->lock);
    s = p->log;
    for (int i = 0; i <= before; i++)
        s = strstr(s, "stats: ") + 1;
    end = strchr(s, '\n');
    line = strndup(s - 1, end ? (size_t)(end - s + 1) : strlen(s - 1));
    pthread_mutex_unlock(&p->lock);
    return line;
}

void proxy_stop(struct proxy *p)
{
    int status;
    struct stat st;

    CHECK(kill(p->pid, SIGTERM) == 0);
    CHECK(waitpid(p->pid, &status, 0) == p->pid);
    pthread_join(p->reader, NULL);
    close(p->log_fd);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "FAIL: the proxy ended with status 0x%x\n", status);
        exit(1);
    }
    if (p->sock[0])
        CHECK(stat(p->sock, &st) < 0 && errno == ENOENT);
    CHECK(count_in(p->log, "crane-proxy error") == p->allowed_errors);
    free(p->log);
}

/* --- clients ---------------------------------------------------------------- */

const char *client_program = "proxy-test";

int client_connect(struct proxy *p)
{
    struct crn_endpoint ep;
    int fd;

    CHECK(crn_endpoint_parse(p->endpoint, &ep) == 0);
    fd = crn_endpoint_connect(&ep);
    CHECK(fd >= 0);
    return fd;
}

static void hello_msg(Crane__ClientMessage *m, Crane__Hello *h,
                      const uint8_t *token, size_t token_len)
{
    crane__client_message__init(m);
    crane__hello__init(h);
    h->version = 1;
    h->program = (char *)client_program;
    h->pid = (uint32_t)getpid();
    h->resume_token.data = (uint8_t *)token;
    h->resume_token.len = token_len;
    m->msg_case = CRANE__CLIENT_MESSAGE__MSG_HELLO;
    m->hello = h;
}

bool client_open(struct client *c, struct proxy *p, const uint8_t *key,
                 size_t key_len, const uint8_t *token, size_t token_len)
{
    Crane__ClientMessage m;
    Crane__Hello h;
    Crane__ServerMessage *s;
    Crane__Welcome *w;
    bool resumed;

    memset(c, 0, sizeof(*c));
    c->fd = client_connect(p);
    hello_msg(&m, &h, token, token_len);
    client_send(c, &m, NULL, 0);
    s = client_recv(c);
    CHECK(s != NULL);
    if (key) {
        Crane__Auth a = CRANE__AUTH__INIT;
        uint8_t mac[32];
        CHECK_EQ(s->msg_case, CRANE__SERVER_MESSAGE__MSG_CHALLENGE);
        CHECK_EQ(s->challenge->nonce.len, 32);
        CHECK(crn_hmac_sha256(key, key_len, s->challenge->nonce.data, 32,
                              mac) == 0);
        crane__server_message__free_unpacked(s, NULL);
        crane__client_message__init(&m);
        a.mac.data = mac;
        a.mac.len = sizeof(mac);
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_AUTH;
        m.auth = &a;
        client_send(c, &m, NULL, 0);
        s = client_recv(c);
        CHECK(s != NULL);
    }
    if (s->msg_case == CRANE__SERVER_MESSAGE__MSG_REFUSED)
        fprintf(stderr, "refused: %s\n", s->refused->reason);
    CHECK_EQ(s->msg_case, CRANE__SERVER_MESSAGE__MSG_WELCOME);
    w = s->welcome;
    CHECK_EQ(w->version, 1);
    CHECK_EQ(w->session_token.len, 32);
    CHECK(w->n_platforms >= 1);
    CHECK(w->platforms[0]->n_devices >= 1);
    c->platform = w->platforms[0]->id;
    c->device = w->platforms[0]->devices[0]->id;
    CHECK(c->platform >> 63);
    CHECK(c->device >> 63);
    c->token_len = w->session_token.len;
    memcpy(c->token, w->session_token.data, w->session_token.len);
    c->lanes_max = w->lanes_max;
    if (w->lane_key.len == sizeof(c->lane_key))
        memcpy(c->lane_key, w->lane_key.data, sizeof(c->lane_key));
    resumed = w->resumed;
    crane__server_message__free_unpacked(s, NULL);
    return resumed;
}

void client_close(struct client *c)
{
    for (int i = 0; i < c->nnotes; i++)
        crane__server_message__free_unpacked(c->notes[i], NULL);
    c->nnotes = 0;
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
}

static void write_all(int fd, const void *p, size_t len)
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

void client_send(struct client *c, Crane__ClientMessage *m, const void *bulk,
                 size_t bulk_len)
{
    m->seq = ++c->seq;
    CHECK(crn_frame_write(c->fd, &m->base) == 0);
    if (bulk_len)
        write_all(c->fd, bulk, bulk_len);
}

Crane__ServerMessage *client_recv(struct client *c)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    Crane__ServerMessage *s;
    int rc = crn_frame_read(c->fd, &buf, &len, MAX_FRAME);

    if (rc == -ENODATA || rc == -ECONNRESET)
        return NULL;
    CHECK_EQ(rc, 0);
    s = crane__server_message__unpack(NULL, len, buf);
    free(buf);
    CHECK(s != NULL);
    return s;
}

Crane__ServerMessage *client_reply(struct client *c, uint64_t seq)
{
    for (;;) {
        Crane__ServerMessage *s = client_recv(c);
        CHECK(s != NULL);
        if (s->msg_case == CRANE__SERVER_MESSAGE__MSG_NOTIFY) {
            CHECK(c->nnotes < 64);
            c->notes[c->nnotes++] = s;
            continue;
        }
        CHECK_EQ(s->msg_case, CRANE__SERVER_MESSAGE__MSG_REPLY);
        if (s->reply->seq != seq)
            fprintf(stderr, "reply for %llu while waiting for %llu (%s)\n",
                    (unsigned long long)s->reply->seq,
                    (unsigned long long)seq, s->reply->error);
        CHECK_EQ(s->reply->seq, seq);
        return s;
    }
}

int client_call(struct client *c, Crane__ClientMessage *m, const void *bulk,
                size_t bulk_len, Crane__ServerMessage **out)
{
    Crane__ServerMessage *s;
    int err;

    m->want_reply = 1;
    client_send(c, m, bulk, bulk_len);
    s = client_reply(c, m->seq);
    CHECK(!s->reply->more);
    err = s->reply->err;
    if (err && s->reply->error[0])
        fprintf(stderr, "test: seq %llu: err %d: %s\n",
                (unsigned long long)m->seq, err, s->reply->error);
    if (out)
        *out = s;
    else
        crane__server_message__free_unpacked(s, NULL);
    return err;
}

void client_post(struct client *c, Crane__ClientMessage *m, const void *bulk,
                 size_t bulk_len)
{
    m->want_reply = 0;
    client_send(c, m, bulk, bulk_len);
}

/* --- message helpers -------------------------------------------------------- */

int tc_ping(struct client *c)
{
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__Sync s = CRANE__SYNC__INIT;

    s.op = CRANE__SYNC_OP__SYNC_PING;
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_SYNC;
    m.sync = &s;
    return client_call(c, &m, NULL, 0, NULL);
}

void tc_context(struct client *c, uint64_t id)
{
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__CreateContext cc = CRANE__CREATE_CONTEXT__INIT;

    cc.id = id;
    cc.n_devices = 1;
    cc.devices = &c->device;
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_CREATE_CONTEXT;
    m.create_context = &cc;
    client_post(c, &m, NULL, 0);
}

void tc_queue(struct client *c, uint64_t id, uint64_t ctx)
{
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__CreateQueue q = CRANE__CREATE_QUEUE__INIT;

    q.id = id;
    q.context = ctx;
    q.device = c->device;
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_CREATE_QUEUE;
    m.create_queue = &q;
    client_post(c, &m, NULL, 0);
}

int tc_buffer(struct client *c, bool post, uint64_t id, uint64_t ctx,
              uint64_t size, const void *data)
{
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__CreateBuffer b = CRANE__CREATE_BUFFER__INIT;

    b.id = id;
    b.context = ctx;
    b.flags = CL_MEM_READ_WRITE;
    b.size = size;
    b.bulk_len = data ? size : 0;
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_CREATE_BUFFER;
    m.create_buffer = &b;
    if (post) {
        client_post(c, &m, data, b.bulk_len);
        return 0;
    }
    return client_call(c, &m, data, b.bulk_len, NULL);
}

int tc_program_kernel(struct client *c, uint64_t prog, uint64_t ctx,
                      const char *src, uint64_t kernel, const char *name)
{
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__CreateProgram p = CRANE__CREATE_PROGRAM__INIT;
    Crane__BuildProgram b = CRANE__BUILD_PROGRAM__INIT;
    Crane__CreateKernel k = CRANE__CREATE_KERNEL__INIT;
    int err;

    p.id = prog;
    p.context = ctx;
    p.origin = CRANE__PROGRAM_ORIGIN__PROGRAM_SOURCE;
    p.source.data = (uint8_t *)src;
    p.source.len = strlen(src);
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_CREATE_PROGRAM;
    m.create_program = &p;
    client_post(c, &m, NULL, 0);

    crane__client_message__init(&m);
    b.op = CRANE__BUILD_OP__BUILD;
    b.program = prog;
    b.options = "";
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_BUILD_PROGRAM;
    m.build_program = &b;
    err = client_call(c, &m, NULL, 0, NULL);
    if (err)
        return err;

    crane__client_message__init(&m);
    k.id = kernel;
    k.program = prog;
    k.name = (char *)name;
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_CREATE_KERNEL;
    m.create_kernel = &k;
    return client_call(c, &m, NULL, 0, NULL);
}

int tc_write(struct client *c, bool post, uint64_t q, uint64_t mem,
             uint64_t off, const void *data, size_t len)
{
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__MemCommand mc = CRANE__MEM_COMMAND__INIT;

    mc.queue = q;
    mc.op = CRANE__MEM_OP__MEM_WRITE;
    mc.dst = mem;
    mc.dst_offset = off;
    mc.size = len;
    mc.bulk_len = len;
    mc.blocking = !post;
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_MEM_COMMAND;
    m.mem_command = &mc;
    if (post) {
        client_post(c, &m, data, len);
        return 0;
    }
    return client_call(c, &m, data, len, NULL);
}

int tc_read(struct client *c, uint64_t q, uint64_t mem, uint64_t off,
            void *out, size_t len)
{
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__MemCommand mc = CRANE__MEM_COMMAND__INIT;
    size_t got = 0;

    mc.queue = q;
    mc.op = CRANE__MEM_OP__MEM_READ;
    mc.src = mem;
    mc.src_offset = off;
    mc.size = len;
    mc.blocking = 1;
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_MEM_COMMAND;
    m.mem_command = &mc;
    m.want_reply = 1;
    client_send(c, &m, NULL, 0);
    for (;;) {
        Crane__ServerMessage *s = client_reply(c, m.seq);
        Crane__Reply *r = s->reply;
        int err = r->err;
        /* Bytes come with `more` frames, or with the final one (a small
         * read's only frame). */
        if (r->bulk_len) {
            CHECK(r->bulk_len <= (4u << 20));
            CHECK_EQ(r->bulk_offset, got);
            CHECK(got + r->bulk_len <= len);
            /* Bulk bytes follow the frame raw. */
            for (size_t have = 0; have < r->bulk_len;) {
                ssize_t n = read(c->fd, (uint8_t *)out + got + have,
                                 r->bulk_len - have);
                if (n < 0 && errno == EINTR)
                    continue;
                CHECK(n > 0);
                have += (size_t)n;
            }
            got += r->bulk_len;
        }
        if (!r->more) {
            crane__server_message__free_unpacked(s, NULL);
            if (err == 0)
                CHECK_EQ(got, len);
            return err;
        }
        crane__server_message__free_unpacked(s, NULL);
    }
}

int tc_finish(struct client *c, uint64_t q)
{
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__Sync s = CRANE__SYNC__INIT;

    s.op = CRANE__SYNC_OP__SYNC_FINISH;
    s.queue = q;
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_SYNC;
    m.sync = &s;
    return client_call(c, &m, NULL, 0, NULL);
}

int tc_release(struct client *c, bool post, int kind, uint64_t id)
{
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__Release r = CRANE__RELEASE__INIT;

    r.kind = kind;
    r.id = id;
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_RELEASE;
    m.release = &r;
    if (post) {
        client_post(c, &m, NULL, 0);
        return 0;
    }
    return client_call(c, &m, NULL, 0, NULL);
}

void tc_launch_add(struct client *c, uint64_t q, uint64_t kernel, uint64_t a,
                   uint64_t b, int k, size_t n, uint64_t event)
{
    Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
    Crane__LaunchKernel l = CRANE__LAUNCH_KERNEL__INIT;
    Crane__KernelArg args[3], *argv[3];
    uint64_t gsz = n;
    int32_t kv = k;

    for (int i = 0; i < 3; i++) {
        crane__kernel_arg__init(&args[i]);
        args[i].index = (uint32_t)i;
        argv[i] = &args[i];
    }
    args[0].object = a;
    args[0].is_object = 1;
    args[1].object = b;
    args[1].is_object = 1;
    args[2].value.data = (uint8_t *)&kv;
    args[2].value.len = sizeof(kv);
    l.queue = q;
    l.kernel = kernel;
    l.work_dim = 1;
    l.n_global_size = 1;
    l.global_size = &gsz;
    l.n_args = 3;
    l.args = argv;
    l.event = event;
    m.msg_case = CRANE__CLIENT_MESSAGE__MSG_LAUNCH_KERNEL;
    m.launch_kernel = &l;
    client_post(c, &m, NULL, 0);
}
