/* Tests of crane-hostd's own parts: settings, the peer protocol's
 * authentication and validation, event waits, peer endpoints. */
#include "harness.h"

#include "host-daemon/arrive.h"
#include "host-daemon/config.h"
#include "host-daemon/daemon.h"
#include "host-daemon/migration.h"
#include "host-daemon/peer.h"
#include "host-daemon/pool.h"
#include "host-daemon/waits.h"
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

/* --- settings ------------------------------------------------------------ */

void test_config_keys(void)
{
    struct hd_config c;
    char why[400];

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

/* A destination with KEY (NULL: none) and an empty GPU pool, serving one
 * connection on a loopback port. */
static void server_start(struct server *s, const char *key)
{
    struct sockaddr_in sa = { .sin_family = AF_INET };
    socklen_t len = sizeof(sa);
    char why[200];

    memset(s, 0, sizeof(*s));
    hd_config_defaults(&s->d.cfg);
    snprintf(s->d.cfg.host_name, sizeof(s->d.cfg.host_name), "dst");
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

static void server_stop(struct server *s)
{
    shutdown(s->lfd, SHUT_RDWR);
    pthread_join(s->thread, NULL);
    close(s->lfd);
    hd_pool_free(s->d.pool);
    hd_waiting_free(s->d.waiting);
    free(s->d.key);
}

static int open_peer(struct server *s, const char *key, struct hd_peer **p,
                     char *why, size_t why_len)
{
    char ep[64];

    snprintf(ep, sizeof(ep), "tcp:127.0.0.1:%u", s->port);
    return hd_peer_open(ep, (const uint8_t *)key, key ? strlen(key) : 0,
                        "src", p, why, why_len);
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
    while (read(fd, buf, sizeof(buf)) > 0)
        ;
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
