/* The host end of a guest's channel: commands to crane-guestd, its answers. */
#include "guest.h"

#include "daemon.h"
#include "io.h"
#include "proto/control_ops.h"
#include "proto/log.h"
#include "proto/endpoint.h"
#include "proto/frame.h"
#include "proto/guest_auth.h"
#include "proto/tls.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What crane-guestd may send: one report per program, at most 1 MiB. */
#define GUEST_MAX_FRAME (1u << 20)
/* Beyond a command's own deadline: the daemon's own steps and the wire. */
#define GUEST_MARGIN_MS 15000

/* After progress was seen, past the command's wait: a guest daemon silent
 * this long is gone (it sends one every second). */
#define GUEST_SILENT_MS 10000
/* However long progress keeps coming: the guest's own bound (an hour)
 * and the margin. */
#define GUEST_MAX_WAIT_S (3600.0 + GUEST_MARGIN_MS / 1000.0)

/* Handshake on a tcp: channel: at most this, within the call's wait. */
#define GUEST_AUTH_MS 10000

/* Set once at start-up (main.c), read-only afterwards. */
static uint8_t *guest_key;
static size_t guest_key_len;

static struct crn_tls_config *guest_tls;

void hd_guest_set_tls(struct crn_tls_config *tls)
{
    guest_tls = tls;
}

void hd_guest_set_key(uint8_t *key, size_t len)
{
    guest_key = key;
    guest_key_len = len;
}

/* Connects to PATH: a unix socket path, or tcp:HOST:PORT, which crosses a
 * machine boundary and so is authenticated with the guest key. */
static int guest_connect(const char *path, uint32_t wait_ms)
{
    struct crn_endpoint ep = { .kind = CRN_EP_UNIX };
    char why[512];
    int fd, rc;

    if (strncmp(path, "tcp:", 4) == 0) {
        if (crn_endpoint_parse(path, &ep) < 0)
            return -EINVAL;
        if (!guest_key) {
            CRN_WARN("guest %s: a tcp: channel needs guest_key", path);
            return -EACCES;
        }
    } else if (strlen(path) >= sizeof(ep.path)) {
        return -ENAMETOOLONG;
    } else {
        memcpy(ep.path, path, strlen(path) + 1);
    }
    if ((fd = crn_endpoint_connect(&ep)) < 0)
        return fd;
    if (ep.kind == CRN_EP_TCP && guest_tls &&
        (fd = crn_tls_wrap_client(guest_tls, fd, ep.host,
                                  wait_ms < GUEST_AUTH_MS ? wait_ms
                                                          : GUEST_AUTH_MS,
                                  why, sizeof(why))) < 0) {
        CRN_WARN("guest %s: %s", path, why);
        return fd;
    }
    if (ep.kind == CRN_EP_TCP &&
        (rc = crn_guest_auth_client(fd, guest_key, guest_key_len,
                                    wait_ms < GUEST_AUTH_MS ? wait_ms
                                                            : GUEST_AUTH_MS,
                                    why, sizeof(why))) < 0) {
        CRN_WARN("guest %s: %s", path, why);
        close(fd);
        return rc;
    }
    return fd;
}

static uint64_t next_id(void)
{
    static uint64_t id;
    return __atomic_add_fetch(&id, 1, __ATOMIC_RELAXED) + (uint64_t)getpid() * 1000000;
}

/* A frame read on a command's connection: its answer (0, *G set), one to
 * skip (an older command's answer; 1), or -errno.  Progress for this
 * command goes to WATCH and moves *DEADLINE on. */
static int take(const char *path, uint8_t *buf, size_t len, uint64_t id,
                const struct hd_guest_watch *watch, double started,
                double *deadline, Crane__Control__GuestMessage **g)
{
    Crane__Control__GuestMessage *m =
        crane__control__guest_message__unpack(NULL, len, buf);

    if (m && m->id == id && watch &&
        m->msg_case == CRANE__CONTROL__GUEST_MESSAGE__MSG_PROGRESS) {
        double until = hd_now() + GUEST_SILENT_MS / 1000.0;
        if (until > *deadline && until < started + GUEST_MAX_WAIT_S)
            *deadline = until;
        watch->fn(watch->arg, m->progress);
        crane__control__guest_message__free_unpacked(m, NULL);
        return 1;
    }
    if (!m || m->msg_case != CRANE__CONTROL__GUEST_MESSAGE__MSG_ACK) {
        CRN_WARN("guest %s: malformed answer", path);
        if (m)
            crane__control__guest_message__free_unpacked(m, NULL);
        return -EPROTO;
    }
    if (m->id != id) {
        crane__control__guest_message__free_unpacked(m, NULL);
        return 1;
    }
    *g = m;
    return 0;
}

