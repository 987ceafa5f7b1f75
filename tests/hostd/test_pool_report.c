/* Unit tests of host-daemon/web/pool_report.c: the GPU pool as schedulers
 * read it (crane's JSON, Placement providers, a Kubernetes Node patch). */
#include "runner.h"

#include "host-daemon/web/pool_report.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Three GPUs: one held by "vm \"a\"", one being attached, one free; one VM
 * waiting.  The names carry JSON's special characters on purpose. */
static const struct hd_pool_gpu_state gpus[] = {
    {.name = "gpu0", .alias = "ua-crane-gpu0", .pci = "0000:65:00.0",
     .holder = "vm \"a\"", .reserved = false},
    {.name = "gpu1", .alias = "ua-crane-gpu1", .pci = "0000:66:00.0",
     .holder = "", .reserved = true},
    {.name = "gpu2", .alias = "ua-gpu2", .pci = "", .holder = "",
     .reserved = false},
};
static const struct hd_pool_waiter_state waiting[] = {
    {.domain = "vm-b", .migration_id = "m-7", .since = 1700000000.5,
     .gpus = 2},
};
/* Two VMs prepared here: one with 12.5 s left of a 60 s lease, one
 * without a lease. */
static const struct hd_pool_prepared_state prepared[] = {
    {.domain = "vm-p", .migration_id = "m-8", .since = 1700000001.5,
     .lease_s = 60, .lease_left = 12.5},
    {.domain = "vm-q", .migration_id = "m-9", .since = 1700000002,
     .lease_s = 0, .lease_left = -1},
};

static struct hd_pool_state pool(void)
{
    return (struct hd_pool_state){.host = "host-a", .gpus = gpus,
                                  .n_gpus = 3, .waiting = waiting,
                                  .n_waiting = 1, .error = "",
                                  .prepared = prepared, .n_prepared = 2};
}

/* Fails unless S renders as exactly WANT in FORMAT. */
static void expect_render(const struct hd_pool_state *s,
                          enum hd_pool_format format, const char *want)
{
    struct hd_buf out = {0};

    ASSERT_EQ(hd_pool_render(&out, s, format), 0);
    ASSERT_STR_EQ(out.data, want);
    hd_buf_free(&out);
}

TEST(pool_report_json)
{
    struct hd_pool_state s = pool();
    size_t held, reserved, free_count;

    hd_pool_count(&s, &held, &reserved, &free_count);
    ASSERT_EQ(held, 1);
    ASSERT_EQ(reserved, 1);
    ASSERT_EQ(free_count, 1);
    expect_render(&s, HD_POOL_JSON,
        "{\"host\":\"host-a\",\"total\":3,\"free\":1,\"held\":1,"
        "\"reserved\":1,\"gpus\":["
        "{\"name\":\"gpu0\",\"alias\":\"ua-crane-gpu0\","
        "\"pci\":\"0000:65:00.0\",\"state\":\"held\","
        "\"holder\":\"vm \\\"a\\\"\"},"
        "{\"name\":\"gpu1\",\"alias\":\"ua-crane-gpu1\","
        "\"pci\":\"0000:66:00.0\",\"state\":\"reserved\",\"holder\":null},"
        "{\"name\":\"gpu2\",\"alias\":\"ua-gpu2\",\"pci\":null,"
        "\"state\":\"free\",\"holder\":null}],"
        "\"waiting\":[{\"domain\":\"vm-b\",\"migration_id\":\"m-7\","
        "\"since\":1700000000.5,\"gpus\":2}],\"prepared\":["
        "{\"domain\":\"vm-p\",\"migration_id\":\"m-8\","
        "\"since\":1700000001.5,\"lease_s\":60,\"lease_left\":12.5},"
        "{\"domain\":\"vm-q\",\"migration_id\":\"m-9\","
        "\"since\":1700000002,\"lease_s\":null,\"lease_left\":null}],"
        "\"error\":null}\n");
}

TEST(pool_report_placement)
{
    struct hd_pool_state s = pool();

    /* Each GPU a child provider of the compute node's, one unit of
     * CUSTOM_CRANE_GPU each, the one being attached reserved. */
    expect_render(&s, HD_POOL_PLACEMENT,
        "{\"resource_class\":\"CUSTOM_CRANE_GPU\","
        "\"trait\":\"CUSTOM_CRANE_LIVE_MIGRATABLE\","
        "\"root_provider_name\":\"host-a\",\"providers\":["
        "{\"name\":\"host-a_crane_gpu0\",\"parent_provider_name\":\"host-a\","
        "\"traits\":[\"CUSTOM_CRANE_LIVE_MIGRATABLE\"],"
        "\"inventories\":{\"CUSTOM_CRANE_GPU\":{\"total\":1,\"reserved\":0,"
        "\"min_unit\":1,\"max_unit\":1,\"step_size\":1,"
        "\"allocation_ratio\":1.0}},\"usages\":{\"CUSTOM_CRANE_GPU\":1},"
        "\"pci\":\"0000:65:00.0\"},"
        "{\"name\":\"host-a_crane_gpu1\",\"parent_provider_name\":\"host-a\","
        "\"traits\":[\"CUSTOM_CRANE_LIVE_MIGRATABLE\"],"
        "\"inventories\":{\"CUSTOM_CRANE_GPU\":{\"total\":1,\"reserved\":1,"
        "\"min_unit\":1,\"max_unit\":1,\"step_size\":1,"
        "\"allocation_ratio\":1.0}},\"usages\":{\"CUSTOM_CRANE_GPU\":0},"
        "\"pci\":\"0000:66:00.0\"},"
        "{\"name\":\"host-a_crane_gpu2\",\"parent_provider_name\":\"host-a\","
        "\"traits\":[\"CUSTOM_CRANE_LIVE_MIGRATABLE\"],"
        "\"inventories\":{\"CUSTOM_CRANE_GPU\":{\"total\":1,\"reserved\":0,"
        "\"min_unit\":1,\"max_unit\":1,\"step_size\":1,"
        "\"allocation_ratio\":1.0}},\"usages\":{\"CUSTOM_CRANE_GPU\":0},"
        "\"pci\":null}]}\n");
}

