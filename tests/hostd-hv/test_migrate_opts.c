/* Tests of virsh migrate's options in crane-hostd: the migrate_tls and
 * qemu_conf settings, the request's checks, libvirt's flags and params. */
#include "harness.h"

#include "host-daemon/config.h"
#include "host-daemon/hv/hv_libvirt_int.h"
#include "host-daemon/migrate_opts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Writes TEXT as DIR/qemu.conf into PATH. */
static void qemu_conf(const char *dir, const char *text, char *path,
                      size_t len)
{
    FILE *f;

    snprintf(path, len, "%s/qemu.conf", dir);
    CHECK((f = fopen(path, "w")) != NULL);
    fputs(text, f);
    CHECK_INT(fclose(f), ==, 0);
}

void test_migrate_tls_setting(void)
{
    char dir[] = "/tmp/crane-mtls-XXXXXX", path[200], why[300];
    struct hv_migrate_args a;
    struct hd_config c;

    hd_config_defaults(&c);
    CHECK_STR(c.migrate_tls, "auto");
    CHECK_STR(c.qemu_conf, "/etc/libvirt/qemu.conf");
    CHECK_INT(hd_config_set(&c, "migrate_tls", "yes", why, sizeof(why)), <,
              0);
    CHECK(strstr(why, "auto, on or off") != NULL);
    CHECK_INT(hd_config_set(&c, "qemu_conf", "qemu.conf", why, sizeof(why)),
              <, 0);
    CHECK(mkdtemp(dir) != NULL);

    /* auto: on exactly when qemu.conf forces it (the last line wins). */
    qemu_conf(dir, "# migrate_tls_force = 1\nmigrate_tls_x509_verify = 1\n",
              path, sizeof(path));
    CHECK(!hd_qemu_conf_forces_tls(path));
    CHECK_INT(hd_config_set(&c, "qemu_conf", path, why, sizeof(why)), ==, 0);
    memset(&a, 0, sizeof(a));
    hd_migrate_opts_apply(&c, NULL, &a);
    CHECK(!a.tls);
    CHECK(a.tls_if_refused);
    qemu_conf(dir, "migrate_tls_force = 0\n  migrate_tls_force=1\n", path,
              sizeof(path));
    CHECK(hd_qemu_conf_forces_tls(path));
    memset(&a, 0, sizeof(a));
    hd_migrate_opts_apply(&c, NULL, &a);
    CHECK(a.tls);

    /* off: only when the request asks; on: always. */
    CHECK_INT(hd_config_set(&c, "migrate_tls", "off", why, sizeof(why)), ==,
              0);
    memset(&a, 0, sizeof(a));
    hd_migrate_opts_apply(&c, NULL, &a);
    CHECK(!a.tls && !a.tls_if_refused);
    Crane__Hostd__MigrateOptions o = CRANE__HOSTD__MIGRATE_OPTIONS__INIT;
    o.tls = true;
    hd_migrate_opts_apply(&c, &o, &a);
    CHECK(a.tls);
    CHECK_INT(hd_config_set(&c, "migrate_tls", "on", why, sizeof(why)), ==, 0);
    o.tls = false;
    memset(&a, 0, sizeof(a));
    hd_migrate_opts_apply(&c, &o, &a);
    CHECK(a.tls);
    CHECK(!hd_qemu_conf_forces_tls("/nonexistent/qemu.conf"));
    unlink(path);
    rmdir(dir);
}

void test_migrate_opts_checked(void)
{
    Crane__Hostd__MigrateOptions o = CRANE__HOSTD__MIGRATE_OPTIONS__INIT;
    char *disks[65], bad[] = "vd a", big[40];

    CHECK(hd_migrate_opts_check(NULL) == NULL);
    CHECK(hd_migrate_opts_check(&o) == NULL);
    o.copy_storage_all = o.copy_storage_inc = true;
    CHECK(hd_migrate_opts_check(&o) != NULL);
    o.copy_storage_inc = false;
    for (int i = 0; i < 65; i++)
        disks[i] = "vda";
    o.migrate_disks = disks;
    o.n_migrate_disks = 65;
    CHECK(hd_migrate_opts_check(&o) != NULL);
    o.n_migrate_disks = 2;
    CHECK(hd_migrate_opts_check(&o) == NULL);
    disks[1] = bad;
    CHECK(hd_migrate_opts_check(&o) != NULL);
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    disks[1] = big;
    CHECK(hd_migrate_opts_check(&o) != NULL);
    o.copy_storage_all = false;
    o.n_migrate_disks = 1;
    CHECK(hd_migrate_opts_check(&o) != NULL);   /* disks without a copy */
    o.n_migrate_disks = 0;
    o.parallel_connections = 4;
    CHECK(hd_migrate_opts_check(&o) != NULL);   /* without parallel */
    o.parallel = true;
    CHECK(hd_migrate_opts_check(&o) == NULL);
    o.parallel_connections = 256;
    CHECK(hd_migrate_opts_check(&o) != NULL);
    o.parallel_connections = 0;
    o.dname = "a/b";
    CHECK(hd_migrate_opts_check(&o) != NULL);
    o.dname = "vm\n1";
    CHECK(hd_migrate_opts_check(&o) != NULL);
    o.dname = "vm1";
    o.disks_port = 70000;
    CHECK(hd_migrate_opts_check(&o) != NULL);
}

