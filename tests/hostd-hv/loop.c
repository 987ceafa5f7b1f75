/* The hostd-hv tests' loop fixture: a uv loop with a deadline and a poke. */
#include "harness.h"

#include "host-daemon/hv/hv_event.h"

static void on_deadline(uv_timer_t *timer)
{
    struct hvt_loop *l = timer->data;

    l->expired = true;
}

static void on_poke(uv_async_t *async)
{
    (void)async; /* waking up is all it is for */
}

void hvt_loop_init(struct hvt_loop *l)
{
    memset(l, 0, sizeof(*l));
    CHECK_INT(uv_loop_init(&l->loop), ==, 0);
    CHECK_INT(uv_timer_init(&l->loop, &l->deadline), ==, 0);
    l->deadline.data = l;
    CHECK_INT(uv_async_init(&l->loop, &l->poke, on_poke), ==, 0);
    uv_unref((uv_handle_t *)&l->poke);
}

void hvt_run_until(struct hvt_loop *l, bool (*done)(void *arg), void *arg,
                   unsigned timeout_ms, const char *what)
{
    l->expired = false;
    uv_update_time(&l->loop);
    uv_timer_start(&l->deadline, on_deadline, hvt_ms(timeout_ms), 0);
    while (!done(arg) && !l->expired)
        uv_run(&l->loop, UV_RUN_ONCE);
    uv_timer_stop(&l->deadline);
    if (!done(arg))
        hvt_fail(__FILE__, __LINE__, "timed out after %u ms waiting for %s",
                 hvt_ms(timeout_ms), what);
}

void hvt_poke(struct hvt_loop *l)
{
    uv_async_send(&l->poke);
}

static void count_unclosed(uv_handle_t *handle, void *arg)
{
    (void)handle;
    ++*(int *)arg;
}

void hvt_loop_fini(struct hvt_loop *l)
{
    int unclosed = 0;

    hv_event_shutdown();
    uv_close((uv_handle_t *)&l->deadline, NULL);
    uv_close((uv_handle_t *)&l->poke, NULL);
    uv_run(&l->loop, UV_RUN_NOWAIT);
    uv_walk(&l->loop, count_unclosed, &unclosed);
    CHECK_INT(unclosed, ==, 0);
    CHECK_INT(uv_loop_close(&l->loop), ==, 0);
}
