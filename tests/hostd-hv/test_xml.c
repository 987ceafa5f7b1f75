/* Tests of host-daemon/hv/hv_xml.c: reading domain and device XML. */
#include "harness.h"

#include "host-daemon/hv/hv.h"
#include "host-daemon/hv/hv_xml.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A live domain XML as libvirt writes it (QEMU driver, trimmed). */
static const char domain_xml[] =
    "<domain type='qemu' id='3'>\n"
    "  <name>guest-a</name>\n"
    "  <uuid>4DEA22B3-1D52-D8F3-2516-782E98AB3FA0</uuid>\n"
    "  <devices>\n"
    "    <channel type='unix'>\n"
    "      <source mode='bind' path='/run/crane/other.sock'/>\n"
    "      <target type='virtio' name='org.qemu.guest_agent.0'/>\n"
    "      <alias name='channel0'/>\n"
    "    </channel>\n"
    "    <channel type='pty'>\n"
    "      <source path='/dev/pts/3'/>\n"
    "      <target type='virtio' name='org.crane.guest.1'/>\n"
    "    </channel>\n"
    "    <channel type='unix'>\n"
    "      <source mode='bind' path='/tmp/crane-e2e/g/guest0.sock'/>\n"
    "      <target type='virtio' name='org.crane.guest.0' state='connected'/>\n"
    "      <alias name='channel1'/>\n"
    "      <address type='virtio-serial' controller='0' bus='0' port='2'/>\n"
    "    </channel>\n"
    "    <rng model='virtio'>\n"
    "      <backend model='random'>/dev/urandom</backend>\n"
    "      <alias name='ua-gpu0'/>\n"
    "    </rng>\n"
    "    <hostdev mode='subsystem' type='pci' managed='yes'>\n"
    "      <source>\n"
    "        <address domain='0x0000' bus='0x65' slot='0x00' "
    "function='0x0'/>\n"
    "      </source>\n"
    "      <alias name='ua-gpu1'/>\n"
    "      <address type='pci' domain='0x0000' bus='0x06' slot='0x00' "
    "function='0x0'/>\n"
    "    </hostdev>\n"
    "    <hostdev mode='subsystem' type='pci' managed='yes'>\n"
    "      <source>\n"
    "        <address domain='0x0001' bus='0xb3' slot='0x1f' "
    "function='0x7'/>\n"
    "      </source>\n"
    "    </hostdev>\n"
    "  </devices>\n"
    "</domain>\n";

static struct hv_xml *parse_ok(const char *xml)
{
    struct hv_xml *parsed = NULL;

    CHECK_INT(hv_xml_parse(xml, &parsed), ==, 0);
    CHECK(parsed != NULL);
    return parsed;
}

/* DOMAIN_XML with FROM replaced by TO (once), malloc'd. */
static char *edited(const char *from, const char *to)
{
    const char *at = strstr(domain_xml, from);
    size_t head, len;
    char *out;

    CHECK(at != NULL);
    head = (size_t)(at - domain_xml);
    len = strlen(domain_xml) - strlen(from) + strlen(to);
    out = malloc(len + 1);
    CHECK(out != NULL);
    snprintf(out, len + 1, "%.*s%s%s", (int)head, domain_xml, to,
             at + strlen(from));
    return out;
}

/* The channel path of XML for the crane channel, as hv_xml returns it. */
static int channel_of(const char *xml, char *out, size_t size)
{
    struct hv_xml *parsed = parse_ok(xml);
    int rc = hv_xml_channel_path(parsed, "org.crane.guest.0", out, size);

    hv_xml_free(parsed);
    return rc;
}

