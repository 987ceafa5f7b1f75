/* Unit tests of proto/conffile.c: the one config parser and its values. */
#include "runner.h"

#include "proto/conffile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct seen {
    char keys[4][32], values[4][64];
    int n;
};

static int remember(void *arg, const char *key, const char *value, char *why,
                    size_t why_len)
{
    struct seen *s = arg;

    if (strcmp(key, "bad") == 0) {
        snprintf(why, why_len, "bad bad");
        return -EINVAL;
    }
    snprintf(s->keys[s->n], sizeof(s->keys[0]), "%s", key);
    snprintf(s->values[s->n], sizeof(s->values[0]), "%s", value);
    s->n++;
    return 0;
}

TEST(conffile_read)
{
    char path[] = "/tmp/crane-conf-XXXXXX";
    char why[300] = "";
    struct seen s = { .n = 0 };
    int fd = mkstemp(path);
    FILE *f = fdopen(fd, "w");

    fputs("# comment\n\n  a =  1 2  # trailing\nb=\n", f);
    fclose(f);
    ASSERT_EQ(crn_conf_read(path, 1, remember, &s, why, sizeof(why)), 0);
    ASSERT_EQ(s.n, 2);
    ASSERT_STR_EQ(s.keys[0], "a");
    ASSERT_STR_EQ(s.values[0], "1 2");
    ASSERT_STR_EQ(s.values[1], "");
    f = fopen(path, "w");
    fputs("a = 1\nbad = x\n", f);
    fclose(f);
    ASSERT_EQ(crn_conf_read(path, 1, remember, &s, why, sizeof(why)),
              -EINVAL);
    ASSERT(strstr(why, ":2: bad bad") != NULL);
    f = fopen(path, "w");
    fputs("no equals sign\n", f);
    fclose(f);
    ASSERT_EQ(crn_conf_read(path, 1, remember, &s, why, sizeof(why)),
              -EINVAL);
    ASSERT(strstr(why, ":1: expected key = value") != NULL);
    unlink(path);
    ASSERT_EQ(crn_conf_read(path, 0, remember, &s, why, sizeof(why)), 0);
    ASSERT_EQ(crn_conf_read(path, 1, remember, &s, why, sizeof(why)),
              -ENOENT);
}

TEST(conffile_values)
{
    unsigned long n = 7;
    char buf[4], why[100];

    ASSERT_EQ(crn_conf_uint("42", 10, 1, 100, &n), 0);
    ASSERT_EQ(n, 42);
    ASSERT_EQ(crn_conf_uint("0755", 8, 0, 0777, &n), 0);
    ASSERT_EQ(n, 0755);
    n = 7;
    ASSERT_EQ(crn_conf_uint("0", 10, 1, 100, &n), -EINVAL);
    ASSERT_EQ(crn_conf_uint("101", 10, 1, 100, &n), -EINVAL);
    ASSERT_EQ(crn_conf_uint("-1", 10, 0, 100, &n), -EINVAL);
    ASSERT_EQ(crn_conf_uint("+1", 10, 0, 100, &n), -EINVAL);
    ASSERT_EQ(crn_conf_uint("5x", 10, 0, 100, &n), -EINVAL);
    ASSERT_EQ(crn_conf_uint("", 10, 0, 100, &n), -EINVAL);
    ASSERT_EQ(crn_conf_uint("99999999999999999999999", 10, 0, ~0UL, &n),
              -EINVAL);
    ASSERT_EQ(crn_conf_uint("8", 8, 0, 0777, &n), -EINVAL);
    ASSERT_EQ(n, 7);                 /* untouched on failure */
    ASSERT_EQ(crn_conf_text(buf, sizeof(buf), "abc"), 0);
    ASSERT_STR_EQ(buf, "abc");
    ASSERT_EQ(crn_conf_text(buf, sizeof(buf), "abcd"), -EINVAL);
    ASSERT_STR_EQ(buf, "abc");
    ASSERT_EQ(crn_conf_bad(why, sizeof(why), "k", "v", "a hint"), -EINVAL);
    ASSERT_STR_EQ(why, "bad k 'v' (a hint)");
    crn_conf_bad(why, sizeof(why), "k", "v", "");
    ASSERT_STR_EQ(why, "bad k 'v'");
}
