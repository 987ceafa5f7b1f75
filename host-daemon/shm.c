/* The ivshmem path for a VM that remotes to the proxy domain on this host:
 * a <shmem> (ivshmem-plain) plugged into the VM and the proxy domain, one
 * host memory both see as a PCI BAR; the guest daemon hands parts of it to
 * its remoting programs, whose bulk bytes then cross no socket.  Before the
 * VM gets its GPU back, or on request, the programs give it up (their bulk
 * bytes back on TCP, calls in flight finished) and it is unplugged from
 * both (docs/remoting.md, "Shared memory"; docs/host.md). */
#include "shm.h"

#include "guest.h"
#include "host-daemon/hv/hv.h"
#include "proto/log.h"
#include "run.h"
#include "waits.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* One plug or unplug at a time: each looks before it acts. */
static pthread_mutex_t shm_lock = PTHREAD_MUTEX_INITIALIZER;

struct shm_dev {
    struct hv_gpu dev;          /* name, alias and XML, as hv_ops take them */
    char xml[512];
};

/* The area of DOMAIN: a /dev/shm object and an alias from its name (the
 * characters aliases allow, and a hash of the whole name so that two names
 * that differ elsewhere never share one). */
static void shm_device(const struct hd_daemon *d, const char *domain,
                       struct shm_dev *s)
{
    char clean[41];
    uint32_t h = 2166136261u;
    size_t n = 0;

    for (const char *p = domain; *p; p++) {
        h = (h ^ (unsigned char)*p) * 16777619u;
        if (n < sizeof(clean) - 1)
            clean[n++] = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                                 (*p >= '0' && *p <= '9') || *p == '-'
                             ? *p
                             : '_';
    }
    clean[n] = '\0';
    memset(s, 0, sizeof(*s));
    snprintf(s->dev.name, sizeof(s->dev.name), "crane-shm-%s-%08x", clean, h);
    snprintf(s->dev.alias, sizeof(s->dev.alias), "ua-%s", s->dev.name);
    snprintf(s->xml, sizeof(s->xml),
             "<shmem name='%s'><model type='ivshmem-plain'/>"
             "<size unit='M'>%u</size><alias name='%s'/></shmem>",
             s->dev.name, d->cfg.proxy_shm_mb, s->dev.alias);
    s->dev.xml = s->xml;
}

/* Plugs S into DOMAIN and waits for the hypervisor to say so. */
static int plug(struct hd_daemon *d, const char *domain,
                const struct shm_dev *s)
{
    struct hd_wait wait;
    int rc;

    if (d->hv_ops->has_gpu(d->hv, domain, &s->dev) == 1)
        return 0;
    hd_wait_arm(d->waits, &wait, HV_EV_DEVICE_ADDED, domain, s->dev.alias);
    rc = d->hv_ops->attach(d->hv, domain, &s->dev);
    if (rc < 0)
        hd_wait_disarm(d->waits, &wait);
    else if (hd_wait_for(d->waits, &wait, d->cfg.attach_timeout_ms) < 0 &&
             d->hv_ops->has_gpu(d->hv, domain, &s->dev) != 1)
        rc = -ETIMEDOUT;
    return rc;
}

/* Unplugs S from DOMAIN (if it holds it) and waits until it is gone. */
static int unplug(struct hd_daemon *d, const char *domain,
                  const struct shm_dev *s)
{
    struct hd_wait wait;
    int rc;

    if (d->hv_ops->has_gpu(d->hv, domain, &s->dev) != 1)
        return 0;
    hd_wait_arm(d->waits, &wait, HV_EV_DEVICE_REMOVED, domain, s->dev.alias);
    rc = d->hv_ops->detach(d->hv, domain, &s->dev);
    if (rc == -ENOENT) {
        hd_wait_disarm(d->waits, &wait);
        return 0;
    }
    if (rc < 0)
        hd_wait_disarm(d->waits, &wait);
    else if (hd_wait_for(d->waits, &wait, d->cfg.detach_timeout_ms) < 0 &&
             d->hv_ops->has_gpu(d->hv, domain, &s->dev) == 1)
        rc = -ETIMEDOUT;
    return rc;
}

static double elapsed(struct hd_run *run)
{
    return run ? hd_run_elapsed(run) : 0;
}

static void step(struct hd_run *run, const char *phase, double t, int err,
                 const char *text)
{
    if (run)
        hd_run_step(run, phase, 0, NULL, t, hd_run_elapsed(run) - t, err,
                    text);
}

/* Shm to the guest daemon at CHANNEL (RELEASE: its end): 0 with the
 * guest's result in *ERR and its text in TEXT, or -errno when it did not
 * answer. */
static int guest_shm(struct hd_daemon *d, const char *channel, bool release,
                     uint64_t size, int *err, char *text, size_t text_len)
{
    Crane__Control__Shm c = CRANE__CONTROL__SHM__INIT;
    struct hd_guest_reply gr;
    int rc;

    c.release = release;
    c.size = size;
    if ((rc = hd_guest_send(channel, CRANE__CONTROL__OP__OP_SHM, &c.base,
                            d->cfg.resume_deadline_ms, NULL, &gr)) < 0)
        return rc;
    *err = gr.ack->err;
    snprintf(text, text_len, "%s", gr.ack->error ? gr.ack->error : "");
    hd_guest_reply_free(&gr);
    return 0;
}

