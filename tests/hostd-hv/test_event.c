/* Tests of host-daemon/hv/hv_event.c: libvirt's event hooks on a uv loop. */
#include "harness.h"

#include "host-daemon/hv/hv_event.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libvirt/libvirt.h>

/*
 * What libvirt's callbacks saw, shared with other threads: every field
 * under LOCK, and COND signalled on each change.  The tests call the hooks
 * through libvirt's public virEventAdd/Update/Remove*, as libvirt itself
 * does.
 */
struct probe {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int calls;
    int id, fd, events;         /* of the last call */
    int all_events;             /* every call's events or'ed */
    int freed;                  /* free callbacks */
    int off_loop;               /* calls or frees off the loop thread */
    uint64_t times_ns[64];      /* of the first calls */
    uint64_t last_ns;           /* of the last call */
    bool drain;                 /* handle callback reads what is there */
    bool remove_on_call;        /* the callback removes its own watch */
    bool disable_on_call;       /* the handle callback sets events 0 */
};

static void probe_init(struct probe *p)
{
    memset(p, 0, sizeof(*p));
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->cond, NULL);
}

static void probe_destroy(struct probe *p)
{
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->cond);
}

static int probe_get(struct probe *p, const int *field)
{
    int v;

    pthread_mutex_lock(&p->lock);
    v = *field;
    pthread_mutex_unlock(&p->lock);
    return v;
}

/* Another thread: waits until *FIELD >= WANT; false after TIMEOUT_MS. */
static bool probe_wait(struct probe *p, const int *field, int want,
                       unsigned timeout_ms)
{
    struct timespec deadline;
    bool reached;

    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += hvt_ms(timeout_ms) / 1000;
    deadline.tv_nsec += (long)(hvt_ms(timeout_ms) % 1000) * 1000000;
    if (deadline.tv_nsec >= 1000000000) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&p->lock);
    while (*field < want &&
           pthread_cond_timedwait(&p->cond, &p->lock, &deadline) == 0)
        ;
    reached = *field >= want;
    pthread_mutex_unlock(&p->lock);
    return reached;
}

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void on_handle(int id, int fd, int events, void *opaque)
{
    struct probe *p = opaque;
    bool remove, disable;
    char buf[64];

    pthread_mutex_lock(&p->lock);
    if (!hv_event_on_loop_thread())
        p->off_loop++;
    p->calls++;
    p->id = id;
    p->fd = fd;
    p->events = events;
    p->all_events |= events;
    remove = p->remove_on_call;
    disable = p->disable_on_call;
    if (p->drain && (events & VIR_EVENT_HANDLE_READABLE))
        while (read(fd, buf, sizeof(buf)) > 0)
            ;
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->lock);
    if (disable)
        virEventUpdateHandle(id, 0);
    if (remove)
        virEventRemoveHandle(id);
}

static void on_timeout(int id, void *opaque)
{
    struct probe *p = opaque;
    bool remove;

    pthread_mutex_lock(&p->lock);
    if (!hv_event_on_loop_thread())
        p->off_loop++;
    p->last_ns = now_ns();
    if (p->calls < 64)
        p->times_ns[p->calls] = p->last_ns;
    p->calls++;
    p->id = id;
    remove = p->remove_on_call;
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->lock);
    if (remove)
        virEventRemoveTimeout(id);
}

static void on_free(void *opaque)
{
    struct probe *p = opaque;

    pthread_mutex_lock(&p->lock);
    if (!hv_event_on_loop_thread())
        p->off_loop++;
    p->freed++;
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->lock);
}

/* hvt_run_until conditions on a probe. */
struct wait_for {
    struct probe *p;
    const int *field;
    int want;
};

static bool reached(void *arg)
{
    struct wait_for *w = arg;

    return probe_get(w->p, w->field) >= w->want;
}

static void run_until_count(struct hvt_loop *l, struct probe *p,
                            const int *field, int want, const char *what)
{
    struct wait_for w = {p, field, want};

    hvt_run_until(l, reached, &w, 5000, what);
}

static void setup(struct hvt_loop *l)
{
    hvt_loop_init(l);
    CHECK_INT(hv_event_register(&l->loop), ==, 0);
    CHECK(hv_event_on_loop_thread());
}

