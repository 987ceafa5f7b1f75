/* A VM's several GPUs against a stand-in hypervisor: reserved by model all
 * or none, plugged and unplugged as one set, a destination with too few
 * refused before anything changes. */
#include "harness.h"

#include "host-daemon/arrive.h"
#include "host-daemon/config.h"
#include "host-daemon/daemon.h"
#include "host-daemon/gpus.h"
#include "host-daemon/handoff.h"
#include "host-daemon/history/history.h"
#include "host-daemon/migration.h"
#include "host-daemon/peer.h"
#include "host-daemon/pool.h"
#include "host-daemon/waits.h"
#include "host-daemon/want.h"
#include "proto/frame.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* --- the stand-in hypervisor --------------------------------------------- */

#define FAKE_MAX 8

/* Which domain holds each device (by alias), and the faults asked for:
 * an attach the hypervisor refuses, an unplug the guest never lets
 * complete.  Events go to the daemon's waits at once. */
struct fake_hv {
    pthread_mutex_t lock;
    struct hd_waits *waits;
    char alias[FAKE_MAX][HV_ALIAS_MAX + 1];
    char holder[FAKE_MAX][HV_NAME_MAX + 1];
    size_t n;
    char fail_attach[HV_ALIAS_MAX + 1];
    char stuck[HV_ALIAS_MAX + 1];
    unsigned attaches, detaches;
};

static struct fake_hv *fake(struct hv *hv)
{
    return (struct fake_hv *)hv;
}

/* The slot of ALIAS (made when new). */
static size_t slot(struct fake_hv *f, const char *alias)
{
    for (size_t i = 0; i < f->n; i++)
        if (strcmp(f->alias[i], alias) == 0)
            return i;
    snprintf(f->alias[f->n], sizeof(f->alias[0]), "%s", alias);
    f->holder[f->n][0] = '\0';
    return f->n++;
}

static void fire(struct fake_hv *f, enum hv_event_kind kind,
                 const char *domain, const char *alias)
{
    struct hv_event ev = { .kind = kind };

    snprintf(ev.domain, sizeof(ev.domain), "%s", domain);
    snprintf(ev.alias, sizeof(ev.alias), "%s", alias);
    hd_waits_signal(f->waits, &ev);
}

static int fake_domain(struct hv *hv, const char *name, struct hv_domain *out)
{
    (void)hv;
    memset(out, 0, sizeof(*out));
    snprintf(out->name, sizeof(out->name), "%s", name);
    out->running = true;
    /* A channel nobody serves: the check never gets as far as the guest. */
    snprintf(out->channel, sizeof(out->channel), "/nonexistent/%s", name);
    return 0;
}

static int fake_holders(struct hv *hv, const struct hv_gpu *gpus, size_t n,
                        char (*holder)[HV_NAME_MAX + 1])
{
    struct fake_hv *f = fake(hv);

    pthread_mutex_lock(&f->lock);
    for (size_t i = 0; i < n; i++)
        snprintf(holder[i], HV_NAME_MAX + 1, "%s",
                 f->holder[slot(f, gpus[i].alias)]);
    pthread_mutex_unlock(&f->lock);
    return 0;
}

static int fake_attach(struct hv *hv, const char *domain,
                       const struct hv_gpu *gpu)
{
    struct fake_hv *f = fake(hv);
    size_t i;

    pthread_mutex_lock(&f->lock);
    f->attaches++;
    i = slot(f, gpu->alias);
    if (strcmp(f->fail_attach, gpu->alias) == 0 || f->holder[i][0]) {
        pthread_mutex_unlock(&f->lock);
        return -EIO;
    }
    snprintf(f->holder[i], sizeof(f->holder[0]), "%s", domain);
    pthread_mutex_unlock(&f->lock);
    fire(f, HV_EV_DEVICE_ADDED, domain, gpu->alias);
    return 0;
}

