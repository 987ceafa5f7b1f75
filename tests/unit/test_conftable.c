/* Unit tests of proto/conftable.c: the table-driven settings reader. */
#include "runner.h"

#include "proto/conftable.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct demo {
    char name[8];
    char peer[32];
    uint32_t wait_ms;
    uint16_t port;
    unsigned mode;
    char level[8];
    int plain;
    int specials;
};

static int count_special(void *arg, const char *key, const char *v,
                         const char **hint)
{
    struct demo *d = arg;

    (void)key;
    if (strcmp(v, "ok") != 0) {
        *hint = "only ok";
        return -EINVAL;
    }
    d->specials++;
    return 0;
}

#define FIELD(f) .off = offsetof(struct demo, f), \
                 .size = sizeof(((struct demo *)0)->f)
static const struct crn_conf_key demo_rows[] = {
    {.key = "name", .type = CRN_CONF_TEXT, FIELD(name),
     .check = crn_conf_nonempty, .dflt = "crane", .hint = "a word"},
    {.key = "peer", .type = CRN_CONF_TEXT, FIELD(peer),
     .flags = CRN_CONF_NONE, .check = crn_conf_abs_path, .dflt = "/p"},
    {.key = "wait_ms", .type = CRN_CONF_UINT, FIELD(wait_ms), .min = 10,
     .max = 1000, .dflt = "100", .hint = "milliseconds"},
    {.key = "port", .type = CRN_CONF_UINT, FIELD(port), .min = 1,
     .max = 65535, .dflt = "7410"},
    {.key = "mode", .type = CRN_CONF_MODE, FIELD(mode), .dflt = "0600"},
    {.key = "level", .type = CRN_CONF_CHOICE, FIELD(level),
     .choices = "error|info", .dflt = "info", .hint = "error or info"},
    {.key = "plain", .type = CRN_CONF_YESNO, FIELD(plain), .dflt = "no"},
    {.key = "special", .type = CRN_CONF_SPECIAL, .set = count_special},
};
static const struct crn_conf_table demo = {
    demo_rows, sizeof(demo_rows) / sizeof(*demo_rows), "unknown key '%s'"};

TEST(conftable_defaults_and_values)
{
    struct demo d;
    char why[200];

    ASSERT_EQ(crn_conf_defaults(&demo, &d, sizeof(d), why, sizeof(why)), 0);
    ASSERT_STR_EQ(d.name, "crane");
    ASSERT_EQ(d.wait_ms, 100);
    ASSERT_EQ(d.port, 7410);
    ASSERT_EQ(d.mode, 0600);
    ASSERT_STR_EQ(d.level, "info");
    ASSERT_EQ(d.plain, 0);
    ASSERT_EQ(crn_conf_set(&demo, &d, "peer", "none", why, sizeof(why)), 0);
    ASSERT_STR_EQ(d.peer, "");
    ASSERT_EQ(crn_conf_set(&demo, &d, "port", "65535", why, sizeof(why)), 0);
    ASSERT_EQ(d.port, 65535);
    ASSERT_EQ(crn_conf_set(&demo, &d, "mode", "0644", why, sizeof(why)), 0);
    ASSERT_EQ(d.mode, 0644);
    ASSERT_EQ(crn_conf_set(&demo, &d, "plain", "yes", why, sizeof(why)), 0);
    ASSERT_EQ(d.plain, 1);
    ASSERT_EQ(crn_conf_set(&demo, &d, "special", "ok", why, sizeof(why)), 0);
    ASSERT_EQ(d.specials, 1);
    ASSERT(crn_conf_find(&demo, "level") == &demo_rows[5]);
    ASSERT(crn_conf_find(&demo, "levels") == NULL);
}

