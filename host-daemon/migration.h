/* The source side of a migration: prepare, detach, migrate, hand over. */
#ifndef HD_MIGRATION_H
#define HD_MIGRATION_H

#include "daemon.h"
#include "proto/hostd.pb-c.h"

/* Runs the migration REQ asks for, reporting to CLIENT_FD (-1: none), with
 * a rollback at every step that fails.  Blocks for the whole migration
 * (a job thread).  Owns neither argument. */
void hd_migration_run(struct hd_daemon *d, int client_fd,
                      const Crane__Hostd__MigrateRequest *req);

/* The source's half of a migration another tool performs (crane-hostctl
 * prepare): check, proxy (live), prepare, detach, each rolled back on
 * failure; MigrateDone OK once the VM may move, its migration left
 * running in the history (handoff.h follows it from there). */
void hd_migration_prepare(struct hd_daemon *d, int client_fd,
                          const Crane__Hostd__HostPrepare *req);

/* The destination crane-hostd's endpoint for DEST_URI: tcp:HOST:PORT from
 * the URI's host.  -EINVAL when the URI names no host (say --peer). */
int hd_peer_endpoint_for(const char *dest_uri, unsigned port, char *out,
                         size_t len);

#endif /* HD_MIGRATION_H */