static int fake_detach(struct hv *hv, const char *domain,
                       const struct hv_gpu *gpu)
{
    struct fake_hv *f = fake(hv);
    size_t i;

    pthread_mutex_lock(&f->lock);
    f->detaches++;
    i = slot(f, gpu->alias);
    if (strcmp(f->holder[i], domain) != 0) {
        pthread_mutex_unlock(&f->lock);
        return -ENOENT;
    }
    if (strcmp(f->stuck, gpu->alias) == 0) {
        pthread_mutex_unlock(&f->lock);
        return 0;                 /* asked; the guest never lets it go */
    }
    f->holder[i][0] = '\0';
    pthread_mutex_unlock(&f->lock);
    fire(f, HV_EV_DEVICE_REMOVED, domain, gpu->alias);
    return 0;
}

static int fake_has_gpu(struct hv *hv, const char *domain,
                        const struct hv_gpu *gpu)
{
    struct fake_hv *f = fake(hv);
    int rc;

    pthread_mutex_lock(&f->lock);
    rc = strcmp(f->holder[slot(f, gpu->alias)], domain) == 0;
    pthread_mutex_unlock(&f->lock);
    return rc;
}

static const struct hv_ops fake_ops = {
    .name = "stand-in",
    .domain = fake_domain,
    .holders = fake_holders,
    .detach = fake_detach,
    .attach = fake_attach,
    .has_gpu = fake_has_gpu,
};

/* --- a daemon on it ------------------------------------------------------- */

struct host {
    struct hd_daemon d;
    struct fake_hv hv;
    char dir[64];
};

/* A daemon named NAME whose pool is the gpu lines GPUS (NULL-ended). */
static void host_start(struct host *h, const char *name,
                       const char *const *gpus)
{
    char why[300], path[128];

    memset(h, 0, sizeof(*h));
    snprintf(h->dir, sizeof(h->dir), "/tmp/crane-gpus-XXXXXX");
    CHECK(mkdtemp(h->dir) != NULL);
    hd_config_defaults(&h->d.cfg);
    snprintf(h->d.cfg.host_name, sizeof(h->d.cfg.host_name), "%s", name);
    snprintf(path, sizeof(path), "%s/history.db", h->dir);
    snprintf(h->d.cfg.history, sizeof(h->d.cfg.history), "%s", path);
    /* The stuck GPU's wait is the only one that runs out. */
    h->d.cfg.detach_timeout_ms = 300;
    h->d.cfg.attach_timeout_ms = 2000;
    for (size_t i = 0; gpus[i]; i++)
        CHECK_INT(hd_config_set(&h->d.cfg, "gpu", gpus[i], why, sizeof(why)),
                  ==, 0);
    pthread_mutex_init(&h->hv.lock, NULL);
    CHECK_INT(hd_waits_new(&h->d.waits), ==, 0);
    h->hv.waits = h->d.waits;
    h->d.hv_ops = &fake_ops;
    h->d.hv = (struct hv *)&h->hv;
    CHECK_INT(hd_pool_new(&h->d.cfg, &h->d.pool, why, sizeof(why)), ==, 0);
    CHECK_INT(hd_waiting_new(&h->d.waiting), ==, 0);
}

static void host_stop(struct host *h)
{
    char cmd[128];

    hd_pool_free(h->d.pool);
    hd_waiting_free(h->d.waiting);
    hd_waits_free(h->d.waits);
    pthread_mutex_destroy(&h->hv.lock);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", h->dir);
    CHECK_INT(system(cmd), ==, 0);
}

/* DOMAIN holds ALIAS at the stand-in hypervisor. */
static void give(struct host *h, const char *domain, const char *alias)
{
    snprintf(h->hv.holder[slot(&h->hv, alias)], HV_NAME_MAX + 1, "%s",
             domain);
}

static size_t held(struct host *h, const char *domain)
{
    struct hd_gpu_set s;

    if (hd_pool_held_set(h->d.pool, h->d.hv_ops, h->d.hv, domain, &s) < 0)
        return 0;
    return s.n;
}

static const char *const four[] = {
    "g0 pci:0000:01:00.0 model:A100", "g1 pci:0000:02:00.0 model:A100",
    "g2 pci:0000:03:00.0 model:H100", "g3 pci:0000:04:00.0", NULL,
};

