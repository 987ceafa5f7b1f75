/* proxy_test: the process model: a crashing worker, spare workers, one
 * process for all. */
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

/* A tenant whose call crashes the vendor (CRANE_PROXY_TEST_ABORT makes its
 * worker abort) ends alone: another tenant, mid-computation, keeps
 * computing with exact results, new tenants get in, and the supervisor
 * logs how the worker ended. */
int test_crash_isolation(void)
{
    struct proxy p;
    struct client a, b, c;

    setenv("CRANE_PROXY_TEST_ABORT", "crash-me", 1);
    proxy_start(&p, NULL);
    unsetenv("CRANE_PROXY_TEST_ABORT");
    client_open(&a, &p, NULL, 0, NULL, 0);
    compute(&a, 2);
    client_program = "crash-me";
    client_open(&b, &p, NULL, 0, NULL, 0);
    client_program = "proxy-test";
    {
        Crane__ClientMessage m = CRANE__CLIENT_MESSAGE__INIT;
        Crane__Sync sy = CRANE__SYNC__INIT;
        sy.op = CRANE__SYNC_OP__SYNC_PING;
        m.msg_case = CRANE__CLIENT_MESSAGE__MSG_SYNC;
        m.sync = &sy;
        m.want_reply = 1;
        client_send(&b, &m, NULL, 0);
    }
    CHECK(client_recv(&b) == NULL);
    client_close(&b);
    CHECK(proxy_wait_log(&p, "killed by signal 6", 1));
    p.allowed_errors = 1;
    /* A's objects are whole: the same buffers, a second launch. */
    {
        size_t bytes = ITEMS * sizeof(int32_t);
        int32_t *out = malloc(bytes);
        CHECK(out != NULL);
        tc_launch_add(&a, QUEUE, KERNEL, BUF_A, BUF_B, 1, ITEMS, 0);
        CHECK_EQ(tc_read(&a, QUEUE, BUF_A, 0, out, bytes), 0);
        /* a = 1 + i, b = 1000 + i: after k=2 then k=1, a + 3 b. */
        for (size_t i = 0; i < ITEMS; i++)
            if (out[i] != (int32_t)(1 + i + 3 * (1000 + i))) {
                fprintf(stderr, "item %zu: %d\n", i, out[i]);
                CHECK(0);
            }
        free(out);
    }
    client_open(&c, &p, NULL, 0, NULL, 0);
    compute(&c, 7);
    client_close(&c);
    client_close(&a);
    CHECK(proxy_wait_log(&p, "released 6 objects", 2));
    proxy_stop(&p);
    return 0;
}

/* Child processes of PID (its workers). */
static int children_of(pid_t pid)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    int n = 0;

    if (!d)
        return -1;
    while ((e = readdir(d))) {
        char path[300], buf[512], *rp;
        int ppid = 0;
        FILE *f;
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
        if (!(f = fopen(path, "r")))
            continue;
        if (fgets(buf, sizeof(buf), f) && (rp = strrchr(buf, ')')) &&
            sscanf(rp + 1, " %*c %d", &ppid) == 1 && ppid == pid)
            n++;
        fclose(f);
    }
    closedir(d);
    return n;
}

/* Waits up to 60 s for PID to have N children. */
static bool children_become(pid_t pid, int n)
{
    for (int i = 0; i < 600; i++) {
        if (children_of(pid) == n)
            return true;
        usleep(100000);
    }
    fprintf(stderr, "%d workers, expected %d\n", children_of(pid), n);
    return false;
}

/* --spares 3: three idle workers wait from the start; each tenant takes
 * one and another starts, so that programs connecting together (a
 * migration's resume) each find one ready; a tenant's worker ends with it. */
int test_spares(void)
{
    struct proxy p;
    struct client a, b;

    proxy_start(&p, "--spares", "3", NULL);
    CHECK(children_become(p.pid, 3));
    client_open(&a, &p, NULL, 0, NULL, 0);
    client_open(&b, &p, NULL, 0, NULL, 0);
    compute(&a, 2);
    compute(&b, 3);
    CHECK(children_become(p.pid, 5));
    client_close(&a);
    client_close(&b);
    CHECK(children_become(p.pid, 3));
    proxy_stop(&p);
    return 0;
}

/* --isolation none: every tenant in the one process, as before workers;
 * two tenants at once still compute exactly and are released. */
int test_single_process(void)
{
    struct proxy p;
    struct client a, b;

    proxy_start(&p, "--isolation", "none", NULL);
    CHECK(proxy_log_count(&p, "tenants in one process") == 1);
    client_open(&a, &p, NULL, 0, NULL, 0);
    client_open(&b, &p, NULL, 0, NULL, 0);
    compute(&a, 3);
    compute(&b, 5);
    client_close(&a);
    client_close(&b);
    CHECK(proxy_wait_log(&p, "released 6 objects", 2));
    proxy_stop(&p);
    return 0;
}
