/* Writes a realistic migration history for one host (dashboard tests). */
#include "host-daemon/history/history.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DAY 86400.0

static const char *const peers[] = {"gpu-host-b", "gpu-host-c", "gpu-host-d"};
static const char *const domains[] = {
    "vm-train-01", "vm-train-02", "vm-infer-07", "vm-infer-08", "vm-sim-02",
    "vm-render-03",
};
static const char *const programs[] = {
    "train.py", "infer-server", "lbm-sim", "blender", "clpeak",
};

/* A fixed generator: the same history every time (xorshift64*). */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static double uniform(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (double)((rng_state * 0x2545f4914f6cdd1dull) >> 11) /
           (double)(1ull << 53);
}

/* A log-normal draw around MEDIAN: most close by, a few far above. */
static double around(double median, double spread)
{
    double u1 = uniform() + 1e-12, u2 = uniform();
    double z = sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);

    return median * exp(spread * z);
}

static struct hd_step step(const char *phase, uint32_t pid,
                           const char *program, double start, double took)
{
    struct hd_step s = {.pid = pid, .start_offset = start, .duration = took};

    snprintf(s.phase, sizeof(s.phase), "%s", phase);
    snprintf(s.program, sizeof(s.program), "%s", pid ? program : "");
    return s;
}

/*
 * One migration of DOMAIN between HOST and PEER starting at START, written
 * the way crane-hostd writes it: host steps, each program's pre and post
 * stoppage, the VM's downtime, bytes moved.  SLOW scales the programs'
 * stoppage (a regression on some days, for the trend to show).
 */
static int one(struct hd_history *h, int i, const char *host, double start,
               double slow)
{
    struct hd_migration m = {0};
    struct hd_step st[32];
    size_t n = 0;
    int nprog = 1 + (int)(uniform() * 3);
    uint32_t pids[3];
    double t = 0, pre_end, mem = (4 + (int)(uniform() * 4) * 4) * 1073741824.0;
    double r = uniform(), copy, down;
    bool outgoing = uniform() < 0.6;
    const char *peer = peers[(int)(uniform() * 3)];
    const char *domain = domains[(int)(uniform() * 5)];

    snprintf(m.id, sizeof(m.id), "m%.0f-%06x", start * 1000,
             (unsigned)(i * 2654435761u) & 0xffffff);
    snprintf(m.domain, sizeof(m.domain), "%s", domain);
    snprintf(m.src_host, sizeof(m.src_host), "%s", outgoing ? host : peer);
    snprintf(m.dst_host, sizeof(m.dst_host), "%s", outgoing ? peer : host);
    m.mode = uniform() < 0.75 ? HD_MODE_LIVE : HD_MODE_OFFLINE;
    m.start_time = start;
    m.result = r < 0.88 ? HD_RESULT_OK : r < 0.93 ? HD_RESULT_ROLLED_BACK
             : r < 0.96 ? HD_RESULT_FAILED : HD_RESULT_REMOTING;
    for (int p = 0; p < nprog; p++)
        pids[p] = 2000 + (uint32_t)(uniform() * 30000);

    st[n++] = step("check", 0, NULL, t, 0.004);
    t += 0.004;
    st[n++] = step("prepare", 0, NULL, t, 0.18);
    for (int p = 0; p < nprog; p++)
        st[n++] = step("pre", pids[p], programs[(i + p) % 5], t + 0.01,
                       around(0.012, 0.5) * slow * (m.mode == HD_MODE_LIVE
                                                        ? 1 : 2.2));
    t += 0.18;
    pre_end = t;
    st[n++] = step("detach", 0, NULL, t, around(0.09, 0.3));
    t += st[n - 1].duration;
    /* Live: rounds of copying while the VM runs, then a short pause;
     * offline: the VM paused for the whole copy. */
    copy = mem / around(1.1e9, 0.25) * (m.mode == HD_MODE_LIVE ? 1.3 : 1);
    down = m.mode == HD_MODE_LIVE ? around(0.06, 0.6) : copy;
    if (m.result == HD_RESULT_ROLLED_BACK) {
        st[n++] = step("migrate", 0, NULL, t, copy * 0.4);
        t += copy * 0.4;
        st[n++] = step("rollback: attach", 0, NULL, t, 0.6);
        t += 0.6;
        st[n++] = step("rollback", 0, NULL, t, 0.3);
        for (int p = 0; p < nprog; p++)
            st[n++] = step("post", pids[p], programs[(i + p) % 5], t,
                           around(0.03, 0.4));
        t += 0.3;
        m.bytes_moved = (uint64_t)(mem * 0.4);
        snprintf(m.error, sizeof(m.error),
                 "migration failed: operation failed: migration out job: "
                 "unexpectedly failed");
    } else if (m.result == HD_RESULT_FAILED) {
        st[n++] = step("migrate", 0, NULL, t, copy);
        t += copy;
        st[n++] = step("downtime", 0, NULL, t - down, down);
        st[n++] = step("arrive", 0, NULL, t, 90);
        t += 90;
        m.bytes_moved = (uint64_t)(mem * (m.mode == HD_MODE_LIVE ? 1.2 : 1));
        snprintf(m.error, sizeof(m.error), "on %s: the guest did not resume "
                 "within 90.0 s", m.dst_host);
    } else {
        st[n++] = step("migrate", 0, NULL, t, copy);
        t += copy;
        st[n++] = step("downtime", 0, NULL, t - down, down);
        m.bytes_moved = (uint64_t)(mem * (m.mode == HD_MODE_LIVE ? 1.2 : 1));
        if (m.result == HD_RESULT_REMOTING) {
            st[n++] = step("wait-gpu", 0, NULL, t, 0);
            snprintf(m.error, sizeof(m.error), "on %s: no free GPU on %s; "
                     "programs remote until a GPU is free there, then resume "
                     "by themselves", m.dst_host, m.dst_host);
        } else {
            st[n++] = step("attach", 0, NULL, t, around(0.8, 0.3));
            t += st[n - 1].duration;
            for (int p = 0; p < nprog; p++)
                st[n++] = step("post", pids[p], programs[(i + p) % 5], t,
                               around(0.035, 0.5) * slow);
            st[n++] = step("resume", 0, NULL, t, 0.05);
            t += 0.05;
        }
    }
    (void)pre_end;
    m.end_time = start + t + 0.01;
    return hd_history_record(h, &m, st, n);
}