/* --- the tests ------------------------------------------------------------ */

void test_gpus_config_model(void)
{
    struct hd_config c;
    char why[300];

    hd_config_defaults(&c);
    CHECK_INT(hd_config_set(&c, "gpu", "g0 pci:0000:01:00.0 model:A100",
                            why, sizeof(why)), ==, 0);
    CHECK_STR(c.gpus[0].pci, "0000:01:00.0");
    CHECK_STR(c.gpus[0].model, "A100");
    CHECK_INT(hd_config_set(&c, "gpu", "g1 xml:/etc/crane/g1.xml model:x-1",
                            why, sizeof(why)), ==, 0);
    CHECK_STR(c.gpus[1].xml_file, "/etc/crane/g1.xml");
    CHECK_STR(c.gpus[1].model, "x-1");
    CHECK_INT(hd_config_set(&c, "gpu", "g2 pci:0000:01:00.0 model:", why,
                            sizeof(why)), ==, -EINVAL);
    CHECK_INT(hd_config_set(&c, "gpu", "g2 pci:0000:01:00.0 model:a/b",
                            why, sizeof(why)), ==, -EINVAL);
    CHECK_INT(c.n_gpus, ==, 2);
}

/* Reservations by model, all or none; a want of any model does not take
 * the only GPU of a model another GPU of the VM needs. */
void test_gpus_reserve_all_or_none(void)
{
    struct hd_gpu_want want = { .n = 2 };
    struct hd_gpu_set s, s2;
    struct host h;
    unsigned fit = 9;

    host_start(&h, "dst", four);
    give(&h, "other", "ua-crane-g1");
    snprintf(want.model[0], sizeof(want.model[0]), "A100");
    snprintf(want.model[1], sizeof(want.model[1]), "A100");
    /* g3 has no model: it matches any, so two A100s fit (g0, g3). */
    CHECK_INT(hd_pool_free_matching(h.d.pool, h.d.hv_ops, h.d.hv, &want,
                                    &fit), ==, 0);
    CHECK_INT(fit, ==, 2);
    give(&h, "other", "ua-crane-g3");
    CHECK_INT(hd_pool_free_matching(h.d.pool, h.d.hv_ops, h.d.hv, &want,
                                    &fit), ==, 0);
    CHECK_INT(fit, ==, 1);
    CHECK_INT(hd_pool_reserve_set(h.d.pool, h.d.hv_ops, h.d.hv, "vm", &want,
                                  &s), ==, -EBUSY);
    CHECK_INT(s.n, ==, 0);
    /* Nothing was left reserved: g0 and g2 are still free. */
    CHECK_INT(hd_pool_free_count(h.d.pool, h.d.hv_ops, h.d.hv, &fit), ==, 0);
    CHECK_INT(fit, ==, 2);
    /* Any model and an H100: the H100 goes to the want that names it. */
    want.model[0][0] = '\0';
    snprintf(want.model[1], sizeof(want.model[1]), "H100");
    CHECK_INT(hd_pool_reserve_set(h.d.pool, h.d.hv_ops, h.d.hv, "vm", &want,
                                  &s), ==, 0);
    CHECK_INT(s.n, ==, 2);
    CHECK_STR(s.gpu[0]->name, "g0");
    CHECK_STR(s.gpu[1]->name, "g2");
    /* Reserved: no longer free for another VM. */
    want.n = 1;
    CHECK_INT(hd_pool_reserve_set(h.d.pool, h.d.hv_ops, h.d.hv, "vm2", &want,
                                  &s2), ==, -EBUSY);
    hd_pool_unreserve_set(h.d.pool, &s);
    CHECK_INT(hd_pool_free_count(h.d.pool, h.d.hv_ops, h.d.hv, &fit), ==, 0);
    CHECK_INT(fit, ==, 2);
    host_stop(&h);
}

