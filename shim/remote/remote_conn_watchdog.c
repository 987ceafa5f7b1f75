/* The remote backend's watchdog: pings a proxy that owes an answer, hears
 * its heartbeats, and gives up on one that shows no sign of life
 * (remote_conn.c says the rule). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "remote_conn_int.h"

long shim_conn_beat_interval(void)
{
    long ms = shim_config.proxy_timeout_ms / 4;

    /* A beat well inside the timeout; the proxy takes 10 ms to 600 s. */
    if (ms < 10)
        ms = 10;
    return ms > 600000 ? 600000 : ms;
}

void shim_conn_ask_beats(void)
{
    Crane__Sync sy = CRANE__SYNC__INIT;

    sy.op = CRANE__SYNC_OP__SYNC_HEARTBEAT;
    sy.beat_ms = (uint32_t)shim_conn.beat_ms;
    RC_MSG(m, sync, SYNC, &sy);
    pthread_mutex_lock(&shim_conn.send_lock);
    m.seq = ++shim_conn.seq;
    shim_conn_queue_locked(&m, NULL, 0, true);
    pthread_mutex_unlock(&shim_conn.send_lock);
}

/* How long the proxy has owed us something without a sign of life: an
 * answer (a call's, a detached read's, the handshake's) since the later of
 * the request and the last frame it sent (a heartbeat among them), or a
 * send it has not taken since the later of its start and the last
 * heartbeat (a proxy that says it is busy is not frozen: its input waits
 * behind the call it executes).  0 when nothing is owed. */
static double owed_for(double now)
{
    bool waiting;
    double silent = 0;

    pthread_mutex_lock(&shim_conn.lock);
    waiting = shim_conn.slots != NULL || atomic_load(&shim_conn.handshaking);
    pthread_mutex_unlock(&shim_conn.lock);
    if (waiting) {
        double since = atomic_load(&shim_conn.last_alive);
        double asked = atomic_load(&shim_conn.last_request);
        silent = now - (asked > since ? asked : since);
    }
    if (atomic_load(&shim_conn.sending) > 0) {
        double since = atomic_load(&shim_conn.send_since);
        double beat = atomic_load(&shim_conn.beat_at);
        if (beat > since)
            since = beat;
        if (now - since > silent)
            silent = now - since;
    }
    return silent;
}

/* Asks for a sign of life: a Sync PING with a reply nobody waits for.  Not
 * when another thread is sending (that send is the test already), nor
 * while heartbeats come (the ping would wait behind the call they name). */
static void ping(double now)
{
    Crane__Sync sy = CRANE__SYNC__INIT;

    if (now - atomic_load(&shim_conn.beat_at) <
            BEAT_FRESH * shim_conn.beat_ms / 1e3 ||
        atomic_load(&shim_conn.handshaking) ||
        pthread_mutex_trylock(&shim_conn.send_lock) != 0)
        return;
    sy.op = CRANE__SYNC_OP__SYNC_PING;
    RC_MSG(m, sync, SYNC, &sy);
    m.seq = ++shim_conn.seq;
    m.want_reply = true;
    shim_conn_queue_locked(&m, NULL, 0, true);
    pthread_mutex_unlock(&shim_conn.send_lock);
}

/* Ends the connection: the reader sees it closed and fails every waiter;
 * a send blocked on a full socket returns.  Names what was silent: the
 * handshake (a proxy that accepted and never answered), a proxy whose
 * heartbeats stopped, or one that never sent any. */
static void give_up(double silent_s, double now)
{
    double beat = atomic_load(&shim_conn.beat_at);

    if (atomic_load(&shim_conn.handshaking))
        CRN_ERROR("remote: the proxy accepted the connection but never "
                  "answered its handshake: no sign of life for %.1f s "
                  "(CRANE_PROXY_TIMEOUT_MS=%ld); closing the connection",
                  silent_s, shim_config.proxy_timeout_ms);
    else if (beat > 0 && now - beat < silent_s + 1)
        CRN_ERROR("remote: the proxy showed no sign of life for %.1f s "
                  "while calls waited: its heartbeats stopped %.1f s ago "
                  "(a %s running for %.1f s then; frozen or gone) "
                  "(CRANE_PROXY_TIMEOUT_MS=%ld); closing the connection, "
                  "calls on it fail",
                  silent_s, now - beat,
                  shim_conn_call_name(atomic_load(&shim_conn.beat_call)),
                  atomic_load(&shim_conn.beat_ran),
                  shim_config.proxy_timeout_ms);
    else
        CRN_ERROR("remote: the proxy showed no sign of life for %.1f s "
                  "while calls waited (CRANE_PROXY_TIMEOUT_MS=%ld; no "
                  "heartbeat either); closing the connection, calls on it "
                  "fail",
                  silent_s, shim_config.proxy_timeout_ms);
    shim_conn_lost("it showed no sign of life within "
                   "CRANE_PROXY_TIMEOUT_MS while calls waited");
    shutdown(shim_conn.io.fd, SHUT_RDWR);
}

void *shim_conn_watchdog_main(void *arg)
{
    long timeout_ms = shim_config.proxy_timeout_ms;
    long keep_ms = shim_config.proxy_keepalive_ms;
    long tick_ms = timeout_ms / 4;

    (void)arg;
    if (keep_ms > 0 && keep_ms < tick_ms)
        tick_ms = keep_ms;
    if (tick_ms < 10)
        tick_ms = 10;
    pthread_mutex_lock(&shim_conn.lock);
    while (!shim_conn.watchdog_stop && !atomic_load(&shim_conn.dead)) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += tick_ms / 1000;
        ts.tv_nsec += (tick_ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&shim_conn.watchdog_cond, &shim_conn.lock, &ts);
        if (shim_conn.watchdog_stop)
            break;
        pthread_mutex_unlock(&shim_conn.lock);
        double now = shim_now();
        double silent = owed_for(now);
        if (silent <= 0) {
            /* Nothing expected: silence is fine. */
        } else if (silent * 1e3 > timeout_ms) {
            give_up(silent, now);
        } else if (keep_ms > 0 && silent * 1e3 >= keep_ms &&
                   (now - shim_conn.last_ping) * 1e3 >= keep_ms) {
            shim_conn.last_ping = now;
            ping(now);
        }
        pthread_mutex_lock(&shim_conn.lock);
    }
    pthread_mutex_unlock(&shim_conn.lock);
    return NULL;
}

void shim_conn_watchdog_stop(void)
{
    pthread_mutex_lock(&shim_conn.lock);
    shim_conn.watchdog_stop = true;
    pthread_cond_signal(&shim_conn.watchdog_cond);
    pthread_mutex_unlock(&shim_conn.lock);
    pthread_join(shim_conn.watchdog, NULL);
}
