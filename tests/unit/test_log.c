/* Unit tests of proto/log.c: which format a line takes, and its prefix. */
#include "runner.h"

#include "proto/log.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* JOURNAL only when JOURNAL_STREAM names exactly the file FD is. */
TEST(log_format_journal_stream)
{
    char mine[64], other_ino[64], junk[80];
    struct stat st;
    int fds[2], other[2];

    ASSERT_EQ(pipe(fds), 0);
    ASSERT_EQ(fstat(fds[1], &st), 0);
    snprintf(mine, sizeof(mine), "%ju:%ju", (uintmax_t)st.st_dev,
             (uintmax_t)st.st_ino);
    snprintf(other_ino, sizeof(other_ino), "%ju:%ju", (uintmax_t)st.st_dev,
             (uintmax_t)st.st_ino + 1);
    ASSERT_EQ(crn_log_format_for(fds[1], mine), CRN_LOG_JOURNAL);
    ASSERT_EQ(crn_log_format_for(fds[1], NULL), CRN_LOG_TEXT);
    ASSERT_EQ(crn_log_format_for(fds[1], ""), CRN_LOG_TEXT);
    ASSERT_EQ(crn_log_format_for(fds[1], other_ino), CRN_LOG_TEXT);
    /* Another file (stderr redirected away from the journal by a child
     * that inherited JOURNAL_STREAM). */
    ASSERT_EQ(pipe(other), 0);
    ASSERT_EQ(crn_log_format_for(other[1], mine), CRN_LOG_TEXT);
    close(other[0]);
    close(other[1]);
    snprintf(junk, sizeof(junk), "%s:7", mine);
    ASSERT_EQ(crn_log_format_for(fds[1], junk), CRN_LOG_TEXT);
    snprintf(junk, sizeof(junk), "%s ", mine);
    ASSERT_EQ(crn_log_format_for(fds[1], junk), CRN_LOG_TEXT);
    ASSERT_EQ(crn_log_format_for(fds[1], "garbage"), CRN_LOG_TEXT);
    ASSERT_EQ(crn_log_format_for(-1, mine), CRN_LOG_TEXT);
    close(fds[0]);
    close(fds[1]);
}

TEST(log_prefix_formats)
{
    struct timespec ts = {.tv_sec = 1700000000, .tv_nsec = 42000000};
    char buf[128];
    size_t n;

    n = crn_log_prefix(buf, sizeof(buf), CRN_LOG_TEXT, CRN_LOG_WARN,
                       "crane-hostd", -1, &ts);
    ASSERT_STR_EQ(buf, "1700000000.042 crane-hostd warn: ");
    ASSERT_EQ(n, strlen(buf));
    crn_log_prefix(buf, sizeof(buf), CRN_LOG_TEXT, CRN_LOG_DEBUG,
                   "crane-shim", 77, &ts);
    ASSERT_STR_EQ(buf, "1700000000.042 crane-shim[77] debug: ");
    /* The journal's priorities, and no time: journald stamps it. */
    crn_log_prefix(buf, sizeof(buf), CRN_LOG_JOURNAL, CRN_LOG_ERROR,
                   "crane-proxy", -1, &ts);
    ASSERT_STR_EQ(buf, "<3>crane-proxy error: ");
    crn_log_prefix(buf, sizeof(buf), CRN_LOG_JOURNAL, CRN_LOG_WARN, "x", -1,
                   &ts);
    ASSERT_STR_EQ(buf, "<4>x warn: ");
    crn_log_prefix(buf, sizeof(buf), CRN_LOG_JOURNAL, CRN_LOG_INFO, "x", 5,
                   &ts);
    ASSERT_STR_EQ(buf, "<6>x[5] info: ");
    crn_log_prefix(buf, sizeof(buf), CRN_LOG_JOURNAL, CRN_LOG_DEBUG, "x", -1,
                   &ts);
    ASSERT_STR_EQ(buf, "<7>x debug: ");
    crn_log_prefix(buf, sizeof(buf), CRN_LOG_CLI, CRN_LOG_ERROR, "cranectl",
                   -1, &ts);
    ASSERT_STR_EQ(buf, "cranectl: ");
    /* A small buffer: cut, terminated, the length what it holds. */
    n = crn_log_prefix(buf, 6, CRN_LOG_JOURNAL, CRN_LOG_ERROR, "crane", -1,
                       &ts);
    ASSERT_STR_EQ(buf, "<3>cr");
    ASSERT_EQ(n, 5);
}
