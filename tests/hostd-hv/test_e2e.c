/* hv_libvirt_ops on real libvirtds with a booted QEMU guest: hotplug, migration. */
#include "harness.h"
#include "recorder.h"

#include "host-daemon/hv/hv.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

/*
 * Needs CRANE_E2E_URI (a libvirtd from tests/e2e/libvirtd.sh; e2e_migrate
 * also CRANE_E2E_DEST_URI, a second one) and the initramfs guest
 * (build/e2e-vm, or $CRANE_VM_DIR); run from the repository root, since
 * the domain, device and destination XML come from tests/e2e/lib.sh, the
 * one place that describes them.  tests/hostd-hv/run-e2e.sh does all that.
 */

#define CHANNEL "org.crane.guest.0"

/* One test's guest: its name, folder and the libvirtds it may be on. */
struct e2e {
    const char *uri, *dest_uri;
    char name[64];
    char work[256];
};

/* Runs lib.sh's FUNCTION with ARGS (shell words); its output, malloc'd. */
static char *lib_sh(const char *function, const char *args)
{
    char cmd[1024];
    size_t len = 0, cap = 8192;
    char *out = malloc(cap);
    FILE *p;
    size_t n;

    CHECK(out != NULL);
    /* lib.sh finds the repository from $0: tests/e2e/ANYTHING. */
    snprintf(cmd, sizeof(cmd),
             "sh -c '. tests/e2e/lib.sh && %s \"$@\"' tests/e2e/hostd-hv %s",
             function, args);
    p = popen(cmd, "r");
    CHECK(p != NULL);
    while ((n = fread(out + len, 1, cap - 1 - len, p)) > 0) {
        len += n;
        if (len == cap - 1) {
            cap *= 2;
            out = realloc(out, cap);
            CHECK(out != NULL);
        }
    }
    out[len] = '\0';
    CHECK_INT(pclose(p), ==, 0);
    return out;
}

/* Skips without the libvirtds or the guest image; names the guest. */
static void e2e_setup(struct e2e *e, const char *tag, bool two_hosts)
{
    const char *vm_dir = getenv("CRANE_VM_DIR");
    const char *e2e_dir = getenv("CRANE_E2E_DIR");
    char kernel[300];

    memset(e, 0, sizeof(*e));
    e->uri = getenv("CRANE_E2E_URI");
    e->dest_uri = getenv("CRANE_E2E_DEST_URI");
    if (e->uri == NULL || e->uri[0] == '\0')
        hvt_skip("CRANE_E2E_URI not set: see tests/hostd-hv/run-e2e.sh");
    if (two_hosts && (e->dest_uri == NULL || e->dest_uri[0] == '\0'))
        hvt_skip("CRANE_E2E_DEST_URI not set: see tests/hostd-hv/run-e2e.sh");
    if (access("tests/e2e/lib.sh", R_OK) != 0)
        hvt_fail(__FILE__, __LINE__, "run from the repository root");
    snprintf(kernel, sizeof(kernel), "%s/vmlinuz",
             vm_dir != NULL ? vm_dir : "build/e2e-vm");
    if (access(kernel, R_OK) != 0)
        hvt_skip("no guest image (%s): vmimages/build-initramfs.sh", kernel);
    if (e2e_dir == NULL)
        e2e_dir = "/tmp/crane-e2e";
    snprintf(e->name, sizeof(e->name), "crane-hvt-%s-%ld", tag,
             (long)getpid());
    snprintf(e->work, sizeof(e->work), "%s/%s", e2e_dir, e->name);
    mkdir(e2e_dir, 0755);
    CHECK(mkdir(e->work, 0755) == 0 || errno == EEXIST);
}

/* Whether the console file FILE (in the guest's folder) has a line
 * starting with LINE. */
static bool console_has(const struct e2e *e, const char *file,
                        const char *line)
{
    char path[400], buf[512];
    bool found = false;
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", e->work, file);
    f = fopen(path, "r");
    if (f == NULL)
        return false;
    while (!found && fgets(buf, sizeof(buf), f) != NULL)
        found = strncmp(buf, line, strlen(line)) == 0;
    fclose(f);
    return found;
}