void test_xml_channel_path(void)
{
    struct hv_xml *parsed = parse_ok(domain_xml);
    char path[HV_PATH_MAX + 1];
    char *xml;

    CHECK_INT(hv_xml_channel_path(parsed, "org.crane.guest.0", path,
                                  sizeof(path)),
              ==, 0);
    CHECK_STR(path, "/tmp/crane-e2e/g/guest0.sock");
    CHECK_INT(hv_xml_channel_path(parsed, "org.qemu.guest_agent.0", path,
                                  sizeof(path)),
              ==, 0);
    CHECK_STR(path, "/run/crane/other.sock");
    /* A pty channel of that name is not a unix socket. */
    CHECK_INT(hv_xml_channel_path(parsed, "org.crane.guest.1", path,
                                  sizeof(path)),
              ==, -ENOENT);
    CHECK_INT(hv_xml_channel_path(parsed, "org.crane", path, sizeof(path)),
              ==, -ENOENT);
    /* The name is compared, never pasted into XPath. */
    CHECK_INT(hv_xml_channel_path(parsed, "x' or '1'='1", path, sizeof(path)),
              ==, -ENOENT);
    CHECK_INT(hv_xml_channel_path(parsed, "", path, sizeof(path)), ==,
              -EINVAL);
    CHECK_INT(hv_xml_channel_path(parsed, "org.crane.guest.0", path, 10), ==,
              -ENAMETOOLONG);
    hv_xml_free(parsed);

    /* The exact fit of a sockaddr_un path, and one byte more. */
    {
        char long_path[HV_PATH_MAX + 2];
        char source[HV_PATH_MAX + 64];

        memset(long_path, 'p', sizeof(long_path));
        long_path[0] = '/';
        long_path[HV_PATH_MAX] = '\0';
        snprintf(source, sizeof(source), "path='%s'", long_path);
        xml = edited("path='/tmp/crane-e2e/g/guest0.sock'", source);
        CHECK_INT(channel_of(xml, path, sizeof(path)), ==, 0);
        CHECK_INT(strlen(path), ==, HV_PATH_MAX);
        free(xml);
        long_path[HV_PATH_MAX] = 'p';
        long_path[HV_PATH_MAX + 1] = '\0';
        snprintf(source, sizeof(source), "path='%s'", long_path);
        xml = edited("path='/tmp/crane-e2e/g/guest0.sock'", source);
        CHECK_INT(channel_of(xml, path, sizeof(path)), ==, -ENAMETOOLONG);
        free(xml);
    }
    /* Not absolute, a control character, no path, no source. */
    xml = edited("path='/tmp/crane-e2e/g/guest0.sock'", "path='rel.sock'");
    CHECK_INT(channel_of(xml, path, sizeof(path)), ==, -EINVAL);
    free(xml);
    xml = edited("path='/tmp/crane-e2e/g/guest0.sock'", "path='/a&#10;b'");
    CHECK_INT(channel_of(xml, path, sizeof(path)), ==, -EINVAL);
    free(xml);
    xml = edited("path='/tmp/crane-e2e/g/guest0.sock'", "file='/x'");
    CHECK_INT(channel_of(xml, path, sizeof(path)), ==, -ENOENT);
    free(xml);
    xml = edited("<source mode='bind' path='/tmp/crane-e2e/g/guest0.sock'/>",
                 "");
    CHECK_INT(channel_of(xml, path, sizeof(path)), ==, -ENOENT);
    free(xml);
    /* A domain with no devices at all. */
    parsed = parse_ok("<domain><name>x</name></domain>");
    CHECK_INT(hv_xml_channel_path(parsed, "org.crane.guest.0", path,
                                  sizeof(path)),
              ==, -ENOENT);
    hv_xml_free(parsed);
}

void test_xml_name_uuid(void)
{
    struct hv_xml *parsed = parse_ok(domain_xml);
    char name[HV_NAME_MAX + 1];
    char uuid[37];
    char *xml;

    CHECK_INT(hv_xml_name(parsed, name, sizeof(name)), ==, 0);
    CHECK_STR(name, "guest-a");
    CHECK_INT(hv_xml_name(parsed, name, 7), ==, -ENAMETOOLONG);
    CHECK_INT(hv_xml_uuid(parsed, uuid), ==, 0);
    CHECK_STR(uuid, "4DEA22B3-1D52-D8F3-2516-782E98AB3FA0");
    hv_xml_free(parsed);

    parsed = parse_ok("<domain/>");
    CHECK_INT(hv_xml_name(parsed, name, sizeof(name)), ==, -ENOENT);
    CHECK_INT(hv_xml_uuid(parsed, uuid), ==, -ENOENT);
    hv_xml_free(parsed);

    static const char *const bad_uuids[] = {
        "4dea22b3-1d52-d8f3-2516-782e98ab3fa",   /* short */
        "4dea22b3-1d52-d8f3-2516-782e98ab3fa00", /* long */
        "4dea22b3x1d52-d8f3-2516-782e98ab3fa0",  /* no dash */
        "4dea22b3-1d52-d8f3-2516-782e98ab3fg0",  /* not hex */
        "",
    };
    for (size_t i = 0; i < sizeof(bad_uuids) / sizeof(bad_uuids[0]); i++) {
        char tag[64];

        snprintf(tag, sizeof(tag), "<uuid>%s</uuid>", bad_uuids[i]);
        xml = edited("<uuid>4DEA22B3-1D52-D8F3-2516-782E98AB3FA0</uuid>", tag);
        parsed = parse_ok(xml);
        CHECK_INT(hv_xml_uuid(parsed, uuid), ==, -EINVAL);
        hv_xml_free(parsed);
        free(xml);
    }
    xml = edited("<name>guest-a</name>", "<name>a&#9;b</name>");
    parsed = parse_ok(xml);
    CHECK_INT(hv_xml_name(parsed, name, sizeof(name)), ==, -EINVAL);
    hv_xml_free(parsed);
    free(xml);
}

