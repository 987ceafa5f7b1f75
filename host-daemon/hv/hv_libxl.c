/* crane-hostd's libxl backend: Xen domains and PCI passthrough driven by
 * libxl directly (backend = libxl, uri = xen:///; see docs/xen.md). */
#include "hv_libxl_int.h"

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hv_libxl.h"
#include "proto/log.h"

/* --- open and close ------------------------------------------------------ */

/* libxl writes the migration stream with plain write(2): a destination
 * that goes away must fail the migration, not end the daemon (xl does the
 * same).  A daemon that set its own SIGPIPE disposition keeps it. */
static void ignore_sigpipe(void)
{
    struct sigaction sa;

    if (sigaction(SIGPIPE, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL) {
        signal(SIGPIPE, SIG_IGN);
        CRN_DEBUG("libxl: SIGPIPE is now ignored");
    }
}

static int xl_open(const char *uri, const char *channel_name, uv_loop_t *loop,
                   hv_event_fn *fn, void *arg, struct hv **out)
{
    bool debug = crn_log_enabled(CRN_LOG_DEBUG);
    struct hv *hv;
    int rc;

    if (!uri || !loop || !fn || !out)
        return -EINVAL;
    *out = NULL;
    if (strcmp(uri, "xen:///") != 0 && strcmp(uri, "libxl://") != 0) {
        CRN_ERROR("libxl: unsupported URI '%s' (use xen:/// or libxl://)",
                 uri);
        return -EINVAL;
    }
    if (channel_name && strlen(channel_name) > HV_NAME_MAX) {
        CRN_ERROR("libxl: channel name too long");
        return -EINVAL;
    }
    hv = calloc(1, sizeof(*hv));
    if (!hv)
        return -ENOMEM;
    hv->magic = HV_LIBXL_MAGIC;
    hv->loop = loop;
    hv->fn = fn;
    hv->fn_arg = arg;
    hv->epfd = -1;
    snprintf(hv->channel_name, sizeof(hv->channel_name), "%s",
             channel_name ? channel_name : "");
    pthread_mutex_init(&hv->lock, NULL);
    pthread_mutex_init(&hv->job_lock, NULL);

    /* Quiet while the context is made: without Xen, libxc's own complaints
     * would only repeat the one line below. */
    hv->logger = xtl_createlogger_stdiostream(
        stderr, debug ? XTL_DEBUG : XTL_CRITICAL,
        XTL_STDIOSTREAM_HIDE_PROGRESS);
    if (!hv->logger) {
        rc = -ENOMEM;
        goto fail;
    }
    if (libxl_ctx_alloc(&hv->ctx, LIBXL_VERSION, 0,
                        (xentoollog_logger *)hv->logger) != 0) {
        CRN_ERROR("libxl: cannot open a context (is this a Xen dom0?)");
        hv->ctx = NULL;
        rc = -ENODEV;
        goto fail;
    }
    /* From here on libxl's errors say why an operation failed. */
    xtl_stdiostream_set_minlevel(hv->logger, debug ? XTL_DEBUG : XTL_ERROR);
    ignore_sigpipe();

    rc = hv_libxl__loop_start(hv);
    if (rc < 0) {
        hv_libxl__loop_stop(hv); /* frees HV once its handles have closed */
        return rc;
    }
    CRN_INFO("libxl: connected (%s)", uri);
    *out = hv;
    return 0;

fail:
    xtl_logger_destroy((xentoollog_logger *)hv->logger);
    pthread_mutex_destroy(&hv->lock);
    pthread_mutex_destroy(&hv->job_lock);
    free(hv);
    return rc;
}

/* No other entry of HV may be running (hv.h: close runs on the loop). */
static void xl_close(struct hv *hv)
{
    if (!hv)
        return;
    hv_libxl__jobs_free(hv);
    hv_libxl__loop_stop(hv);
}

/* --- domains ------------------------------------------------------------- */

/* The socket path of DOMID's PV channel named hv->channel_name, or "". */
static void find_channel(struct hv *hv, uint32_t domid, const char *domain,
                         char *path, size_t size)
{
    int n = 0;
    libxl_device_channel *chans;

    path[0] = '\0';
    if (!hv->channel_name[0])
        return;
    chans = libxl_device_channel_list(hv->ctx, domid, &n);
    for (int i = 0; i < n; i++) {
        const libxl_device_channel *c = &chans[i];

        if (!path[0] && c->name && strcmp(c->name, hv->channel_name) == 0) {
            if (c->connection != LIBXL_CHANNEL_CONNECTION_SOCKET ||
                !c->u.socket.path)
                CRN_WARN("libxl: channel %s of %s is not connection=socket",
                        c->name, domain);
            else if (strlen(c->u.socket.path) >= size)
                CRN_WARN("libxl: channel %s of %s: socket path too long",
                        c->name, domain);
            else
                memcpy(path, c->u.socket.path,
                       strlen(c->u.socket.path) + 1);
        }
        libxl_device_channel_dispose(&chans[i]);
    }
    free(chans);
}

static int xl_domain(struct hv *hv, const char *name, struct hv_domain *out)
{
    libxl_dominfo info;
    uint32_t domid;
    int rc, xrc;

    if (!hv || !name || !out)
        return -EINVAL;
    rc = hv_libxl__check(hv, "domain");
    if (!rc)
        rc = hv_libxl__domid(hv, name, &domid);
    if (rc)
        return rc;
    memset(out, 0, sizeof(*out));
    libxl_dominfo_init(&info);
    xrc = libxl_domain_info(hv->ctx, &info, domid);
    if (xrc) {
        libxl_dominfo_dispose(&info);
        if (xrc == ERROR_DOMAIN_NOTFOUND) /* gone since the lookup */
            return -ENOENT;
        CRN_ERROR("libxl: domain %s: %s", name, hv_libxl__strerror(xrc));
        return hv_libxl__errno(xrc);
    }
    snprintf(out->name, sizeof(out->name), "%s", name);
    snprintf(out->uuid, sizeof(out->uuid), LIBXL_UUID_FMT,
             LIBXL_UUID_BYTES(info.uuid));
    /* Running as libvirt's "active": paused counts, shut down does not. */
    out->running = !info.shutdown && !info.dying;
    libxl_dominfo_dispose(&info);
    find_channel(hv, domid, name, out->channel, sizeof(out->channel));
    return 0;
}

/* --- PCI devices --------------------------------------------------------- */

struct pci_addr {
    unsigned domain, bus, dev, func;
};

static unsigned hex_value(char c)
{
    return isdigit((unsigned char)c) ? (unsigned)(c - '0')
                                     : (unsigned)(tolower((unsigned char)c) -
                                                  'a' + 10);
}

/* "0000:65:00.0": domain:bus:device.function, in hex, exactly. */
static int parse_pci(const char *s, struct pci_addr *a)
{
    static const char shape[] = "hhhh:hh:hh.h";
    unsigned v[4] = {0};
    int field = 0;

    if (strlen(s) != sizeof(shape) - 1)
        return -EINVAL;
    for (size_t i = 0; shape[i]; i++) {
        if (shape[i] != 'h') {
            if (s[i] != shape[i])
                return -EINVAL;
            field++;
        } else if (!isxdigit((unsigned char)s[i])) {
            return -EINVAL;
        } else {
            v[field] = v[field] * 16 + hex_value(s[i]);
        }
    }
    if (v[2] > 0x1f || v[3] > 7)
        return -EINVAL;
    *a = (struct pci_addr){v[0], v[1], v[2], v[3]};
    return 0;
}

static int gpu_addr(const struct hv_gpu *gpu, struct pci_addr *a)
{
    if (!gpu->pci[0]) {
        CRN_ERROR("libxl: GPU %s has no PCI address (libxl passes through "
                 "PCI devices only)",
                 gpu->name);
        return -EINVAL;
    }
    if (parse_pci(gpu->pci, a) < 0) {
        CRN_ERROR("libxl: GPU %s: bad PCI address '%s' (want "
                 "0000:65:00.0)",
                 gpu->name, gpu->pci);
        return -EINVAL;
    }
    return 0;
}

static bool same_pci(const libxl_device_pci *p, const struct pci_addr *a)
{
    return (unsigned)p->domain == a->domain && p->bus == a->bus &&
           p->dev == a->dev && p->func == a->func;
}

/* A libxl_device_pci for A; libxl_device_pci_dispose it after use. */
static void make_pci(libxl_device_pci *pci, const struct pci_addr *a)
{
    libxl_device_pci_init(pci);
    pci->domain = (int)a->domain;
    pci->bus = (uint8_t)a->bus;
    pci->dev = (uint8_t)a->dev;
    pci->func = (uint8_t)a->func;
}

/* 1 when DOMID holds the device at A, else 0. */
static int holds(struct hv *hv, uint32_t domid, const struct pci_addr *a)
{
    int n = 0, found = 0;
    libxl_device_pci *list = libxl_device_pci_list(hv->ctx, domid, &n);

    for (int i = 0; i < n; i++)
        found |= same_pci(&list[i], a);
    libxl_device_pci_list_free(list, n);
    return found;
}

static int xl_holders(struct hv *hv, const struct hv_gpu *gpus, size_t n,
                      char (*holder)[HV_NAME_MAX + 1])
{
    struct pci_addr *addrs;
    bool *valid;
    libxl_dominfo *doms;
    int ndoms = 0, rc;

    if (!hv || (n && (!gpus || !holder)))
        return -EINVAL;
    rc = hv_libxl__check(hv, "holders");
    if (rc)
        return rc;
    for (size_t i = 0; i < n; i++)
        holder[i][0] = '\0';
    if (!n)
        return 0;
    addrs = calloc(n, sizeof(*addrs));
    valid = calloc(n, sizeof(*valid));
    if (!addrs || !valid) {
        rc = -ENOMEM;
        goto out;
    }
    /* Stand-ins (no PCI address) cannot be held through libxl: free. */
    for (size_t i = 0; i < n; i++)
        valid[i] = gpus[i].pci[0] && parse_pci(gpus[i].pci, &addrs[i]) == 0;
    doms = libxl_list_domain(hv->ctx, &ndoms);
    if (!doms) {
        CRN_ERROR("libxl: cannot list domains");
        rc = -EIO;
        goto out;
    }
    for (int d = 0; d < ndoms; d++) {
        int npci = 0;
        libxl_device_pci *pcis;
        char *name = NULL;

        /* dom0 owns what is not passed through; a dying domain is
         * releasing its devices. */
        if (doms[d].domid == 0 || doms[d].dying)
            continue;
        pcis = libxl_device_pci_list(hv->ctx, doms[d].domid, &npci);
        for (int p = 0; p < npci; p++) {
            for (size_t i = 0; i < n; i++) {
                if (!valid[i] || holder[i][0] || !same_pci(&pcis[p], &addrs[i]))
                    continue;
                if (!name)
                    name = libxl_domid_to_name(hv->ctx, doms[d].domid);
                if (name && strlen(name) <= HV_NAME_MAX)
                    memcpy(holder[i], name, strlen(name) + 1);
            }
        }
        libxl_device_pci_list_free(pcis, npci);
        free(name);
    }
    libxl_dominfo_list_free(doms, ndoms);
    rc = 0;
out:
    free(addrs);
    free(valid);
    return rc;
}

/* Common start of detach, attach and has_gpu. */
static int gpu_call(struct hv *hv, const char *domain,
                    const struct hv_gpu *gpu, const char *what,
                    uint32_t *domid, struct pci_addr *a)
{
    int rc;

    if (!hv || !domain || !gpu)
        return -EINVAL;
    rc = hv_libxl__check(hv, what);
    if (!rc)
        rc = gpu_addr(gpu, a);
    if (!rc)
        rc = hv_libxl__domid(hv, domain, domid);
    return rc;
}

static int xl_detach(struct hv *hv, const char *domain,
                     const struct hv_gpu *gpu)
{
    libxl_device_pci pci;
    struct pci_addr a;
    uint32_t domid;
    int rc, xrc;

    rc = gpu_call(hv, domain, gpu, "detach", &domid, &a);
    if (rc)
        return rc;
    if (!holds(hv, domid, &a))
        return -ENOENT;
    make_pci(&pci, &a);
    /* _remove, not _destroy: the guest is asked to let the device go, and
     * libxl gives up if it does not.  Synchronous (ao_how NULL). */
    xrc = libxl_device_pci_remove(hv->ctx, domid, &pci, NULL);
    libxl_device_pci_dispose(&pci);
    if (xrc) {
        CRN_ERROR("libxl: cannot detach GPU %s (%s) from %s: %s", gpu->name,
                 gpu->pci, domain, hv_libxl__strerror(xrc));
        return hv_libxl__errno(xrc);
    }
    /* The removal is complete now; the event comes from the loop all the
     * same, so that the daemon waits for it as it does with libvirt. */
    hv_libxl__post(hv, HV_EV_DEVICE_REMOVED, domain, gpu->alias);
    return 0;
}

/* Binds the device at A to pciback unless it is there already. */
static int make_assignable(struct hv *hv, const struct pci_addr *a,
                           const struct hv_gpu *gpu)
{
    libxl_device_pci pci;
    int n = 0, found = 0, xrc;
    libxl_device_pci *list = libxl_device_pci_assignable_list(hv->ctx, &n);

    for (int i = 0; i < n; i++)
        found |= same_pci(&list[i], a);
    libxl_device_pci_assignable_list_free(list, n);
    if (found)
        return 0;
    make_pci(&pci, a);
    /* rebind: remember the host driver, for xl pci-assignable-remove -r. */
    xrc = libxl_device_pci_assignable_add(hv->ctx, &pci, 1);
    libxl_device_pci_dispose(&pci);
    if (xrc) {
        CRN_ERROR("libxl: cannot make GPU %s (%s) assignable: %s", gpu->name,
                 gpu->pci, hv_libxl__strerror(xrc));
        return hv_libxl__errno(xrc);
    }
    CRN_INFO("libxl: GPU %s (%s) bound to pciback", gpu->name, gpu->pci);
    return 0;
}

static int xl_attach(struct hv *hv, const char *domain,
                     const struct hv_gpu *gpu)
{
    libxl_device_pci pci;
    struct pci_addr a;
    uint32_t domid;
    int rc, xrc;

    rc = gpu_call(hv, domain, gpu, "attach", &domid, &a);
    if (!rc)
        rc = make_assignable(hv, &a, gpu);
    if (rc)
        return rc;
    make_pci(&pci, &a);
    xrc = libxl_device_pci_add(hv->ctx, domid, &pci, NULL);
    libxl_device_pci_dispose(&pci);
    if (xrc) {
        CRN_ERROR("libxl: cannot attach GPU %s (%s) to %s: %s", gpu->name,
                 gpu->pci, domain, hv_libxl__strerror(xrc));
        return hv_libxl__errno(xrc);
    }
    hv_libxl__post(hv, HV_EV_DEVICE_ADDED, domain, gpu->alias);
    return 0;
}

static int xl_has_gpu(struct hv *hv, const char *domain,
                      const struct hv_gpu *gpu)
{
    struct pci_addr a;
    uint32_t domid;
    int rc = gpu_call(hv, domain, gpu, "has_gpu", &domid, &a);

    return rc ? rc : holds(hv, domid, &a);
}

/* Pauses DOMAIN (PAUSE) or lets it run again. */
static int set_paused(struct hv *hv, const char *domain, bool pause)
{
    uint32_t domid;
    int rc, xrc;

    if (!hv || !domain)
        return -EINVAL;
    rc = hv_libxl__check(hv, pause ? "suspend" : "unpause");
    if (!rc)
        rc = hv_libxl__domid(hv, domain, &domid);
    if (rc)
        return rc;
    xrc = pause ? libxl_domain_pause(hv->ctx, domid, NULL)
                : libxl_domain_unpause(hv->ctx, domid, NULL);
    if (xrc) {
        CRN_ERROR("libxl: cannot %s %s: %s", pause ? "pause" : "unpause",
                 domain, hv_libxl__strerror(xrc));
        return hv_libxl__errno(xrc);
    }
    return 0;
}

/* Pausing the guest stops it dirtying memory, so libxl's live migration
 * finishes with its next round (virsh migrate --timeout does the same). */
static int xl_suspend(struct hv *hv, const char *domain)
{
    return set_paused(hv, domain, true);
}

static int xl_unpause(struct hv *hv, const char *domain)
{
    return set_paused(hv, domain, false);
}

const struct hv_ops hv_libxl_ops = {
    .name = "libxl",
    .open = xl_open,
    .close = xl_close,
    .domain = xl_domain,
    .holders = xl_holders,
    .detach = xl_detach,
    .attach = xl_attach,
    .has_gpu = xl_has_gpu,
    .migrate = hv_libxl__migrate,
    .job = hv_libxl__job,
    .suspend = xl_suspend,
    .unpause = xl_unpause,
};
