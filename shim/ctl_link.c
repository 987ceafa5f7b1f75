/* The shim's link to crane-guestd: its socket and one lock for its frames.
 *
 * A leaf: the control thread (control.c) sets the socket and writes its
 * acks here; the remote connection's reader (remote_conn_reader.c) reports
 * a lost proxy here, from its own thread, without calling up into the
 * control thread's file. */
#include "ctl_link.h"

#include "proto/log.h"

#include "proto/control.pb-c.h"
#include "proto/frame.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

static struct {
    pthread_mutex_t lock;
    int fd;
} link_ = {.lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1};

void shim_ctl_link_set(int fd)
{
    pthread_mutex_lock(&link_.lock);
    link_.fd = fd;
    pthread_mutex_unlock(&link_.lock);
}

void shim_ctl_link_atfork_child(void)
{
    pthread_mutex_init(&link_.lock, NULL);
    link_.fd = -1;
}

int shim_ctl_link_write(const ProtobufCMessage *msg)
{
    int rc = -ENOTCONN;

    pthread_mutex_lock(&link_.lock);
    if (link_.fd >= 0)
        rc = crn_frame_write(link_.fd, msg);
    pthread_mutex_unlock(&link_.lock);
    return rc;
}

void shim_ctl_fault(int err, const char *reason)
{
    Crane__Control__ShimMessage m = CRANE__CONTROL__SHIM_MESSAGE__INIT;
    Crane__Control__Fault f = CRANE__CONTROL__FAULT__INIT;
    int rc;

    f.err = err;
    f.reason = (char *)reason;
    m.msg_case = CRANE__CONTROL__SHIM_MESSAGE__MSG_FAULT;
    m.fault = &f;
    rc = shim_ctl_link_write(&m.base);
    if (rc < 0 && rc != -ENOTCONN)
        CRN_WARN("control: cannot report the fault to crane-guestd: %s",
                 strerror(-rc));
    else if (rc == 0)
        CRN_INFO("control: fault reported to crane-guestd: %s", reason);
}