void test_xml_alias(void)
{
    struct hv_xml *parsed = parse_ok(domain_xml);
    char *xml;

    CHECK_INT(hv_xml_has_alias(parsed, "ua-gpu0"), ==, 1);
    CHECK_INT(hv_xml_has_alias(parsed, "ua-gpu1"), ==, 1);
    CHECK_INT(hv_xml_has_alias(parsed, "channel1"), ==, 1);
    CHECK_INT(hv_xml_has_alias(parsed, "ua-gpu"), ==, 0);
    CHECK_INT(hv_xml_has_alias(parsed, "ua-gpu00"), ==, 0);
    CHECK_INT(hv_xml_has_alias(parsed, "UA-GPU0"), ==, 0);
    CHECK_INT(hv_xml_has_alias(parsed, ""), ==, -EINVAL);
    hv_xml_free(parsed);

    /* Only devices' own aliases count, not one nested deeper or outside
     * <devices>. */
    xml = edited("<alias name='ua-gpu0'/>", "<x><alias name='ua-gpu0'/></x>");
    parsed = parse_ok(xml);
    CHECK_INT(hv_xml_has_alias(parsed, "ua-gpu0"), ==, 0);
    hv_xml_free(parsed);
    free(xml);
    parsed = parse_ok("<domain><rng><alias name='ua-gpu0'/></rng></domain>");
    CHECK_INT(hv_xml_has_alias(parsed, "ua-gpu0"), ==, 0);
    hv_xml_free(parsed);
}

