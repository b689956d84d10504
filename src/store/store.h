/*
 * Storage for jobs, trials and arms behind one interface, so the server does not care which
 * database holds them. A bso_store is opened once from a URL and hands out sessions; a session is
 * one database connection used by one thread at a time, and runs one transaction per request.
 *
 * Writers serialise per job: bso_session_begin(s, job_id) takes the job's write lock (for SQLite,
 * the database write lock; for PostgreSQL, a row lock), so concurrent requests for one job never
 * interleave, in one process or several.
 */
#ifndef BSO_STORE_H
#define BSO_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bso/power.h"
#include "core/job.h"

struct bso_store;
struct bso_session;

enum bso_durability {
    BSO_DURABILITY_NORMAL, /* WAL, fsync at checkpoints: survives a process crash */
    BSO_DURABILITY_FULL,   /* fsync per commit: survives power loss */
};

struct bso_store_options {
    enum bso_durability durability;
    int busy_timeout_ms; /* how long a writer waits for the lock; 0 picks a default */
    int connections;     /* database connections the sessions share; 0: one per session */
    size_t cache_bytes;  /* jobs kept in memory (store/jobcache.h), when the backend allows;
                            0: none */
    bool tool; /* a command-line tool beside a running server (`bso-server token`): no claim
                  on the database file, no cache */
};

/* Parses a database URL (SQLAlchemy style: sqlite:///relative.db, sqlite:////abs.db,
 * sqlite:///:memory:, and Zeus's sqlite+aiosqlite:///x) and opens the store, creating and
 * migrating the schema. On failure returns a negative code and a sentence in err. */
int bso_store_open(const char *url, const struct bso_store_options *opt, struct bso_store **out,
                   char *err, size_t errcap);
/* url with any password replaced by "***", for logs and messages. */
const char *bso_store_redact_url(const char *url, char *buf, size_t cap);

/* Closes the store; every session must have been released. NULL is a no-op. */
void bso_store_close(struct bso_store *store);
/* The backend's name ("sqlite") and its schema version. */
const char *bso_store_backend(const struct bso_store *store);
int bso_store_schema_version(const struct bso_store *store);

/* The migration SQL the backend would run to bring an empty database to the latest schema, for
 * `bso-server migrate --sql`. Static text. */
const char *bso_store_migrations_sql(const char *url);

/* A session from the store's pool (created on demand). Release it when the request is done. */
int bso_store_session(struct bso_store *store, struct bso_session **out);
void bso_session_release(struct bso_session *s);
/* Limits the session to one tenant's jobs until it is released: jobs of other tenants are
 * absent (BSO_ENOTFOUND, left out of lists). NULL: every job (the default). */
void bso_session_set_scope(struct bso_session *s, const char *tenant);
/* The last failure's message on this session. */
const char *bso_session_errmsg(const struct bso_session *s);

/* Transactions. begin_write locks the job for writing (job_id may be NULL to lock for a new
 * job); begin_read gives a consistent snapshot. */
int bso_session_begin_write(struct bso_session *s, const char *job_id);
int bso_session_begin_read(struct bso_session *s);
int bso_session_commit(struct bso_session *s);
void bso_session_rollback(struct bso_session *s);

/* What bso_session_load_job brings into memory besides the job row. */
enum bso_load {
    BSO_LOAD_TRIALS = 1, /* the pruning-stage trials (only while the job is pruning) */
    BSO_LOAD_ARMS = 2,   /* the arms (only in the MAB stage) */
};

/* Loads job_id into *job (uninitialised; release with bso_job_clear on success).
 * BSO_ENOTFOUND when there is no such job. */
int bso_session_load_job(struct bso_session *s, const char *job_id, unsigned load,
                         struct bso_job *job);
/* Inserts a new job. BSO_ECONFLICT if the id exists. */
int bso_session_insert_job(struct bso_session *s, const struct bso_job *job);
/* Writes what a policy operation changed (its BSO_CHANGED_* mask): the trial (inserted when new,
 * else updated), the job's derived fields, all arms or the one at arm_index. */
int bso_session_save(struct bso_session *s, const struct bso_job *job, unsigned changed,
                     const struct bso_trial *trial, bool trial_is_new, size_t arm_index);
/* Which of a job and its trial bso_session_load_pair did not find. */
enum bso_missing { BSO_MISSING_NONE, BSO_MISSING_JOB, BSO_MISSING_TRIAL };

/* Loads job_id as bso_session_load_job does and its trial `number` into *trial, both as of one
 * moment. BSO_ENOTFOUND with *missing set when either is absent (the job is then released). */
