/* crane-guestd's state file: what a restarted daemon must know.
 *
 * Text, one record per line, written whole and renamed into place so a
 * reader never sees half a file:
 *
 *   crane-guestd-state 1
 *   phase prepared
 *   mode live
 *   proxy unix:/run/crane/proxy.sock
 *   modules_unloaded 2
 *   since 1700000000.123
 *   program 1234 remoting longrun
 *
 * The default place, /run/crane, survives a restart of the daemon but not
 * a reboot: after a reboot no program is left to bring back.
 */
#include "state.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STATE_MAGIC "crane-guestd-state 1"

static const char *const phase_words[] = {"unknown",  "idle",    "preparing",
                                          "prepared", "resuming", "aborting"};
static const char *const pmode_words[] = {"unknown", "passthrough", "remoting",
                                          "parked",  "remote-only"};
static const char *const mig_words[] = {"default", "live", "offline"};

static int word_index(const char *const *words, size_t n, const char *w)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(words[i], w) == 0)
            return (int)i;
    return -1;
}

#define WORDS(a) (sizeof(a) / sizeof(*(a)))

int gd_state_write(const char *path, const struct gd_saved *s)
{
    char tmp[GD_TEXT + 16];
    FILE *f;
    int fd, rc = 0;

    /* A fresh file: never through a link someone left in its place. */
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    unlink(tmp);
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
              0600);
    if (fd < 0)
        return -errno;
    if (!(f = fdopen(fd, "w"))) {
        rc = -errno;
        close(fd);
        unlink(tmp);
        return rc;
    }
    fprintf(f, STATE_MAGIC "\n");
    fprintf(f, "phase %s\n",
            s->phase < WORDS(phase_words) ? phase_words[s->phase] : "unknown");
    fprintf(f, "mode %s\n",
            s->mode < WORDS(mig_words) ? mig_words[s->mode] : "default");
    if (s->proxy[0])
        fprintf(f, "proxy %s\n", s->proxy);
    fprintf(f, "modules_unloaded %zu\n", s->modules_unloaded);
    fprintf(f, "since %.3f\n", s->since);
    for (size_t i = 0; i < s->n_programs; i++) {
        const struct gd_saved_program *p = &s->programs[i];
        fprintf(f, "program %d %s %s\n", (int)p->pid,
                p->mode < WORDS(pmode_words) ? pmode_words[p->mode]
                                             : "unknown",
                p->name[0] ? p->name : "?");
    }
    if (fflush(f) != 0 || fsync(fd) != 0)
        rc = -errno;
    if (fclose(f) != 0 && rc == 0)
        rc = -errno;
    if (rc == 0 && rename(tmp, path) < 0)
        rc = -errno;
    if (rc < 0)
        unlink(tmp);
    return rc;
}

/* One line: "key rest"; NUL-terminates both. */
static char *split(char *line)
{
    char *sp;

    line[strcspn(line, "\n")] = '\0';
    sp = strchr(line, ' ');
    if (!sp)
        return line + strlen(line);
    *sp = '\0';
    return sp + 1;
}

static int parse_program(char *rest, struct gd_saved *s)
{
    struct gd_saved_program *p;
    char mode[32], name[64];
    long pid;
    int idx;

    if (s->n_programs == GD_STATE_MAX_PROGRAMS)
        return 0;
    if (sscanf(rest, "%ld %31s %63s", &pid, mode, name) != 3 || pid <= 0 ||
        pid > 0x7fffffff)
        return -EINVAL;
    if ((idx = word_index(pmode_words, WORDS(pmode_words), mode)) < 0)
        return -EINVAL;
    p = &s->programs[s->n_programs++];
    p->pid = (pid_t)pid;
    p->mode = (Crane__Control__ProgramMode)idx;
    snprintf(p->name, sizeof(p->name), "%s", name);
    return 0;
}

int gd_state_read(const char *path, struct gd_saved *s)
{
    FILE *f = fopen(path, "re");
    char line[GD_TEXT + 64];
    int rc = 0;

    memset(s, 0, sizeof(*s));
    s->phase = CRANE__CONTROL__PHASE__PHASE_IDLE;
    if (!f)
        return -errno;
    if (!fgets(line, sizeof(line), f) ||
        strncmp(line, STATE_MAGIC "\n", sizeof(STATE_MAGIC)) != 0) {
        fclose(f);
        return -EINVAL;
    }
    while (rc == 0 && fgets(line, sizeof(line), f)) {
        char *rest = split(line);
        int idx;
        if (strcmp(line, "phase") == 0) {
            idx = word_index(phase_words, WORDS(phase_words), rest);
            rc = idx > 0 ? 0 : -EINVAL;
            if (idx > 0)
                s->phase = (Crane__Control__Phase)idx;
        } else if (strcmp(line, "mode") == 0) {
            idx = word_index(mig_words, WORDS(mig_words), rest);
            rc = idx >= 0 ? 0 : -EINVAL;
            if (idx >= 0)
                s->mode = (Crane__Control__MigrationMode)idx;
        } else if (strcmp(line, "proxy") == 0) {
            snprintf(s->proxy, sizeof(s->proxy), "%s", rest);
        } else if (strcmp(line, "modules_unloaded") == 0) {
            char *end;
            unsigned long n = strtoul(rest, &end, 10);
            rc = *end || n > 64 ? -EINVAL : 0;
            s->modules_unloaded = n;
        } else if (strcmp(line, "since") == 0) {
            s->since = strtod(rest, NULL);
        } else if (strcmp(line, "program") == 0) {
            rc = parse_program(rest, s);
        }
        /* Unknown keys: written by a newer daemon; skipped. */
    }
    fclose(f);
    if (rc < 0) {
        memset(s, 0, sizeof(*s));
        s->phase = CRANE__CONTROL__PHASE__PHASE_IDLE;
    }
    return rc;
}
