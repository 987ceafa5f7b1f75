/* The libxl backend's migrations from here (wire format in hv_libxl.h),
 * their job records, and the stream I/O both ends use. */
#ifdef HD_HAVE_LIBXL

#include "hv_libxl_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "hv_libxl.h"
#include "proto/log.h"

#include "proto/frame.h"
#include "proto/hostd.pb-c.h"

/* libxl's save helper writes the stream with blocking writes: one that
 * cannot move a byte for this long fails the send (the copy here is then
 * resumed), instead of hanging on a destination that is gone. */
#define STREAM_SEND_TIMEOUT_S 120
/* After the last byte of the stream the destination still builds the
 * domain's devices and starts its device model before it answers. */
#define ANSWER_TIMEOUT_MS 120000

/* What job() reports.  libxl has no progress statistics for a migration
 * (no bytes, no downtime), so only whether one runs and for how long. */
struct hv_libxl_job {
    struct hv_libxl_job *next;
    char domain[HV_NAME_MAX + 1];
    bool active;
    struct timespec start, end; /* CLOCK_MONOTONIC */
};

/* --- I/O ----------------------------------------------------------------- */

int64_t hv_libxl__now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for EVENTS on FD until DEADLINE (hv_libxl__now_ms() time). */
static int wait_fd(int fd, short events, int64_t deadline)
{
    for (;;) {
        struct pollfd pfd = {.fd = fd, .events = events};
        int64_t left = deadline - hv_libxl__now_ms();
        int r;

        if (left <= 0)
            return -ETIMEDOUT;
        r = poll(&pfd, 1, left > INT_MAX ? INT_MAX : (int)left);
        if (r > 0)
            return 0;
        if (r == 0)
            return -ETIMEDOUT;
        if (errno != EINTR)
            return -errno;
    }
}

