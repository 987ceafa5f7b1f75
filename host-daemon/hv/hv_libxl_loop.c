/* The libxl backend on the daemon's libuv loop: its handles, SIGCHLD,
 * domain death events and the periodic domain list, the daemon's events. */
#ifdef HD_HAVE_LIBXL

#include "hv_libxl_int.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/log.h"

/*
 * How it fits together.  libxl's fds and timeouts are polled as one epoll
 * fd (hv_libxl_osevent.c) by a uv_poll here.  Synchronous libxl calls on
 * the daemon's worker threads also poll for themselves inside libxl; the
 * loop is what serves events outside any call (domain death watches) and
 * SIGCHLD, by which libxl learns that a helper it forked
 * (libxl-save-helper, during migrations) has exited: libuv owns the signal
 * (libxl_sigchld_owner_mainloop) and libxl reaps only its own children.  So
 * migrations need the loop running.
 *
 * Events for the daemon (libxl's domain events, which arrive on whichever
 * thread was in libxl, and the device events of attach/detach) are queued
 * under hv->lock and delivered from a uv_async on the loop thread.
 * Domains are found by reading the domain list (HV_LIBXL_RESCAN_MS) and
 * followed with libxl's death events.
 */

struct hv_libxl_note {           /* something for the loop thread */
    struct hv_libxl_note *next;
    libxl_event *xev;            /* libxl's event, or NULL: */
    struct hv_event ev;          /* one ready for the daemon */
};

struct hv_libxl_dom {            /* a domain the loop knows */
    struct hv_libxl_dom *next;
    uint32_t domid;
    bool announced;              /* HV_EV_DOMAIN_STARTED was sent */
    bool seen;                   /* in the latest domain list */
    libxl_evgen_domain_death *death;
    char name[HV_NAME_MAX + 1];
};

/* --- events for the daemon ----------------------------------------------- */

static void push_note(struct hv *hv, struct hv_libxl_note *note)
{
    note->next = NULL;
    pthread_mutex_lock(&hv->lock);
    *hv->notes_tail = note;
    hv->notes_tail = &note->next;
    pthread_mutex_unlock(&hv->lock);
    uv_async_send(&hv->wake);
}

void hv_libxl__post(struct hv *hv, enum hv_event_kind kind,
                    const char *domain, const char *alias)
{
    struct hv_libxl_note *note = calloc(1, sizeof(*note));

    if (!note) {
        CRN_ERROR("libxl: out of memory: event %d of %s lost", (int)kind,
                 domain);
        return;
    }
    note->ev.kind = kind;
    snprintf(note->ev.domain, sizeof(note->ev.domain), "%s", domain);
    snprintf(note->ev.alias, sizeof(note->ev.alias), "%s",
             alias ? alias : "");
    push_note(hv, note);
}

void hv_libxl__rescan_soon(struct hv *hv)
{
    pthread_mutex_lock(&hv->lock);
    hv->rescan_wanted = true;
    pthread_mutex_unlock(&hv->lock);
    uv_async_send(&hv->wake);
}

/* libxl's event hook: any thread, libxl's lock not held. */
static void on_libxl_event(void *user, libxl_event *xev)
{
    struct hv *hv = user;
    struct hv_libxl_note *note = calloc(1, sizeof(*note));

    if (!note) {
        CRN_ERROR("libxl: out of memory: event of domain %u lost",
                 (unsigned)xev->domid);
        libxl_event_free(hv->ctx, xev);
        return;
    }
    note->xev = xev;
    push_note(hv, note);
}

/* libxl's event machinery is beyond repair; libxl may not be called here. */
static void on_libxl_disaster(void *user, libxl_event_type type,
                              const char *msg, int errnoval)
{
    struct hv *hv = user;

    atomic_store(&hv->broken, true);
    CRN_ERROR("libxl: event machinery failed (event type %d): %s: %s; "
             "restart crane-hostd",
             (int)type, msg, errnoval > 0 ? strerror(errnoval) : "-");
}

static void emit(struct hv *hv, enum hv_event_kind kind, const char *domain)
{
    struct hv_event ev = {.kind = kind};

    snprintf(ev.domain, sizeof(ev.domain), "%s", domain);
    hv->fn(hv->fn_arg, &ev);
}

/* --- the domains: death events, and a periodic look for new ones --------- */

static struct hv_libxl_dom *find_dom(struct hv *hv, uint32_t domid)
{
    struct hv_libxl_dom *d = hv->doms;

    while (d && d->domid != domid)
        d = d->next;
    return d;
}