/* The VM that came here from PEER and waits for a GPU: still running in
 * the history, as crane-hostd leaves it (its retry job takes it up). */
static int waiting(struct hd_history *h, const char *host, double now)
{
    struct hd_migration m = {0};
    struct hd_step st[] = {
        step("arrive", 0, NULL, 0, 0),
        step("wait-gpu", 0, NULL, 0.01, 0),
    };

    snprintf(m.id, sizeof(m.id), "m%.0f-wait01", (now - 1260) * 1000);
    snprintf(m.domain, sizeof(m.domain), "vm-render-03");
    snprintf(m.src_host, sizeof(m.src_host), "gpu-host-b");
    snprintf(m.dst_host, sizeof(m.dst_host), "%s", host);
    m.mode = HD_MODE_LIVE;
    m.start_time = now - 1260;
    m.result = HD_RESULT_RUNNING;
    m.bytes_moved = 8589934592ull;
    if (hd_history_begin(h, &m) < 0)
        return -EIO;
    for (size_t i = 0; i < sizeof(st) / sizeof(*st); i++)
        if (hd_history_add_step(h, m.id, &st[i]) < 0)
            return -EIO;
    return 0;
}

int main(int argc, char **argv)
{
    struct hd_history *h = NULL;
    double now = (double)time(NULL);
    int n, rc = 0;

    if (argc != 4 || (n = atoi(argv[3])) < 1 || n > 100000) {
        fprintf(stderr,
                "usage: hostd-seed HISTORY.db HOST COUNT\n"
                "Writes COUNT finished migrations of the last 14 days to or "
                "from HOST (live and offline, every result, programs' "
                "stoppage with a regression 4 to 6 days ago) and one VM "
                "that arrived 21 minutes ago and waits for a GPU, into the "
                "new file HISTORY.db; the same history for the same "
                "arguments and day.\n");
        return 2;
    }
    if ((rc = hd_history_open(argv[1], &h)) < 0) {
        fprintf(stderr, "hostd-seed: %s: %s\n", argv[1], strerror(-rc));
        return 1;
    }
    for (int i = 0; i < n && rc == 0; i++) {
        double age = 14 * DAY * (n - i) / n - uniform() * 600;
        double slow = age > 4 * DAY && age < 6 * DAY ? 2.6 : 1;

        rc = one(h, i, argv[2], now - age - 3600, slow);
    }
    if (rc == 0)
        rc = waiting(h, argv[2], now);
    if (rc < 0)
        fprintf(stderr, "hostd-seed: %s: %s\n", argv[1], strerror(-rc));
    hd_history_close(h);
    return rc < 0 ? 1 : 0;
}