static void make_pipe(int fds[2])
{
    CHECK_INT(pipe2(fds, O_CLOEXEC | O_NONBLOCK), ==, 0);
}

static void put_byte(int fd)
{
    CHECK_INT(write(fd, "x", 1), ==, 1);
}

/* --- handles ------------------------------------------------------------------ */

void test_event_handle_readable(void)
{
    struct hvt_loop l;
    struct probe p;
    int fds[2];
    int id;

    setup(&l);
    probe_init(&p);
    p.drain = true;
    make_pipe(fds);
    id = virEventAddHandle(fds[0], VIR_EVENT_HANDLE_READABLE, on_handle, &p,
                           on_free);
    CHECK_INT(id, >, 0);
    put_byte(fds[1]);
    run_until_count(&l, &p, &p.calls, 1, "the readable callback");
    CHECK_INT(p.id, ==, id);
    CHECK_INT(p.fd, ==, fds[0]); /* libvirt's fd, not ours */
    CHECK_INT(p.events, ==, VIR_EVENT_HANDLE_READABLE);

    /* Another byte, another call: the watch stays on. */
    put_byte(fds[1]);
    run_until_count(&l, &p, &p.calls, 2, "the second callback");

    CHECK_INT(virEventRemoveHandle(id), ==, 0);
    CHECK_INT(p.freed, ==, 0); /* never from inside the remove hook */
    CHECK_INT(virEventRemoveHandle(id), ==, -1);
    CHECK_INT(virEventRemoveTimeout(id), ==, -1); /* not a timeout */
    /* The fd closes right after, as libvirt does. */
    close(fds[0]);
    close(fds[1]);
    run_until_count(&l, &p, &p.freed, 1, "the free callback");
    CHECK_INT(p.calls, ==, 2);
    CHECK_INT(p.off_loop, ==, 0);
    hvt_loop_fini(&l);
    CHECK_INT(p.freed, ==, 1);
    probe_destroy(&p);
}

void test_event_handle_hangup_error(void)
{
    struct probe reader, writer;
    struct hvt_loop l;
    int a[2], b[2];
    int rid, wid;

    setup(&l);
    probe_init(&reader);
    probe_init(&writer);

    /* The writer goes away: a hang-up, and the callback removes its own
     * watch, as libvirt does on a closed connection. */
    make_pipe(a);
    reader.remove_on_call = true;
    rid = virEventAddHandle(a[0], VIR_EVENT_HANDLE_READABLE, on_handle,
                            &reader, on_free);
    CHECK_INT(rid, >, 0);
    close(a[1]);
    run_until_count(&l, &reader, &reader.freed, 1, "hang-up, then free");
    CHECK_INT(reader.calls, ==, 1);
    CHECK(reader.events & VIR_EVENT_HANDLE_HANGUP);
    close(a[0]);

    /* The reader goes away under a watched write end: an error. */
    make_pipe(b);
    writer.disable_on_call = true;
    wid = virEventAddHandle(b[1], VIR_EVENT_HANDLE_WRITABLE, on_handle,
                            &writer, on_free);
    CHECK_INT(wid, >, 0);
    run_until_count(&l, &writer, &writer.calls, 1, "writable");
    CHECK_INT(writer.events, ==, VIR_EVENT_HANDLE_WRITABLE);
    pthread_mutex_lock(&writer.lock);
    writer.disable_on_call = false;
    pthread_mutex_unlock(&writer.lock);
    close(b[0]);
    virEventUpdateHandle(wid, VIR_EVENT_HANDLE_WRITABLE);
    run_until_count(&l, &writer, &writer.calls, 2, "the error");
    CHECK(writer.events & VIR_EVENT_HANDLE_ERROR);
    CHECK_INT(virEventRemoveHandle(wid), ==, 0);
    close(b[1]);
    run_until_count(&l, &writer, &writer.freed, 1, "the free callback");
    CHECK_INT(reader.off_loop + writer.off_loop, ==, 0);
    hvt_loop_fini(&l);
    probe_destroy(&reader);
    probe_destroy(&writer);
}

