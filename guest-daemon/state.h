/* crane-guestd's state file: what a restarted daemon must know. */
#ifndef GD_STATE_H
#define GD_STATE_H

#include "guestd.h"

#define GD_STATE_MAX_PROGRAMS 256

struct gd_saved_program {
    pid_t pid;
    Crane__Control__ProgramMode mode;
    char name[64];
};

struct gd_saved {
    Crane__Control__Phase phase;
    Crane__Control__MigrationMode mode;
    char proxy[GD_TEXT];
    size_t modules_unloaded;
    double since;                /* when the phase began (wall clock) */
    struct gd_saved_program programs[GD_STATE_MAX_PROGRAMS];
    size_t n_programs;
};

/* Writes S to PATH atomically (a temporary file renamed over it). */
int gd_state_write(const char *path, const struct gd_saved *s);
/* Reads PATH into S.  Returns 0, -ENOENT when there is none, or -EINVAL
 * for a file that is not a state file (then S holds defaults). */
int gd_state_read(const char *path, struct gd_saved *s);

#endif /* GD_STATE_H */
