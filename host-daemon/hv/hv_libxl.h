/* The libxl backend's migration receiver, its URIs and its wire format. */
#ifndef HD_HV_LIBXL_H
#define HD_HV_LIBXL_H

#include "hv.h"

/*
 * URIs.  hv_libxl_ops.open takes "xen:///" or "libxl://" (this host's
 * libxl; the daemon must run in dom0).
 *
 * Migrations.  migrate needs args->open_stream: the daemon opens the
 * connection, an authenticated XenStream request to the destination's
 * crane-hostd (proto/hostd.proto, peer.c), whose server hands the rest of
 * that connection to hv_libxl_receive.  Without it migrate fails with
 * -EINVAL: the backend connects nowhere itself.  args->dest_uri is only
 * named in logs, and args->migrate_uri is ignored (a warning): the stream
 * always goes over the peer connection.  args->dest_xml must be NULL
 * (-EOPNOTSUPP: libxl has no XML); p2p, persistent and undefine_source
 * mean nothing to libxl and are ignored.  The domain must hold no PCI
 * device when it leaves (-EBUSY): crane detaches the GPU first and
 * attaches one at the destination afterwards.
 *
 * The conversation on one connection:
 *   sender:   one frame (proto/frame.h) holding a XenConfig
 *             (proto/hostd.proto): version 1, and the configuration,
 *             libxl_domain_config as JSON of 1 .. HV_LIBXL_CONFIG_MAX
 *             bytes
 *   receiver: 1 byte    verdict on the configuration: 0, or a positive
 *                       errno value and the connection ends (the guest was
 *                       never suspended)
 *   sender:   ...       libxl's own migration stream (libxl_domain_suspend,
 *                       stream version 2), to its end
 *   receiver: 1 byte    0 once the domain runs at the destination, or a
 *                       positive errno value once the destination has given
 *                       it up (its copy destroyed before the byte is sent)
 * The sender destroys its own copy only on a final 0 and resumes it on a
 * non-zero byte or when sending fails.  When no final byte comes (the
 * connection dropped, or nothing within two minutes) the domain may be
 * running at the destination, so the sender leaves its copy suspended,
 * neither resumed nor destroyed, returns the error and logs that both
 * hosts must be checked.
 */

#define HV_LIBXL_CONFIG_MAX (1u << 20)

/*
 * Receives one migration on FD, a connected stream the caller keeps and
 * closes (peer.c's server, once it has accepted a XenStream request):
 * reads and checks the header and the configuration, answers the verdict,
 * restores the domain with libxl_domain_create_restore, unpauses it, and
 * sends the final byte.  Blocks until done, so call it on a worker thread;
 * HV's loop must keep running meanwhile (libxl's helper process is reaped
 * there).  The header and configuration must arrive within 30 s; libxl's
 * own stream has no deadline, so a sender that stalls mid-stream holds the
 * call until its connection drops (the peer server turns TCP keepalive on
 * for that).  HV must come from hv_libxl_ops.open: anything else (NULL
 * included) is -EINVAL at once, with nothing read from or written to FD.
 * Returns 0 when the domain runs here (HV_EV_DOMAIN_STARTED follows), or
 * -errno.
 *
 * Everything read is network input and is checked and bounded, but the
 * configuration may still name any disk, kernel or script path of this
 * host: wire this only to an authenticated peer (peer.c calls it only
 * after the handshake).  Configurations with PCI or device-tree
 * passthrough devices, with a name already in use here, or with a name
 * longer than HV_NAME_MAX are refused.
 */
int hv_libxl_receive(struct hv *hv, int fd);

#endif /* HD_HV_LIBXL_H */