static int call(const char *path, Crane__Control__HostMessage *m,
                uint32_t wait_ms, const struct hd_guest_watch *watch,
                struct hd_guest_reply *r)
{
    double started = hd_now(), deadline = started + wait_ms / 1000.0;
    int fd, rc;

    memset(r, 0, sizeof(*r));
    m->id = next_id();
    if ((fd = guest_connect(path, wait_ms)) < 0) {
        CRN_WARN("guest %s: cannot connect: %s", path, strerror(-fd));
        return fd;
    }
    hd_send_timeout(fd, 10);
    if ((rc = crn_frame_write(fd, &m->base)) < 0) {
        CRN_WARN("guest %s: cannot send: %s", path, strerror(-rc));
        close(fd);
        return rc;
    }
    /* Answers to earlier commands that timed out may still come first:
     * skip them by id. */
    do {
        uint8_t *buf;
        size_t len;
        Crane__Control__GuestMessage *g = NULL;

        if ((rc = hd_frame_read_by(fd, GUEST_MAX_FRAME, deadline, &buf,
                                   &len)) < 0) {
            CRN_WARN("guest %s: no answer: %s", path, strerror(-rc));
            break;
        }
        rc = take(path, buf, len, m->id, watch, started, &deadline, &g);
        free(buf);
        if (rc == 0) {
            r->msg = g;
            r->ack = g->ack;
        }
    } while (rc == 1);
    close(fd);
    return rc;
}

/* The wait for a command of CMD's type: a command that carries the guest
 * daemon's own bound (a deadline_ms field) gets WAIT_MS there and is
 * waited for that plus the margin; one without (status) for WAIT_MS. */
static uint32_t command_wait(ProtobufCMessage *cmd, uint32_t wait_ms)
{
    const ProtobufCFieldDescriptor *f =
        protobuf_c_message_descriptor_get_field_by_name(cmd->descriptor,
                                                        "deadline_ms");

    if (!f || f->type != PROTOBUF_C_TYPE_UINT32 ||
        f->label == PROTOBUF_C_LABEL_REPEATED)
        return wait_ms;
    *(uint32_t *)((char *)cmd + f->offset) = wait_ms;
    return wait_ms + GUEST_MARGIN_MS;
}

int hd_guest_send(const char *path, Crane__Control__Op op,
                  ProtobufCMessage *cmd, uint32_t wait_ms,
                  const struct hd_guest_watch *watch,
                  struct hd_guest_reply *r)
{
    Crane__Control__HostMessage m = CRANE__CONTROL__HOST_MESSAGE__INIT;
    const struct crn_control_op *row = crn_control_op(op);
    const ProtobufCFieldDescriptor *f =
        row ? protobuf_c_message_descriptor_get_field(
                  &crane__control__host_message__descriptor, row->host_case)
            : NULL;

    memset(r, 0, sizeof(*r));
    /* The row says which field of HostMessage carries the command; the
     * schema says where it is and of which type it must be. */
    if (!f || !cmd || f->descriptor != cmd->descriptor) {
        CRN_ERROR("guest %s: %s is not a command the host sends as %s", path,
                  cmd ? cmd->descriptor->name : "nothing",
                  crn_control_op_name(op));
        return -EINVAL;
    }
    *(ProtobufCMessage **)((char *)&m + f->offset) = cmd;
    m.msg_case = row->host_case;
    return call(path, &m, command_wait(cmd, wait_ms),
                watch && watch->fn ? watch : NULL, r);
}

void hd_guest_reply_free(struct hd_guest_reply *r)
{
    if (r->msg)
        crane__control__guest_message__free_unpacked(r->msg, NULL);
    r->msg = NULL;
    r->ack = NULL;
}
