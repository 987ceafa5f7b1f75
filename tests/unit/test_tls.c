/* Unit tests of proto/tls.c: PSK and x509 handshakes, refusals, the relay. */
#include "runner.h"

#include "proto/tls.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* The accepting side, run on its own thread. */
struct server {
    const struct crn_tls_config *cfg;
    int fd;
    int rc;                      /* plaintext fd or -errno */
    char why[256];
};

static void *server_main(void *arg)
{
    struct server *s = arg;

    s->rc = crn_tls_wrap_server(s->cfg, s->fd, 5000, s->why, sizeof(s->why));
    return NULL;
}

/* Handshakes CLIENT against SERVER over a socket pair; *CFD and *SFD are
 * the plaintext ends (or -errno) and the WHYs say why not. */
static void pair(const struct crn_tls_config *client,
                 const struct crn_tls_config *server, const char *name,
                 int *cfd, int *sfd, char *cwhy, char *swhy)
{
    struct server s = {.cfg = server};
    pthread_t th;
    int sv[2];

    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    s.fd = sv[1];
    ASSERT_EQ(pthread_create(&th, NULL, server_main, &s), 0);
    *cfd = crn_tls_wrap_client(client, sv[0], name, 5000, cwhy, 256);
    if (*cfd < 0) /* the server would wait for the next flight */
        shutdown(sv[1], SHUT_RDWR);
    pthread_join(th, NULL);
    *sfd = s.rc;
    memcpy(swhy, s.why, sizeof(s.why));
}

static void read_exact(int fd, char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = read(fd, buf, len);
        ASSERT(n > 0);
        buf += n;
        len -= (size_t)n;
    }
}

struct writer {
    int fd;
    const char *p;
    size_t len;
    int rc;
};

static void *writer_main(void *arg)
{
    struct writer *w = arg;

    for (size_t done = 0; done < w->len;) {
        ssize_t n = write(w->fd, w->p + done, w->len - done);
        if (n <= 0) {
            w->rc = -1;
            break;
        }
        done += (size_t)n;
    }
    return NULL;
}

/* Bytes both ways through the two relays, a large block included, then a
 * close seen as end of file on the other side. */
static void check_relay(int cfd, int sfd)
{
    size_t big = 1 << 20;
    char *out = malloc(big), *in = malloc(big), b[8];

    ASSERT(out && in);
    for (size_t i = 0; i < big; i++)
        out[i] = (char)(i * 7 + 3);
    ASSERT_EQ(write(cfd, "ping", 4), 4);
    read_exact(sfd, b, 4);
    ASSERT_MEM_EQ(b, "ping", 4);
    ASSERT_EQ(write(sfd, "pong", 4), 4);
    read_exact(cfd, b, 4);
    ASSERT_MEM_EQ(b, "pong", 4);
    /* 1 MiB is more than the socket buffers hold: the relays stream it
     * while this thread reads. */
    struct writer w = {.fd = cfd, .p = out, .len = big};
    pthread_t th;
    ASSERT_EQ(pthread_create(&th, NULL, writer_main, &w), 0);
    read_exact(sfd, in, big);
    pthread_join(th, NULL);
    ASSERT_EQ(w.rc, 0);
    ASSERT_MEM_EQ(in, out, big);
    close(cfd);
    ASSERT_EQ(read(sfd, b, 1), 0);
    close(sfd);
    free(out);
    free(in);
}

static char *temp_key(const char *bytes)
{
    char *path = strdup("/tmp/crane-tls-key-XXXXXX");
    int fd = mkstemp(path);

    ASSERT(fd >= 0);
    ASSERT_EQ(write(fd, bytes, strlen(bytes)), (ssize_t)strlen(bytes));
    close(fd);
    return path;
}

static struct crn_tls_config *config(enum crn_tls_mode mode,
                                     enum crn_tls_role role, const char *pki,
                                     const char *key)
{
    struct crn_tls_config *cfg = NULL;
    char why[256] = "";
    int rc = crn_tls_config_new(mode, role, pki, key, &cfg, why, sizeof(why));

    if (rc < 0)
        fprintf(stderr, "config: %s\n", why);
    ASSERT_EQ(rc, 0);
    return cfg;
}

TEST(tls_psk_relay)
{
    char *key = temp_key("0123456789abcdef0123456789abcdef");
    struct crn_tls_config *c = config(CRN_TLS_PSK, CRN_TLS_BOTH, NULL, key);
    char cwhy[256], swhy[256];
    int cfd, sfd;

    ASSERT_EQ(crn_tls_config_mode(c), CRN_TLS_PSK);
    pair(c, c, NULL, &cfd, &sfd, cwhy, swhy);
    ASSERT(cfd >= 0 && sfd >= 0);
    check_relay(cfd, sfd);
    crn_tls_config_free(c);
    unlink(key);
    free(key);
}

TEST(tls_psk_wrong_key_refused)
{
    char *k1 = temp_key("the right key, 32 bytes long....");
    char *k2 = temp_key("a wrong key, also 32 bytes long.");
    struct crn_tls_config *c1 = config(CRN_TLS_PSK, CRN_TLS_BOTH, NULL, k1);
    struct crn_tls_config *c2 = config(CRN_TLS_PSK, CRN_TLS_BOTH, NULL, k2);
    char cwhy[256], swhy[256];
    int cfd, sfd;

    pair(c2, c1, NULL, &cfd, &sfd, cwhy, swhy);
    ASSERT(cfd < 0);
    ASSERT(sfd < 0);
    ASSERT(strstr(swhy, "TLS") != NULL);
    crn_tls_config_free(c1);
    crn_tls_config_free(c2);
    unlink(k1);
    unlink(k2);
    free(k1);
    free(k2);
}