/* Unplugged and plugged back as one set. */
void test_gpus_detach_attach_set(void)
{
    struct hd_gpu_set s;
    struct host h;
    char why[600] = "", names[128];

    host_start(&h, "src", four);
    give(&h, "vm", "ua-crane-g0");
    give(&h, "vm", "ua-crane-g2");
    CHECK_INT(hd_pool_held_set(h.d.pool, h.d.hv_ops, h.d.hv, "vm", &s), ==,
              0);
    hd_gpus_names(&s, names, sizeof(names));
    CHECK_STR(names, "g0, g2");
    CHECK_INT(hd_gpus_detach(&h.d, "vm", &s, why, sizeof(why)), ==, 0);
    CHECK_INT(held(&h, "vm"), ==, 0);
    CHECK_INT(h.hv.detaches, ==, 2);
    CHECK_INT(hd_gpus_attach(&h.d, "vm", &s, why, sizeof(why)), ==, 0);
    CHECK_INT(held(&h, "vm"), ==, 2);
    CHECK_INT(h.hv.attaches, ==, 2);
    host_stop(&h);
}

/* One of three plugs fails: the two plugged are unplugged again, the VM
 * holds none (it goes on remoting) and the pool has them free. */
void test_gpus_one_plug_fails(void)
{
    struct hd_gpu_want want = { .n = 3 };
    struct hd_gpu_set s;
    struct host h;
    char why[600] = "";
    unsigned n_free = 0;

    host_start(&h, "dst", four);
    snprintf(h.hv.fail_attach, sizeof(h.hv.fail_attach), "ua-crane-g2");
    CHECK_INT(hd_pool_reserve_set(h.d.pool, h.d.hv_ops, h.d.hv, "vm", &want,
                                  &s), ==, 0);
    CHECK_INT(s.n, ==, 3);
    CHECK_INT(hd_gpus_attach(&h.d, "vm", &s, why, sizeof(why)), ==, -EIO);
    hd_pool_unreserve_set(h.d.pool, &s);
    CHECK(strstr(why, "g2 would not attach") != NULL);
    CHECK(strstr(why, "unplugged again") != NULL);
    CHECK_INT(h.hv.attaches, ==, 3);
    CHECK_INT(h.hv.detaches, ==, 2);
    CHECK_INT(held(&h, "vm"), ==, 0);
    CHECK_INT(hd_pool_free_count(h.d.pool, h.d.hv_ops, h.d.hv, &n_free), ==,
              0);
    CHECK_INT(n_free, ==, 4);
    host_stop(&h);
}

/* The guest never lets one of two GPUs go: the unplug fails, the other
 * one is plugged back in, the VM holds both again. */
void test_gpus_never_released(void)
{
    struct hd_gpu_set s;
    struct host h;
    char why[600] = "";

    host_start(&h, "src", four);
    give(&h, "vm", "ua-crane-g0");
    give(&h, "vm", "ua-crane-g1");
    snprintf(h.hv.stuck, sizeof(h.hv.stuck), "ua-crane-g1");
    CHECK_INT(hd_pool_held_set(h.d.pool, h.d.hv_ops, h.d.hv, "vm", &s), ==,
              0);
    CHECK_INT(hd_gpus_detach(&h.d, "vm", &s, why, sizeof(why)), ==,
              -ETIMEDOUT);
    CHECK(strstr(why, "did not let g1 go") != NULL);
    CHECK(strstr(why, "g0 plugged in again") != NULL);
    CHECK_INT(held(&h, "vm"), ==, 2);
    CHECK_INT(h.hv.attaches, ==, 1);
    host_stop(&h);
}

/* --- a migration to a destination with too few ---------------------------- */

struct peer_server {
    struct host *h;
    int lfd;
    uint16_t port;
    pthread_t thread;
};

static void *serve_one(void *p)
{
    struct peer_server *s = p;
    int fd = accept(s->lfd, NULL, NULL);

    if (fd >= 0)
        hd_peer_serve(&s->h->d, fd);
    return NULL;
}

