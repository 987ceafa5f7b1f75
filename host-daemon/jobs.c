/* crane-hostd's job threads (migrations, peers) and its clocks. */
#include "daemon.h"

#include "proto/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct job {
    struct hd_daemon *d;
    void (*fn)(void *);
    void *arg;
};

static void *job_main(void *p)
{
    struct job j = *(struct job *)p;

    free(p);
    j.fn(j.arg);
    pthread_mutex_lock(&j.d->jobs_lock);
    j.d->jobs--;
    pthread_cond_broadcast(&j.d->jobs_done);
    pthread_mutex_unlock(&j.d->jobs_lock);
    return NULL;
}

int hd_job_start(struct hd_daemon *d, void (*fn)(void *), void *arg)
{
    struct job *j = malloc(sizeof(*j));
    pthread_attr_t attr;
    pthread_t t;
    int rc;

    if (!j)
        return -ENOMEM;
    *j = (struct job){ d, fn, arg };
    pthread_mutex_lock(&d->jobs_lock);
    if (d->stopping) {
        pthread_mutex_unlock(&d->jobs_lock);
        free(j);
        return -EAGAIN;
    }
    d->jobs++;
    pthread_mutex_unlock(&d->jobs_lock);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    rc = pthread_create(&t, &attr, job_main, j);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        CRN_ERROR("cannot start a thread: %s", strerror(rc));
        free(j);
        pthread_mutex_lock(&d->jobs_lock);
        d->jobs--;
        pthread_mutex_unlock(&d->jobs_lock);
        return -rc;
    }
    return 0;
}

void hd_jobs_wait(struct hd_daemon *d)
{
    pthread_mutex_lock(&d->jobs_lock);
    while (d->jobs > 0)
        pthread_cond_wait(&d->jobs_done, &d->jobs_lock);
    pthread_mutex_unlock(&d->jobs_lock);
}

static double clock_seconds(clockid_t id)
{
    struct timespec ts;

    clock_gettime(id, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

double hd_now(void)
{
    return clock_seconds(CLOCK_MONOTONIC);
}

double hd_wall(void)
{
    return clock_seconds(CLOCK_REALTIME);
}