/* A client without TLS (a frame header and bytes) is refused at once, with
 * a reason that says so. */
TEST(tls_plain_client_refused)
{
    char *key = temp_key("0123456789abcdef0123456789abcdef");
    struct crn_tls_config *c = config(CRN_TLS_PSK, CRN_TLS_BOTH, NULL, key);
    struct server s = {.cfg = c};
    static const char hello[] = "\0\0\0\x10not a tls client";
    pthread_t th;
    int sv[2];

    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    s.fd = sv[1];
    ASSERT_EQ(pthread_create(&th, NULL, server_main, &s), 0);
    ASSERT_EQ(write(sv[0], hello, sizeof(hello) - 1),
              (ssize_t)sizeof(hello) - 1);
    pthread_join(th, NULL);
    ASSERT(s.rc < 0);
    ASSERT(strstr(s.why, "without TLS") != NULL);
    close(sv[0]);
    crn_tls_config_free(c);
    unlink(key);
    free(key);
}

/* Two PKIs made by tests/tls/mkpki.sh (certtool) in a private folder:
 * GOOD, and OTHER whose own pairs another CA signed but whose CA folder
 * trusts GOOD's CA (a client that knows the server, but whose certificate
 * the server must refuse). */
static void make_pkis(char *dir, char *good, char *other, size_t len)
{
    char cmd[1024];

    strcpy(dir, "/tmp/crane-tls-pki-XXXXXX");
    ASSERT(mkdtemp(dir) != NULL);
    snprintf(good, len, "%s/good", dir);
    snprintf(other, len, "%s/other", dir);
    snprintf(cmd, sizeof(cmd),
             "tests/tls/mkpki.sh %s good && tests/tls/mkpki.sh %s other && "
             "cp %s/CA/cacert.pem %s/CA/cacert.pem",
             good, other, good, other);
    ASSERT_EQ(system(cmd), 0);
}

static void remove_dir(const char *dir)
{
    char cmd[600];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    ASSERT_EQ(system(cmd), 0);
}

TEST(tls_x509_mutual)
{
    char dir[64], good[128], other[128], cwhy[256], swhy[256];
    struct crn_tls_config *srv, *cli, *stranger;
    int cfd, sfd;

    make_pkis(dir, good, other, sizeof(good));
    srv = config(CRN_TLS_X509, CRN_TLS_SERVER, good, NULL);
    cli = config(CRN_TLS_AUTO, CRN_TLS_CLIENT, good, NULL);
    ASSERT_EQ(crn_tls_config_mode(cli), CRN_TLS_X509);
    /* The name the client dialled is in the server's certificate. */
    pair(cli, srv, "localhost", &cfd, &sfd, cwhy, swhy);
    ASSERT(cfd >= 0 && sfd >= 0);
    check_relay(cfd, sfd);
    pair(cli, srv, "127.0.0.1", &cfd, &sfd, cwhy, swhy);
    ASSERT(cfd >= 0 && sfd >= 0);
    check_relay(cfd, sfd);
    /* A name the certificate does not hold: the client refuses. */
    pair(cli, srv, "elsewhere.example", &cfd, &sfd, cwhy, swhy);
    ASSERT(cfd < 0);
    ASSERT_EQ(cfd, -EACCES);
    ASSERT(sfd < 0);
    /* A client whose certificate another CA signed: the server refuses. */
    stranger = config(CRN_TLS_X509, CRN_TLS_CLIENT, other, NULL);
    pair(stranger, srv, "localhost", &cfd, &sfd, cwhy, swhy);
    ASSERT(sfd < 0);
    if (!strcasestr(swhy, "certificate"))
        fprintf(stderr, "server: %s\n", swhy);
    ASSERT(strcasestr(swhy, "certificate") != NULL);
    /* In TLS 1.3 the client's handshake ends before the server has judged
     * its certificate: the client then finds the connection closed. */
    if (cfd >= 0) {
        char b;
        ASSERT_EQ(read(cfd, &b, 1), 0);
        close(cfd);
    }
    crn_tls_config_free(stranger);
    crn_tls_config_free(cli);
    crn_tls_config_free(srv);
    remove_dir(dir);
}

TEST(tls_modes)
{
    enum crn_tls_mode m;
    struct crn_tls_config *cfg = (void *)1;
    char why[256];

    ASSERT_EQ(crn_tls_mode_parse("x509", &m), 0);
    ASSERT_EQ(m, CRN_TLS_X509);
    ASSERT_EQ(crn_tls_mode_parse("psk", &m), 0);
    ASSERT_EQ(m, CRN_TLS_PSK);
    ASSERT_EQ(crn_tls_mode_parse("none", &m), 0);
    ASSERT_EQ(m, CRN_TLS_NONE);
    ASSERT_EQ(crn_tls_mode_parse("tls", &m), -EINVAL);
    /* auto without a PKI and without a key: no TLS. */
    ASSERT_EQ(crn_tls_config_new(CRN_TLS_AUTO, CRN_TLS_BOTH,
                                 "/nonexistent", NULL, &cfg, why,
                                 sizeof(why)), 0);
    ASSERT(cfg == NULL);
    /* psk without a key, x509 without a PKI: refused with the reason. */
    ASSERT_EQ(crn_tls_config_new(CRN_TLS_PSK, CRN_TLS_BOTH, NULL, NULL,
                                 &cfg, why, sizeof(why)), -EINVAL);
    ASSERT(strstr(why, "key file") != NULL);
    ASSERT(crn_tls_config_new(CRN_TLS_X509, CRN_TLS_SERVER, "/nonexistent",
                              NULL, &cfg, why, sizeof(why)) < 0);
    ASSERT(strstr(why, "/nonexistent/CA/cacert.pem") != NULL);
}