static void forget_dom(struct hv *hv, struct hv_libxl_dom *d)
{
    struct hv_libxl_dom **p = &hv->doms;

    while (*p != d)
        p = &(*p)->next;
    *p = d->next;
    if (d->death && hv->ctx)
        libxl_evdisable_domain_death(hv->ctx, d->death);
    free(d);
}

static struct hv_libxl_dom *adopt_dom(struct hv *hv, uint32_t domid)
{
    /* NULL while the domain is being built and has no name yet. */
    char *name = libxl_domid_to_name(hv->ctx, domid);
    struct hv_libxl_dom *d;
    int rc;

    if (!name)
        return NULL;
    if (strlen(name) > HV_NAME_MAX || !(d = calloc(1, sizeof(*d)))) {
        CRN_WARN("libxl: domain %u not followed (name too long or no memory)",
                (unsigned)domid);
        free(name);
        return NULL;
    }
    d->domid = domid;
    memcpy(d->name, name, strlen(name) + 1);
    free(name);
    rc = libxl_evenable_domain_death(hv->ctx, domid, domid, &d->death);
    if (rc) {
        /* Its end will still be seen by the next look at the list. */
        CRN_WARN("libxl: no death events for domain %s: %s", d->name,
                hv_libxl__strerror(rc));
        d->death = NULL;
    }
    d->next = hv->doms;
    hv->doms = d;
    return d;
}

/* Reads the domain list: domains new here or newly running are STARTED,
 * domains gone are STOPPED.  INITIAL: the list at open, reported as is. */
static void rescan(struct hv *hv, bool initial)
{
    int n = 0;
    libxl_dominfo *list;
    struct hv_libxl_dom *d, *next;

    if (atomic_load(&hv->broken))
        return;
    list = libxl_list_domain(hv->ctx, &n);
    if (!list) {
        CRN_WARN("libxl: cannot list domains");
        return;
    }
    for (d = hv->doms; d; d = d->next)
        d->seen = false;
    for (int i = 0; i < n; i++) {
        const libxl_dominfo *info = &list[i];
        bool runs = !info->paused && !info->shutdown && !info->dying;

        if (info->domid == 0) /* dom0: the host itself */
            continue;
        d = find_dom(hv, info->domid);
        if (!d && !(d = adopt_dom(hv, info->domid)))
            continue;
        d->seen = true;
        if (runs && !d->announced) {
            d->announced = true;
            if (!initial)
                emit(hv, HV_EV_DOMAIN_STARTED, d->name);
        }
    }
    libxl_dominfo_list_free(list, n);
    for (d = hv->doms; d; d = next) {
        next = d->next;
        if (d->seen)
            continue;
        if (d->announced)
            emit(hv, HV_EV_DOMAIN_STOPPED, d->name);
        forget_dom(hv, d);
    }
}

static void on_domain_event(struct hv *hv, const libxl_event *xev)
{
    struct hv_libxl_dom *d = find_dom(hv, xev->domid);

    switch (xev->type) {
    case LIBXL_EVENT_TYPE_DOMAIN_DEATH:
        if (!d) /* already seen gone by a rescan */
            return;
        if (d->announced)
            emit(hv, HV_EV_DOMAIN_STOPPED, d->name);
        forget_dom(hv, d);
        return;
    case LIBXL_EVENT_TYPE_DOMAIN_SHUTDOWN:
        /* Not an end yet: a guest suspending for migration shuts down
         * too.  The domain is gone when its death event comes. */
        CRN_DEBUG("libxl: domain %s shut down (reason %u)", d ? d->name : "?",
                 (unsigned)xev->u.domain_shutdown.shutdown_reason);
        return;
    default:
        return;
    }
}

static void on_wake(uv_async_t *async)
{
    struct hv *hv = async->data;
    struct hv_libxl_note *notes, *next;
    bool rescan_now;

    if (hv->closing)
        return;
    pthread_mutex_lock(&hv->lock);
    notes = hv->notes;
    hv->notes = NULL;
    hv->notes_tail = &hv->notes;
    rescan_now = hv->rescan_wanted;
    hv->rescan_wanted = false;
    pthread_mutex_unlock(&hv->lock);

    for (; notes; notes = next) {
        next = notes->next;
        if (notes->xev) {
            if (!hv->closing)
                on_domain_event(hv, notes->xev);
            libxl_event_free(hv->ctx, notes->xev);
        } else if (!hv->closing) {
            hv->fn(hv->fn_arg, &notes->ev);
        }
        free(notes);
    }
    if (rescan_now && !hv->closing)
        rescan(hv, false);
}