static void peer_listen(struct peer_server *s, struct host *h)
{
    struct sockaddr_in sa = { .sin_family = AF_INET };
    socklen_t len = sizeof(sa);

    s->h = h;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    s->lfd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(s->lfd >= 0);
    CHECK_INT(bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
    CHECK_INT(listen(s->lfd, 4), ==, 0);
    CHECK_INT(getsockname(s->lfd, (struct sockaddr *)&sa, &len), ==, 0);
    s->port = ntohs(sa.sin_port);
    CHECK_INT(pthread_create(&s->thread, NULL, serve_one, s), ==, 0);
}

/* An offline migration of a VM holding two A100s to a host with one free:
 * refused at the check, before the guest or any GPU is touched. */
void test_gpus_too_few_refused(void)
{
    static const char *const dst_gpus[] = {
        "d0 pci:0000:01:00.0 model:A100", "d1 pci:0000:02:00.0 model:A100",
        "d2 pci:0000:03:00.0 model:H100", NULL,
    };
    Crane__Hostd__MigrateRequest q = CRANE__HOSTD__MIGRATE_REQUEST__INIT;
    struct hd_migration *list = NULL;
    struct hd_history *hist;
    struct peer_server ps;
    struct host src, dst;
    char peer[64];
    size_t n = 0;

    host_start(&src, "src", four);
    host_start(&dst, "dst", dst_gpus);
    give(&src, "vm", "ua-crane-g0");
    give(&src, "vm", "ua-crane-g1");
    give(&dst, "other", "ua-crane-d1");
    peer_listen(&ps, &dst);
    snprintf(peer, sizeof(peer), "tcp:127.0.0.1:%u", ps.port);
    q.domain = "vm";
    q.dest_uri = "qemu+tcp://127.0.0.1/system";
    q.peer = peer;
    q.live = false;
    hd_migration_run(&src.d, -1, &q);
    pthread_join(ps.thread, NULL);
    close(ps.lfd);
    /* Nothing changed: both GPUs still there, none unplugged, and the
     * history says why. */
    CHECK_INT(held(&src, "vm"), ==, 2);
    CHECK_INT(src.hv.detaches, ==, 0);
    CHECK_INT(dst.hv.attaches, ==, 0);
    CHECK_INT(hd_history_open(src.d.cfg.history, &hist), ==, 0);
    CHECK_INT(hd_history_list(hist, 10, &list, &n), ==, 0);
    CHECK_INT(n, ==, 1);
    CHECK_INT(list[0].result, ==, HD_RESULT_ROLLED_BACK);
    CHECK(strstr(list[0].error, "1 free GPUs of the models of the 2") !=
          NULL);
    CHECK(strstr(list[0].error, "nothing was changed") != NULL);
    free(list);
    hd_history_close(hist);
    host_stop(&src);
    host_stop(&dst);
}

/* --- a resume of a VM another tool moved, a restart while it waits ------- */

/* The wire's GPU counts and models, and the history steps that keep them
 * (an old history without them: one GPU). */
void test_gpus_want_steps(void)
{
    char *models[] = { "A100", "", "H100" }, *bad[] = { "a/b" };
    struct hd_gpu_want w, back;
    struct hd_step steps[8];
    size_t n = 0;

    CHECK_INT(hd_want_parse(3, models, 2, &w), ==, 0);
    CHECK_INT(w.n, ==, 3);
    CHECK_STR(w.model[0], "A100");
    CHECK_STR(w.model[2], "");
    CHECK_INT(hd_want_parse(0, models, 3, &w), ==, 0);
    CHECK_INT(w.n, ==, 3);
    CHECK_INT(hd_want_parse(1, models, 2, &w), ==, -EINVAL);
    CHECK_INT(hd_want_parse(17, NULL, 0, &w), ==, -EINVAL);
    CHECK_INT(hd_want_parse(1, bad, 1, &w), ==, -EINVAL);
    CHECK_INT(hd_want_parse(0, NULL, 0, &w), ==, 0);
    CHECK_INT(hd_want_count(&w), ==, 1);
    /* Round trip through steps, among others, the newest set winning. */
    memset(steps, 0, sizeof(steps));
    snprintf(steps[n++].phase, sizeof(steps[0].phase), "gpu-want:X1");
    snprintf(steps[n++].phase, sizeof(steps[0].phase), "wait-gpu");
    hd_want_parse(0, models, 3, &w);
    for (size_t k = 0; k < 3; k++)
        hd_want_step(&w, k, steps[n++].phase, sizeof(steps[0].phase));
    CHECK_STR(steps[3].phase, "gpu-want");
    snprintf(steps[n++].phase, sizeof(steps[0].phase), "resume");
    hd_want_from_steps(steps, n, &back);
    CHECK_INT(back.n, ==, 3);
    CHECK_STR(back.model[0], "A100");
    CHECK_STR(back.model[1], "");
    CHECK_STR(back.model[2], "H100");
    hd_want_from_steps(steps + 1, 1, &back);
    CHECK_INT(hd_want_count(&back), ==, 1);
    CHECK_STR(back.model[0], "");
}

/* HostResume (crane-hostctl resume) of VM on H with GPUS GPUs and MODELS;
 * its result. */
static Crane__Hostd__Result resume(struct host *h, uint32_t gpus,
                                   char **models, size_t n_models)
{
    Crane__Hostd__ClientRequest q = CRANE__HOSTD__CLIENT_REQUEST__INIT;
    Crane__Hostd__HostResume r = CRANE__HOSTD__HOST_RESUME__INIT;
    Crane__Hostd__Result result = CRANE__HOSTD__RESULT__RESULT_UNKNOWN;
    Crane__Hostd__DaemonReply *rep;
    const char *domain;
    uint8_t *buf;
    size_t len;
    int sv[2];

    r.domain = "vm";
    r.src_host = "elsewhere";
    r.gpus = gpus;
    r.gpu_models = models;
    r.n_gpu_models = n_models;
    q.msg_case = CRANE__HOSTD__CLIENT_REQUEST__MSG_RESUME;
    q.resume = &r;
    CHECK(hd_handoff_check(&q, &domain) == NULL);
    CHECK_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), ==, 0);
    hd_handoff_serve(&h->d, sv[0], &q);
    close(sv[0]);
    /* Progress lines, then the MigrateDone. */
    while (crn_frame_read(sv[1], &buf, &len, 1 << 20) == 0) {
        rep = crane__hostd__daemon_reply__unpack(NULL, len, buf);
        free(buf);
        CHECK(rep != NULL);
        if (rep->msg_case == CRANE__HOSTD__DAEMON_REPLY__MSG_DONE)
            result = rep->done->result;
        crane__hostd__daemon_reply__free_unpacked(rep, NULL);
    }
    close(sv[1]);
    return result;
}

