/* Shared set-up for the host daemon's tests: temporary databases, records. */
#include "fixture.h"

#include "runner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void fixture_db_make(struct fixture_db *f)
{
    const char *tmp = getenv("TMPDIR");

    snprintf(f->dir, sizeof(f->dir), "%s/hostd-test.XXXXXX",
             tmp != NULL && strlen(tmp) < 32 ? tmp : "/tmp");
    ASSERT(mkdtemp(f->dir) != NULL);
    snprintf(f->path, sizeof(f->path), "%s/history.db", f->dir);
}

void fixture_db_remove(struct fixture_db *f)
{
    static const char *const suffixes[] = {"", "-wal", "-shm", "-journal"};
    char p[128];

    for (size_t i = 0; i < sizeof(suffixes) / sizeof(*suffixes); i++) {
        snprintf(p, sizeof(p), "%s%s", f->path, suffixes[i]);
        unlink(p);
    }
    ASSERT_EQ(rmdir(f->dir), 0);
}

struct hd_migration fixture_migration(const char *id, const char *domain,
                                      double start_time)
{
    struct hd_migration m = {
        .mode = HD_MODE_LIVE,
        .start_time = start_time,
        .end_time = start_time + 2.5,
        .result = HD_RESULT_OK,
        .bytes_moved = 1u << 20,
    };

    snprintf(m.id, sizeof(m.id), "%s", id);
    snprintf(m.domain, sizeof(m.domain), "%s", domain);
    snprintf(m.src_host, sizeof(m.src_host), "host-a");
    snprintf(m.dst_host, sizeof(m.dst_host), "host-b");
    return m;
}

struct hd_step fixture_step(const char *phase, unsigned pid,
                            const char *program, double start_offset,
                            double duration)
{
    struct hd_step s = {
        .pid = program != NULL ? pid : 0,
        .start_offset = start_offset,
        .duration = duration,
    };

    snprintf(s.phase, sizeof(s.phase), "%s", phase);
    snprintf(s.program, sizeof(s.program), "%s",
             program != NULL ? program : "");
    return s;
}

void fixture_assert_same_migration(const struct hd_migration *a,
                                   const struct hd_migration *b)
{
    ASSERT_STR_EQ(a->id, b->id);
    ASSERT_STR_EQ(a->domain, b->domain);
    ASSERT_STR_EQ(a->src_host, b->src_host);
    ASSERT_STR_EQ(a->dst_host, b->dst_host);
    ASSERT_EQ(a->mode, b->mode);
    ASSERT(a->start_time == b->start_time);
    ASSERT(a->end_time == b->end_time);
    ASSERT_EQ(a->result, b->result);
    ASSERT_STR_EQ(a->error, b->error);
    ASSERT_EQ(a->bytes_moved, b->bytes_moved);
}

void fixture_assert_same_steps(const struct hd_step *a,
                               const struct hd_step *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        ASSERT_STR_EQ(a[i].phase, b[i].phase);
        ASSERT_EQ(a[i].pid, b[i].pid);
        ASSERT_STR_EQ(a[i].program, b[i].program);
        ASSERT(a[i].start_offset == b[i].start_offset);
        ASSERT(a[i].duration == b[i].duration);
    }
}
