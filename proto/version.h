/* The version every crane program reports, from one place (the build). */
#ifndef CRANE_PROTO_VERSION_H
#define CRANE_PROTO_VERSION_H

/* "0.1.0", or what `git describe` says in a git checkout (the Makefile's
 * CRANE_VERSION). */
const char *crn_version(void);
/* Prints "PROGRAM VERSION" on stdout: every program's --version. */
void crn_print_version(const char *program);

#endif /* CRANE_PROTO_VERSION_H */