/* A resume of a VM moved by another tool plugs as many GPUs as it says,
 * of their models, all or none; one asked of nothing more plugs one. */
void test_gpus_resume_count(void)
{
    char *h100[] = { "H100" }, *a100s[] = { "A100", "A100" };
    const char *domain;
    struct host h;

    host_start(&h, "dst", four);
    /* Two GPUs, one an H100: g2 and another (the guest channel answers
     * nothing, so the programs' return fails; the GPUs are in). */
    CHECK_INT(resume(&h, 2, h100, 1), ==, CRANE__HOSTD__RESULT__RESULT_FAILED);
    CHECK_INT(held(&h, "vm"), ==, 2);
    CHECK_STR(h.hv.holder[slot(&h.hv, "ua-crane-g2")], "vm");
    /* Already holding: refused, nothing plugged. */
    CHECK_INT(resume(&h, 2, NULL, 0), ==, CRANE__HOSTD__RESULT__RESULT_FAILED);
    CHECK_INT(h.hv.attaches, ==, 2);
    for (size_t i = 0; i < h.hv.n; i++)
        h.hv.holder[i][0] = '\0';
    /* Nothing said and no guest to ask: one. */
    CHECK_INT(resume(&h, 0, NULL, 0), ==, CRANE__HOSTD__RESULT__RESULT_FAILED);
    CHECK_INT(held(&h, "vm"), ==, 1);
    for (size_t i = 0; i < h.hv.n; i++)
        h.hv.holder[i][0] = '\0';
    /* Three GPUs, two of them A100s, where only g0 and g1 are free: none
     * plugged, the VM remotes. */
    give(&h, "other", "ua-crane-g2");
    give(&h, "other", "ua-crane-g3");
    CHECK_INT(resume(&h, 3, a100s, 2), ==,
              CRANE__HOSTD__RESULT__RESULT_REMOTING);
    CHECK_INT(held(&h, "vm"), ==, 0);
    CHECK_INT(h.hv.attaches, ==, 3);
    /* Bad requests are refused before anything. */
    {
        Crane__Hostd__ClientRequest q = CRANE__HOSTD__CLIENT_REQUEST__INIT;
        Crane__Hostd__HostResume r = CRANE__HOSTD__HOST_RESUME__INIT;

        r.domain = "vm";
        r.gpus = 1;
        r.gpu_models = a100s;
        r.n_gpu_models = 2;
        q.msg_case = CRANE__HOSTD__CLIENT_REQUEST__MSG_RESUME;
        q.resume = &r;
        CHECK(hd_handoff_check(&q, &domain) != NULL);
        r.gpus = 17;
        r.n_gpu_models = 0;
        CHECK(hd_handoff_check(&q, &domain) != NULL);
    }
    host_stop(&h);
}

