/* Reads `key = value` configuration files: the one parser every daemon uses. */
#ifndef CRANE_PROTO_CONFFILE_H
#define CRANE_PROTO_CONFFILE_H

#include <stddef.h>

/* Sets one key; returns 0, or -EINVAL with WHY (one line, no file:line). */
typedef int crn_conf_set_fn(void *arg, const char *key, const char *value,
                            char *why, size_t why_len);

/*
 * Reads PATH line by line: `key = value`, `#` starts a comment, blank lines
 * are skipped, spaces around keys and values are trimmed, a line is at most
 * 1 KiB.  Calls SET for each pair, in order.  MUST_EXIST false lets a
 * missing file mean "nothing to set".  Returns 0, or a negative errno with
 * WHY holding one line ("FILE:LINE: reason").
 */
int crn_conf_read(const char *path, int must_exist, crn_conf_set_fn *set,
                  void *arg, char *why, size_t why_len);

/* Value parsers for SET functions; each returns 0 or -EINVAL and writes
 * its output only on success. */

/* V copied into DST of LEN bytes (-EINVAL when it does not fit). */
int crn_conf_text(char *dst, size_t len, const char *v);

/* V as a whole number in BASE (10, or 8 for file modes), MIN to MAX; no
 * sign, no trailing text. */
int crn_conf_uint(const char *v, int base, unsigned long min,
                  unsigned long max, unsigned long *out);

/* Writes "bad KEY 'V' (HINT)" into WHY and returns -EINVAL. */
int crn_conf_bad(char *why, size_t why_len, const char *key, const char *v,
                 const char *hint);

#endif /* CRANE_PROTO_CONFFILE_H */
