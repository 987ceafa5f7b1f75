/* What proxy_test's case files share: the ids, the helpers, the cases. */
#ifndef PROXY_TEST_CASES_H
#define PROXY_TEST_CASES_H

#include "../client.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Ids a test client chooses. */
enum {
    CTX = 1,
    QUEUE = 2,
    BUF_A = 3,
    BUF_B = 4,
    PROG = 5,
    KERNEL = 6,
    EVENT = 7,
};

/* Items of the compute test: 6 MiB of ints, so reads come in chunks. */
#define ITEMS (6u << 18)

/* common.c: the helpers several files use. */
void fill(int32_t *v, size_t n, int32_t base);
/*
 * The whole path: objects by client ids (batched, no replies), contents as
 * bulk at creation and by write, a launch, a blocking read of several
 * chunks, checked element by element.
 */
void compute(struct client *c, int k);
/* Sends a blocking read of LEN bytes at OFF of BUF_A (EV its event id, 0:
 * none) and returns its seq. */
uint64_t send_read(struct client *c, uint64_t off, size_t len,
                   bool blocking, uint64_t ev);
/* Reads the frames of read SEQ into OUT (LEN bytes) until its final one;
 * returns its err and how many frames it took. */
int recv_read(struct client *c, uint64_t seq, void *out, size_t len,
              int *frames);
/* Reads until the stream ends; returns the Refused reason seen, if any
 * (malloc()ed), checking nothing but Refused comes. */
char *expect_refused(struct client *c);
void send_hello(struct client *c, uint32_t version,
                const uint8_t *token, size_t token_len);
/* A GetInfo; returns err, the value into OUT (LEN bytes of room). */
int get_info(struct client *c, int fn, uint64_t id, uint64_t other,
             uint32_t param, void *out, size_t len, uint64_t *size_ret);

/* The cases, by file. */
int test_basic(void);
int test_small_read(void);
int test_info_and_order(void);
int test_concurrent(void);
int test_isolation(void);
int test_ids(void);
int test_tcp(void);
int test_build_options(void);
int test_handshake(void);
int test_auth(void);
int test_grace(void);
int test_stop(void);
int test_lanes(void);
int test_malformed(void);
int test_killed(void);
int test_quota(void);
int test_failed_event(void);
int test_lockout(void);
int test_handshake_timeout(void);
int test_idle_timeout(void);
int test_peer_connections(void);
int test_max_objects(void);
int test_events(void);
int test_crash_isolation(void);
int test_spares(void);
int test_single_process(void);

#endif /* PROXY_TEST_CASES_H */