/* Each kind of bad value: "bad KEY 'V' (HINT)", the field left alone. */
TEST(conftable_errors)
{
    struct demo d;
    char why[200];

    ASSERT_EQ(crn_conf_defaults(&demo, &d, sizeof(d), why, sizeof(why)), 0);
    ASSERT_EQ(crn_conf_set(&demo, &d, "nope", "1", why, sizeof(why)),
              -EINVAL);
    ASSERT_STR_EQ(why, "unknown key 'nope'");
    ASSERT_EQ(crn_conf_set(&demo, &d, "wait_ms", "5", why, sizeof(why)),
              -EINVAL);
    ASSERT_STR_EQ(why, "bad wait_ms '5' (milliseconds)");
    ASSERT_EQ(crn_conf_set(&demo, &d, "wait_ms", "1001", why, sizeof(why)),
              -EINVAL);
    ASSERT_EQ(crn_conf_set(&demo, &d, "wait_ms", "-1", why, sizeof(why)),
              -EINVAL);
    ASSERT_EQ(d.wait_ms, 100);
    ASSERT_EQ(crn_conf_set(&demo, &d, "port", "0", why, sizeof(why)),
              -EINVAL);
    ASSERT_STR_EQ(why, "bad port '0'");
    ASSERT_EQ(crn_conf_set(&demo, &d, "name", "", why, sizeof(why)),
              -EINVAL);
    ASSERT_EQ(crn_conf_set(&demo, &d, "name", "eightchr", why, sizeof(why)),
              -EINVAL);
    ASSERT_STR_EQ(why, "bad name 'eightchr' (a word)");
    ASSERT_STR_EQ(d.name, "crane");
    ASSERT_EQ(crn_conf_set(&demo, &d, "peer", "rel", why, sizeof(why)),
              -EINVAL);
    ASSERT_EQ(crn_conf_set(&demo, &d, "mode", "0800", why, sizeof(why)),
              -EINVAL);
    ASSERT_EQ(crn_conf_set(&demo, &d, "mode", "01000", why, sizeof(why)),
              -EINVAL);
    ASSERT_EQ(crn_conf_set(&demo, &d, "level", "err", why, sizeof(why)),
              -EINVAL);
    ASSERT_STR_EQ(why, "bad level 'err' (error or info)");
    ASSERT_EQ(crn_conf_set(&demo, &d, "level", "error|info", why,
                           sizeof(why)), -EINVAL);
    ASSERT_EQ(crn_conf_set(&demo, &d, "plain", "1", why, sizeof(why)),
              -EINVAL);
    ASSERT_EQ(crn_conf_set(&demo, &d, "special", "x", why, sizeof(why)),
              -EINVAL);
    ASSERT_STR_EQ(why, "bad special 'x' (only ok)");
    ASSERT_EQ(d.specials, 0);
}

/* A file through the table: the bad line named FILE:LINE. */
TEST(conftable_load)
{
    char path[] = "/tmp/crane-conftable-XXXXXX";
    char why[300] = "";
    struct demo d;
    int fd = mkstemp(path);
    FILE *f = fdopen(fd, "w");

    ASSERT(f != NULL);
    fputs("# demo\nname = x\nport = 99\n\nwait_ms = 2\n", f);
    fclose(f);
    ASSERT_EQ(crn_conf_defaults(&demo, &d, sizeof(d), why, sizeof(why)), 0);
    ASSERT_EQ(crn_conf_load(&demo, &d, path, 1, why, sizeof(why)), -EINVAL);
    ASSERT(strstr(why, path) == why);
    ASSERT(strstr(why, ":5: bad wait_ms '2' (milliseconds)") != NULL);
    ASSERT_STR_EQ(d.name, "x");
    ASSERT_EQ(d.port, 99);
    f = fopen(path, "w");
    fputs("colour = red\n", f);
    fclose(f);
    ASSERT_EQ(crn_conf_load(&demo, &d, path, 1, why, sizeof(why)), -EINVAL);
    ASSERT(strstr(why, ":1: unknown key 'colour'") != NULL);
    unlink(path);
    ASSERT_EQ(crn_conf_load(&demo, &d, path, 0, why, sizeof(why)), 0);
    ASSERT_EQ(crn_conf_load(&demo, &d, path, 1, why, sizeof(why)), -ENOENT);
}

/* A default its own row refuses is reported (a table bug). */
TEST(conftable_bad_default)
{
    static const struct crn_conf_key rows[] = {
        {.key = "wait_ms", .type = CRN_CONF_UINT,
         .off = offsetof(struct demo, wait_ms), .size = sizeof(uint32_t),
         .min = 10, .max = 20, .dflt = "30"},
    };
    static const struct crn_conf_table t = {rows, 1, "unknown '%s'"};
    struct demo d;
    char why[200];

    ASSERT_EQ(crn_conf_defaults(&t, &d, sizeof(d), why, sizeof(why)),
              -EINVAL);
    ASSERT_STR_EQ(why, "bad wait_ms '30'");
}
