/* crane-hostd's listening sockets: crane-migrate's (unix) and peers' (TCP). */
#ifndef HD_LISTEN_H
#define HD_LISTEN_H

#include "daemon.h"

struct hd_listeners;

/* Listens where D's settings say (control always; peers unless "none"),
 * on D's loop; each connection is served on a job thread.  WHY gets one
 * line on failure. */
int hd_listen_start(struct hd_daemon *d, struct hd_listeners **out,
                    char *why, size_t why_len);
/* Stops accepting (loop thread); removes the control socket's file. */
void hd_listen_stop(struct hd_listeners *l);
/* Frees L once the loop has run the close callbacks hd_listen_stop asked
 * for. */
void hd_listen_free(struct hd_listeners *l);

#endif /* HD_LISTEN_H */
