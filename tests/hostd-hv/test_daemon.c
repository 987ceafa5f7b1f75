/* Tests of crane-hostd's own parts: settings, the peer protocol's
 * authentication and validation, event waits, the prepared VMs' leases,
 * peer endpoints, libxl migration streams over the peer protocol. */
#include "harness.h"

#include "host-daemon/arrive.h"
#include "host-daemon/config.h"
#include "host-daemon/daemon.h"
#include "host-daemon/migration.h"
#include "host-daemon/peer.h"
#include "host-daemon/pool.h"
#include "host-daemon/prepared.h"
#include "host-daemon/waits.h"
#include "proto/auth.h"
#include "proto/conftable.h"
#include "proto/frame.h"
#include "proto/tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* --- settings ------------------------------------------------------------ */

void test_config_keys(void)
{
    struct hd_config c;
    char why[400];

    /* Every row's default passes its own row. */
    CHECK_INT(crn_conf_defaults(&hd_config_table, &c, sizeof(c), why,
                                sizeof(why)), ==, 0);
    hd_config_defaults(&c);
    CHECK_INT(hd_config_set(&c, "gpu", "g0 pci:0000:65:00.0", why,
                            sizeof(why)), ==, 0);
    CHECK_STR(c.gpus[0].pci, "0000:65:00.0");
    CHECK_INT(hd_config_set(&c, "gpu", "g1 xml:/etc/crane/g1.xml", why,
                            sizeof(why)), ==, 0);
    CHECK_INT(c.n_gpus, ==, 2);
    CHECK_INT(hd_config_set(&c, "gpu", "g0 pci:0000:66:00.0", why,
                            sizeof(why)), ==, -EINVAL);   /* name taken */
    CHECK(strstr(why, "bad gpu") != NULL);
    CHECK_INT(hd_config_set(&c, "gpu", "g2 pci:65:00.0", why, sizeof(why)),
              ==, -EINVAL);
    CHECK_INT(hd_config_set(&c, "gpu", "g2 xml:relative.xml", why,
                            sizeof(why)), ==, -EINVAL);
    CHECK_INT(hd_config_set(&c, "gpu", "g/2 pci:0000:65:00.0", why,
                            sizeof(why)), ==, -EINVAL);
    CHECK_INT(hd_config_set(&c, "peer_listen", "none", why, sizeof(why)), ==,
              0);
    CHECK_STR(c.peer_listen, "");
    CHECK_INT(hd_config_set(&c, "peer_listen", "unix:/x", why, sizeof(why)),
              ==, -EINVAL);
    CHECK_INT(hd_config_set(&c, "control", "tcp:1.2.3.4:5", why,
                            sizeof(why)), ==, -EINVAL);
    CHECK_INT(hd_config_set(&c, "detach_timeout_ms", "0", why, sizeof(why)),
              ==, -EINVAL);
    CHECK_INT(hd_config_set(&c, "detach_timeout_ms", "-5", why, sizeof(why)),
              ==, -EINVAL);
    CHECK_INT(hd_config_set(&c, "http", "127.0.0.1:80", why, sizeof(why)),
              ==, 0);
    CHECK_INT(hd_config_set(&c, "http", "localhost", why, sizeof(why)), ==,
              -EINVAL);
    CHECK_INT(hd_config_set(&c, "history_keep_days", "0", why, sizeof(why)),
              ==, 0);
    CHECK_INT(c.history_keep_days, ==, 0);
    CHECK_INT(hd_config_set(&c, "history_keep_days", "-1", why, sizeof(why)),
              ==, -EINVAL);
    CHECK_INT(c.prepare_lease_s, ==, 600);
    CHECK_INT(hd_config_set(&c, "prepare_lease_s", "0", why, sizeof(why)),
              ==, 0);
    CHECK_INT(c.prepare_lease_s, ==, 0);
    CHECK_INT(hd_config_set(&c, "prepare_lease_s", "604800", why,
                            sizeof(why)), ==, 0);
    CHECK_INT(c.prepare_lease_s, ==, 604800);
    CHECK_INT(hd_config_set(&c, "prepare_lease_s", "604801", why,
                            sizeof(why)), ==, -EINVAL);
    CHECK_INT(hd_config_set(&c, "prepare_lease_s", "-1", why, sizeof(why)),
              ==, -EINVAL);
    CHECK(strstr(why, "no lease") != NULL);
    CHECK_INT(hd_config_set(&c, "frob", "1", why, sizeof(why)), ==, -EINVAL);
    CHECK(strstr(why, "unknown key 'frob'") != NULL);
}

void test_config_file(void)
{
    char path[] = "/tmp/hostd-conf-XXXXXX";
    struct hd_config c;
    char why[400];
    int fd = mkstemp(path);
    FILE *f = fdopen(fd, "w");

    fputs("# a comment\n\nuri = qemu+ssh://a/system  # trailing\n"
          "gpu = g0 pci:0000:01:00.0\nlog_level = loud\n", f);
    fclose(f);
    hd_config_defaults(&c);
    CHECK_INT(hd_config_load(&c, path, 1, why, sizeof(why)), ==, -EINVAL);
    CHECK_STR(c.uri, "qemu+ssh://a/system");
    CHECK(strstr(why, ":5: bad log_level 'loud'") != NULL);
    unlink(path);
    CHECK_INT(hd_config_load(&c, path, 0, why, sizeof(why)), ==, 0);
    CHECK_INT(hd_config_load(&c, path, 1, why, sizeof(why)), ==, -ENOENT);
}