/* A VM waiting for three GPUs when crane-hostd restarts waits for three
 * again (the history's gpu-want steps), not one. */
void test_gpus_restart_waits_all(void)
{
    char *models[] = { "A100", "A100", "H100" };
    struct hd_waiting_entry w[4];
    struct host h;
    size_t n;

    host_start(&h, "dst", four);
    give(&h, "other", "ua-crane-g0");
    give(&h, "other", "ua-crane-g3");
    CHECK_INT(resume(&h, 3, models, 3), ==,
              CRANE__HOSTD__RESULT__RESULT_REMOTING);
    CHECK_INT(hd_waiting_list(&h.d, w, 4), ==, 1);
    CHECK_INT(w[0].want.n, ==, 3);
    /* The restart: a fresh waiting list read back from the history. */
    hd_waiting_free(h.d.waiting);
    CHECK_INT(hd_waiting_new(&h.d.waiting), ==, 0);
    CHECK_INT(hd_waiting_list(&h.d, w, 4), ==, 0);
    CHECK_INT(hd_waiting_recover(&h.d), ==, 0);
    n = hd_waiting_list(&h.d, w, 4);
    CHECK_INT(n, ==, 1);
    CHECK_STR(w[0].domain, "vm");
    CHECK_INT(w[0].want.n, ==, 3);
    CHECK_STR(w[0].want.model[0], "A100");
    CHECK_STR(w[0].want.model[2], "H100");
    CHECK_INT(h.hv.attaches, ==, 0);
    /* Still too few (g1 an A100, g2 the H100); once g3 is free too, the
     * three fit. */
    {
        unsigned fit = 0;

        CHECK_INT(hd_pool_free_matching(h.d.pool, h.d.hv_ops, h.d.hv,
                                        &w[0].want, &fit), ==, 0);
        CHECK_INT(fit, ==, 2);
        h.hv.holder[slot(&h.hv, "ua-crane-g3")][0] = '\0';
        CHECK_INT(hd_pool_free_matching(h.d.pool, h.d.hv_ops, h.d.hv,
                                        &w[0].want, &fit), ==, 0);
        CHECK_INT(fit, ==, 3);
    }
    host_stop(&h);
}

/* Capability: a gpu line's mem: tag.  A GPU fits a want with as much
 * memory or more; the smallest that is enough is taken, so that the
 * larger stays for a want that needs it; the want's memory survives the
 * history's steps. */