void test_migrate_libvirt_args(void)
{
    const char *disks[] = {"vda", "vdb"};
    struct hv_migrate_args a = {
        .live = true, .p2p = true, .tls = true, .copy_storage_all = true,
        .auto_converge = true, .abort_on_error = true, .parallel = true,
        .migrate_disks = disks, .n_migrate_disks = 2, .bandwidth_mib = 8,
        .parallel_connections = 3, .dname = "vm-b", .listen_address = "::1",
        .migrate_uri = "tcp://b:49152", .disks_port = 49153,
    };
    virTypedParameterPtr p = NULL;
    unsigned long long bw;
    const char *s;
    int n = 0, v;

    CHECK_INT(virInitialize(), ==, 0);  /* what virConnectOpen does */
    CHECK_INT(hv_libvirt__migrate_flags(&a), ==,
              VIR_MIGRATE_LIVE | VIR_MIGRATE_PEER2PEER | VIR_MIGRATE_TLS |
                  VIR_MIGRATE_NON_SHARED_DISK | VIR_MIGRATE_AUTO_CONVERGE |
                  VIR_MIGRATE_ABORT_ON_ERROR | VIR_MIGRATE_PARALLEL);
    CHECK_INT(hv_libvirt__migrate_params(&a, &p, &n), ==, 0);
    CHECK_INT(virTypedParamsGetULLong(p, n, VIR_MIGRATE_PARAM_BANDWIDTH, &bw),
              ==, 1);
    CHECK_INT(bw, ==, 8);
    CHECK_INT(virTypedParamsGetInt(p, n,
                                   VIR_MIGRATE_PARAM_PARALLEL_CONNECTIONS,
                                   &v), ==, 1);
    CHECK_INT(v, ==, 3);
    CHECK_INT(virTypedParamsGetInt(p, n, VIR_MIGRATE_PARAM_DISKS_PORT, &v),
              ==, 1);
    CHECK_INT(v, ==, 49153);
    CHECK_INT(virTypedParamsGetString(p, n, VIR_MIGRATE_PARAM_DEST_NAME, &s),
              ==, 1);
    CHECK_STR(s, "vm-b");
    CHECK_INT(virTypedParamsGetString(p, n, VIR_MIGRATE_PARAM_LISTEN_ADDRESS,
                                      &s), ==, 1);
    CHECK_STR(s, "::1");
    CHECK_INT(virTypedParamsGetString(p, n, VIR_MIGRATE_PARAM_URI, &s), ==, 1);
    CHECK_STR(s, "tcp://b:49152");
    /* Every disk as its own MIGRATE_DISKS entry. */
    v = 0;
    for (int i = 0; i < n; i++)
        v += strcmp(p[i].field, VIR_MIGRATE_PARAM_MIGRATE_DISKS) == 0;
    CHECK_INT(v, ==, 2);
    CHECK_INT(virTypedParamsGetString(p, n, VIR_MIGRATE_PARAM_DEST_XML, &s),
              ==, 0);
    virTypedParamsFree(p, n);
    /* Nothing asked: only the four flags crane always had. */
    memset(&a, 0, sizeof(a));
    p = NULL;
    n = 0;
    CHECK_INT(hv_libvirt__migrate_flags(&a), ==, 0);
    CHECK_INT(hv_libvirt__migrate_params(&a, &p, &n), ==, 0);
    CHECK_INT(n, ==, 0);
    virTypedParamsFree(p, n);
}
