/* Unit tests of host-daemon/web/json.c: JSON rendering of the history. */
#include "runner.h"

#include "fixture.h"
#include "host-daemon/web/json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Fails unless S renders as the JSON string WANT (quotes included). */
static void expect_json_string(const char *s, const char *want)
{
    struct hd_buf out = {0};

    ASSERT_EQ(hd_json_put_string(&out, s), 0);
    ASSERT_STR_EQ(out.data, want);
    hd_buf_free(&out);
}

TEST(json_string_escaping)
{
    expect_json_string("", "\"\"");
    expect_json_string("vm-1", "\"vm-1\"");
    expect_json_string("say \"hi\"", "\"say \\\"hi\\\"\"");
    expect_json_string("C:\\vm", "\"C:\\\\vm\"");
    expect_json_string("a/b", "\"a/b\"");
    expect_json_string("\b\f\n\r\t", "\"\\b\\f\\n\\r\\t\"");
    expect_json_string("\x01\x1f\x7f", "\"\\u0001\\u001f\\u007f\"");
    /* Valid UTF-8, two to four bytes a character, passes unchanged. */
    expect_json_string("dömäin-日本-😀", "\"dömäin-日本-😀\"");
    expect_json_string("\xc2\x80\xef\xbf\xbf\xf4\x8f\xbf\xbf",
                       "\"\xc2\x80\xef\xbf\xbf\xf4\x8f\xbf\xbf\"");
}

TEST(json_invalid_utf8)
{
    /* Each byte of a bad sequence becomes U+FFFD; what follows is kept. */
    expect_json_string("a\xff" "b", "\"a\\ufffdb\"");
    expect_json_string("\x80", "\"\\ufffd\"");                 /* lone cont. */
    expect_json_string("\xc0\xaf", "\"\\ufffd\\ufffd\"");      /* overlong */
    expect_json_string("\xe0\x80\xaf", "\"\\ufffd\\ufffd\\ufffd\"");
    expect_json_string("\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\""); /* D800 */
    expect_json_string("\xf4\x90\x80\x80",                     /* > 10FFFF */
                       "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
    expect_json_string("x\xe6\x97", "\"x\\ufffd\\ufffd\"");    /* truncated */
    expect_json_string("\xe6\x97\"", "\"\\ufffd\\ufffd\\\"\"");
}

TEST(json_migration_with_steps)
{
    static const char want[] =
        "{\"id\":\"m-1\",\"domain\":\"vm \\\"q\\\" 日本\","
        "\"source\":\"host-a\",\"destination\":\"host-b\",\"mode\":\"live\","
        "\"start_time\":1700000000.25,\"end_time\":1700000002.75,"
        "\"result\":\"ok\",\"error\":\"\",\"bytes_moved\":1048576,"
        "\"steps\":["
        "{\"phase\":\"pre\",\"pid\":42,\"program\":\"mat\\nmul\","
        "\"start_offset\":0,\"duration\":0.1},"
        "{\"phase\":\"detach\",\"pid\":null,\"program\":null,"
        "\"start_offset\":0.1,\"duration\":1.5}]}";
    struct hd_migration m =
        fixture_migration("m-1", "vm \"q\" 日本", 1700000000.25);
    struct hd_step steps[] = {
        fixture_step("pre", 42, "mat\nmul", 0, 0.1),
        fixture_step("detach", 0, NULL, 0.1, 1.5),
    };
    struct hd_buf out = {0};

    ASSERT_EQ(hd_json_migration(&out, &m, steps, 2), 0);
    ASSERT_STR_EQ(out.data, want);
    hd_buf_free(&out);

    /* A running one: no end time yet; no steps: an empty array. */
    m.result = HD_RESULT_RUNNING;
    m.end_time = 0;
    m.mode = HD_MODE_OFFLINE;
    snprintf(m.error, sizeof(m.error), "\x01");
    ASSERT_EQ(hd_json_migration(&out, &m, NULL, 0), 0);
    ASSERT(strstr(out.data, "\"mode\":\"offline\",\"start_time\":"
                            "1700000000.25,\"end_time\":null,\"result\":"
                            "\"running\",\"error\":\"\\u0001\"") != NULL);
    ASSERT(strstr(out.data, ",\"steps\":[]}") != NULL);
    hd_buf_free(&out);
}

TEST(json_migration_list)
{
    struct hd_migration list[2] = {
        fixture_migration("b", "vm-b", 2),
        fixture_migration("a", "vm-a", 1),
    };
    struct hd_buf out = {0};

    ASSERT_EQ(hd_json_migration_list(&out, NULL, 0), 0);
    ASSERT_STR_EQ(out.data, "{\"migrations\":[]}");
    hd_buf_free(&out);
    list[1].result = HD_RESULT_FAILED;
    ASSERT_EQ(hd_json_migration_list(&out, list, 2), 0);
    ASSERT_STR_EQ(
        out.data,
        "{\"migrations\":["
        "{\"id\":\"b\",\"domain\":\"vm-b\",\"source\":\"host-a\","
        "\"destination\":\"host-b\",\"mode\":\"live\",\"start_time\":2,"
        "\"end_time\":4.5,\"result\":\"ok\",\"error\":\"\","
        "\"bytes_moved\":1048576},"
        "{\"id\":\"a\",\"domain\":\"vm-a\",\"source\":\"host-a\","
        "\"destination\":\"host-b\",\"mode\":\"live\",\"start_time\":1,"
        "\"end_time\":3.5,\"result\":\"failed\",\"error\":\"\","
        "\"bytes_moved\":1048576}]}");
    hd_buf_free(&out);
}

TEST(json_bad_inputs)
{
    struct hd_migration m = fixture_migration("x", "vm", 1);
    struct hd_buf out = {0};

    ASSERT_EQ(hd_json_put_string(NULL, "x"), -EINVAL);
    ASSERT_EQ(hd_json_put_string(&out, NULL), -EINVAL);
    ASSERT_EQ(hd_json_migration(NULL, &m, NULL, 0), -EINVAL);
    ASSERT_EQ(hd_json_migration(&out, NULL, NULL, 0), -EINVAL);
    ASSERT_EQ(hd_json_migration(&out, &m, NULL, 3), -EINVAL);
    ASSERT_EQ(hd_json_migration_list(&out, NULL, 2), -EINVAL);
    m.mode = 0;
    ASSERT_EQ(hd_json_migration(&out, &m, NULL, 0), -EINVAL);
    ASSERT(out.data == NULL);
    /* A buffer's size limit is an error that sticks. */
    out.err = -E2BIG;
    ASSERT_EQ(hd_json_put_string(&out, "x"), -E2BIG);
    hd_buf_free(&out);
}
