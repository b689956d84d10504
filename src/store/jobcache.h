/*
 * A bounded in-memory copy of the jobs a server is serving, so that the requests that only
 * read a job (most progress reports and ends of trials) never touch the database.
 *
 * It is correct only while this process is the database's sole writer (the store takes a lock
 * that makes a second server refuse to start) and while every write goes through the store,
 * which hands the cache each committed change (bso_jobcache_apply) under the database's write
 * lock. The cache then always holds either nothing for a job or exactly what the database
 * holds, as the store would load it. A job's image holds its row, its statistics, its arms in
 * the MAB stage, and its trials: all of them while pruning, the most recent ones after.
 *
 * Thread-safe: one mutex; a lookup copies the image out under it, so a reader sees the job and
 * its trial as of one moment.
 */
#ifndef BSO_STORE_JOBCACHE_H
#define BSO_STORE_JOBCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/job.h"

struct bso_jobcache;

/* A job's own row: what a save writes besides its trials, arms and statistics. */
struct bso_jobcache_row {
    enum bso_stage stage;
    bool has_min_cost;
    double min_cost;
    int64_t min_cost_batch_size;
    bso_rng rng;
    int64_t last_trial_number;
    int64_t refusals;
};

/* What one committed bso_session_save changed, copied so it outlives the caller's job. */
struct bso_jobcache_change {
    char job_id[BSO_JOB_ID_MAX + 1];
    unsigned changed; /* BSO_CHANGED_* */
    bool drop;        /* the job was deleted (or may have changed): forget it */
    struct bso_jobcache_row row;
    /* BSO_CHANGED_TRIAL */
    struct bso_trial trial;
    bool trial_is_new;
    /* BSO_CHANGED_ARMS: every arm; BSO_CHANGED_ARM: the one refitted. Owned. */
    struct bso_arm *arms;
    size_t n_arms;
    /* BSO_CHANGED_STATS */
    size_t stat_index;
    struct bso_bs_stat stat;
};

/* Fills *chg from a save's arguments (as bso_session_save takes them); BSO_ENOMEM. Release with
 * bso_jobcache_change_clear. */
int bso_jobcache_change_init(struct bso_jobcache_change *chg, const struct bso_job *job,
                             unsigned changed, const struct bso_trial *trial, bool trial_is_new,
                             size_t arm_index);
void bso_jobcache_change_clear(struct bso_jobcache_change *chg);

/* A cache holding at most budget_bytes of images. NULL when out of memory. */
struct bso_jobcache *bso_jobcache_new(size_t budget_bytes);
/* NULL is a no-op. */
void bso_jobcache_free(struct bso_jobcache *c);

enum bso_jobcache_hit {
    BSO_JOBCACHE_MISS = 0,     /* ask the database */
    BSO_JOBCACHE_HIT = 1,      /* *job (and *trial when asked for) filled */
    BSO_JOBCACHE_NO_TRIAL = 2, /* *job filled, and the job has no such trial */
};

/* Copies job_id out as the store's load_job would with `load` (BSO_LOAD_*) into *job
 * (uninitialised; release with bso_job_clear after a hit), and trial `number` into *trial when
 * number > 0. BSO_ENOMEM when a copy cannot be made. */
int bso_jobcache_get(struct bso_jobcache *c, const char *job_id, unsigned load, struct bso_job *job,
                     int64_t number, struct bso_trial *trial);

/* Taken before a job is read from the database outside the write lock; bso_jobcache_put
 * keeps the job only if no change to it was applied since. */
uint64_t bso_jobcache_stamp(struct bso_jobcache *c, const char *job_id);
/* Keeps a job as the database holds it, loaded with BSO_LOAD_TRIALS | BSO_LOAD_ARMS. A
 * failure to allocate just leaves it out. */
void bso_jobcache_put(struct bso_jobcache *c, const struct bso_job *job, uint64_t stamp);

/* Applies a committed change to the job's image (if cached). */
void bso_jobcache_apply(struct bso_jobcache *c, const struct bso_jobcache_change *chg);
/* Forgets a job. */
void bso_jobcache_drop(struct bso_jobcache *c, const char *job_id);
/* Forgets every job. */
void bso_jobcache_clear(struct bso_jobcache *c);

/* Counters for tests and metrics. */
struct bso_jobcache_stats {
    uint64_t hits, misses, puts, evictions;
    size_t jobs, bytes;
};
void bso_jobcache_stats(struct bso_jobcache *c, struct bso_jobcache_stats *out);

#endif