void test_peer_endpoint_for(void)
{
    char ep[300];

    CHECK_INT(hd_peer_endpoint_for("qemu+ssh://root@host-b/system", 7410, ep,
                                   sizeof(ep)), ==, 0);
    CHECK_STR(ep, "tcp:host-b:7410");
    CHECK_INT(hd_peer_endpoint_for("qemu+tcp://10.0.0.2:16509/system", 7410,
                                   ep, sizeof(ep)), ==, 0);
    CHECK_STR(ep, "tcp:10.0.0.2:7410");
    CHECK_INT(hd_peer_endpoint_for("qemu+tcp://[fd00::2]:16509/system", 9,
                                   ep, sizeof(ep)), ==, 0);
    CHECK_STR(ep, "tcp:[fd00::2]:9");
    CHECK_INT(hd_peer_endpoint_for("qemu:///system", 7410, ep, sizeof(ep)),
              ==, -EINVAL);
    CHECK_INT(hd_peer_endpoint_for("nonsense", 7410, ep, sizeof(ep)), ==,
              -EINVAL);
}

/* --- prepared VMs and their leases --------------------------------------- */

static const struct hd_gpu_want one_gpu = { .n = 0 };

/* The list the lease timer works from (prepared.c): what falls due, what
 * taking an entry cancels, what a recheck does, what the pool sees. */
void test_prepared_leases(void)
{
    struct hd_prepared due[HD_PREPARED_MAX], p;
    struct hd_prepared_entry e[HD_PREPARED_MAX];
    size_t n;

    /* vm1 with a 60 s lease, vm2 without one: nothing due yet. */
    hd_prepared_add("m1", "vm1", 1000.5, 60, &one_gpu);
    hd_prepared_add("m2", "vm2", 1001, 0, &one_gpu);
    CHECK_INT(hd_prepared_due(due, HD_PREPARED_MAX), ==, 0);
    CHECK_INT(hd_prepared_list(e, HD_PREPARED_MAX), ==, 2);
    for (size_t i = 0; i < 2; i++) {
        if (strcmp(e[i].domain, "vm1") == 0) {
            CHECK_STR(e[i].id, "m1");
            CHECK_INT(e[i].lease_s, ==, 60);
            CHECK(e[i].lease_left > 59 && e[i].lease_left <= 60);
            CHECK(e[i].start_wall == 1000.5);
        } else {
            CHECK_STR(e[i].domain, "vm2");
            CHECK_INT(e[i].lease_s, ==, 0);
            CHECK(e[i].lease_left == -1);
        }
    }
    /* Its end moved to now (as a recheck of 0 s does): due once, not
     * again while its expiry is handled; a lease-less VM never. */
    p = (struct hd_prepared){.id = "m1", .domain = "vm1"};
    hd_prepared_rearm(&p, 0, false);
    n = hd_prepared_due(due, HD_PREPARED_MAX);
    CHECK_INT(n, ==, 1);
    CHECK_STR(due[0].id, "m1");
    CHECK_INT(due[0].gone_checks, ==, 0);
    CHECK_INT(hd_prepared_due(due, HD_PREPARED_MAX), ==, 0);
    /* Checked again later (the VM not found): counted, not due now. */
    hd_prepared_rearm(&due[0], 60, true);
    CHECK_INT(hd_prepared_due(due, HD_PREPARED_MAX), ==, 0);
    hd_prepared_rearm(&p, 0, true);
    CHECK_INT(hd_prepared_due(due, HD_PREPARED_MAX), ==, 1);
    CHECK_INT(due[0].gone_checks, ==, 2);
    /* A newer prepare of vm1 replaces the entry: the old one's recheck
     * does nothing to it. */
    hd_prepared_add("m3", "vm1", 1002, 60, &one_gpu);
    hd_prepared_rearm(&p, 0, false);
    CHECK_INT(hd_prepared_due(due, HD_PREPARED_MAX), ==, 0);
    CHECK_INT(hd_prepared_list(e, HD_PREPARED_MAX), ==, 2);
    /* Taking cancels: an abort by another id finds nothing, by none or
     * by its own the entry; after that its lease never falls due. */
    CHECK(!hd_prepared_take("vm1", "m1", &p));
    CHECK(hd_prepared_take("vm1", "m3", &p));
    CHECK_STR(p.id, "m3");
    p = (struct hd_prepared){.id = "m3", .domain = "vm1"};
    hd_prepared_rearm(&p, 0, false);
    CHECK_INT(hd_prepared_due(due, HD_PREPARED_MAX), ==, 0);
    CHECK(hd_prepared_take("vm2", "", &p));
    CHECK_STR(p.id, "m2");
    CHECK(!hd_prepared_take("vm2", "", &p));
    CHECK_INT(hd_prepared_list(e, HD_PREPARED_MAX), ==, 0);
}

/* --- event waits --------------------------------------------------------- */

struct fire {
    struct hd_waits *ws;
    struct hv_event ev;
};

static void *fire_later(void *p)
{
    struct fire *f = p;

    usleep(50000);
    hd_waits_signal(f->ws, &f->ev);
    return NULL;
}

void test_waits(void)
{
    struct hd_waits *ws;
    struct hd_wait w, other;
    struct fire f = { .ev = { .kind = HV_EV_DEVICE_REMOVED } };
    pthread_t t;

    CHECK_INT(hd_waits_new(&ws), ==, 0);
    f.ws = ws;
    snprintf(f.ev.domain, sizeof(f.ev.domain), "vm1");
    snprintf(f.ev.alias, sizeof(f.ev.alias), "ua-gpu0");
    /* An event before the wait sleeps is not lost. */
    hd_wait_arm(ws, &w, HV_EV_DEVICE_REMOVED, "vm1", "ua-gpu0");
    hd_waits_signal(ws, &f.ev);
    CHECK_INT(hd_wait_for(ws, &w, 1000), ==, 0);
    /* Another domain's or device's event does not fire it. */
    hd_wait_arm(ws, &w, HV_EV_DEVICE_REMOVED, "vm2", "ua-gpu0");
    hd_wait_arm(ws, &other, HV_EV_DEVICE_ADDED, "vm1", "ua-gpu0");
    hd_waits_signal(ws, &f.ev);
    CHECK_INT(hd_wait_for(ws, &w, 100), ==, -ETIMEDOUT);
    CHECK_INT(hd_wait_for(ws, &other, 10), ==, -ETIMEDOUT);
    /* From another thread, while it sleeps. */
    hd_wait_arm(ws, &w, HV_EV_DEVICE_REMOVED, "vm1", "ua-gpu0");
    CHECK_INT(pthread_create(&t, NULL, fire_later, &f), ==, 0);
    CHECK_INT(hd_wait_for(ws, &w, 5000), ==, 0);
    pthread_join(t, NULL);
    hd_waits_free(ws);
}