struct console_goal {
    const struct e2e *e;
    const char *file, *line;
};

static bool console_goal_met(void *arg)
{
    struct console_goal *g = arg;

    return console_has(g->e, g->file, g->line);
}

static void on_tick(uv_timer_t *timer)
{
    (void)timer; /* wakes the loop to look again */
}

/* Runs L until DONE(ARG), waking every 50 ms to look at what no event
 * announces (a console file, a thread's result). */
static void run_polling(struct hvt_loop *l, bool (*done)(void *), void *arg,
                        unsigned timeout_ms, const char *what)
{
    uv_timer_t tick;

    uv_timer_init(&l->loop, &tick);
    uv_timer_start(&tick, on_tick, 50, 50);
    hvt_run_until(l, done, arg, timeout_ms, what);
    uv_close((uv_handle_t *)&tick, NULL);
    uv_run(&l->loop, UV_RUN_NOWAIT);
}

static void wait_console(struct hvt_loop *l, const struct e2e *e,
                         const char *file, const char *line,
                         unsigned timeout_ms)
{
    struct console_goal g = {e, file, line};

    run_polling(l, console_goal_met, &g, timeout_ms, line);
}

/* Destroys and undefines the guest wherever it is (on failure too). */
static void undo(void *arg)
{
    struct e2e *e = arg;
    const char *uris[2] = {e->uri, e->dest_uri};

    for (int i = 0; i < 2; i++) {
        virConnectPtr conn;
        virDomainPtr dom;

        if (uris[i] == NULL || (conn = virConnectOpen(uris[i])) == NULL)
            continue;
        dom = virDomainLookupByName(conn, e->name);
        if (dom != NULL) {
            virDomainDestroy(dom);
            virDomainUndefine(dom);
            virDomainFree(dom);
        }
        virConnectClose(conn);
    }
}

/* Defines the guest on RAW and boots it until its rng driver is bound. */
static void boot(struct hvt_loop *l, struct hvt_recorder *r,
                 virConnectPtr raw, struct e2e *e)
{
    char args[600];
    char *xml;
    virDomainPtr dom;

    snprintf(args, sizeof(args), "'%s' '%s'", e->name, e->work);
    xml = lib_sh("e2e_domain_xml", args);
    hvt_on_fail(undo, e);
    dom = virDomainDefineXML(raw, xml);
    free(xml);
    if (dom == NULL)
        hvt_fail(__FILE__, __LINE__, "define: %s", virGetLastErrorMessage());
    CHECK_INT(virDomainCreate(dom), ==, 0);
    virDomainFree(dom);
    hvt_wait_event(l, r, HV_EV_DOMAIN_STARTED, e->name, NULL, 1, 30000);
    wait_console(l, e, "console.log", "CRANE-RNG present", 120000);
}

/* --- hotplug ---------------------------------------------------------------- */