void test_event_handle_disable(void)
{
    struct probe data, ticks;
    struct hvt_loop l;
    int fds[2];
    int id, tick;

    setup(&l);
    probe_init(&data);
    probe_init(&ticks);
    data.drain = true;
    make_pipe(fds);
    /* Added with no events: nothing is reported while data waits. */
    id = virEventAddHandle(fds[0], 0, on_handle, &data, on_free);
    CHECK_INT(id, >, 0);
    put_byte(fds[1]);
    tick = virEventAddTimeout(10, on_timeout, &ticks, on_free);
    CHECK_INT(tick, >, 0);
    run_until_count(&l, &ticks, &ticks.calls, 5, "five 10 ms ticks");
    CHECK_INT(data.calls, ==, 0);

    virEventUpdateHandle(id, VIR_EVENT_HANDLE_READABLE);
    run_until_count(&l, &data, &data.calls, 1, "readable once enabled");

    /* Disabled again: a new byte waits. */
    virEventUpdateHandle(id, 0);
    put_byte(fds[1]);
    run_until_count(&l, &ticks, &ticks.calls, 10, "five more ticks");
    CHECK_INT(data.calls, ==, 1);
    /* Only writable wanted: a readable pipe end stays quiet too. */
    virEventUpdateHandle(id, VIR_EVENT_HANDLE_WRITABLE);
    run_until_count(&l, &ticks, &ticks.calls, 15, "five more ticks");
    CHECK_INT(data.calls, ==, 1);

    CHECK_INT(virEventRemoveHandle(id), ==, 0);
    CHECK_INT(virEventRemoveTimeout(tick), ==, 0);
    close(fds[0]);
    close(fds[1]);
    run_until_count(&l, &data, &data.freed, 1, "the handle's free");
    run_until_count(&l, &ticks, &ticks.freed, 1, "the timeout's free");
    hvt_loop_fini(&l);
    probe_destroy(&data);
    probe_destroy(&ticks);
}

void test_event_ids(void)
{
    enum { N = 50 };
    struct hvt_loop l;
    struct probe p;
    int ids[2 * N];
    int fds[2];

    setup(&l);
    probe_init(&p);
    make_pipe(fds);
    /* Many watches on one fd (libvirt does that) and timeouts: ids are
     * positive and distinct across both kinds. */
    for (int i = 0; i < N; i++) {
        ids[i] = virEventAddHandle(fds[0], VIR_EVENT_HANDLE_READABLE,
                                   on_handle, &p, on_free);
        ids[N + i] = virEventAddTimeout(-1, on_timeout, &p, on_free);
    }
    for (int i = 0; i < 2 * N; i++) {
        CHECK_INT(ids[i], >, 0);
        for (int j = 0; j < i; j++)
            CHECK_INT(ids[i], !=, ids[j]);
    }
    /* Removing one kind by the other's hook fails. */
    CHECK_INT(virEventRemoveTimeout(ids[0]), ==, -1);
    CHECK_INT(virEventRemoveHandle(ids[N]), ==, -1);
    for (int i = 0; i < N; i++) {
        CHECK_INT(virEventRemoveHandle(ids[i]), ==, 0);
        /* An id removed but not yet freed is not handed out again. */
        int again = virEventAddTimeout(-1, on_timeout, &p, on_free);

        CHECK_INT(again, >, 0);
        for (int j = 0; j < 2 * N; j++)
            CHECK_INT(again, !=, ids[j]);
        CHECK_INT(virEventRemoveTimeout(again), ==, 0);
        CHECK_INT(virEventRemoveTimeout(ids[N + i]), ==, 0);
    }
    run_until_count(&l, &p, &p.freed, 3 * N, "every free callback");
    CHECK_INT(p.calls, ==, 0);
    close(fds[0]);
    close(fds[1]);
    hvt_loop_fini(&l);
    CHECK_INT(p.freed, ==, 3 * N);
    probe_destroy(&p);
}

/* --- timeouts ----------------------------------------------------------------- */