static void on_rescan_timer(uv_timer_t *timer)
{
    struct hv *hv = timer->data;

    if (!hv->closing)
        rescan(hv, false);
}

static void on_sigchld(uv_signal_t *sig, int signum)
{
    struct hv *hv = sig->data;

    (void)signum;
    if (hv->ctx && !hv->closing)
        libxl_childproc_sigchld_occurred(hv->ctx);
}

/* --- start and stop ------------------------------------------------------ */

static void free_hv(struct hv *hv)
{
    pthread_mutex_destroy(&hv->lock);
    pthread_mutex_destroy(&hv->job_lock);
    free(hv);
}

static void on_handle_closed(uv_handle_t *handle)
{
    struct hv *hv = handle->data;

    if (--hv->handles_open == 0 && hv->closing)
        free_hv(hv);
}

/* Counts HANDLE as open once its init succeeded (RC 0). */
static int track(struct hv *hv, uv_handle_t *handle, int rc)
{
    if (rc < 0)
        return rc;
    handle->data = hv;
    hv->core[hv->ncore++] = handle;
    hv->handles_open++;
    /* The daemon's own handles keep its loop alive; these never do. */
    uv_unref(handle);
    return 0;
}

int hv_libxl__loop_start(struct hv *hv)
{
    /* libxl keeps pointers to these for the context's lifetime. */
    static const libxl_event_hooks event_hooks = {
        /* Every type, so that no event is left queued inside libxl. */
        .event_occurs_mask = LIBXL_EVENTMASK_ALL,
        .event_occurs = on_libxl_event,
        .disaster = on_libxl_disaster,
    };
    static const libxl_childproc_hooks child_hooks = {
        .chldowner = libxl_sigchld_owner_mainloop,
    };
    int rc;

    hv->notes_tail = &hv->notes;
    rc = hv_libxl__osevent_init(hv);
    if (!rc)
        rc = track(hv, (uv_handle_t *)&hv->wake,
               uv_async_init(hv->loop, &hv->wake, on_wake));
    if (!rc)
        rc = track(hv, (uv_handle_t *)&hv->rescan,
                   uv_timer_init(hv->loop, &hv->rescan));
    if (!rc)
        rc = track(hv, (uv_handle_t *)&hv->sigchld,
                   uv_signal_init(hv->loop, &hv->sigchld));
    if (!rc)
        rc = track(hv, (uv_handle_t *)&hv->epoll,
                   uv_poll_init(hv->loop, &hv->epoll, hv->epfd));
    if (!rc)
        rc = uv_signal_start(&hv->sigchld, on_sigchld, SIGCHLD);
    if (!rc)
        rc = uv_poll_start(&hv->epoll, UV_READABLE, hv_libxl__epoll_ready);
    if (rc < 0) {
        CRN_ERROR("libxl: cannot set up the event loop: %s", uv_strerror(rc));
        return rc;
    }

    /* Before anything registers an fd (libxl asserts it). */
    libxl_osevent_register_hooks(hv->ctx, &hv_libxl__osevent_hooks, hv);
    libxl_event_register_callbacks(hv->ctx, &event_hooks, hv);
    libxl_childproc_setmode(hv->ctx, &child_hooks, hv);

    rescan(hv, true);
    uv_timer_start(&hv->rescan, on_rescan_timer, HV_LIBXL_RESCAN_MS,
                   HV_LIBXL_RESCAN_MS);
    return 0;
}

void hv_libxl__loop_stop(struct hv *hv)
{
    struct hv_libxl_note *note;

    hv->closing = true;
    while (hv->doms)
        forget_dom(hv, hv->doms);
    /* May still call the fd hooks: the epoll set is still there. */
    libxl_ctx_free(hv->ctx);
    hv->ctx = NULL;
    xtl_logger_destroy((xentoollog_logger *)hv->logger);
    hv->logger = NULL;

    pthread_mutex_lock(&hv->lock);
    while ((note = hv->notes)) {
        hv->notes = note->next;
        if (note->xev)
            libxl_event_free(NULL, note->xev);
        free(note);
    }
    hv->notes_tail = &hv->notes;
    pthread_mutex_unlock(&hv->lock);

    /* uv_close stops the poll at once, so the epoll fd may go now. */
    for (unsigned i = 0; i < hv->ncore; i++)
        uv_close(hv->core[i], on_handle_closed);
    hv_libxl__osevent_free(hv);
    if (hv->handles_open == 0)
        free_hv(hv);
}

#endif /* HD_HAVE_LIBXL */