void test_gpus_mem_capability(void)
{
    static const char *const mixed[] = {
        "m0 pci:0000:01:00.0 model:A100 mem:80",
        "m1 pci:0000:02:00.0 mem:40 model:A100",
        "m2 pci:0000:03:00.0 mem:24", NULL,
    };
    struct hd_gpu_want want, back;
    struct hd_gpu_set s;
    struct hd_step steps[4];
    struct hd_config c;
    struct host h;
    uint32_t mem[] = { 40, 80 }, big[] = { 70000 };
    char *a100s[] = { "A100", "A100" }, why[300];
    unsigned fit = 0;

    hd_config_defaults(&c);
    CHECK_INT(hd_config_set(&c, "gpu", mixed[1], why, sizeof(why)), ==, 0);
    CHECK_INT(c.gpus[0].mem_gib, ==, 40);
    CHECK_STR(c.gpus[0].model, "A100");
    CHECK_STR(c.gpus[0].pci, "0000:02:00.0");
    CHECK_INT(hd_config_set(&c, "gpu", "x pci:0000:05:00.0 mem:0", why,
                            sizeof(why)), ==, -EINVAL);
    CHECK_INT(hd_config_set(&c, "gpu", "x pci:0000:05:00.0 mem:4G", why,
                            sizeof(why)), ==, -EINVAL);
    host_start(&h, "dst", mixed);
    /* 40 and 80 GiB A100s: m1 for the first, m0 for the second. */
    CHECK_INT(hd_want_parse(0, a100s, 2, &want), ==, 0);
    CHECK_INT(hd_want_set_mem(&want, mem, 2), ==, 0);
    CHECK_INT(hd_want_set_mem(&want, big, 1), ==, -EINVAL);
    CHECK_INT(hd_pool_reserve_set(h.d.pool, h.d.hv_ops, h.d.hv, "vm", &want,
                                  &s), ==, 0);
    CHECK_INT(s.n, ==, 2);
    CHECK_STR(s.gpu[0]->name, "m1");
    CHECK_STR(s.gpu[1]->name, "m0");
    hd_pool_unreserve_set(h.d.pool, &s);
    /* Any model with 30 GiB, then 80: the 40 GiB one for the first (the
     * 24 is too small), the 80 for the second. */
    hd_want_any(&want, 2);
    mem[0] = 30;
    CHECK_INT(hd_want_set_mem(&want, mem, 2), ==, 0);
    CHECK_INT(hd_pool_reserve_set(h.d.pool, h.d.hv_ops, h.d.hv, "vm", &want,
                                  &s), ==, 0);
    CHECK_STR(s.gpu[0]->name, "m1");
    CHECK_STR(s.gpu[1]->name, "m0");
    hd_pool_unreserve_set(h.d.pool, &s);
    /* Two of 80: only one that big, nothing reserved. */
    mem[0] = 80;
    hd_want_set_mem(&want, mem, 2);
    CHECK_INT(hd_pool_free_matching(h.d.pool, h.d.hv_ops, h.d.hv, &want,
                                    &fit), ==, 0);
    CHECK_INT(fit, ==, 1);
    CHECK_INT(hd_pool_reserve_set(h.d.pool, h.d.hv_ops, h.d.hv, "vm", &want,
                                  &s), ==, -EBUSY);
    /* The want of a VM holding m0 and m2 carries their memory, and the
     * history's steps keep it. */
    give(&h, "vm", "ua-crane-m0");
    give(&h, "vm", "ua-crane-m2");
    CHECK_INT(hd_pool_held_set(h.d.pool, h.d.hv_ops, h.d.hv, "vm", &s), ==,
              0);
    hd_pool_want_of(&s, &want);
    CHECK_INT(want.mem_gib[0], ==, 80);
    CHECK_INT(want.mem_gib[1], ==, 24);
    memset(steps, 0, sizeof(steps));
    hd_want_step(&want, 0, steps[0].phase, sizeof(steps[0].phase));
    hd_want_step(&want, 1, steps[1].phase, sizeof(steps[0].phase));
    CHECK_STR(steps[0].phase, "gpu-want:A100@80");
    CHECK_STR(steps[1].phase, "gpu-want@24");
    hd_want_from_steps(steps, 2, &back);
    CHECK_INT(back.n, ==, 2);
    CHECK_STR(back.model[0], "A100");
    CHECK_INT(back.mem_gib[0], ==, 80);
    CHECK_STR(back.model[1], "");
    CHECK_INT(back.mem_gib[1], ==, 24);
    host_stop(&h);
}