int bso_session_load_pair(struct bso_session *s, const char *job_id, unsigned load,
                          struct bso_job *job, int64_t number, struct bso_trial *trial,
                          enum bso_missing *missing);
/* One trial. BSO_ENOTFOUND when absent. */
int bso_session_load_trial(struct bso_session *s, const char *job_id, int64_t number,
                           struct bso_trial *trial);
/* Deletes a job and everything under it. BSO_ENOTFOUND when absent. */
int bso_session_delete_job(struct bso_session *s, const char *job_id);
/* Forgets everything a job learned (its trials, arms and statistics): it starts pruning again
 * from its spec, and trial numbers go on from where they were. BSO_ENOTFOUND when absent. */
int bso_session_reset_job(struct bso_session *s, const char *job_id);
/* Whether a job exists. 1, 0, or a negative error. */
int bso_session_job_exists(struct bso_session *s, const char *job_id);

/* A row of the job list. */
struct bso_job_summary {
    char job_id[BSO_JOB_ID_MAX + 1];
    char tenant[BSO_TENANT_MAX + 1];
    char gpu_model[BSO_GPU_MODEL_MAX + 1];
    enum bso_stage stage;
    int64_t n_trials;
    bool has_min_cost;
    double min_cost;
    int64_t min_cost_batch_size;
    char created_at[32];
    int policy; /* enum bso_policy */
};

/* Calls fn for up to limit jobs with ids after `after` (NULL: from the start), in id order. */
int bso_session_list_jobs(struct bso_session *s, const char *after, int64_t limit,
                          int (*fn)(void *ctx, const struct bso_job_summary *row), void *ctx);

/* A stored trial with its timestamps. */
struct bso_trial_row {
    struct bso_trial trial;
    char start_timestamp[32];
    char end_timestamp[32]; /* empty while Dispatched */
    /* The run's progress points as the store keeps them, JSON [[epoch, time, samples,
     * mean_batch_size], ...] (bso_session_add_progress); NULL when it sent none. Valid during
     * the callback only. */
    const char *progress;
};

/* One point of a run's progress: after `epoch` evaluations and `time` seconds, `samples`
 * samples processed at `mean_batch_size` samples per optimizer step on average. */
struct bso_progress_point {
    int64_t epoch;
    double time;
    int64_t samples;
    double mean_batch_size;
};
/* The most points a trial keeps; later ones are dropped. */
#define BSO_PROGRESS_MAX 1000

/* Writes a whole trial as another system stored it (bso-server import-zeus): its timestamps
 * and results as given. BSO_ECONFLICT when the job already has that trial number. */
int bso_session_import_trial(struct bso_session *s, const char *job_id,
                             const struct bso_trial_row *r);
/* Writes an arm as given (import), for a job inserted in this transaction. */
int bso_session_import_arm(struct bso_session *s, const char *job_id, const struct bso_arm *a);

/* Appends pt to trial `number` of job_id while it is Dispatched and pt->epoch is past its last
 * point (a repeated report adds nothing). 0 also when nothing was added. */
int bso_session_add_progress(struct bso_session *s, const char *job_id, int64_t number,
                             const struct bso_progress_point *pt);

/* Calls fn for up to limit trials of job_id numbered above `after`, ascending. */
int bso_session_list_trials(struct bso_session *s, const char *job_id, int64_t after, int64_t limit,
                            int (*fn)(void *ctx, const struct bso_trial_row *row), void *ctx);
/* A trial still waiting for its report, for the lease sweeper. */
struct bso_waiting_trial {
    char job_id[BSO_JOB_ID_MAX + 1];
    int64_t number;
    int64_t batch_size;
    char start_timestamp[32];
};

/* Calls fn for up to limit Dispatched trials (every job's) dispatched before `before` (a
 * timestamp as the store writes them, "2026-11-22T10:00:00.000Z"), oldest first. */
int bso_session_waiting_trials(struct bso_session *s, const char *before, int64_t limit,
                               int (*fn)(void *ctx, const struct bso_waiting_trial *t), void *ctx);
/* The longest time (s) a run of the job took to its final report; 0 when none has. */
int bso_session_longest_run(struct bso_session *s, const char *job_id, double *seconds);
/* Counts of a job's trials by status (indexed by enum bso_trial_status). */
int bso_session_count_trials(struct bso_session *s, const char *job_id, int64_t counts[3]);
/* Every tenant's jobs by stage (indexed by enum bso_stage) and trials by status (enum
 * bso_trial_status): the server's metrics. Ignores the session's scope. */
int bso_session_tally(struct bso_session *s, int64_t jobs[2], int64_t trials[3]);
/* Whether the database answers (for readiness probes). */
int bso_session_ping(struct bso_session *s);

