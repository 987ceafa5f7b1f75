/* Tests of crane-hostd's own parts: settings, peer endpoints, the prepared
 * VMs' leases, event waits. */
#include "harness.h"

#include "host-daemon/config.h"
#include "host-daemon/daemon.h"
#include "host-daemon/migration.h"
#include "host-daemon/peer.h"
#include "host-daemon/pool.h"
#include "host-daemon/prepared.h"
#include "host-daemon/waits.h"
#include "proto/conftable.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