void test_event_timeouts(void)
{
    struct probe every10, spin, off, once, io;
    struct hvt_loop l;
    int t10, tspin, toff, tonce, hio;
    int fds[2];
    int spins;

    setup(&l);
    probe_init(&every10);
    probe_init(&spin);
    probe_init(&off);
    probe_init(&once);
    probe_init(&io);
    io.drain = true;
    make_pipe(fds);

    t10 = virEventAddTimeout(10, on_timeout, &every10, on_free);
    tspin = virEventAddTimeout(0, on_timeout, &spin, on_free);
    toff = virEventAddTimeout(-1, on_timeout, &off, on_free);
    once.remove_on_call = true;
    tonce = virEventAddTimeout(0, on_timeout, &once, on_free);
    hio = virEventAddHandle(fds[0], VIR_EVENT_HANDLE_READABLE, on_handle, &io,
                            on_free);
    CHECK(t10 > 0 && tspin > 0 && toff > 0 && tonce > 0 && hio > 0);

    /* I/O still gets through while a 0 ms timeout fires each iteration. */
    put_byte(fds[1]);
    run_until_count(&l, &io, &io.calls, 1, "I/O beside a 0 ms timeout");
    run_until_count(&l, &every10, &every10.calls, 5, "five 10 ms periods");
    CHECK_INT(spin.calls, >, every10.calls);
    CHECK_INT(off.calls, ==, 0);
    /* Removed by itself on its first call, freed later, called once. */
    CHECK_INT(once.calls, ==, 1);
    CHECK_INT(once.freed, ==, 1);
    {
        /* Four periods of 10 ms.  uv counts each from its cached loop time,
         * which may be a little stale when the callback runs: allow for
         * one such lag, not one per period. */
        uint64_t span = every10.times_ns[4] - every10.times_ns[0];

        if (span < 35000000u)
            hvt_fail(__FILE__, __LINE__, "4 periods of 10 ms in %.3f ms",
                     (double)span / 1e6);
    }

    /* -1 stops the spinning one; 0 and then 15 start the idle one. */
    virEventUpdateTimeout(tspin, -1);
    spins = spin.calls;
    run_until_count(&l, &every10, &every10.calls, 8, "three more periods");
    CHECK_INT(spin.calls, ==, spins);
    virEventUpdateTimeout(toff, 0);
    run_until_count(&l, &off, &off.calls, 20, "20 iterations at 0 ms");
    virEventUpdateTimeout(toff, 15);
    {
        int at = off.calls;
        uint64_t t0;

        run_until_count(&l, &off, &off.calls, at + 1, "a 15 ms period");
        t0 = off.last_ns;
        run_until_count(&l, &off, &off.calls, at + 3, "two more");
        /* As above: one loop-time lag allowed. */
        CHECK_INT(off.last_ns - t0, >=, 2 * 15000000u - 5000000u);
    }

    CHECK_INT(virEventRemoveTimeout(t10), ==, 0);
    CHECK_INT(virEventRemoveTimeout(tspin), ==, 0);
    CHECK_INT(virEventRemoveTimeout(toff), ==, 0);
    CHECK_INT(virEventRemoveTimeout(tonce), ==, -1); /* already gone */
    CHECK_INT(virEventRemoveHandle(hio), ==, 0);
    close(fds[0]);
    close(fds[1]);
    hvt_loop_fini(&l);
    CHECK_INT(every10.freed + spin.freed + off.freed + once.freed + io.freed,
              ==, 5);
    CHECK_INT(every10.off_loop + spin.off_loop + off.off_loop +
                  once.off_loop + io.off_loop,
              ==, 0);
    probe_destroy(&every10);
    probe_destroy(&spin);
    probe_destroy(&off);
    probe_destroy(&once);
    probe_destroy(&io);
}

/* --- other threads ------------------------------------------------------------ */

/* What a helper thread does; the loop thread runs the loop meanwhile. */
struct helper {
    struct hvt_loop *l;
    struct probe old, fresh, ticks;
    int old_id, fresh_id, old_fd, fresh_fd;
    char failure[256];
    pthread_mutex_t lock;
    bool done;
};

static void helper_done(struct helper *h, const char *failure)
{
    pthread_mutex_lock(&h->lock);
    if (failure != NULL)
        snprintf(h->failure, sizeof(h->failure), "%s", failure);
    h->done = true;
    pthread_mutex_unlock(&h->lock);
    hvt_poke(h->l);
}

static bool helper_finished(void *arg)
{
    struct helper *h = arg;
    bool done;

    pthread_mutex_lock(&h->lock);
    done = h->done;
    pthread_mutex_unlock(&h->lock);
    return done;
}

/*
 * Off the loop thread: watch a pipe, see it fire, remove the watch and
 * close the fd at once, then watch a new pipe that most likely got the same
 * fd number: only the new watch may fire.  Then a 0 ms timeout.
 */