/* --- the peer protocol --------------------------------------------------- */

struct server {
    struct hd_daemon d;
    int lfd;
    uint16_t port;
    pthread_t thread;
};

static void *serve_one(void *p)
{
    struct server *s = p;
    int fd = accept(s->lfd, NULL, NULL);

    if (fd >= 0)
        hd_peer_serve(&s->d, fd);
    return NULL;
}

/* A destination with KEY (NULL: none), backend OPS (NULL: none, and no
 * hypervisor handle either way) and an empty GPU pool, serving one
 * connection on a loopback port. */
static void server_start_ops(struct server *s, const char *key,
                             const struct hv_ops *ops)
{
    struct sockaddr_in sa = { .sin_family = AF_INET };
    socklen_t len = sizeof(sa);
    char why[200];

    memset(s, 0, sizeof(*s));
    hd_config_defaults(&s->d.cfg);
    snprintf(s->d.cfg.host_name, sizeof(s->d.cfg.host_name), "dst");
    s->d.hv_ops = ops;
    if (key) {
        s->d.key = (uint8_t *)strdup(key);
        s->d.key_len = strlen(key);
    }
    CHECK_INT(hd_pool_new(&s->d.cfg, &s->d.pool, why, sizeof(why)), ==, 0);
    CHECK_INT(hd_waiting_new(&s->d.waiting), ==, 0);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    s->lfd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(s->lfd >= 0);
    CHECK_INT(bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
    CHECK_INT(listen(s->lfd, 4), ==, 0);
    CHECK_INT(getsockname(s->lfd, (struct sockaddr *)&sa, &len), ==, 0);
    s->port = ntohs(sa.sin_port);
    CHECK_INT(pthread_create(&s->thread, NULL, serve_one, s), ==, 0);
}

static void server_start(struct server *s, const char *key)
{
    server_start_ops(s, key, NULL);
}

static void server_stop(struct server *s)
{
    shutdown(s->lfd, SHUT_RDWR);
    pthread_join(s->thread, NULL);
    close(s->lfd);
    hd_pool_free(s->d.pool);
    hd_waiting_free(s->d.waiting);
    free(s->d.key);
}

/* The source's TLS in the tests that set it (NULL: in clear). */
static struct crn_tls_config *client_tls;

static int open_peer(struct server *s, const char *key, struct hd_peer **p,
                     char *why, size_t why_len)
{
    char ep[64];

    snprintf(ep, sizeof(ep), "tcp:127.0.0.1:%u", s->port);
    return hd_peer_open(ep, client_tls, (const uint8_t *)key,
                        key ? strlen(key) : 0, "src", p, why, why_len);
}

void test_peer_auth(void)
{
    Crane__Hostd__PeerRequest req = CRANE__HOSTD__PEER_REQUEST__INIT;
    Crane__Hostd__Check c = CRANE__HOSTD__CHECK__INIT;
    Crane__Hostd__PeerReply *r = NULL;
    struct hd_peer *p = NULL;
    struct server s;
    char why[300] = "";

    server_start(&s, "shared secret");
    CHECK_INT(open_peer(&s, "shared secret", &p, why, sizeof(why)), ==, 0);
    CHECK_STR(hd_peer_host(p), "dst");
    req.msg_case = CRANE__HOSTD__PEER_REQUEST__MSG_CHECK;
    req.check = &c;
    CHECK_INT(hd_peer_call(p, &req, 5000, &r), ==, 0);
    CHECK_INT(r->msg_case, ==, CRANE__HOSTD__PEER_REPLY__MSG_CHECK);
    CHECK_INT(r->check->gpus_total, ==, 0);
    CHECK_STR(r->check->host, "dst");
    crane__hostd__peer_reply__free_unpacked(r, NULL);
    hd_peer_close(p);
    server_stop(&s);
}

void test_peer_wrong_key(void)
{
    struct hd_peer *p = NULL;
    struct server s;
    char why[300] = "";

    /* Each side checks the other: a wrong key on either is refused. */
    server_start(&s, "shared secret");
    CHECK_INT(open_peer(&s, "another secret", &p, why, sizeof(why)), ==,
              -EACCES);
    CHECK(strstr(why, "does not hold our key") != NULL);
    server_stop(&s);

    server_start(&s, "shared secret");
    CHECK_INT(open_peer(&s, NULL, &p, why, sizeof(why)), ==, -EACCES);
    CHECK(strstr(why, "asks for a key") != NULL);
    server_stop(&s);

    server_start(&s, NULL);
    CHECK_INT(open_peer(&s, "shared secret", &p, why, sizeof(why)), ==,
              -EACCES);
    CHECK(strstr(why, "does not authenticate") != NULL);
    server_stop(&s);

    server_start(&s, NULL);
    CHECK_INT(open_peer(&s, NULL, &p, why, sizeof(why)), ==, 0);
    hd_peer_close(p);
    server_stop(&s);
}

/* A client that skips the handshake, or sends garbage, gets nothing done. */
void test_peer_bad_input(void)
{
    Crane__Hostd__PeerRequest req = CRANE__HOSTD__PEER_REQUEST__INIT;
    Crane__Hostd__Check c = CRANE__HOSTD__CHECK__INIT;
    struct sockaddr_in sa = { .sin_family = AF_INET };
    static const uint8_t garbage[] = { 0, 0, 0, 3, 0xff, 0xff, 0xff };
    struct server s;
    uint8_t buf[64];
    int fd;

    server_start(&s, "k");
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = htons(s.port);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK_INT(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
    req.msg_case = CRANE__HOSTD__PEER_REQUEST__MSG_CHECK;
    req.check = &c;
    CHECK_INT(crn_frame_write(fd, &req.base), ==, 0);
    /* A Refused answer, then the connection closes. */
    {
        Crane__Hostd__PeerReply *r;
        uint8_t *frame;
        size_t len;

        CHECK_INT(crn_frame_read(fd, &frame, &len, 4096), ==, 0);
        r = crane__hostd__peer_reply__unpack(NULL, len, frame);
        free(frame);
        CHECK(r != NULL);
        CHECK_INT(r->msg_case, ==, CRANE__HOSTD__PEER_REPLY__MSG_REFUSED);
        crane__hostd__peer_reply__free_unpacked(r, NULL);
    }
    CHECK_INT(read(fd, buf, sizeof(buf)), ==, 0);
    close(fd);
    server_stop(&s);

    server_start(&s, "k");
    fd = socket(AF_INET, SOCK_STREAM, 0);
    sa.sin_port = htons(s.port);
    CHECK_INT(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
    CHECK_INT(write(fd, garbage, sizeof(garbage)), ==, sizeof(garbage));
    CHECK_INT(read(fd, buf, sizeof(buf)), ==, 0);   /* closed, no answer */
    close(fd);
    server_stop(&s);
}

/* An Arrive with an id that could not be stored is refused before
 * anything is looked up. */
void test_peer_arrive_validated(void)
{
    Crane__Hostd__PeerRequest req = CRANE__HOSTD__PEER_REQUEST__INIT;
    Crane__Hostd__Arrive a = CRANE__HOSTD__ARRIVE__INIT;
    Crane__Hostd__PeerReply *r = NULL;
    struct hd_peer *p = NULL;
    struct server s;
    char why[300];

    server_start(&s, "k");
    CHECK_INT(open_peer(&s, "k", &p, why, sizeof(why)), ==, 0);
    a.migration_id = "../../etc/passwd";
    a.domain = "vm1";
    req.msg_case = CRANE__HOSTD__PEER_REQUEST__MSG_ARRIVE;
    req.arrive = &a;
    CHECK_INT(hd_peer_call(p, &req, 5000, &r), ==, 0);
    CHECK_INT(r->msg_case, ==, CRANE__HOSTD__PEER_REPLY__MSG_ARRIVE);
    CHECK_INT(r->arrive->result, ==, CRANE__HOSTD__RESULT__RESULT_FAILED);
    CHECK(strstr(r->arrive->error, "bad arrive") != NULL);
    crane__hostd__peer_reply__free_unpacked(r, NULL);
    hd_peer_close(p);
    server_stop(&s);
}

/* --- libxl migration streams over the peer protocol (XenStream) ---------- */

/* The backend that accepts a XenStream, or NULL in a build without it.
 * The test daemon's hypervisor handle stays NULL: a real receiver then
 * gives up at once (hv_libxl_receive's -EINVAL), reading nothing. */
static const struct hv_ops *libxl_ops(void)
{
#ifdef HD_HAVE_LIBXL
    return &hv_libxl_ops;
#else
    return NULL;
#endif
}

static int raw_connect(uint16_t port)
{
    struct sockaddr_in sa = { .sin_family = AF_INET };
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    CHECK(fd >= 0);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = htons(port);
    CHECK_INT(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
    return fd;
}

/* One PeerReply frame from FD; NULL at the end of the stream or on
 * garbage. */
static Crane__Hostd__PeerReply *read_reply(int fd)
{
    Crane__Hostd__PeerReply *r;
    uint8_t *buf;
    size_t len;

    if (crn_frame_read(fd, &buf, &len, HD_PEER_MAX_FRAME) < 0)
        return NULL;
    r = crane__hostd__peer_reply__unpack(NULL, len, buf);
    free(buf);
    return r;
}

/* Sends a XenStream for vm1 on FD, raw. */
static void send_xen_stream(int fd, uint64_t id)
{
    Crane__Hostd__PeerRequest req = CRANE__HOSTD__PEER_REQUEST__INIT;
    Crane__Hostd__XenStream x = CRANE__HOSTD__XEN_STREAM__INIT;

    x.migration_id = "m-1";
    x.domain = "vm1";
    req.id = id;
    req.msg_case = CRANE__HOSTD__PEER_REQUEST__MSG_XEN_STREAM;
    req.xen_stream = &x;
    CHECK_INT(crn_frame_write(fd, &req.base), ==, 0);
}

static int open_stream(uint16_t port, const char *key, const char *id,
                       const char *domain, int *fd, char *why, size_t len)
{
    char ep[64];

    snprintf(ep, sizeof(ep), "tcp:127.0.0.1:%u", port);
    return hd_peer_open_xen_stream(ep, client_tls, (const uint8_t *)key,
                                   key ? strlen(key) : 0, "src", id, domain,
                                   fd, why, len);
}

/* A daemon whose backend is not libxl refuses the stream, and so does any
 * daemon for a bad id or name, ending the connection. */
void test_peer_xen_stream_refused(void)
{
    const struct hv_ops *others[] = { NULL, &hv_libvirt_ops };
    Crane__Hostd__PeerRequest req = CRANE__HOSTD__PEER_REQUEST__INIT;
    Crane__Hostd__XenStream x = CRANE__HOSTD__XEN_STREAM__INIT;
    Crane__Hostd__Check c = CRANE__HOSTD__CHECK__INIT;
    Crane__Hostd__PeerReply *r = NULL;
    struct hd_peer *p = NULL;
    struct server s;
    char why[300] = "";
    int fd;

    for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
        fd = -1;
        server_start_ops(&s, "k", others[i]);
        CHECK_INT(open_stream(s.port, "k", "m-1", "vm1", &fd, why,
                              sizeof(why)), ==, -EOPNOTSUPP);
        CHECK_INT(fd, ==, -1);
        CHECK(strstr(why, "dst refused the stream") != NULL);
        CHECK(strstr(why, "not libxl") != NULL);
        server_stop(&s);
    }

    /* The server checks the names itself, even with libxl behind it. */
    server_start_ops(&s, "k", libxl_ops());
    CHECK_INT(open_peer(&s, "k", &p, why, sizeof(why)), ==, 0);
    x.migration_id = "../../etc/passwd";
    x.domain = "vm1";
    req.msg_case = CRANE__HOSTD__PEER_REQUEST__MSG_XEN_STREAM;
    req.xen_stream = &x;
    CHECK_INT(hd_peer_call(p, &req, 5000, &r), ==, 0);
    CHECK_INT(r->msg_case, ==, CRANE__HOSTD__PEER_REPLY__MSG_REFUSED);
    CHECK_INT(r->refused->err, ==, -EINVAL);
    CHECK(strstr(r->refused->error, "bad xen stream") != NULL);
    crane__hostd__peer_reply__free_unpacked(r, NULL);
    r = NULL;
    /* ... and the connection is over. */
    req.msg_case = CRANE__HOSTD__PEER_REQUEST__MSG_CHECK;
    req.check = &c;
    CHECK(hd_peer_call(p, &req, 5000, &r) < 0);
    hd_peer_close(p);
    server_stop(&s);

    /* The client checks them before it connects. */
    fd = -1;
    CHECK_INT(open_stream(1, NULL, "m 1", "vm1", &fd, why, sizeof(why)), ==,
              -EINVAL);
    CHECK_INT(open_stream(1, NULL, "", "vm1", &fd, why, sizeof(why)), ==,
              -EINVAL);
    CHECK_INT(open_stream(1, NULL, "m-1", "", &fd, why, sizeof(why)), ==,
              -EINVAL);
    CHECK_INT(open_stream(1, NULL, "m-1", "vm\n1", &fd, why, sizeof(why)),
              ==, -EINVAL);
    CHECK_INT(fd, ==, -1);
}

/* No stream without the handshake: not as the first request, not in
 * place of Auth, not with the wrong key. */
void test_peer_xen_stream_before_auth(void)
{
    Crane__Hostd__PeerRequest req = CRANE__HOSTD__PEER_REQUEST__INIT;
    Crane__Hostd__Hello hello = CRANE__HOSTD__HELLO__INIT;
    Crane__Hostd__PeerReply *r;
    uint8_t nonce[32] = { 1 }, b;
    struct server s;
    char why[300] = "";
    int fd = -1;

    server_start_ops(&s, "k", libxl_ops());
    fd = raw_connect(s.port);
    send_xen_stream(fd, 1);
    CHECK((r = read_reply(fd)) != NULL);
    CHECK_INT(r->msg_case, ==, CRANE__HOSTD__PEER_REPLY__MSG_REFUSED);
    CHECK(strstr(r->refused->error, "expected hello") != NULL);
    crane__hostd__peer_reply__free_unpacked(r, NULL);
    CHECK_INT(read(fd, &b, 1), ==, 0);
    close(fd);
    server_stop(&s);

    server_start_ops(&s, "k", libxl_ops());
    fd = raw_connect(s.port);
    hello.version = 1;
    hello.nonce.data = nonce;
    hello.nonce.len = sizeof(nonce);
    hello.host = "src";
    req.id = 1;
    req.msg_case = CRANE__HOSTD__PEER_REQUEST__MSG_HELLO;
    req.hello = &hello;
    CHECK_INT(crn_frame_write(fd, &req.base), ==, 0);
    CHECK((r = read_reply(fd)) != NULL);
    CHECK_INT(r->msg_case, ==, CRANE__HOSTD__PEER_REPLY__MSG_CHALLENGE);
    crane__hostd__peer_reply__free_unpacked(r, NULL);
    send_xen_stream(fd, 2);
    CHECK((r = read_reply(fd)) != NULL);
    CHECK_INT(r->msg_case, ==, CRANE__HOSTD__PEER_REPLY__MSG_REFUSED);
    CHECK_INT(r->refused->err, ==, -EACCES);
    crane__hostd__peer_reply__free_unpacked(r, NULL);
    CHECK_INT(read(fd, &b, 1), ==, 0);
    close(fd);
    server_stop(&s);

    fd = -1;
    server_start_ops(&s, "k", libxl_ops());
    CHECK_INT(open_stream(s.port, "not k", "m-1", "vm1", &fd, why,
                          sizeof(why)), ==, -EACCES);
    CHECK_INT(fd, ==, -1);
    server_stop(&s);
}

/*
 * A stand-in destination for the client side: the server's half of the
 * handshake with a key, then one answer to the XenStream request.  On
 * acceptance its reply frame and one raw byte (0x5a) go out in one write,
 * so the client must stop reading at the frame's end; then it reads a
 * 16-byte header raw and answers 0, as a receiver's verdict.
 */
enum double_mode {
    DOUBLE_ACCEPT,
    DOUBLE_REFUSE,          /* Refused{-EBUSY, text with a control byte} */
    DOUBLE_REFUSE_ODD,      /* Refused{err 7}: not an -errno */
    DOUBLE_WRONG_REPLY,     /* a CheckReply */
};

struct double_server {
    struct crn_tls_config *tls;  /* TLS first (double_start_tls) */
    int lfd;
    uint16_t port;
    pthread_t thread;
    const char *key;
    enum double_mode mode;
    char failed[200];       /* what went wrong there, "" when nothing */
    char migration_id[80], domain[300];
    uint8_t header[16];
};

static Crane__Hostd__PeerRequest *double_read(int fd)
{
    Crane__Hostd__PeerRequest *q;
    uint8_t *buf;
    size_t len;

    if (crn_frame_read(fd, &buf, &len, HD_PEER_MAX_FRAME) < 0)
        return NULL;
    q = crane__hostd__peer_request__unpack(NULL, len, buf);
    free(buf);
    return q;
}

/* HMAC(key, LABEL || NONCE), as peer.c proves a key. */
static void double_proof(const char *key, const char *label,
                         const uint8_t *nonce, uint8_t mac[32])
{
    uint8_t msg[64 + 32];
    size_t l = strlen(label);

    memcpy(msg, label, l);
    memcpy(msg + l, nonce, 32);
    crn_hmac_sha256(key, strlen(key), msg, l + 32, mac);
}

/* The reply frame R followed by EXTRA raw bytes, in one write. */
static int double_send(int fd, Crane__Hostd__PeerReply *r,
                       const uint8_t *extra, size_t extra_len)
{
    uint8_t buf[512];
    size_t n = crane__hostd__peer_reply__get_packed_size(r);

    if (4 + n + extra_len > sizeof(buf))
        return -EMSGSIZE;
    buf[0] = (uint8_t)(n >> 24);
    buf[1] = (uint8_t)(n >> 16);
    buf[2] = (uint8_t)(n >> 8);
    buf[3] = (uint8_t)n;
    crane__hostd__peer_reply__pack(r, buf + 4);
    if (extra_len)
        memcpy(buf + 4 + n, extra, extra_len);
    n += 4 + extra_len;
    return write(fd, buf, n) == (ssize_t)n ? 0 : -EIO;
}

static void double_conversation(struct double_server *ds, int fd)
{
    Crane__Hostd__PeerReply r = CRANE__HOSTD__PEER_REPLY__INIT;
    Crane__Hostd__Challenge c = CRANE__HOSTD__CHALLENGE__INIT;
    Crane__Hostd__Welcome w = CRANE__HOSTD__WELCOME__INIT;
    Crane__Hostd__Refused f = CRANE__HOSTD__REFUSED__INIT;
    Crane__Hostd__CheckReply cr = CRANE__HOSTD__CHECK_REPLY__INIT;
    Crane__Hostd__XenStreamReply x = CRANE__HOSTD__XEN_STREAM_REPLY__INIT;
    Crane__Hostd__PeerRequest *q;
    uint8_t nonce[32], mac[32], extra = 0x5a, verdict = 0;

    /* Hello -> Challenge */
    if (!(q = double_read(fd)) ||
        q->msg_case != CRANE__HOSTD__PEER_REQUEST__MSG_HELLO ||
        q->hello->nonce.len != 32) {
        snprintf(ds->failed, sizeof(ds->failed), "no hello");
        goto out;
    }
    double_proof(ds->key, "crane-hostd server", q->hello->nonce.data, mac);
    crn_random_bytes(nonce, sizeof(nonce));
    c.nonce.data = nonce;
    c.nonce.len = sizeof(nonce);
    c.mac.data = mac;
    c.mac.len = sizeof(mac);
    c.host = "double";
    r.id = q->id;
    r.msg_case = CRANE__HOSTD__PEER_REPLY__MSG_CHALLENGE;
    r.challenge = &c;
    crane__hostd__peer_request__free_unpacked(q, NULL);
    if (double_send(fd, &r, NULL, 0) < 0) {
        snprintf(ds->failed, sizeof(ds->failed), "cannot send challenge");
        return;
    }
    /* Auth -> Welcome */
    double_proof(ds->key, "crane-hostd client", nonce, mac);
    if (!(q = double_read(fd)) ||
        q->msg_case != CRANE__HOSTD__PEER_REQUEST__MSG_AUTH ||
        q->auth->mac.len != 32 || memcmp(q->auth->mac.data, mac, 32) != 0) {
        snprintf(ds->failed, sizeof(ds->failed), "bad auth");
        goto out;
    }
    w.host = "double";
    r.id = q->id;
    r.msg_case = CRANE__HOSTD__PEER_REPLY__MSG_WELCOME;
    r.welcome = &w;
    crane__hostd__peer_request__free_unpacked(q, NULL);
    if (double_send(fd, &r, NULL, 0) < 0) {
        snprintf(ds->failed, sizeof(ds->failed), "cannot send welcome");
        return;
    }
    /* XenStream -> the answer of this mode */
    if (!(q = double_read(fd)) ||
        q->msg_case != CRANE__HOSTD__PEER_REQUEST__MSG_XEN_STREAM) {
        snprintf(ds->failed, sizeof(ds->failed), "no xen stream request");
        goto out;
    }
    snprintf(ds->migration_id, sizeof(ds->migration_id), "%s",
             q->xen_stream->migration_id);
    snprintf(ds->domain, sizeof(ds->domain), "%s", q->xen_stream->domain);
    r.id = q->id;
    switch (ds->mode) {
    case DOUBLE_ACCEPT:
        x.host = "double";
        r.msg_case = CRANE__HOSTD__PEER_REPLY__MSG_XEN_STREAM;
        r.xen_stream = &x;
        break;
    case DOUBLE_REFUSE:
    case DOUBLE_REFUSE_ODD:
        f.err = ds->mode == DOUBLE_REFUSE ? -EBUSY : 7;
        f.error = "busy\x01now";
        r.msg_case = CRANE__HOSTD__PEER_REPLY__MSG_REFUSED;
        r.refused = &f;
        break;
    case DOUBLE_WRONG_REPLY:
        r.msg_case = CRANE__HOSTD__PEER_REPLY__MSG_CHECK;
        r.check = &cr;
        break;
    }
    crane__hostd__peer_request__free_unpacked(q, NULL);
    q = NULL;
    if (double_send(fd, &r, &extra, ds->mode == DOUBLE_ACCEPT) < 0) {
        snprintf(ds->failed, sizeof(ds->failed), "cannot answer");
        return;
    }
    if (ds->mode != DOUBLE_ACCEPT)
        return;
    /* The stream, raw. */
    if (crn_bulk_read(fd, ds->header, sizeof(ds->header)) < 0 ||
        crn_bulk_write(fd, &verdict, 1) < 0)
        snprintf(ds->failed, sizeof(ds->failed), "no raw stream");
out:
    if (q)
        crane__hostd__peer_request__free_unpacked(q, NULL);
}

static void *double_serve(void *arg)
{
    struct double_server *ds = arg;
    uint8_t b;
    int fd = accept(ds->lfd, NULL, NULL);

    if (fd < 0) {
        snprintf(ds->failed, sizeof(ds->failed), "no connection");
        return NULL;
    }
    if (ds->tls) {
        char why[300];
        fd = crn_tls_wrap_server(ds->tls, fd, 5000, why, sizeof(why));
        if (fd < 0) {
            snprintf(ds->failed, sizeof(ds->failed), "%.150s", why);
            return NULL;
        }
    }
    double_conversation(ds, fd);
    /* Until the client lets go. */
    while (read(fd, &b, 1) > 0)
        ;
    close(fd);
    return NULL;
}

/* TLS (NULL: none) is what the stand-in speaks under the protocol. */
static void double_start_tls(struct double_server *ds,
                             struct crn_tls_config *tls, const char *key,
                             enum double_mode mode)
{
    struct sockaddr_in sa = { .sin_family = AF_INET };
    socklen_t len = sizeof(sa);

    memset(ds, 0, sizeof(*ds));
    ds->tls = tls;
    ds->key = key;
    ds->mode = mode;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ds->lfd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(ds->lfd >= 0);
    CHECK_INT(bind(ds->lfd, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
    CHECK_INT(listen(ds->lfd, 1), ==, 0);
    CHECK_INT(getsockname(ds->lfd, (struct sockaddr *)&sa, &len), ==, 0);
    ds->port = ntohs(sa.sin_port);
    CHECK_INT(pthread_create(&ds->thread, NULL, double_serve, ds), ==, 0);
}

static void double_start(struct double_server *ds, const char *key,
                         enum double_mode mode)
{
    double_start_tls(ds, NULL, key, mode);
}

static void double_stop(struct double_server *ds)
{
    shutdown(ds->lfd, SHUT_RDWR);
    pthread_join(ds->thread, NULL);
    close(ds->lfd);
}

/* After acceptance the caller gets the connection, blocking and in step
 * right after the accepting frame; refusals and odd answers become
 * errors with the destination's reason. */
void test_peer_xen_stream_accepted(void)
{
    static const uint8_t header[16] = { 'C', 'R', 'N', 'X', 'L', 'M', 'I',
                                        'G', 0, 0, 0, 1, 0, 0, 0, 1 };
    struct double_server ds;
    char why[300] = "";
    uint8_t b;
    int fd = -1;

    double_start(&ds, "shared secret", DOUBLE_ACCEPT);
    CHECK_INT(open_stream(ds.port, "shared secret", "mig-42", "vm1", &fd, why,
                          sizeof(why)), ==, 0);
    CHECK(fd >= 0);
    CHECK_INT(fcntl(fd, F_GETFL) & O_NONBLOCK, ==, 0);
    CHECK_INT(read(fd, &b, 1), ==, 1);
    CHECK_INT(b, ==, 0x5a);
    CHECK_INT(write(fd, header, sizeof(header)), ==, sizeof(header));
    CHECK_INT(read(fd, &b, 1), ==, 1);
    CHECK_INT(b, ==, 0);
    close(fd);
    double_stop(&ds);
    CHECK_STR(ds.failed, "");
    CHECK_STR(ds.migration_id, "mig-42");
    CHECK_STR(ds.domain, "vm1");
    CHECK(memcmp(ds.header, header, sizeof(header)) == 0);

    fd = -1;
    double_start(&ds, "shared secret", DOUBLE_REFUSE);
    CHECK_INT(open_stream(ds.port, "shared secret", "mig-42", "vm1", &fd, why,
                          sizeof(why)), ==, -EBUSY);
    CHECK_STR(why, "double refused the stream: busy?now");
    double_stop(&ds);
    CHECK_STR(ds.failed, "");

    double_start(&ds, "shared secret", DOUBLE_REFUSE_ODD);
    CHECK_INT(open_stream(ds.port, "shared secret", "mig-42", "vm1", &fd, why,
                          sizeof(why)), ==, -EPROTO);
    double_stop(&ds);
    CHECK_STR(ds.failed, "");

    double_start(&ds, "shared secret", DOUBLE_WRONG_REPLY);
    CHECK_INT(open_stream(ds.port, "shared secret", "mig-42", "vm1", &fd, why,
                          sizeof(why)), ==, -EPROTO);
    CHECK(strstr(why, "unexpected answer") != NULL);
    double_stop(&ds);
    CHECK_STR(ds.failed, "");
    CHECK_INT(fd, ==, -1);
}

/* A daemon whose backend is libxl accepts the stream and hands the
 * connection to hv_libxl_receive, then ends it.  Without Xen its handle is
 * NULL here, so the receiver gives up at once: the source sees the
 * connection close (a real sender then fails before suspending). */
void test_peer_xen_stream_libxl_receiver(void)
{
#ifdef HD_HAVE_LIBXL
    struct server s;
    char why[300] = "";
    uint8_t b;
    int fd = -1;

    server_start_ops(&s, "k", &hv_libxl_ops);
    CHECK_INT(open_stream(s.port, "k", "m-1", "vm1", &fd, why, sizeof(why)),
              ==, 0);
    CHECK(fd >= 0);
    CHECK_INT(read(fd, &b, 1), ==, 0);
    close(fd);
    server_stop(&s);
#else
    hvt_skip("built without libxl (libxen-dev)");
#endif
}

/* --- TLS on peer links (proto/tls.c) -------------------------------------- */

static char *tls_key_file(const char *bytes)
{
    char *path = strdup("/tmp/crane-peer-key-XXXXXX");
    int fd = mkstemp(path);

    CHECK(fd >= 0);
    CHECK_INT(write(fd, bytes, strlen(bytes)), ==, (ssize_t)strlen(bytes));
    close(fd);
    return path;
}

static struct crn_tls_config *tls_config(enum crn_tls_mode mode,
                                         const char *pki, const char *key)
{
    struct crn_tls_config *cfg = NULL;
    char why[300] = "";

    if (crn_tls_config_new(mode, CRN_TLS_BOTH, pki, key, &cfg, why,
                           sizeof(why)) < 0)
        fprintf(stderr, "tls config: %s\n", why);
    CHECK(cfg != NULL);
    return cfg;
}

/* One Check call over an open peer: the link carries the protocol. */
static void peer_check(struct hd_peer *p)
{
    Crane__Hostd__PeerRequest req = CRANE__HOSTD__PEER_REQUEST__INIT;
    Crane__Hostd__Check c = CRANE__HOSTD__CHECK__INIT;
    Crane__Hostd__PeerReply *r = NULL;

    req.msg_case = CRANE__HOSTD__PEER_REQUEST__MSG_CHECK;
    req.check = &c;
    CHECK_INT(hd_peer_call(p, &req, 5000, &r), ==, 0);
    CHECK_INT(r->msg_case, ==, CRANE__HOSTD__PEER_REPLY__MSG_CHECK);
    crane__hostd__peer_reply__free_unpacked(r, NULL);
}

/* psk from the peer key file: the right key connects (the HMAC handshake
 * then runs inside TLS), a wrong one and a client without TLS are
 * refused. */
void test_peer_tls_psk(void)
{
    char *key = tls_key_file("shared secret"), *wrong = tls_key_file("nope");
    struct crn_tls_config *good = tls_config(CRN_TLS_PSK, NULL, key);
    struct crn_tls_config *bad = tls_config(CRN_TLS_PSK, NULL, wrong);
    struct hd_peer *p = NULL;
    struct server s;
    char why[300] = "";

    server_start(&s, "shared secret");
    s.d.tls = good;
    client_tls = good;
    CHECK_INT(open_peer(&s, "shared secret", &p, why, sizeof(why)), ==, 0);
    CHECK_STR(hd_peer_host(p), "dst");
    peer_check(p);
    hd_peer_close(p);
    server_stop(&s);

    server_start(&s, "shared secret");
    s.d.tls = good;
    client_tls = bad;
    CHECK(open_peer(&s, "shared secret", &p, why, sizeof(why)) < 0);
    CHECK(strstr(why, "TLS") != NULL);
    server_stop(&s);

    /* In clear to a TLS peer: the server's handshake fails on the Hello,
     * the client sees the connection end. */
    server_start(&s, "shared secret");
    s.d.tls = good;
    client_tls = NULL;
    CHECK(open_peer(&s, "shared secret", &p, why, sizeof(why)) < 0);
    server_stop(&s);

    crn_tls_config_free(good);
    crn_tls_config_free(bad);
    unlink(key);
    unlink(wrong);
    free(key);
    free(wrong);
}

/* x509 in libvirt's layout (tests/tls/mkpki.sh): mutual certificates pass,
 * a host whose certificate another CA signed is refused; then a libxl
 * stream accepted over TLS carries its bytes unchanged. */
void test_peer_tls_x509(void)
{
    static const uint8_t header[16] = { 'C', 'R', 'N', 'X', 'L', 'M', 'I',
                                        'G', 0, 0, 0, 1, 0, 0, 0, 1 };
    char dir[] = "/tmp/crane-peer-pki-XXXXXX", cmd[600], good_dir[100],
         other_dir[100], why[300] = "";
    struct crn_tls_config *good, *other;
    struct double_server ds;
    struct hd_peer *p = NULL;
    struct server s;
    uint8_t b;
    int fd = -1;

    CHECK(mkdtemp(dir) != NULL);
    snprintf(good_dir, sizeof(good_dir), "%s/good", dir);
    snprintf(other_dir, sizeof(other_dir), "%s/other", dir);
    snprintf(cmd, sizeof(cmd),
             "tests/tls/mkpki.sh %s good && tests/tls/mkpki.sh %s other && "
             "cp %s/CA/cacert.pem %s/CA/cacert.pem",
             good_dir, other_dir, good_dir, other_dir);
    CHECK_INT(system(cmd), ==, 0);
    good = tls_config(CRN_TLS_X509, good_dir, NULL);
    other = tls_config(CRN_TLS_X509, other_dir, NULL);

    server_start(&s, NULL);
    s.d.tls = good;
    client_tls = good;
    CHECK_INT(open_peer(&s, NULL, &p, why, sizeof(why)), ==, 0);
    peer_check(p);
    hd_peer_close(p);
    server_stop(&s);

    server_start(&s, NULL);
    s.d.tls = good;
    client_tls = other;
    p = NULL;
    if (open_peer(&s, NULL, &p, why, sizeof(why)) == 0) {
        /* TLS 1.3: the client finishes first; the server's refusal
         * ends the link before any answer. */
        Crane__Hostd__PeerRequest req = CRANE__HOSTD__PEER_REQUEST__INIT;
        Crane__Hostd__Check c = CRANE__HOSTD__CHECK__INIT;
        Crane__Hostd__PeerReply *r = NULL;
        req.msg_case = CRANE__HOSTD__PEER_REQUEST__MSG_CHECK;
        req.check = &c;
        CHECK(hd_peer_call(p, &req, 5000, &r) < 0);
        hd_peer_close(p);
    }
    server_stop(&s);

    client_tls = good;
    double_start_tls(&ds, good, "shared secret", DOUBLE_ACCEPT);
    CHECK_INT(open_stream(ds.port, "shared secret", "mig-43", "vm1", &fd, why,
                          sizeof(why)), ==, 0);
    CHECK_INT(read(fd, &b, 1), ==, 1);
    CHECK_INT(b, ==, 0x5a);
    CHECK_INT(write(fd, header, sizeof(header)), ==, sizeof(header));
    CHECK_INT(read(fd, &b, 1), ==, 1);
    CHECK_INT(b, ==, 0);
    close(fd);
    double_stop(&ds);
    CHECK_STR(ds.failed, "");
    CHECK_STR(ds.migration_id, "mig-43");
    CHECK(memcmp(ds.header, header, sizeof(header)) == 0);

    client_tls = NULL;
    crn_tls_config_free(good);
    crn_tls_config_free(other);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    CHECK_INT(system(cmd), ==, 0);
}
