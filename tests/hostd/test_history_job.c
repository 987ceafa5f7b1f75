/* Tests of host-daemon/history/history_job.c: a migration's job figures kept. */
#include "runner.h"

#include "fixture.h"

#include "host-daemon/history/history.h"
#include "host-daemon/web/buf.h"
#include "host-daemon/web/json.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

TEST(history_job_roundtrip)
{
    struct fixture_db f;
    struct hd_history *h;
    struct hd_migration a = fixture_migration("m-1", "vm-alpha", 1000.5);
    struct hd_job_stats j = {
        .elapsed = 4.019, .data_total = UINT64_C(1) << 30,
        .data_processed = UINT64_C(1) << 30, .memory_bps = 256u << 20,
        .dirty_rate = 120, .page_size = 4096, .iterations = 3,
        .disk_total = 64u << 20, .downtime = 0.042, .setup_time = 0.012,
    }, got;
    struct hd_buf out = {0};

    fixture_db_make(&f);
    ASSERT_EQ(hd_history_open(f.path, &h), 0);
    ASSERT_EQ(hd_history_record(h, &a, NULL, 0), 0);
    ASSERT_EQ(hd_history_get_job(h, "m-1", &got), -ENOENT);
    ASSERT_EQ(hd_history_set_job(h, "m-1", &j), 0);
    /* Only for a migration the history has. */
    ASSERT(hd_history_set_job(h, "m-none", &j) < 0);
    hd_history_close(h);
    /* Kept across a reopen (a restart). */
    ASSERT_EQ(hd_history_open(f.path, &h), 0);
    ASSERT_EQ(hd_history_get_job(h, "m-1", &got), 0);
    ASSERT_EQ(memcmp(&got, &j, sizeof(j)), 0);
    ASSERT_EQ(hd_json_migration_job(&out, &a, NULL, 0, &got), 0);
    ASSERT(strstr(out.data, ",\"job\":{\"elapsed\":4.019,"
                                 "\"data_total\":1073741824,") != NULL);
    ASSERT(strstr(out.data, "\"iterations\":3,") != NULL);
    ASSERT(strstr(out.data, "\"downtime\":0.042,\"setup_time\":0.012}}")
                != NULL);
    free(out.data);
    hd_history_close(h);
    fixture_db_remove(&f);
}
