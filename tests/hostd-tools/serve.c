/* Serves a migration history file over HTTP until stdin closes (tests). */
#include "host-daemon/history/history.h"
#include "host-daemon/web/http.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The programs of the fixture's VM: names a page must show as text. */
#define PID_A 4242
#define PROG_A "matmul"
#define PID_B 4343
#define PROG_B "resnet <img src=x onerror=alert(1)>"

static struct hd_migration migration(const char *id, const char *domain,
                                     double start, double took,
                                     enum hd_result result, uint64_t bytes)
{
    struct hd_migration m = {
        .mode = HD_MODE_LIVE,
        .start_time = start,
        .end_time = result == HD_RESULT_RUNNING ? 0 : start + took,
        .result = result,
        .bytes_moved = bytes,
    };

    snprintf(m.id, sizeof(m.id), "%s", id);
    snprintf(m.domain, sizeof(m.domain), "%s", domain);
    snprintf(m.src_host, sizeof(m.src_host), "gpu-host-a");
    snprintf(m.dst_host, sizeof(m.dst_host), "gpu-host-b");
    return m;
}

static struct hd_step step(const char *phase, uint32_t pid,
                           const char *program, double start, double took)
{
    struct hd_step s = {.pid = pid, .start_offset = start, .duration = took};

    snprintf(s.phase, sizeof(s.phase), "%s", phase);
    snprintf(s.program, sizeof(s.program), "%s", pid != 0 ? program : "");
    return s;
}

/*
 * Writes a realistic history into the new file PATH: an ok live migration
 * of a VM running two OpenCL programs (host steps, each program's pre and
 * post), a rolled-back one whose domain and error hold markup and quotes,
 * a failed offline one without steps, and one still running (begun, some
 * steps, progress; never finished), written the way the daemon does.
 */
static int write_fixture(const char *path)
{
    const double now = (double)time(NULL);
    const struct hd_step ok_steps[] = {
        step("check", 0, NULL, 0, 0.0042),
        step("prepare", 0, NULL, 0.0042, 0.21),
        step("pre", PID_A, PROG_A, 0.2142, 0.0123),
        step("pre", PID_B, PROG_B, 0.2142, 0.0311),
        step("detach", 0, NULL, 0.2453, 0.083),
        step("migrate", 0, NULL, 0.3283, 6.2),
        step("downtime", 0, NULL, 6.4693, 0.059),
        step("attach", 0, NULL, 6.5283, 0.91),
        step("post", PID_A, PROG_A, 7.4383, 0.045),
        step("post", PID_B, PROG_B, 7.4383, 0.0622),
        step("resume", 0, NULL, 7.5005, 0.0031),
    };
    const struct hd_step rb_steps[] = {
        step("check", 0, NULL, 0, 0.004),
        step("prepare", 0, NULL, 0.004, 0.19),
        step("pre", PID_A, PROG_A, 0.194, 0.0102),
        step("detach", 0, NULL, 0.2042, 0.07),
        step("migrate", 0, NULL, 0.2742, 3.1),
        step("attach", 0, NULL, 3.3742, 0.4),
        step("rollback", 0, NULL, 3.7742, 0.52),
        step("post", PID_A, PROG_A, 4.2942, 0.051),
    };
    const struct hd_step run_steps[] = {
        step("check", 0, NULL, 0, 0.0038),
        step("prepare", 0, NULL, 0.0038, 0.2),
        step("pre", PID_A, PROG_A, 0.2038, 0.0118),
        step("pre", PID_B, PROG_B, 0.2038, 0.0297),
        step("detach", 0, NULL, 0.2335, 0.081),
    };
    struct hd_migration ok = migration("m-ok", "train-01", now - 3600, 7.5036,
                                       HD_RESULT_OK, 8600000000ull);
    struct hd_migration rb = migration(
        "m-rolled-back", "db \"primary\" <b>bold</b> & 'co'", now - 1800, 4.35,
        HD_RESULT_ROLLED_BACK, 4100000000ull);
    struct hd_migration off = migration("m-failed", "batch-07", now - 900, 1.2,
                                        HD_RESULT_FAILED, 0);
    struct hd_migration run = migration("m-running", "train-01", now - 4, 0,
                                        HD_RESULT_RUNNING, 0);
    struct hd_history *h = NULL;
    int rc;

    snprintf(rb.error, sizeof(rb.error), "%s",
             "attach failed: <script>alert(\"pwned\")</script> & 'quotes'");
    off.mode = HD_MODE_OFFLINE;
    snprintf(off.error, sizeof(off.error), "%s",
             "destination unreachable; the VM could not be restored");
    if (access(path, F_OK) == 0) {
        fprintf(stderr, "hostd-serve: %s exists; a fixture needs a new file\n",
                path);
        return -EEXIST;
    }
    rc = hd_history_open(path, &h);
    if (rc == 0)
        rc = hd_history_record(h, &ok, ok_steps,
                               sizeof(ok_steps) / sizeof(*ok_steps));
    if (rc == 0)
        rc = hd_history_record(h, &rb, rb_steps,
                               sizeof(rb_steps) / sizeof(*rb_steps));
    if (rc == 0)
        rc = hd_history_record(h, &off, NULL, 0);
    if (rc == 0)
        rc = hd_history_begin(h, &run);
    for (size_t i = 0;
         rc == 0 && i < sizeof(run_steps) / sizeof(*run_steps); i++)
        rc = hd_history_add_step(h, run.id, &run_steps[i]);
    if (rc == 0)
        rc = hd_history_progress(h, run.id, 1288490188ull);
    hd_history_close(h);
    return rc;
}