static void *helper_main(void *arg)
{
    struct helper *h = arg;
    int a[2], b[2];
    int tick;

    if (pipe2(a, O_CLOEXEC | O_NONBLOCK) != 0)
        return helper_done(h, "pipe"), NULL;
    h->old_fd = a[0];
    h->old_id = virEventAddHandle(a[0], VIR_EVENT_HANDLE_READABLE, on_handle,
                                  &h->old, on_free);
    if (h->old_id <= 0)
        return helper_done(h, "add handle"), NULL;
    if (write(a[1], "x", 1) != 1)
        return helper_done(h, "write"), NULL;
    if (!probe_wait(&h->old, &h->old.calls, 1, 5000))
        return helper_done(h, "no callback for a watch added off-thread"),
               NULL;
    virEventUpdateHandle(h->old_id, 0);
    if (virEventRemoveHandle(h->old_id) != 0)
        return helper_done(h, "remove handle"), NULL;
    close(a[0]);
    close(a[1]);

    if (pipe2(b, O_CLOEXEC | O_NONBLOCK) != 0)
        return helper_done(h, "pipe"), NULL;
    h->fresh_fd = b[0];
    h->fresh_id = virEventAddHandle(b[0], VIR_EVENT_HANDLE_READABLE,
                                    on_handle, &h->fresh, on_free);
    if (h->fresh_id <= 0 || h->fresh_id == h->old_id)
        return helper_done(h, "a new watch reused the old id"), NULL;
    if (write(b[1], "y", 1) != 1)
        return helper_done(h, "write"), NULL;
    if (!probe_wait(&h->fresh, &h->fresh.calls, 1, 5000))
        return helper_done(h, "no callback for the fd number's new watch"),
               NULL;
    if (virEventRemoveHandle(h->fresh_id) != 0)
        return helper_done(h, "remove handle"), NULL;
    close(b[0]);
    close(b[1]);

    tick = virEventAddTimeout(0, on_timeout, &h->ticks, on_free);
    if (tick <= 0 || !probe_wait(&h->ticks, &h->ticks.calls, 5, 5000))
        return helper_done(h, "a 0 ms timeout added off-thread"), NULL;
    virEventUpdateTimeout(tick, -1);
    virEventUpdateTimeout(tick, 5);
    if (!probe_wait(&h->ticks, &h->ticks.calls,
                    probe_get(&h->ticks, &h->ticks.calls) + 3, 5000))
        return helper_done(h, "a 5 ms timeout updated off-thread"), NULL;
    virEventRemoveTimeout(tick);
    if (!probe_wait(&h->ticks, &h->ticks.freed, 1, 5000))
        return helper_done(h, "free of a timeout removed off-thread"), NULL;
    helper_done(h, NULL);
    return NULL;
}

void test_event_off_thread(void)
{
    struct hvt_loop l;
    struct helper h;
    pthread_t thread;

    setup(&l);
    memset(&h, 0, sizeof(h));
    h.l = &l;
    pthread_mutex_init(&h.lock, NULL);
    probe_init(&h.old);
    probe_init(&h.fresh);
    probe_init(&h.ticks);
    h.old.drain = h.fresh.drain = true;
    CHECK_INT(pthread_create(&thread, NULL, helper_main, &h), ==, 0);
    hvt_run_until(&l, helper_finished, &h, 30000, "the helper thread");
    pthread_join(thread, NULL);
    if (h.failure[0] != '\0')
        hvt_fail(__FILE__, __LINE__, "helper: %s", h.failure);
    run_until_count(&l, &h.old, &h.old.freed, 1, "the old watch's free");
    run_until_count(&l, &h.fresh, &h.fresh.freed, 1, "the new watch's free");
    CHECK_INT(h.old.calls, ==, 1);
    CHECK_INT(h.fresh.calls, ==, 1);
    CHECK_INT(h.fresh.fd, ==, h.fresh_fd);
    CHECK_INT(h.old.off_loop + h.fresh.off_loop + h.ticks.off_loop, ==, 0);
    hvt_loop_fini(&l);
    probe_destroy(&h.old);
    probe_destroy(&h.fresh);
    probe_destroy(&h.ticks);
    pthread_mutex_destroy(&h.lock);
}