void test_e2e_hotplug(void)
{
    struct hvt_recorder *r = calloc(1, sizeof(*r));
    struct hv_gpu gpu = {.name = "gpu0", .alias = "ua-gpu0"};
    char holder[1][HV_NAME_MAX + 1];
    char sock[300];
    struct hv_domain d;
    struct hvt_loop l;
    struct hv_job job;
    virConnectPtr raw;
    virDomainPtr dom;
    struct e2e e;
    struct hv *hv;

    e2e_setup(&e, "hotplug", false);
    CHECK(r != NULL);
    gpu.xml = lib_sh("e2e_rng_xml", "");
    snprintf(sock, sizeof(sock), "%s/guest0.sock", e.work);
    hvt_loop_init(&l);
    CHECK_INT(hv_libvirt_ops.open(e.uri, CHANNEL, &l.loop, hvt_record, r,
                                  &hv),
              ==, 0);
    raw = virConnectOpen(e.uri);
    CHECK(raw != NULL);
    boot(&l, r, raw, &e);
    CHECK_INT(hv_libvirt_ops.domain(hv, e.name, &d), ==, 0);
    CHECK(d.running);
    CHECK_STR(d.channel, sock);
    CHECK_INT(hv_libvirt_ops.holders(hv, &gpu, 1, holder), ==, 0);
    CHECK_STR(holder[0], e.name);

    /* Unplug: asked, then the guest lets go and the event comes. */
    CHECK_INT(hv_libvirt_ops.detach(hv, e.name, &gpu), ==, 0);
    hvt_wait_event(&l, r, HV_EV_DEVICE_REMOVED, e.name, "ua-gpu0", 1, 30000);
    CHECK_INT(hv_libvirt_ops.has_gpu(hv, e.name, &gpu), ==, 0);
    CHECK_INT(hv_libvirt_ops.holders(hv, &gpu, 1, holder), ==, 0);
    CHECK_STR(holder[0], "");
    CHECK_INT(hv_libvirt_ops.detach(hv, e.name, &gpu), ==, -ENOENT);
    wait_console(&l, &e, "console.log", "CRANE-RNG absent", 30000);

    /* Plug back in. */
    CHECK_INT(hv_libvirt_ops.attach(hv, e.name, &gpu), ==, 0);
    hvt_wait_event(&l, r, HV_EV_DEVICE_ADDED, e.name, "ua-gpu0", 1, 30000);
    CHECK_INT(hv_libvirt_ops.has_gpu(hv, e.name, &gpu), ==, 1);
    wait_console(&l, &e, "console.log", "CRANE-RNG present", 30000);

    /* No migration ran: no job. */
    CHECK_INT(hv_libvirt_ops.job(hv, e.name, &job), ==, 0);
    CHECK(!job.active);

    CHECK_INT(hv_libvirt_ops.suspend(hv, e.name), ==, 0);
    dom = virDomainLookupByName(raw, e.name);
    CHECK(dom != NULL);
    CHECK_INT(virDomainDestroy(dom), ==, 0);
    hvt_wait_event(&l, r, HV_EV_DOMAIN_STOPPED, e.name, NULL, 1, 30000);
    CHECK_INT(virDomainUndefine(dom), ==, 0);
    virDomainFree(dom);
    hvt_on_fail(NULL, NULL);
    CHECK_INT(r->off_loop, ==, 0);

    virConnectClose(raw);
    hv_libvirt_ops.close(hv);
    hvt_loop_fini(&l);
    free(gpu.xml);
    free(r);
}

/* --- migration ---------------------------------------------------------------- */

/* A migration on a thread of its own, as the daemon runs it. */
struct migration {
    struct hvt_loop *l;
    struct hv *hv;
    const char *name;
    struct hv_migrate_args args;
    pthread_mutex_t lock;
    bool done;
    int rc;
};

static void *migration_main(void *arg)
{
    struct migration *m = arg;
    int rc = hv_libvirt_ops.migrate(m->hv, m->name, &m->args);

    pthread_mutex_lock(&m->lock);
    m->rc = rc;
    m->done = true;
    pthread_mutex_unlock(&m->lock);
    hvt_poke(m->l);
    return NULL;
}

/* Done, and both ends' lifecycle events have come. */
struct migration_goal {
    struct migration *m;
    const struct hvt_recorder *from, *to;
    int from_stopped, to_started;
};

static bool migration_over(void *arg)
{
    struct migration_goal *g = arg;
    bool done;

    pthread_mutex_lock(&g->m->lock);
    done = g->m->done;
    pthread_mutex_unlock(&g->m->lock);
    if (done && g->m->rc != 0)
        return true;
    return done &&
           hvt_count(g->from, HV_EV_DOMAIN_STOPPED, g->m->name, NULL) >=
               g->from_stopped &&
           hvt_count(g->to, HV_EV_DOMAIN_STARTED, g->m->name, NULL) >=
               g->to_started;
}

/* Migrates the guest from FROM to TO (p2p or client-driven) while the
 * loop runs; returns once both ends have reported it. */
static void migrate(struct hvt_loop *l, struct hv *from,
                    struct hvt_recorder *from_events,
                    struct hvt_recorder *to_events, const char *name,
                    const struct hv_migrate_args *args, int from_stopped,
                    int to_started)
{
    struct migration m = {.l = l, .hv = from, .name = name, .args = *args};
    struct migration_goal g = {&m, from_events, to_events, from_stopped,
                               to_started};
    pthread_t thread;

    pthread_mutex_init(&m.lock, NULL);
    CHECK_INT(pthread_create(&thread, NULL, migration_main, &m), ==, 0);
    run_polling(l, migration_over, &g, 120000,
                args->p2p ? "a p2p migration" : "a client-driven migration");
    pthread_join(thread, NULL);
    pthread_mutex_destroy(&m.lock);
    CHECK_INT(m.rc, ==, 0);
}

