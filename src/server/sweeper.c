/* The trial lease sweeper; see sweeper.h. */
#include "server/sweeper.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bso/error.h"
#include "server/log.h"
#include "server/service.h"

#define SWEEP_BATCH 256 /* trials looked at per pass; the next pass takes the rest */

struct bso_sweeper {
    struct bso_store *store;
    struct bso_config cfg;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool stopping;
};

/* A store timestamp ("2026-11-22T10:00:00.123Z") as seconds since the epoch; -1 if malformed. */
static double parse_stamp(const char *text)
{
    struct tm tm = {0};
    double sec;
    if (sscanf(text, "%4d-%2d-%2dT%2d:%2d:%lf", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
               &tm.tm_min, &sec) != 6)
        return -1;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    tm.tm_sec = (int)sec;
    return (double)timegm(&tm) + (sec - (int)sec);
}

static void format_stamp(double t, char out[32])
{
    const time_t whole = (time_t)t;
    struct tm tm;
    gmtime_r(&whole, &tm);
    char base[24];
    strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, 32, "%s.%03dZ", base, (int)((t - (double)whole) * 1000));
}

struct candidates {
    struct bso_waiting_trial t[SWEEP_BATCH];
    size_t n;
};

static int collect(void *ctx, const struct bso_waiting_trial *t)
{
    struct candidates *c = ctx;
    c->t[c->n++] = *t;
    return 0;
}

/* The lease of job_id's trials, in seconds. */
static int lease_of(struct bso_session *s, const struct bso_config *cfg, const char *job_id,
                    double *lease)
{
    double longest = 0;
    int rc = bso_session_begin_read(s);
    if (rc == 0)
        rc = bso_session_longest_run(s, job_id, &longest);
    bso_session_rollback(s);
    if (rc < 0)
        return rc;
    *lease = longest > 0 ? BSO_LEASE_FACTOR * longest : cfg->lease_default_s;
    if (*lease < cfg->lease_floor_s)
        *lease = cfg->lease_floor_s;
    return 0;
}

int bso_sweep(struct bso_store *store, const struct bso_config *cfg, double now)
{
    struct bso_session *s;
    if (bso_store_session(store, &s) < 0)
        return BSO_EIO;
    struct candidates *c = calloc(1, sizeof *c);
    if (!c) {
        bso_session_release(s);
        return BSO_ENOMEM;
    }
    /* Nothing younger than the floor can have run out. */
    char before[32];
    format_stamp(now - cfg->lease_floor_s, before);
    int rc = bso_session_begin_read(s);
    if (rc == 0)
        rc = bso_session_waiting_trials(s, before, SWEEP_BATCH, collect, c);
    bso_session_rollback(s);
    int failed = 0;
    for (size_t i = 0; i < c->n && rc == 0; i++) {
        const struct bso_waiting_trial *t = &c->t[i];
        double lease;
        if ((rc = lease_of(s, cfg, t->job_id, &lease)) < 0)
            break;
        const double age = now - parse_stamp(t->start_timestamp);
        if (age <= lease)
            continue;
        char msg[BSO_SVC_MSG_MAX];
        const struct bso_trial_key key = {t->job_id, t->batch_size, t->number};
        const int ended = bso_svc_end_trial(s, &key, msg);
        if (ended == 0) {
            log_warn("Trial %lld of job %s (batch size %lld) had no final report %.0f s after "
                     "dispatch, past its lease of %.0f s: failed",
                     (long long)t->number, t->job_id, (long long)t->batch_size, age, lease);
            failed++;
        } else if (ended != BSO_ENOTFOUND) { /* a job deleted meanwhile is no failure */
            log_error("lease sweep: %s", msg);
            rc = ended;
        }
    }
    if (rc < 0 && rc != BSO_EIO)
        log_error("lease sweep: %s", bso_session_errmsg(s));
    free(c);
    bso_session_release(s);
    return rc < 0 ? rc : failed;
}

static void *loop(void *arg)
{
    struct bso_sweeper *sw = arg;
    double every = sw->cfg.lease_floor_s / 4.0;
    if (every > 60)
        every = 60;
    if (every < 0.25)
        every = 0.25;
    pthread_mutex_lock(&sw->lock);
    while (!sw->stopping) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        const double at = (double)until.tv_sec + (double)until.tv_nsec / 1e9 + every;
        until.tv_sec = (time_t)at;
        until.tv_nsec = (long)((at - (double)until.tv_sec) * 1e9);
        pthread_cond_timedwait(&sw->wake, &sw->lock, &until);
        if (sw->stopping)
            break;
        pthread_mutex_unlock(&sw->lock);
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        bso_sweep(sw->store, &sw->cfg, (double)now.tv_sec + (double)now.tv_nsec / 1e9);
        pthread_mutex_lock(&sw->lock);
    }
    pthread_mutex_unlock(&sw->lock);
    return NULL;
}

struct bso_sweeper *bso_sweeper_start(struct bso_store *store, const struct bso_config *cfg)
{
    struct bso_sweeper *sw = calloc(1, sizeof *sw);
    if (!sw)
        return NULL;
    sw->store = store;
    sw->cfg = *cfg;
    pthread_mutex_init(&sw->lock, NULL);
    pthread_cond_init(&sw->wake, NULL);
    if (pthread_create(&sw->thread, NULL, loop, sw) != 0) {
        pthread_cond_destroy(&sw->wake);
        pthread_mutex_destroy(&sw->lock);
        free(sw);
        return NULL;
    }
    return sw;
}

void bso_sweeper_stop(struct bso_sweeper *sw)
{
    if (!sw)
        return;
    pthread_mutex_lock(&sw->lock);
    sw->stopping = true;
    pthread_cond_signal(&sw->wake);
    pthread_mutex_unlock(&sw->lock);
    pthread_join(sw->thread, NULL);
    pthread_cond_destroy(&sw->wake);
    pthread_mutex_destroy(&sw->lock);
    free(sw);
}