/* Threads adding, updating and removing watches as fast as they can. */
struct stress {
    struct hvt_loop *l;
    struct probe *p;
    int fd;                     /* always readable */
    unsigned seed;
    int added;
};

enum { STRESS_THREADS = 4, STRESS_ROUNDS = 300 };

static void *stress_main(void *arg)
{
    struct stress *s = arg;

    for (int i = 0; i < STRESS_ROUNDS; i++) {
        int freq = (int)(rand_r(&s->seed) % 3) - 1; /* -1, 0 or 1 ms */
        int t = virEventAddTimeout(freq, on_timeout, s->p, on_free);
        int h = virEventAddHandle(s->fd, VIR_EVENT_HANDLE_READABLE, on_handle,
                                  s->p, on_free);

        s->added += (t > 0) + (h > 0);
        if (rand_r(&s->seed) % 2)
            sched_yield();
        virEventUpdateHandle(h, rand_r(&s->seed) % 2
                                    ? 0
                                    : VIR_EVENT_HANDLE_READABLE);
        virEventUpdateTimeout(t, (int)(rand_r(&s->seed) % 3) - 1);
        virEventRemoveHandle(h);
        virEventRemoveTimeout(t);
    }
    hvt_poke(s->l);
    return NULL;
}

struct stress_goal {
    struct probe *p;
    int want;
};

static bool stress_freed(void *arg)
{
    struct stress_goal *g = arg;

    return probe_get(g->p, &g->p->freed) >= g->want;
}

void test_event_threads_stress(void)
{
    struct stress s[STRESS_THREADS];
    pthread_t threads[STRESS_THREADS];
    struct stress_goal goal;
    struct hvt_loop l;
    struct probe p;
    int fds[2];
    int added = 0;

    setup(&l);
    probe_init(&p);
    make_pipe(fds);
    put_byte(fds[1]);
    for (int i = 0; i < STRESS_THREADS; i++) {
        s[i] = (struct stress){.l = &l, .p = &p, .fd = fds[0],
                               .seed = 1234u + (unsigned)i};
        CHECK_INT(pthread_create(&threads[i], NULL, stress_main, &s[i]), ==,
                  0);
    }
    /* The loop runs (and fires what is on) while the threads churn. */
    goal = (struct stress_goal){&p, 2 * STRESS_THREADS * STRESS_ROUNDS};
    hvt_run_until(&l, stress_freed, &goal, 60000, "every free callback");
    for (int i = 0; i < STRESS_THREADS; i++) {
        pthread_join(threads[i], NULL);
        added += s[i].added;
    }
    CHECK_INT(added, ==, 2 * STRESS_THREADS * STRESS_ROUNDS);
    CHECK_INT(p.off_loop, ==, 0);
    close(fds[0]);
    close(fds[1]);
    hvt_loop_fini(&l);
    CHECK_INT(p.freed, ==, added);
    probe_destroy(&p);
}

/* --- detaching ---------------------------------------------------------------- */

void test_event_shutdown_reattach(void)
{
    struct hvt_loop first, second;
    struct probe p;
    int id;

    setup(&first);
    probe_init(&p);
    id = virEventAddTimeout(5, on_timeout, &p, on_free);
    CHECK_INT(id, >, 0);
    run_until_count(&first, &p, &p.calls, 2, "two periods");

    /* Another loop while attached: refused. */
    hvt_loop_init(&second);
    CHECK_INT(hv_event_register(&second.loop), ==, -EBUSY);
    CHECK_INT(hv_event_register(&first.loop), ==, 0);

    /* Detached, the first loop closes although libvirt still holds a
     * timeout; it is not freed (libvirt did not remove it). */
    hvt_loop_fini(&first);
    CHECK_INT(p.freed, ==, 0);
    CHECK(!hv_event_on_loop_thread());
    /* Updates while detached are kept for the next loop. */
    virEventUpdateTimeout(id, 3);

    /* The next loop takes the timeout over. */
    CHECK_INT(hv_event_register(&second.loop), ==, 0);
    run_until_count(&second, &p, &p.calls, 4, "periods on the new loop");
    CHECK_INT(virEventRemoveTimeout(id), ==, 0);
    run_until_count(&second, &p, &p.freed, 1, "the free callback");
    hvt_loop_fini(&second);
    CHECK_INT(p.off_loop, ==, 0);
    probe_destroy(&p);
}
