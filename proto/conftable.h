/* A daemon's settings as a table of keys: one reader, defaults and checks. */
#ifndef CRANE_PROTO_CONFTABLE_H
#define CRANE_PROTO_CONFTABLE_H

#include <stddef.h>

/* How a row's value reads and where it goes. */
enum crn_conf_type {
    CRN_CONF_TEXT,    /* text into a char[size] field, after check */
    CRN_CONF_UINT,    /* decimal min..max into an integer of size bytes */
    CRN_CONF_MODE,    /* an octal file mode, 0 to 0777 */
    CRN_CONF_CHOICE,  /* one of choices ("a|b|c") copied as text */
    CRN_CONF_YESNO,   /* yes or no into an int */
    CRN_CONF_SPECIAL, /* the row's set does everything */
};

/* Row flags for CRN_CONF_TEXT: which values mean "off" (stored as ""). */
#define CRN_CONF_NONE 1u  /* "none" */
#define CRN_CONF_EMPTY 2u /* "" */

/* A value check: 0 or -EINVAL. */
typedef int crn_conf_check_fn(const char *v);
/* A special key's setter: 0 or -EINVAL; may replace *HINT. */
typedef int crn_conf_special_fn(void *cfg, const char *key, const char *v,
                                const char **hint);
/* Prints a special key's whole line(s), "KEY = VALUE\n", for --check-config. */
typedef void crn_conf_print_fn(const void *cfg, const char *key);

struct crn_conf_key {
    const char *key;
    enum crn_conf_type type;
    size_t off;                /* of the field in the config struct */
    size_t size;               /* of the field */
    unsigned flags;            /* CRN_CONF_NONE, CRN_CONF_EMPTY */
    unsigned long min, max;    /* CRN_CONF_UINT */
    const char *choices;       /* CRN_CONF_CHOICE: "a|b|c" */
    crn_conf_check_fn *check;  /* CRN_CONF_TEXT, optional */
    crn_conf_special_fn *set;  /* CRN_CONF_SPECIAL */
    crn_conf_print_fn *print;  /* CRN_CONF_SPECIAL without a text field */
    const char *dflt;          /* set at defaults; NULL: zero */
    const char *hint;          /* in "bad KEY 'V' (HINT)" */
    const char *doc;           /* one line for docs and --help */
};

/* Rows for a field F of struct S. */
#define CRN_CONF_FIELD(S, F) offsetof(struct S, F), sizeof(((struct S *)0)->F)

struct crn_conf_table {
    const struct crn_conf_key *rows;
    size_t n;
    const char *unknown;       /* "unknown key '%s'": its message */
};

/* The row of KEY, or NULL. */
const struct crn_conf_key *crn_conf_find(const struct crn_conf_table *t,
                                         const char *key);
/* Sets every row's default into CFG (zeroed first).  0, or -EINVAL with
 * WHY when a default fails its own row (a table bug). */
int crn_conf_defaults(const struct crn_conf_table *t, void *cfg, size_t size,
                      char *why, size_t why_len);
/* Sets KEY to V in CFG as a config line would: 0, or -EINVAL with WHY
 * ("bad KEY 'V' (HINT)" or the table's unknown message). */
int crn_conf_set(const struct crn_conf_table *t, void *cfg, const char *key,
                 const char *v, char *why, size_t why_len);
/* Prints every row of CFG as a config file would hold it, in table order:
 * an empty text printed as "none" where the row takes none; a special row
 * by its print, else as the text field it names (size 0: not printed). */
void crn_conf_print(const struct crn_conf_table *t, const void *cfg);
/* Reads PATH (crn_conf_read) into CFG through the table. */
int crn_conf_load(const struct crn_conf_table *t, void *cfg, const char *path,
                  int must_exist, char *why, size_t why_len);

/* Common checks for CRN_CONF_TEXT rows. */
int crn_conf_abs_path(const char *v);   /* starts with '/' */
int crn_conf_nonempty(const char *v);
int crn_conf_endpoint(const char *v);   /* unix:, tcp: or vsock: */

#endif /* CRANE_PROTO_CONFTABLE_H */