/* Reads exactly LEN bytes before DEADLINE; blocking or non-blocking FD. */
int hv_libxl__read_full(int fd, void *buf, size_t len, int64_t deadline)
{
    char *p = buf;

    while (len) {
        int rc = wait_fd(fd, POLLIN, deadline);
        ssize_t n;

        if (rc < 0)
            return rc;
        n = read(fd, p, len);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
                continue;
            return -errno;
        }
        if (n == 0)
            return -ECONNRESET;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Writes all of BUF before DEADLINE; never raises SIGPIPE on a socket. */
int hv_libxl__write_full(int fd, const void *buf, size_t len,
                         int64_t deadline)
{
    const char *p = buf;

    while (len) {
        int rc = wait_fd(fd, POLLOUT, deadline);
        ssize_t n;

        if (rc < 0)
            return rc;
        n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == ENOTSOCK)
            n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
                continue;
            return -errno;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

uint32_t hv_libxl__get_be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
           (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* --- job records --------------------------------------------------------- */

static struct hv_libxl_job *find_job(struct hv *hv, const char *domain)
{
    struct hv_libxl_job *j = hv->jobs;

    while (j && strcmp(j->domain, domain) != 0)
        j = j->next;
    return j;
}

static int job_begin(struct hv *hv, const char *domain)
{
    struct hv_libxl_job *j;
    int rc = 0;

    pthread_mutex_lock(&hv->job_lock);
    j = find_job(hv, domain);
    if (j && j->active) {
        rc = -EBUSY;
    } else if (!j && !(j = calloc(1, sizeof(*j)))) {
        rc = -ENOMEM;
    } else {
        if (!j->domain[0]) {
            snprintf(j->domain, sizeof(j->domain), "%s", domain);
            j->next = hv->jobs;
            hv->jobs = j;
        }
        j->active = true;
        clock_gettime(CLOCK_MONOTONIC, &j->start);
    }
    pthread_mutex_unlock(&hv->job_lock);
    if (rc == -EBUSY)
        CRN_ERROR("libxl: migrate %s: a migration of it is already running",
                 domain);
    return rc;
}

static void job_end(struct hv *hv, const char *domain)
{
    struct hv_libxl_job *j;

    pthread_mutex_lock(&hv->job_lock);
    j = find_job(hv, domain);
    if (j) {
        j->active = false;
        clock_gettime(CLOCK_MONOTONIC, &j->end);
    }
    pthread_mutex_unlock(&hv->job_lock);
}

static double seconds_between(struct timespec a, struct timespec b)
{
    return (double)(b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
}

int hv_libxl__job(struct hv *hv, const char *domain, struct hv_job *out)
{
    struct hv_libxl_job *j;
    struct timespec now;

    if (!hv || !domain || !out)
        return -EINVAL;
    /* Bytes and downtime stay 0: libxl does not report them. */
    memset(out, 0, sizeof(*out));
    clock_gettime(CLOCK_MONOTONIC, &now);
    pthread_mutex_lock(&hv->job_lock);
    j = find_job(hv, domain);
    if (j) {
        out->active = j->active;
        out->elapsed = seconds_between(j->start, j->active ? now : j->end);
    }
    pthread_mutex_unlock(&hv->job_lock);
    return 0;
}

void hv_libxl__jobs_free(struct hv *hv)
{
    struct hv_libxl_job *j;

    while ((j = hv->jobs)) {
        hv->jobs = j->next;
        free(j);
    }
}

/* --- the sender ---------------------------------------------------------- */

static int check_no_pci(struct hv *hv, uint32_t domid, const char *domain)
{
    int n = 0;
    libxl_device_pci *list = libxl_device_pci_list(hv->ctx, domid, &n);

    libxl_device_pci_list_free(list, n);
    if (n > 0) {
        CRN_ERROR("libxl: migrate %s: %d PCI device(s) still attached; "
                 "detach them first",
                 domain, n);
        return -EBUSY;
    }
    return 0;
}

/* Gives the guest its CPU back after a failed send (co-operative resume,
 * as xl does: the guest knows the suspend was cancelled). */
static void resume_here(struct hv *hv, uint32_t domid, const char *domain)
{
    int xrc = libxl_domain_resume(hv->ctx, domid, 1, NULL);

    if (xrc)
        CRN_ERROR("libxl: migrate %s: cannot resume it here either: %s",
                 domain, hv_libxl__strerror(xrc));
    else
        CRN_INFO("libxl: migrate %s: resumed here", domain);
}

/* Sends the configuration of DOMID down FD (a XenConfig frame) and reads the
 * destination's verdict on them: the guest keeps running until then. */
static int send_config(struct hv *hv, uint32_t domid, const char *domain,
                       int fd)
{
    libxl_domain_config cfg;
    Crane__Hostd__XenConfig msg = CRANE__HOSTD__XEN_CONFIG__INIT;
    unsigned char verdict;
    uint8_t *frame = NULL;
    char *json = NULL;
    size_t len;
    int64_t deadline = hv_libxl__now_ms() + HV_LIBXL_HEADER_TIMEOUT_MS;
    int xrc, rc;

    libxl_domain_config_init(&cfg);
    xrc = libxl_retrieve_domain_configuration(hv->ctx, domid, &cfg, NULL);
    if (xrc) {
        CRN_ERROR("libxl: migrate %s: cannot read its configuration: %s",
                 domain, hv_libxl__strerror(xrc));
        rc = hv_libxl__errno(xrc);
        goto out;
    }
    /* The destination picks a domid of its own; this one may be taken. */
    cfg.c_info.domid = 0;
    json = libxl_domain_config_to_json(hv->ctx, &cfg);
    len = json ? strlen(json) : 0;
    if (len == 0 || len > HV_LIBXL_CONFIG_MAX) {
        CRN_ERROR("libxl: migrate %s: its configuration as JSON is %s",
                 domain, json ? "too large" : "unavailable");
        rc = json ? -E2BIG : -EIO;
        goto out;
    }
    msg.version = HV_LIBXL_WIRE_VERSION;
    msg.config_json = json;
    len = crane__hostd__xen_config__get_packed_size(&msg);
    frame = malloc(CRN_FRAME_HEADER_LEN + len);
    if (!frame) {
        rc = -ENOMEM;
        goto out;
    }
    crn_frame_header(frame, len);
    crane__hostd__xen_config__pack(&msg, frame + CRN_FRAME_HEADER_LEN);
    rc = hv_libxl__write_full(fd, frame, CRN_FRAME_HEADER_LEN + len,
                              deadline);
    if (!rc)
        rc = hv_libxl__read_full(fd, &verdict, 1, deadline);
    if (rc) {
        CRN_ERROR("libxl: migrate %s: cannot hand over its configuration: %s",
                 domain, strerror(-rc));
    } else if (verdict) {
        CRN_ERROR("libxl: migrate %s: the destination refused it: %s",
                 domain, strerror(verdict));
        rc = -(int)verdict;
    }
out:
    free(frame);
    free(json);
    libxl_domain_config_dispose(&cfg);
    return rc;
}

/* Sends DOMID down FD and settles which host keeps it (see hv_libxl.h). */
static int send_domain(struct hv *hv, uint32_t domid, const char *domain,
                       int fd, bool live)
{
    unsigned char answer;
    int xrc, rc;

    xrc = libxl_domain_suspend(hv->ctx, domid, fd,
                               live ? LIBXL_SUSPEND_LIVE : 0, NULL);
    if (xrc) {
        CRN_ERROR("libxl: migrate %s: sending it failed: %s", domain,
                 hv_libxl__strerror(xrc));
        /* The guest never suspended: there is nothing to resume (xl). */
        if (xrc != ERROR_GUEST_TIMEDOUT)
            resume_here(hv, domid, domain);
        return hv_libxl__errno(xrc);
    }
    rc = hv_libxl__read_full(fd, &answer, 1,
                             hv_libxl__now_ms() + ANSWER_TIMEOUT_MS);
    if (rc) {
        CRN_ERROR("libxl: migrate %s: no answer from the destination (%s): "
                 "it may be running the domain, so the copy here is left "
                 "suspended, neither resumed nor destroyed; check both hosts",
                 domain, strerror(-rc));
        return rc;
    }
    if (answer) {
        CRN_ERROR("libxl: migrate %s: the destination gave it up: %s", domain,
                 strerror(answer));
        resume_here(hv, domid, domain);
        return -(int)answer;
    }
    xrc = libxl_domain_destroy(hv->ctx, domid, NULL);
    if (xrc)
        CRN_ERROR("libxl: migrate %s: it runs at the destination, but the "
                 "suspended copy here (domain %u) was not destroyed: %s",
                 domain, (unsigned)domid, hv_libxl__strerror(xrc));
    return 0;
}

/* Makes FD, from the daemon's open_stream, fit for libxl's save helper:
 * blocking, and a send timeout of its own. */
static int stream_setup(int fd)
{
    struct timeval tv = {.tv_sec = STREAM_SEND_TIMEOUT_S};
    int flags = fcntl(fd, F_GETFL);

    if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0)
        return -errno;
    if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0 &&
        errno != ENOTSOCK)
        return -errno;
    return 0;
}

int hv_libxl__migrate(struct hv *hv, const char *domain,
                      const struct hv_migrate_args *args)
{
    uint32_t domid;
    int fd = -1, rc;

    if (!hv || !domain || !args)
        return -EINVAL;
    if (args->dest_xml) {
        CRN_ERROR("libxl: migrate %s: a destination XML cannot be used with "
                 "libxl",
                 domain);
        return -EOPNOTSUPP;
    }
    if (!args->open_stream) {
        CRN_ERROR("libxl: migrate %s: no way to reach the destination's "
                 "crane-hostd (the stream goes over its peer connection)",
                 domain);
        return -EINVAL;
    }
    if (args->migrate_uri && args->migrate_uri[0])
        CRN_WARN("libxl: migrate %s: migration URI %s ignored: the stream "
                "goes over the connection to the destination's crane-hostd",
                domain, args->migrate_uri);
    rc = hv_libxl__check(hv, "migrate");
    if (!rc)
        rc = hv_libxl__domid(hv, domain, &domid);
    if (!rc)
        rc = check_no_pci(hv, domid, domain);
    if (!rc)
        rc = job_begin(hv, domain);
    if (rc)
        return rc;

    rc = args->open_stream(args->stream_arg, &fd);
    if (rc < 0) {
        CRN_ERROR("libxl: migrate %s: no stream to the destination's "
                 "crane-hostd: %s",
                 domain, strerror(-rc));
        fd = -1;
    } else if (fd < 0) {
        rc = -EBADF;
    } else if ((rc = stream_setup(fd)) < 0) {
        CRN_ERROR("libxl: migrate %s: cannot set up the stream: %s", domain,
                 strerror(-rc));
    }
    if (!rc)
        rc = send_config(hv, domid, domain, fd);
    if (!rc) {
        CRN_INFO("libxl: migrating %s (domain %u, %s) to %s", domain,
                (unsigned)domid, args->live ? "live" : "offline",
                args->dest_uri ? args->dest_uri : "the destination");
        rc = send_domain(hv, domid, domain, fd, args->live);
    }
    if (!rc)
        CRN_INFO("libxl: %s migrated", domain);
    if (fd >= 0)
        close(fd);
    job_end(hv, domain);
    return rc;
}

#endif /* HD_HAVE_LIBXL */
