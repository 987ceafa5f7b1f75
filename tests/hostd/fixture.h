/* Shared set-up for the host daemon's tests: temporary databases, records. */
#ifndef HD_TEST_FIXTURE_H
#define HD_TEST_FIXTURE_H

#include "host-daemon/history/history.h"

/* A database path in a fresh temporary folder; fixture_db_remove deletes
 * the file, its WAL and shared-memory files, and the folder. */
struct fixture_db {
    char dir[64];
    char path[96];
};

void fixture_db_make(struct fixture_db *f);
void fixture_db_remove(struct fixture_db *f);

/* A finished, valid migration record: live, ok, the given id and domain. */
struct hd_migration fixture_migration(const char *id, const char *domain,
                                      double start_time);

/* A step; PROGRAM NULL makes a host step (pid 0). */
struct hd_step fixture_step(const char *phase, unsigned pid,
                            const char *program, double start_offset,
                            double duration);

/* Fails the test unless A and B are equal field by field. */
void fixture_assert_same_migration(const struct hd_migration *a,
                                   const struct hd_migration *b);
void fixture_assert_same_steps(const struct hd_step *a,
                               const struct hd_step *b, size_t n);

#endif /* HD_TEST_FIXTURE_H */