/* S with every FROM replaced by TO, malloc'd. */
static char *replace_all(const char *s, const char *from, const char *to)
{
    size_t n = 0, flen = strlen(from), tlen = strlen(to);
    char *out, *o;

    for (const char *p = strstr(s, from); p != NULL; p = strstr(p + flen, from))
        n++;
    out = malloc(strlen(s) + n * (tlen > flen ? tlen - flen : 0) + 1);
    CHECK(out != NULL);
    for (o = out; *s != '\0';) {
        if (strncmp(s, from, flen) == 0) {
            memcpy(o, to, tlen);
            o += tlen;
            s += flen;
        } else {
            *o++ = *s++;
        }
    }
    *o = '\0';
    return out;
}

void test_e2e_migrate(void)
{
    struct hvt_recorder *rs = calloc(1, sizeof(*rs));
    struct hvt_recorder *rd = calloc(1, sizeof(*rd));
    struct hv_gpu gpu = {.name = "gpu0", .alias = "ua-gpu0"};
    struct hv_migrate_args args = {.migrate_uri = "tcp://127.0.0.1",
                                   .live = true, .persistent = true,
                                   .undefine_source = true};
    char path[400], from[400], to[400], words[900];
    struct hv *src, *dst;
    struct hv_domain d;
    struct hvt_loop l;
    struct hv_job job;
    virConnectPtr raw;
    virDomainPtr dom;
    char *xml, *back;
    struct e2e e;
    FILE *f;

    e2e_setup(&e, "migrate", true);
    CHECK(rs != NULL && rd != NULL);
    gpu.xml = lib_sh("e2e_rng_xml", "");
    hvt_loop_init(&l);
    /* Two backends, one per "host", on the one loop. */
    CHECK_INT(hv_libvirt_ops.open(e.uri, CHANNEL, &l.loop, hvt_record, rs,
                                  &src),
              ==, 0);
    CHECK_INT(hv_libvirt_ops.open(e.dest_uri, CHANNEL, &l.loop, hvt_record,
                                  rd, &dst),
              ==, 0);
    raw = virConnectOpen(e.uri);
    CHECK(raw != NULL);
    boot(&l, rs, raw, &e);

    /* The GPU leaves first, as crane does it. */
    CHECK_INT(hv_libvirt_ops.detach(src, e.name, &gpu), ==, 0);
    hvt_wait_event(&l, rs, HV_EV_DEVICE_REMOVED, e.name, "ua-gpu0", 1, 30000);

    /* There: peer to peer, with the destination XML lib.sh makes. */
    dom = virDomainLookupByName(raw, e.name);
    CHECK(dom != NULL);
    xml = virDomainGetXMLDesc(dom, VIR_DOMAIN_XML_MIGRATABLE);
    CHECK(xml != NULL);
    virDomainFree(dom);
    snprintf(path, sizeof(path), "%s/migratable.xml", e.work);
    f = fopen(path, "w");
    CHECK(f != NULL);
    fputs(xml, f);
    CHECK_INT(fclose(f), ==, 0);
    free(xml);
    snprintf(words, sizeof(words), "'%s' < '%s'", e.work, path);
    args.dest_xml = xml = lib_sh("e2e_dest_xml", words);
    args.dest_uri = e.dest_uri;
    args.p2p = true;
    migrate(&l, src, rs, rd, e.name, &args, 1, 1);
    free(xml);
    /* The source learns the VM left by a migration (an outgoing one ends
     * with a SHUTDOWN event before STOPPED: neither is a shut-off). */
    CHECK_INT(hvt_count(rs, HV_EV_DOMAIN_MIGRATED_OUT, e.name, NULL), ==, 1);
    CHECK_INT(hvt_count(rs, HV_EV_DOMAIN_SHUT_OFF, e.name, NULL), ==, 0);
    CHECK_INT(hv_libvirt_ops.domain(src, e.name, &d), ==, -ENOENT);
    CHECK_INT(hv_libvirt_ops.domain(dst, e.name, &d), ==, 0);
    CHECK(d.running);
    snprintf(path, sizeof(path), "%s/guest0-dst.sock", e.work);
    CHECK_STR(d.channel, path);
    CHECK_INT(hv_libvirt_ops.job(dst, e.name, &job), ==, 0);
    CHECK(!job.active);
    fprintf(stderr, "p2p migration: %.3f s, downtime %.3f s, %llu bytes\n",
            job.elapsed, job.downtime,
            (unsigned long long)job.data_processed);

    /* The GPU of the destination comes in. */
    CHECK_INT(hv_libvirt_ops.attach(dst, e.name, &gpu), ==, 0);
    hvt_wait_event(&l, rd, HV_EV_DEVICE_ADDED, e.name, "ua-gpu0", 1, 30000);
    wait_console(&l, &e, "console-dst.log", "CRANE-RNG present", 30000);

    /* And back, driven by this client (a connection of the migration's
     * own, opened and closed on its thread), to the original paths. */
    CHECK_INT(hv_libvirt_ops.detach(dst, e.name, &gpu), ==, 0);
    hvt_wait_event(&l, rd, HV_EV_DEVICE_REMOVED, e.name, "ua-gpu0", 1, 30000);
    {
        virConnectPtr draw = virConnectOpen(e.dest_uri);
        char *once;

        CHECK(draw != NULL);
        dom = virDomainLookupByName(draw, e.name);
        CHECK(dom != NULL);
        xml = virDomainGetXMLDesc(dom, VIR_DOMAIN_XML_MIGRATABLE);
        CHECK(xml != NULL);
        virDomainFree(dom);
        virConnectClose(draw);
        snprintf(from, sizeof(from), "%s/guest0-dst.sock", e.work);
        snprintf(to, sizeof(to), "%s/guest0.sock", e.work);
        once = replace_all(xml, from, to);
        free(xml);
        snprintf(from, sizeof(from), "%s/console-dst.log", e.work);
        snprintf(to, sizeof(to), "%s/console.log", e.work);
        back = replace_all(once, from, to);
        free(once);
    }
    args.dest_xml = back;
    args.dest_uri = e.uri;
    args.p2p = false;
    migrate(&l, dst, rd, rs, e.name, &args, 1, 2);
    free(back);
    CHECK_INT(hvt_count(rd, HV_EV_DOMAIN_MIGRATED_OUT, e.name, NULL), ==, 1);
    CHECK_INT(hvt_count(rd, HV_EV_DOMAIN_SHUT_OFF, e.name, NULL), ==, 0);
    CHECK_INT(hv_libvirt_ops.domain(src, e.name, &d), ==, 0);
    CHECK(d.running);
    snprintf(path, sizeof(path), "%s/guest0.sock", e.work);
    CHECK_STR(d.channel, path);
    CHECK_INT(hv_libvirt_ops.domain(dst, e.name, &d), ==, -ENOENT);

    dom = virDomainLookupByName(raw, e.name);
    CHECK(dom != NULL);
    CHECK_INT(virDomainDestroy(dom), ==, 0);
    /* (STOPPED may count 2 already: libvirt reports an outgoing
     * migration's end as SHUTDOWN, then STOPPED.) */
    hvt_wait_event(&l, rs, HV_EV_DOMAIN_SHUT_OFF, e.name, NULL, 1, 30000);
    hvt_wait_event(&l, rs, HV_EV_DOMAIN_STOPPED, e.name, NULL, 2, 30000);
    CHECK_INT(hvt_count(rs, HV_EV_DOMAIN_MIGRATED_OUT, e.name, NULL), ==, 1);
    CHECK_INT(virDomainUndefine(dom), ==, 0);
    virDomainFree(dom);
    hvt_on_fail(NULL, NULL);
    CHECK_INT(rs->off_loop + rd->off_loop, ==, 0);

    virConnectClose(raw);
    hv_libvirt_ops.close(dst);
    hv_libvirt_ops.close(src);
    hvt_loop_fini(&l);
    free(gpu.xml);
    free(rs);
    free(rd);
}