void test_xml_pci_hostdev(void)
{
    struct hv_xml *parsed = parse_ok(domain_xml);
    char *xml;

    CHECK_INT(hv_xml_has_pci_hostdev(parsed, "0000:65:00.0"), ==, 1);
    CHECK_INT(hv_xml_has_pci_hostdev(parsed, "65:00.0"), ==, 1);
    CHECK_INT(hv_xml_has_pci_hostdev(parsed, "0001:B3:1f.7"), ==, 1);
    CHECK_INT(hv_xml_has_pci_hostdev(parsed, "0001:b3:1f.7"), ==, 1);
    /* Near misses: each field alone differs; the guest-side address. */
    CHECK_INT(hv_xml_has_pci_hostdev(parsed, "0001:65:00.0"), ==, 0);
    CHECK_INT(hv_xml_has_pci_hostdev(parsed, "0000:66:00.0"), ==, 0);
    CHECK_INT(hv_xml_has_pci_hostdev(parsed, "0000:65:01.0"), ==, 0);
    CHECK_INT(hv_xml_has_pci_hostdev(parsed, "0000:65:00.1"), ==, 0);
    CHECK_INT(hv_xml_has_pci_hostdev(parsed, "0000:06:00.0"), ==, 0);
    /* Not PCI addresses. */
    static const char *const bad[] = {
        "", "65", "0000:65:00", "0000:65:00.8", "0000:65:20.0",
        "0000:165:00.0", "000000000:65:00.0", "0000:65:00.0 ", "x:65:00.0",
        "0000:65:00.0.0", "0000:-1:00.0", "0000::00.0", "0000:65:00.",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (hv_xml_has_pci_hostdev(parsed, bad[i]) != -EINVAL)
            hvt_fail(__FILE__, __LINE__, "'%s' taken as a PCI address",
                     bad[i]);
    hv_xml_free(parsed);

    /* libvirt's numbers compare by value: decimal, or without padding. */
    xml = edited("domain='0x0000' bus='0x65' slot='0x00' function='0x0'",
                 "domain='0' bus='101' slot='0x0' function='0'");
    parsed = parse_ok(xml);
    CHECK_INT(hv_xml_has_pci_hostdev(parsed, "0000:65:00.0"), ==, 1);
    hv_xml_free(parsed);
    free(xml);
    /* No domain attribute means domain 0. */
    xml = edited("domain='0x0000' bus='0x65'", "bus='0x65'");
    parsed = parse_ok(xml);
    CHECK_INT(hv_xml_has_pci_hostdev(parsed, "0000:65:00.0"), ==, 1);
    hv_xml_free(parsed);
    free(xml);
    /* Garbage in the XML's numbers never matches. */
    static const char *const bad_attrs[] = {
        "domain='0x0000' bus='0x65x' slot='0x00' function='0x0'",
        "domain='0x0000' bus='-0x65' slot='0x00' function='0x0'",
        "domain='0x0000' bus=' 0x65' slot='0x00' function='0x0'",
        "domain='0x0000' bus='0x165' slot='0x00' function='0x0'",
        "domain='0x0000' bus='0x65' slot='0x00' function='0x8'",
        "domain='0x0000' slot='0x00' function='0x0'",
        "domain='0x0000' bus='0x6500000000000000000000065' slot='0x00' "
        "function='0x0'",
    };
    for (size_t i = 0; i < sizeof(bad_attrs) / sizeof(bad_attrs[0]); i++) {
        xml = edited("domain='0x0000' bus='0x65' slot='0x00' function='0x0'",
                     bad_attrs[i]);
        parsed = parse_ok(xml);
        if (hv_xml_has_pci_hostdev(parsed, "0000:65:00.0") != 0)
            hvt_fail(__FILE__, __LINE__, "matched <address %s/>",
                     bad_attrs[i]);
        hv_xml_free(parsed);
        free(xml);
    }
    /* Only type='pci' hostdevs. */
    xml = edited("<hostdev mode='subsystem' type='pci' managed='yes'>",
                 "<hostdev mode='subsystem' type='usb'>");
    parsed = parse_ok(xml);
    CHECK_INT(hv_xml_has_pci_hostdev(parsed, "0000:65:00.0"), ==, 0);
    hv_xml_free(parsed);
    free(xml);
}

void test_xml_device_alias(void)
{
    char alias[HV_ALIAS_MAX + 1];

    CHECK_INT(hv_xml_device_alias("<rng model='virtio'><backend "
                                  "model='random'>/dev/urandom</backend>"
                                  "<alias name='ua-gpu0'/></rng>",
                                  alias, sizeof(alias)),
              ==, 0);
    CHECK_STR(alias, "ua-gpu0");
    CHECK_INT(hv_xml_device_alias("<hostdev mode='subsystem' type='pci'>"
                                  "<source><address domain='0x0000' "
                                  "bus='0x65' slot='0x00' function='0x0'/>"
                                  "</source><alias name='ua-A_9-z'/>"
                                  "</hostdev>",
                                  alias, sizeof(alias)),
              ==, 0);
    CHECK_STR(alias, "ua-A_9-z");

    static const char *const bad[] = {
        "<rng/>",                                   /* no alias */
        "<rng><alias/></rng>",                      /* no name */
        "<rng><alias name=''/></rng>",
        "<rng><alias name='ua-'/></rng>",
        "<rng><alias name='gpu0'/></rng>",          /* not a user alias */
        "<rng><alias name='ua-gpu 0'/></rng>",
        "<rng><alias name='ua-gpu.0'/></rng>",
        "<rng><alias name='ua-gp&#233;'/></rng>",
        "<rng><x><alias name='ua-gpu0'/></x></rng>", /* not the device's */
        "<rng><alias name='ua-gpu0'/>",              /* malformed */
        "",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (hv_xml_device_alias(bad[i], alias, sizeof(alias)) != -EINVAL)
            hvt_fail(__FILE__, __LINE__, "accepted %s", bad[i]);
    CHECK_INT(hv_xml_device_alias(NULL, alias, sizeof(alias)), ==, -EINVAL);

    /* Exactly HV_ALIAS_MAX characters fit; one more does not. */
    {
        char xml[HV_ALIAS_MAX + 64];
        char name[HV_ALIAS_MAX + 2];

        memset(name, 'a', sizeof(name));
        memcpy(name, "ua-", 3);
        name[HV_ALIAS_MAX] = '\0';
        snprintf(xml, sizeof(xml), "<rng><alias name='%s'/></rng>", name);
        CHECK_INT(hv_xml_device_alias(xml, alias, sizeof(alias)), ==, 0);
        CHECK_STR(alias, name);
        name[HV_ALIAS_MAX] = 'a';
        name[HV_ALIAS_MAX + 1] = '\0';
        snprintf(xml, sizeof(xml), "<rng><alias name='%s'/></rng>", name);
        CHECK_INT(hv_xml_device_alias(xml, alias, sizeof(alias)), ==,
                  -ENAMETOOLONG);
    }
}

void test_xml_malformed(void)
{
    static const char *const bad[] = {
        "",
        "<domain>",
        "<domain></domian>",
        "not xml",
        "<domain><name>x</name></domain><domain/>",
        "<vm><name>x</name></vm>",          /* not a domain */
        "<domain>&undefined;</domain>",
        "<?xml version='1.0'?><!DOCTYPE domain [<!ENTITY a 'aaaa'>]>"
        "<domain><name>&a;</name></domain>", /* a DTD */
        "<!DOCTYPE domain SYSTEM 'http://example.invalid/d.dtd'><domain/>",
        "<domain xmlns:x='u'><x:name>y</x:name></domain",
    };
    struct hv_xml *parsed;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        parsed = NULL;
        if (hv_xml_parse(bad[i], &parsed) != -EINVAL)
            hvt_fail(__FILE__, __LINE__, "accepted %s", bad[i]);
        CHECK(parsed == NULL);
    }
    CHECK_INT(hv_xml_parse(NULL, &parsed), ==, -EINVAL);
    hv_xml_free(NULL);
}

void test_xml_limits(void)
{
    struct hv_xml *parsed;
    size_t big = HV_XML_MAX + 1;
    char *xml = malloc(big + 1);
    size_t n;

    CHECK(xml != NULL);
    /* One byte over the limit: refused before parsing. */
    n = (size_t)snprintf(xml, big + 1, "<domain><name>");
    memset(xml + n, 'n', big - n);
    xml[big] = '\0';
    memcpy(xml + big - strlen("</name></domain>"), "</name></domain>",
           strlen("</name></domain>"));
    CHECK_INT(hv_xml_parse(xml, &parsed), ==, -E2BIG);
    CHECK_INT(hv_xml_device_alias(xml, (char[8]){0}, 8), ==, -E2BIG);

    /* Just under it: parsed; the over-long name does not fit a name. */
    xml[big - 2] = '\0';
    memcpy(xml + big - 2 - strlen("</name></domain>"), "</name></domain>",
           strlen("</name></domain>"));
    CHECK_INT(hv_xml_parse(xml, &parsed), ==, 0);
    {
        char name[HV_NAME_MAX + 1];

        CHECK_INT(hv_xml_name(parsed, name, sizeof(name)), ==, -ENAMETOOLONG);
    }
    hv_xml_free(parsed);

    /* Deep nesting stops at libxml2's depth limit instead of recursing. */
    n = (size_t)snprintf(xml, big, "<domain>");
    for (int i = 0; i < 100000; i++)
        n += (size_t)snprintf(xml + n, big - n, "<a>");
    CHECK_INT(hv_xml_parse(xml, &parsed), ==, -EINVAL);

    /* Many devices: every one is looked at up to the bound. */
    n = (size_t)snprintf(xml, big, "<domain><devices>");
    for (int i = 0; i < 1000; i++)
        n += (size_t)snprintf(xml + n, big - n,
                              "<rng><alias name='ua-r%d'/></rng>", i);
    snprintf(xml + n, big - n, "</devices></domain>");
    CHECK_INT(hv_xml_parse(xml, &parsed), ==, 0);
    CHECK_INT(hv_xml_has_alias(parsed, "ua-r999"), ==, 1);
    CHECK_INT(hv_xml_has_alias(parsed, "ua-r1000"), ==, 0);
    hv_xml_free(parsed);
    free(xml);
}
