/* Test side of crane-proxy's integration tests: a proxy process and clients. */
#ifndef CRANE_TESTS_PROXY_CLIENT_H
#define CRANE_TESTS_PROXY_CLIENT_H

#include "proto/remote.pb-c.h"

/* For constants and error codes only: the tests speak the protocol. */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Fails the test at once: prints where and why, exits 1. */
#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond))                                                         \
            check_failed(__FILE__, __LINE__, #cond);                         \
    } while (0)
#define CHECK_EQ(a, b)                                                       \
    do {                                                                     \
        long long a_ = (long long)(a), b_ = (long long)(b);                  \
        if (a_ != b_)                                                        \
            check_failed_eq(__FILE__, __LINE__, #a, #b, a_, b_);             \
    } while (0)
void check_failed(const char *file, int line, const char *what)
    __attribute__((noreturn));
void check_failed_eq(const char *file, int line, const char *a,
                     const char *b, long long va, long long vb)
    __attribute__((noreturn));

/* A crane-proxy process on a fresh unix socket; its log is collected. */
struct proxy {
    pid_t pid;
    char endpoint[128];
    char sock[108];
    int log_fd;
    pthread_t reader;
    pthread_mutex_t lock;
    pthread_cond_t grew;
    char *log;
    size_t log_len, log_cap;
    bool log_eof;
    int allowed_errors;          /* error lines the test expects */
};

/* Starts $CRANE_PROXY (default build/bin/crane-proxy) with --listen on a
 * new unix socket (or, when the first extra argument is "tcp", a free
 * loopback TCP port) and the NULL-terminated extra arguments; returns once
 * it logs that it listens. */
void proxy_start(struct proxy *p, const char *arg, ...);
/* Waits until the log holds COUNT lines containing NEEDLE (30 s at most);
 * returns false on time-out. */
bool proxy_wait_log(struct proxy *p, const char *needle, int count);
int proxy_log_count(struct proxy *p, const char *needle);
/* Sends SIGUSR1 and waits for the stats line; returns it (malloc()ed). */
char *proxy_stats(struct proxy *p);
/* SIGTERM, then checks the proxy exits 0 and removed its socket. */
void proxy_stop(struct proxy *p);

/* One connection. */
struct client {
    int fd;
    uint64_t seq;
    uint64_t token_len;
    uint8_t token[64];
    uint64_t device;             /* the first offered device */
    uint32_t lanes_max;          /* the Welcome's lane offer and key */
    uint8_t lane_key[32];
    uint64_t platform;
    Crane__ServerMessage *notes[64];  /* Notify frames seen while waiting */
    int nnotes;
};

int client_connect(struct proxy *p);
/* The program name client_open's Hello gives (default "proxy-test"). */
extern const char *client_program;
/* Connects and does the whole handshake (version 1, optional key and
 * token); checks it ends in Welcome.  Returns the Welcome's resumed flag. */
bool client_open(struct client *c, struct proxy *p, const uint8_t *key,
                 size_t key_len, const uint8_t *token, size_t token_len);
void client_close(struct client *c);

/* Sends M (seq set here) and BULK_LEN bytes at BULK. */
void client_send(struct client *c, Crane__ClientMessage *m, const void *bulk,
                 size_t bulk_len);
/* Reads one frame; NULL at end of stream. */
Crane__ServerMessage *client_recv(struct client *c);
/* Reads until the Reply for SEQ, keeping Notify frames; checks no other
 * Reply comes first. */
Crane__ServerMessage *client_reply(struct client *c, uint64_t seq);
/* Sends M with want_reply and returns its Reply's err (the message is
 * freed unless OUT). */
int client_call(struct client *c, Crane__ClientMessage *m, const void *bulk,
                size_t bulk_len, Crane__ServerMessage **out);
/* Sends M without want_reply. */
void client_post(struct client *c, Crane__ClientMessage *m, const void *bulk,
                 size_t bulk_len);

/* Message helpers; POST ones send without want_reply. */
int tc_ping(struct client *c);
void tc_context(struct client *c, uint64_t id);
void tc_queue(struct client *c, uint64_t id, uint64_t ctx);
int tc_buffer(struct client *c, bool post, uint64_t id, uint64_t ctx,
              uint64_t size, const void *data);
/* Creates program PROG from SRC, builds it, creates kernel KERNEL NAME. */
int tc_program_kernel(struct client *c, uint64_t prog, uint64_t ctx,
                      const char *src, uint64_t kernel, const char *name);
int tc_write(struct client *c, bool post, uint64_t q, uint64_t mem,
             uint64_t off, const void *data, size_t len);
/* A blocking read of LEN bytes into OUT, chunks checked. */
int tc_read(struct client *c, uint64_t q, uint64_t mem, uint64_t off,
            void *out, size_t len);
int tc_finish(struct client *c, uint64_t q);
int tc_release(struct client *c, bool post, int kind, uint64_t id);
/* Launches a 1-D kernel of N items, arguments: buffer A, buffer B, int K. */
void tc_launch_add(struct client *c, uint64_t q, uint64_t kernel, uint64_t a,
                   uint64_t b, int k, size_t n, uint64_t event);

/* The kernel that cl_launch_add runs: a[i] += b[i] * k. */
extern const char add_source[];

#endif /* CRANE_TESTS_PROXY_CLIENT_H */