/*
 * Moves the fixture's running migration one event on, as the daemon would
 * from its own connection: the memory copy ends (the "migrate" step, all
 * bytes moved), the GPU is attached, the programs resume (their "post"
 * steps), and finally the VM resumes and the migration finishes ok.
 * -EALREADY once it has finished.
 */
static int advance_fixture(const char *path)
{
    static const char id[] = "m-running";
    struct hd_step next[2];
    struct hd_migration m;
    struct hd_step *steps = NULL;
    struct hd_history *h = NULL;
    size_t n = 0, n_next = 0;
    int rc;

    rc = hd_history_open(path, &h);
    if (rc == 0)
        rc = hd_history_get(h, id, &m, &steps, &n);
    free(steps);
    if (rc == 0 && m.result != HD_RESULT_RUNNING)
        rc = -EALREADY;
    if (rc != 0)
        goto out;
    switch (n) {
    case 5:
        next[n_next++] = step("migrate", 0, NULL, 0.3145, 6.0);
        rc = hd_history_progress(h, id, 8600000000ull);
        break;
    case 6:
        next[n_next++] = step("attach", 0, NULL, 6.3145, 0.88);
        break;
    case 7:
        next[n_next++] = step("post", PID_A, PROG_A, 7.1945, 0.0431);
        next[n_next++] = step("post", PID_B, PROG_B, 7.1945, 0.0587);
        break;
    case 9:
        next[n_next++] = step("resume", 0, NULL, 7.2532, 0.003);
        break;
    default:
        fprintf(stderr, "hostd-serve: %s has %zu steps, not the fixture's\n",
                id, n);
        rc = -EPROTO;
    }
    for (size_t i = 0; rc == 0 && i < n_next; i++)
        rc = hd_history_add_step(h, id, &next[i]);
    if (rc == 0 && n == 9)
        rc = hd_history_finish(h, id, HD_RESULT_OK, m.start_time + 7.2562,
                               "");
out:
    hd_history_close(h);
    return rc;
}

/* A stand-in for crane-hostd's pool (hd_pool_read_fn): gpu0 held, gpu1
 * free, no VM waiting; the dashboard asks for a pool on every poll. */
static int stand_in_pool(void *arg, hd_pool_use_fn *use, void *use_arg)
{
    static const struct hd_pool_gpu_state gpus[] = {
        {"gpu0", "ua-crane-gpu0", "0000:65:00.0", "vm-ok", false},
        {"gpu1", "ua-crane-gpu1", "0000:66:00.0", "", false},
    };
    struct hd_pool_state s = {.host = "gpu-host-a", .gpus = gpus,
                              .n_gpus = 2, .error = ""};

    (void)arg;
    return use(use_arg, &s);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: hostd-serve HISTORY.db PORT [ADDR [WEB_CONFIG]]\n"
               "       hostd-serve --fixture HISTORY.db\n"
               "       hostd-serve --advance HISTORY.db\n"
               "Serves the dashboard, /api and /metrics of HISTORY.db on"
               " 127.0.0.1:PORT (0: any free port, printed; ADDR: another"
               " address; WEB_CONFIG: HTTPS and credentials, as crane-hostd's"
               " web_config) until stdin closes, with a stand-in GPU pool of two GPUs; with --fixture, writes a sample history (finished,"
               " rolled-back, failed and running migrations) into the new"
               " file HISTORY.db instead; with --advance, moves that"
               " fixture's running migration one event on (exit 3 once it"
               " has finished).\n");
}

int main(int argc, char **argv)
{
    struct hd_history *h = NULL;
    struct hd_http *s = NULL;
    struct hd_http_sources pool = {.pool = stand_in_pool};
    struct hd_web_config *web = NULL;
    char buf[64], why[512];
    int rc;

    if (argc == 2 && !strcmp(argv[1], "--help")) {
        usage(stdout);
        return 0;
    }
    if (argc < 3 || argc > 5 || (argc > 3 && !strcmp(argv[1], "--fixture")) ||
        (argc > 3 && !strcmp(argv[1], "--advance"))) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--fixture")) {
        rc = write_fixture(argv[2]);
        if (rc < 0)
            fprintf(stderr, "hostd-serve: cannot write a fixture to %s: %s\n",
                    argv[2], strerror(-rc));
        return rc < 0 ? 1 : 0;
    }
    if (!strcmp(argv[1], "--advance")) {
        rc = advance_fixture(argv[2]);
        if (rc < 0 && rc != -EALREADY)
            fprintf(stderr, "hostd-serve: cannot advance %s: %s\n", argv[2],
                    strerror(-rc));
        return rc == -EALREADY ? 3 : rc < 0 ? 1 : 0;
    }
    if (argc == 5 && *argv[4] &&
        (rc = hd_web_config_load(argv[4], &web, why, sizeof(why))) < 0) {
        fprintf(stderr, "hostd-serve: %s\n", why);
        return 1;
    }
    pool.web = web;
    if ((rc = hd_history_open(argv[1], &h)) < 0 ||
        (rc = hd_http_start_with(&s, argc > 3 ? argv[3] : NULL,
                                 (uint16_t)atoi(argv[2]), h, &pool)) < 0) {
        fprintf(stderr, "hostd-serve: cannot serve %s: %s\n", argv[1],
                strerror(-rc));
        hd_history_close(h);
        hd_web_config_free(web);
        return 1;
    }
    printf("port %u\n", hd_http_port(s));
    fflush(stdout);
    while (read(0, buf, sizeof(buf)) > 0)
        ;
    hd_http_stop(s);
    hd_history_close(h);
    hd_web_config_free(web);
    return 0;
}