/* What a probe measured for one batch size. */
struct bso_profile_entry {
    int64_t batch_size;
    bool feasible;             /* it fits the device */
    double samples_per_s;      /* NAN when not measured */
    double joules_per_sample;  /* NAN when not measured */
    int64_t peak_memory_bytes; /* -1 when not measured */
    char device[64];
    char measured_at[32]; /* set by the store */
};

/* Stores (replacing earlier ones) a profile's entries for job_id. */
int bso_session_save_profile(struct bso_session *s, const char *job_id,
                             const struct bso_profile_entry *e, size_t n);
/* Calls fn for every stored profile entry of job_id, by batch size. */
int bso_session_list_profile(struct bso_session *s, const char *job_id,
                             int (*fn)(void *ctx, const struct bso_profile_entry *e), void *ctx);
/* A batch size's power-limit profile (POST /jobs/ID/power): what a run measured at each
 * limit during its first epoch, and the limit it chose. */
struct bso_power_profile {
    int64_t batch_size;
    double power_limit_w; /* the chosen limit, W per GPU */
    size_t n;
    struct bso_power_point points[BSO_POWER_MAX_LIMITS];
    char device[64];
    char measured_at[32]; /* set by the store */
};

/* Stores (replacing an earlier one of that batch size) a power-limit profile for job_id, and
 * marks the job power_profiled. */
int bso_session_save_power(struct bso_session *s, const char *job_id,
                           const struct bso_power_profile *p);
/* Where a job learnt from (bso transfer): the job it was transferred from, how many batch
 * sizes got a prior, and when. */
struct bso_job_origin {
    char from_job[BSO_JOB_ID_MAX + 1];
    int64_t sizes;
    char at[40];
};
/* Records it (a later transfer replaces it); reads it back, BSO_ENOTFOUND when the job was not
 * transferred. */
int bso_session_save_origin(struct bso_session *s, const char *job_id,
                            const struct bso_job_origin *o);
int bso_session_load_origin(struct bso_session *s, const char *job_id, struct bso_job_origin *o);
/* The version of its data a job last registered with (data_version), and since when. */
struct bso_data_version {
    char version[BSO_DATA_VERSION_MAX + 1];
    char since[40];
};
/* Records a new version (since now); reads it back, BSO_ENOTFOUND when the job never gave
 * one. */
int bso_session_save_data_version(struct bso_session *s, const char *job_id, const char *version);
int bso_session_load_data_version(struct bso_session *s, const char *job_id,
                                  struct bso_data_version *v);
/* The chosen power limit of job_id's batch size; BSO_ENOTFOUND when it has no profile. */
int bso_session_power_limit(struct bso_session *s, const char *job_id, int64_t batch_size,
                            double *limit_w);
/* Calls fn for every power-limit profile of job_id, by batch size. */
int bso_session_list_power(struct bso_session *s, const char *job_id,
                           int (*fn)(void *ctx, const struct bso_power_profile *p), void *ctx);
/* Records which of the job's batch sizes do not fit (job->spec.unfit). */
int bso_session_save_unfit(struct bso_session *s, const struct bso_job *job);

/* An API token as stored: the secret itself never is, only its SHA-256. */
struct bso_token {
    int64_t id;
    char tenant[BSO_TENANT_MAX + 1];
    bool admin;
    char hint[16]; /* the token's first characters, to recognise it by */
    char created_at[32];
    char revoked_at[32]; /* "" while active */
};

/* Stores a new token under hash (64 hex characters); *id gets its number. */
int bso_session_token_insert(struct bso_session *s, const struct bso_token *t, const char *hash,
                             int64_t *id);
/* The active token with this hash; BSO_ENOTFOUND when there is none (or it was revoked). */
int bso_session_token_find(struct bso_session *s, const char *hash, struct bso_token *out);
/* Calls fn for every token (of tenant, unless NULL), oldest first. */
int bso_session_token_list(struct bso_session *s, const char *tenant,
                           int (*fn)(void *ctx, const struct bso_token *t), void *ctx);
/* Revokes token id (id > 0), or every active token of tenant; *revoked says how many. */
int bso_session_token_revoke(struct bso_session *s, int64_t id, const char *tenant,
                             int64_t *revoked);
/* How many tokens are active. */
int bso_session_token_count(struct bso_session *s, int64_t *active);

/* The job cache's counters; false when the store keeps no cache. */
struct bso_jobcache_stats;
bool bso_store_cache_stats(struct bso_store *store, struct bso_jobcache_stats *out);

#endif