int hd_shm_attach(struct hd_daemon *d, struct hd_run *run,
                  const char *domain, char *why, size_t why_len)
{
    char text[400];
    int err = 0;
    struct hv_domain proxy, dom;
    struct shm_dev s;
    double t = elapsed(run);
    int rc;

    if (!d->cfg.proxy_shm_mb || !*d->cfg.proxy_domain ||
        strcmp(domain, d->cfg.proxy_domain) == 0)
        return 0;
    if (d->hv_ops->domain(d->hv, d->cfg.proxy_domain, &proxy) < 0 ||
        !proxy.running)
        return 0;     /* the programs remote to a proxy elsewhere */
    if ((rc = d->hv_ops->domain(d->hv, domain, &dom)) < 0 || !dom.running ||
        !*dom.channel) {
        snprintf(why, why_len, "%s does not run here with a guest channel",
                 domain);
        return rc < 0 ? rc : -ENOENT;
    }
    shm_device(d, domain, &s);
    pthread_mutex_lock(&shm_lock);
    if (run)
        hd_run_say(run, "shm", -1, "plugging %u MiB of shared memory (%s) "
                   "into %s and %s", d->cfg.proxy_shm_mb, s.dev.name, domain,
                   d->cfg.proxy_domain);
    if ((rc = plug(d, d->cfg.proxy_domain, &s)) < 0 ||
        (rc = plug(d, domain, &s)) < 0) {
        snprintf(why, why_len, "%s would not plug in: %s", s.dev.name,
                 *hv_last_error() ? hv_last_error() : strerror(-rc));
        goto undo;
    }
    /* The guest sees the device a moment after the hypervisor says it is
     * plugged: "no such device" is asked again until attach_timeout_ms. */
    for (double until = hd_now() + d->cfg.attach_timeout_ms / 1e3;;) {
        rc = guest_shm(d, dom.channel, false,
                       (uint64_t)d->cfg.proxy_shm_mb << 20, &err, text,
                       sizeof(text));
        if (rc < 0 || err != -ENOENT || hd_now() >= until)
            break;
        usleep(200 * 1000);
    }
    if (rc < 0) {
        /* It may have handed parts out before its answer was lost: the
         * device stays (a later release takes it back). */
        snprintf(why, why_len, "the guest daemon did not answer shm: %s "
                 "(the device stays plugged)", strerror(-rc));
        goto keep;
    }
    if ((rc = err) < 0)
        snprintf(why, why_len, "the guest did not take the shared area: "
                 "%.300s", text);
    if (rc == -EOPNOTSUPP)
        goto undo;             /* a guest daemon without the command */
    if (rc < 0) {
        /* Whoever took a part gives it up before the device goes; if the
         * guest cannot say that they did, the device stays. */
        if (guest_shm(d, dom.channel, true, 0, &err, text, sizeof(text)) < 0 ||
            err < 0)
            goto keep;
        goto undo;
    }
    CRN_INFO("%s: bulk bytes to the proxy domain %s through %u MiB of "
            "shared memory (%s)", domain, d->cfg.proxy_domain,
            d->cfg.proxy_shm_mb, s.dev.name);
    step(run, "shm", t, 0, s.dev.name);
    pthread_mutex_unlock(&shm_lock);
    return 1;
undo:
    unplug(d, domain, &s);
    unplug(d, d->cfg.proxy_domain, &s);
keep:
    CRN_WARN("%s: no shared memory with the proxy domain: %s", domain, why);
    step(run, "shm", t, rc, why);
    pthread_mutex_unlock(&shm_lock);
    return rc;
}

int hd_shm_release(struct hd_daemon *d, struct hd_run *run,
                   const char *domain, char *why, size_t why_len)
{
    char text[400];
    int err = 0;
    struct hv_domain dom;
    struct shm_dev s;
    double t = elapsed(run);
    int rc = 0, held;

    if (!*d->cfg.proxy_domain || strcmp(domain, d->cfg.proxy_domain) == 0)
        return 0;
    shm_device(d, domain, &s);
    pthread_mutex_lock(&shm_lock);
    held = d->hv_ops->has_gpu(d->hv, domain, &s.dev);
    if (held == 1) {
        if (run)
            hd_run_say(run, "shm-release", -1, "the programs of %s give the "
                       "shared memory up", domain);
        if ((rc = d->hv_ops->domain(d->hv, domain, &dom)) == 0 &&
            *dom.channel)
            rc = guest_shm(d, dom.channel, true, 0, &err, text,
                           sizeof(text));
        else if (rc == 0)
            rc = -ENOENT;
        if (rc < 0) {
            snprintf(why, why_len, "the guest daemon did not answer the "
                     "shared memory's release: %s (it stays plugged)",
                     strerror(-rc));
            goto out;
        }
        if ((rc = err) < 0) {
            snprintf(why, why_len, "the guest could not give the shared "
                     "memory up: %.300s (it stays plugged)", text);
            goto out;
        }
        if ((rc = unplug(d, domain, &s)) < 0) {
            snprintf(why, why_len, "%s would not unplug from %s: %s",
                     s.dev.name, domain, strerror(-rc));
            goto out;
        }
    }
    /* The proxy domain's side goes too (also after a release that an
     * earlier crane-hostd left half done). */
    if ((rc = unplug(d, d->cfg.proxy_domain, &s)) < 0)
        snprintf(why, why_len, "%s would not unplug from %s: %s", s.dev.name,
                 d->cfg.proxy_domain, strerror(-rc));
    else if (held == 1)
        CRN_INFO("%s: shared memory given up and unplugged from %s and %s",
                domain, domain, d->cfg.proxy_domain);
out:
    if (held == 1 || rc < 0)
        step(run, "shm-release", t, rc, rc < 0 ? why : s.dev.name);
    if (rc < 0)
        CRN_WARN("%s: %s", domain, why);
    pthread_mutex_unlock(&shm_lock);
    return rc;
}