TEST(pool_report_kubernetes)
{
    struct hd_pool_state s = pool();

    expect_render(&s, HD_POOL_KUBERNETES,
        "{\"metadata\":{\"labels\":{\"crane.io/gpu-pool\":\"true\","
        "\"crane.io/gpus-total\":\"3\",\"crane.io/gpus-free\":\"1\","
        "\"crane.io/vms-waiting\":\"1\"}},"
        "\"status\":{\"capacity\":{\"crane.io/gpu\":\"3\"},"
        "\"allocatable\":{\"crane.io/gpu\":\"3\"}}}\n");
}

/* A hypervisor that could not be read: nothing is free, nothing is said
 * to be held, every Placement provider reserved, nothing allocatable. */
TEST(pool_report_unknown_holders)
{
    struct hd_pool_state s = pool();
    size_t held, reserved, free_count;
    struct hd_buf out = {0};

    s.error = "libvirt: connection lost";
    hd_pool_count(&s, &held, &reserved, &free_count);
    ASSERT_EQ(held, 0);
    ASSERT_EQ(reserved, 3);
    ASSERT_EQ(free_count, 0);
    ASSERT_EQ(hd_pool_render(&out, &s, HD_POOL_JSON), 0);
    ASSERT(strstr(out.data, "\"free\":0,\"held\":0,\"reserved\":3"));
    ASSERT(strstr(out.data, "\"state\":\"unknown\",\"holder\":null"));
    ASSERT(!strstr(out.data, "vm \\\"a\\\""));
    ASSERT(strstr(out.data, "\"error\":\"libvirt: connection lost\"}"));
    hd_buf_free(&out);
    ASSERT_EQ(hd_pool_render(&out, &s, HD_POOL_PLACEMENT), 0);
    ASSERT(!strstr(out.data, "\"reserved\":0"));
    ASSERT(!strstr(out.data, "\"CUSTOM_CRANE_GPU\":1}"));
    hd_buf_free(&out);
    ASSERT_EQ(hd_pool_render(&out, &s, HD_POOL_KUBERNETES), 0);
    ASSERT(strstr(out.data, "\"allocatable\":{\"crane.io/gpu\":\"0\"}"));
    ASSERT(strstr(out.data, "\"crane.io/gpus-free\":\"0\""));
    hd_buf_free(&out);
}

/* An empty pool is a valid report in every format. */
TEST(pool_report_empty)
{
    struct hd_pool_state s = {.host = "h", .error = ""};

    expect_render(&s, HD_POOL_JSON,
                  "{\"host\":\"h\",\"total\":0,\"free\":0,\"held\":0,"
                  "\"reserved\":0,\"gpus\":[],\"waiting\":[],"
                  "\"prepared\":[],\"error\":null}\n");
    expect_render(&s, HD_POOL_PLACEMENT,
                  "{\"resource_class\":\"CUSTOM_CRANE_GPU\","
                  "\"trait\":\"CUSTOM_CRANE_LIVE_MIGRATABLE\","
                  "\"root_provider_name\":\"h\",\"providers\":[]}\n");
}

TEST(pool_report_bad_inputs)
{
    struct hd_pool_state s = pool();
    struct hd_pool_gpu_state bad[1] = {gpus[0]};
    enum hd_pool_format f;
    char host[300];
    struct hd_buf out = {0};

    ASSERT_EQ(hd_pool_format_parse("json", &f), 0);
    ASSERT_EQ(f, HD_POOL_JSON);
    ASSERT_EQ(hd_pool_format_parse("placement", &f), 0);
    ASSERT_EQ(f, HD_POOL_PLACEMENT);
    ASSERT_EQ(hd_pool_format_parse("kubernetes", &f), 0);
    ASSERT_EQ(f, HD_POOL_KUBERNETES);
    ASSERT_EQ(hd_pool_format_parse("yaml", &f), -EINVAL);
    ASSERT_EQ(hd_pool_format_parse(NULL, &f), -EINVAL);
    ASSERT_EQ(hd_pool_render(NULL, &s, HD_POOL_JSON), -EINVAL);
    ASSERT_EQ(hd_pool_render(&out, NULL, HD_POOL_JSON), -EINVAL);
    ASSERT_EQ(hd_pool_render(&out, &s, (enum hd_pool_format)7), -EINVAL);
    s.host = "";
    ASSERT_EQ(hd_pool_render(&out, &s, HD_POOL_JSON), -EINVAL);
    s = pool();
    bad[0].holder = NULL;
    s.gpus = bad;
    s.n_gpus = 1;
    ASSERT_EQ(hd_pool_render(&out, &s, HD_POOL_JSON), -EINVAL);
    /* A provider name past Placement's 200 characters is refused. */
    s = pool();
    memset(host, 'h', sizeof(host) - 1);
    host[sizeof(host) - 1] = '\0';
    s.host = host;
    ASSERT_EQ(hd_pool_render(&out, &s, HD_POOL_PLACEMENT), -EINVAL);
    hd_buf_free(&out);
}
