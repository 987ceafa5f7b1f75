/* Reads `key = value` configuration files: the one parser every daemon uses. */
#include "conffile.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *trim(char *s)
{
    char *end;

    while (isspace((unsigned char)*s))
        s++;
    end = s + strlen(s);
    while (end > s && isspace((unsigned char)end[-1]))
        *--end = '\0';
    return s;
}

int crn_conf_read(const char *path, int must_exist, crn_conf_set_fn *set,
                  void *arg, char *why, size_t why_len)
{
    FILE *f = fopen(path, "re");
    char line[1200], msg[400];
    unsigned lineno = 0;
    int rc = 0;

    if (!f) {
        rc = -errno;
        if (rc == -ENOENT && !must_exist)
            return 0;
        snprintf(why, why_len, "cannot read %s: %s", path, strerror(-rc));
        return rc;
    }
    while (fgets(line, sizeof(line), f)) {
        char *eq, *key, *value, *hash;

        lineno++;
        if (!strchr(line, '\n') && !feof(f)) {
            snprintf(why, why_len, "%s:%u: line too long", path, lineno);
            rc = -EINVAL;
            break;
        }
        if ((hash = strchr(line, '#')))
            *hash = '\0';
        key = trim(line);
        if (!*key)
            continue;
        if (!(eq = strchr(key, '='))) {
            snprintf(why, why_len, "%s:%u: expected key = value", path,
                     lineno);
            rc = -EINVAL;
            break;
        }
        *eq = '\0';
        value = trim(eq + 1);
        key = trim(key);
        msg[0] = '\0';
        if ((rc = set(arg, key, value, msg, sizeof(msg))) < 0) {
            snprintf(why, why_len, "%s:%u: %s", path, lineno,
                     *msg ? msg : "bad line");
            break;
        }
    }
    if (rc == 0 && ferror(f)) {
        rc = -EIO;
        snprintf(why, why_len, "cannot read %s", path);
    }
    fclose(f);
    return rc;
}

int crn_conf_text(char *dst, size_t len, const char *v)
{
    size_t n = strlen(v);

    if (n >= len)
        return -EINVAL;
    memcpy(dst, v, n + 1);
    return 0;
}

int crn_conf_uint(const char *v, int base, unsigned long min,
                  unsigned long max, unsigned long *out)
{
    char *end;
    unsigned long n;

    if (!isdigit((unsigned char)*v))
        return -EINVAL;
    errno = 0;
    n = strtoul(v, &end, base);
    if (errno || *end || n < min || n > max)
        return -EINVAL;
    *out = n;
    return 0;
}

int crn_conf_bad(char *why, size_t why_len, const char *key, const char *v,
                 const char *hint)
{
    snprintf(why, why_len, "bad %s '%s'%s%s%s", key, v, *hint ? " (" : "",
             hint, *hint ? ")" : "");
    return -EINVAL;
}
