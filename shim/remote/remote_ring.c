/* The shared area's rings lent to a switch's device copies: ring 0 pieces
 * a native device reads into before they are named to the proxy, and
 * ring 1 pieces handed to a sink where they lie (ringstream.c moves a
 * switch's bytes with them, with no CPU copy).
 *
 * Ring 0: pieces are named in the order they were taken (the proxy refuses
 * one before the last it saw), so while a caller holds any, every other
 * sender's bulk bytes take the stream (remote_conn.c, shm_put_locked).  A
 * held piece that is never named only keeps its room until a later piece
 * is consumed.
 *
 * Ring 1: a sink's piece stays claimed until the sink releases it, in ring
 * order; a reply of another call with bytes in ring 1 meanwhile would free
 * that room under the sink, so it ends the connection instead (the switch
 * that held it then fails, never with wrong bytes).  The reader hands the
 * pieces on (remote_conn_reader.c, shim_conn_sink_piece). */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "proto/frame.h"
#include "remote_conn_int.h"

bool shim_remote_ring_area(void **base, size_t *size, unsigned long *gen)
{
    bool ok;

    pthread_mutex_lock(&shim_conn.send_lock);
    ok = shim_conn.up && !atomic_load(&shim_conn.dead) && shim_conn.shm_on &&
         shim_conn.shm_memfd && atomic_load(&shim_conn.shm_in) &&
         shim_conn.shm.base;
    if (ok) {
        *base = shim_conn.shm.base;
        *size = shim_conn.shm.size;
        *gen = shim_conn.shm_gen;
    }
    pthread_mutex_unlock(&shim_conn.send_lock);
    return ok;
}

size_t shim_remote_ring_piece(void)
{
    size_t quarter = shim_conn.shm.ring_len / 4;

    return quarter < SHIM_RING_PIECE ? quarter : SHIM_RING_PIECE;
}

int shim_remote_ring_hold(size_t len, long wait_ms, uint64_t *pos,
                          void **at)
{
    double until = shim_now() + wait_ms / 1e3;
    struct timespec nap = {0, 20 * 1000};
    int rc;

    for (;;) {
        pthread_mutex_lock(&shim_conn.send_lock);
        if (!shim_conn.shm_on || atomic_load(&shim_conn.dead)) {
            rc = -ENOTCONN;
        } else if ((rc = crn_shm_reserve(&shim_conn.shm, CRN_SHM_TO_PROXY,
                                         len, pos)) == 0) {
            shim_conn.ring_held++;
            *at = crn_shm_at(&shim_conn.shm, CRN_SHM_TO_PROXY, *pos);
        } else if (rc == -EAGAIN) {
            /* What waits in the batch frees room once the proxy runs it. */
            shim_conn_flush_locked();
        }
        pthread_mutex_unlock(&shim_conn.send_lock);
        if (rc != -EAGAIN || shim_now() >= until)
            return rc;
        nanosleep(&nap, NULL);
    }
}

cl_int shim_remote_ring_write(cl_command_queue q, cl_mem b, size_t off,
                              size_t len, uint64_t pos)
{
    Crane__MemCommand c = CRANE__MEM_COMMAND__INIT;
    int rc;

    c.queue = RC_ID(q);
    c.op = CRANE__MEM_OP__MEM_WRITE;
    c.dst = RC_ID(b);
    c.dst_offset = off;
    c.size = len;
    c.bulk_len = len;
    rc_touch(q);
    RC_MSG(m, mem_command, MEM_COMMAND, &c);
    m.shm_bulk = true;
    m.shm_pos = pos;
    pthread_mutex_lock(&shim_conn.send_lock);
    m.seq = ++shim_conn.seq;
    m.want_reply = false;
    if (shim_conn.ring_held)
        shim_conn.ring_held--;
    /* Flushed at once: the proxy copies this piece in while the device
     * fills the next. */
    rc = shim_conn_queue_locked(&m, NULL, 0, true);
    if (rc == 0)
        atomic_fetch_add(&shim_conn.shm_bytes, len);
    pthread_mutex_unlock(&shim_conn.send_lock);
    return rc < 0 ? CL_DEVICE_NOT_AVAILABLE : CL_SUCCESS;
}

void shim_remote_ring_unhold(void)
{
    pthread_mutex_lock(&shim_conn.send_lock);
    shim_conn.ring_held = 0;
    pthread_mutex_unlock(&shim_conn.send_lock);
}

void shim_remote_ring_release(uint64_t end)
{
    crn_shm_release(&shim_conn.shm, CRN_SHM_TO_CLIENT, end);
}

cl_int shim_remote_read_to_sink(cl_command_queue q, cl_mem b, size_t off,
                                size_t len, shim_ring_sink sink, void *arg)
{
    Crane__MemCommand c = CRANE__MEM_COMMAND__INIT;
    int rc;

    c.queue = RC_ID(q);
    c.op = CRANE__MEM_OP__MEM_READ;
    c.src = RC_ID(b);
    c.src_offset = off;
    c.size = len;
    c.blocking = true;
    rc_touch(q);
    RC_MSG(m, mem_command, MEM_COMMAND, &c);
    /* DST only bounds the offsets: every byte goes to SINK. */
    struct slot *s =
        shim_conn_send_with_slot(&m, NULL, 0, NULL, len, false, sink, arg, &rc);
    if (!s)
        return CL_OUT_OF_HOST_MEMORY;
    if (rc == 0)
        shim_conn_await(s);
    else
        shim_conn_forget(s);
    /* Given up on a dead connection: the reader may still be in SINK. */
    pthread_mutex_lock(&shim_conn.lock);
    while (s->in_sink)
        pthread_cond_wait(&shim_conn.cond, &shim_conn.lock);
    pthread_mutex_unlock(&shim_conn.lock);
    cl_int err = CL_DEVICE_NOT_AVAILABLE;
    if (s->done && s->msg) {
        err = s->msg->reply->err;
        if (err == CL_SUCCESS && s->sink_err)
            err = CL_OUT_OF_RESOURCES;
    }
    if (s->msg)
        crane__server_message__free_unpacked(s->msg, NULL);
    free(s);
    return err;
}
