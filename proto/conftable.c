/* A daemon's settings as a table of keys: one reader, defaults and checks. */
#include "conftable.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "conffile.h"
#include "endpoint.h"

const struct crn_conf_key *crn_conf_find(const struct crn_conf_table *t,
                                         const char *key)
{
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->rows[i].key, key) == 0)
            return &t->rows[i];
    return NULL;
}

/* V is one of the '|'-separated words of CHOICES. */
static int choice(const char *choices, const char *v)
{
    size_t n = strlen(v);

    for (const char *c = choices; *c;) {
        size_t w = strcspn(c, "|");
        if (w == n && strncmp(c, v, n) == 0)
            return 0;
        c += w + (c[w] == '|');
    }
    return -EINVAL;
}

static int set_uint(const struct crn_conf_key *r, void *field, const char *v,
                    int base, unsigned long min, unsigned long max)
{
    unsigned long n;
    int rc = crn_conf_uint(v, base, min, max, &n);

    if (rc < 0)
        return rc;
    if (r->size == sizeof(uint16_t))
        *(uint16_t *)field = (uint16_t)n;
    else if (r->size == sizeof(uint32_t))
        *(uint32_t *)field = (uint32_t)n;
    else
        return -EINVAL;
    return 0;
}

static int set_text(const struct crn_conf_key *r, char *field, const char *v)
{
    if (((r->flags & CRN_CONF_NONE) && strcmp(v, "none") == 0) ||
        ((r->flags & CRN_CONF_EMPTY) && !*v))
        return crn_conf_text(field, r->size, "");
    if (r->check && r->check(v) < 0)
        return -EINVAL;
    return crn_conf_text(field, r->size, v);
}

/* The row's value into CFG; 0 or -EINVAL with *HINT maybe replaced. */
static int set_row(const struct crn_conf_key *r, void *cfg, const char *v,
                   const char **hint)
{
    char *field = (char *)cfg + r->off;

    switch (r->type) {
    case CRN_CONF_TEXT:
        return set_text(r, field, v);
    case CRN_CONF_UINT:
        return set_uint(r, field, v, 10, r->min, r->max);
    case CRN_CONF_MODE:
        return set_uint(r, field, v, 8, 0, 0777);
    case CRN_CONF_CHOICE:
        return choice(r->choices, v) == 0 ? crn_conf_text(field, r->size, v)
                                          : -EINVAL;
    case CRN_CONF_YESNO:
        *(int *)field = strcmp(v, "yes") == 0;
        return choice("yes|no", v);
    case CRN_CONF_SPECIAL:
        return r->set(cfg, r->key, v, hint);
    }
    return -EINVAL;
}

int crn_conf_set(const struct crn_conf_table *t, void *cfg, const char *key,
                 const char *v, char *why, size_t why_len)
{
    const struct crn_conf_key *r = crn_conf_find(t, key);
    const char *hint;

    if (!r) {
        snprintf(why, why_len, t->unknown, key);
        return -EINVAL;
    }
    hint = r->hint ? r->hint : "";
    if (set_row(r, cfg, v, &hint) < 0)
        return crn_conf_bad(why, why_len, key, v, hint);
    return 0;
}

int crn_conf_defaults(const struct crn_conf_table *t, void *cfg, size_t size,
                      char *why, size_t why_len)
{
    memset(cfg, 0, size);
    for (size_t i = 0; i < t->n; i++) {
        const struct crn_conf_key *r = &t->rows[i];
        const char *hint = "";

        if (r->dflt && set_row(r, cfg, r->dflt, &hint) < 0)
            return crn_conf_bad(why, why_len, r->key, r->dflt, hint);
    }
    return 0;
}

static void print_row(const struct crn_conf_key *r, const void *cfg)
{
    const char *field = (const char *)cfg + r->off;

    switch (r->type) {
    case CRN_CONF_UINT:
        printf("%s = %lu\n", r->key,
               r->size == sizeof(uint16_t)
                   ? (unsigned long)*(const uint16_t *)field
                   : (unsigned long)*(const uint32_t *)field);
        return;
    case CRN_CONF_MODE:
        printf("%s = %04o\n", r->key, (unsigned)*(const uint32_t *)field);
        return;
    case CRN_CONF_YESNO:
        printf("%s = %s\n", r->key, *(const int *)field ? "yes" : "no");
        return;
    case CRN_CONF_SPECIAL:
        if (r->print) {
            r->print(cfg, r->key);
            return;
        }
        if (!r->size)
            return;
        break;
    case CRN_CONF_TEXT:
    case CRN_CONF_CHOICE:
        break;
    }
    printf("%s = %s\n", r->key,
           !*field && (r->flags & CRN_CONF_NONE) ? "none" : field);
}

void crn_conf_print(const struct crn_conf_table *t, const void *cfg)
{
    for (size_t i = 0; i < t->n; i++)
        print_row(&t->rows[i], cfg);
}

static int load_cb(void *arg, const char *key, const char *value, char *why,
                   size_t why_len)
{
    void **pair = arg;

    return crn_conf_set(pair[0], pair[1], key, value, why, why_len);
}

int crn_conf_load(const struct crn_conf_table *t, void *cfg, const char *path,
                  int must_exist, char *why, size_t why_len)
{
    void *pair[2] = {(void *)t, cfg};

    return crn_conf_read(path, must_exist, load_cb, pair, why, why_len);
}

int crn_conf_abs_path(const char *v)
{
    return v[0] == '/' ? 0 : -EINVAL;
}

int crn_conf_nonempty(const char *v)
{
    return *v ? 0 : -EINVAL;
}

int crn_conf_endpoint(const char *v)
{
    struct crn_endpoint ep;

    return crn_endpoint_parse(v, &ep);
}
