/*
 * What a storage backend implements: one row of function pointers (struct bso_store_ops), and
 * session objects that begin with struct bso_session. store.c dispatches and pools sessions.
 */
#ifndef BSO_STORE_IMPL_H
#define BSO_STORE_IMPL_H

#include <pthread.h>

#include "store/jobcache.h"
#include "store/store.h"

/* Saves of one transaction that the job cache learns of once it commits. */
#define BSO_PENDING_MAX 4

struct bso_session {
    const struct bso_store_ops *ops;
    struct bso_store *store;
    struct bso_session *next_free; /* the pool's free list */
    char errmsg[512];
    /* With a job cache (store.c). */
    bool deferred; /* a read transaction the database has not been asked to begin yet */
    bool writing;  /* a write transaction, holding the store's writer lock */
    struct bso_jobcache_change pending[BSO_PENDING_MAX];
    size_t n_pending;
    bool pending_overflow; /* more saves than pending holds: the cache is emptied at commit */
    /* The tenant whose jobs alone this session may see ("" with scoped false: every job). */
    bool scoped;
    char scope[BSO_TENANT_MAX + 1];
};

/* BSO_PROGRESS_MAX as text, for the SQL that enforces it. */
#define BSO_TEXT_OF_(x) #x
#define BSO_TEXT_OF(x) BSO_TEXT_OF_(x)
#define BSO_PROGRESS_MAX_TEXT BSO_TEXT_OF(BSO_PROGRESS_MAX)

struct bso_store_ops {
    const char *name;
    /* The backend itself: opening and migrating the database, its sessions. */
    struct {
        /* Opens the backend for target (the URL after its scheme) and migrates it. */
        int (*open)(const char *target, const struct bso_store_options *opt, void **backend,
                    char *err, size_t errcap);
        void (*close)(void *backend);
        int (*schema_version)(void *backend);
        /* How many sessions may exist at once (an in-memory SQLite database has one connection). */
        int (*session_limit)(void *backend);
        const char *(*migrations_sql)(void);
        /* Whether the store may keep jobs in memory: this process is the database's only writer
         * and a commit is final when it returns. */
        bool (*cacheable)(void *backend);
        /* A new session (connection); NULL on failure with err set. */
        struct bso_session *(*session_new)(void *backend, char *err, size_t errcap);
        void (*session_free)(struct bso_session *s);
    } backend;
    /* Transactions, and a health check of a session's connection. */
    struct {
        int (*begin_write)(struct bso_session *s, const char *job_id);
        int (*begin_read)(struct bso_session *s);
        int (*commit)(struct bso_session *s);
        void (*rollback)(struct bso_session *s);
        int (*ping)(struct bso_session *s);
    } tx;
    /* Jobs: their rows, lists and counts. */
    struct {
        int (*load)(struct bso_session *s, const char *job_id, unsigned load, struct bso_job *job);
        int (*insert)(struct bso_session *s, const struct bso_job *job);
        int (*update)(struct bso_session *s, const struct bso_job *job);
        int (*delete)(struct bso_session *s, const char *job_id);
        int (*reset)(struct bso_session *s, const char *job_id);
        int (*exists)(struct bso_session *s, const char *job_id);
        /* tenant NULL: every tenant's jobs. */
        int (*list)(struct bso_session *s, const char *after, int64_t limit, const char *tenant,
                    int (*fn)(void *ctx, const struct bso_job_summary *row), void *ctx);
        int (*tally)(struct bso_session *s, int64_t jobs[2], int64_t trials[3]);
    } jobs;
    /* Trials: one at a time, lists, leases, imports and progress points. */
    struct {
        /* The writes a save is made of; store.c decides which, the same way for every backend. */
        int (*write)(struct bso_session *s, const char *job_id, const struct bso_trial *t,
                     bool is_new);
        int (*load)(struct bso_session *s, const char *job_id, int64_t number,
                    struct bso_trial *trial);
        int (*list)(struct bso_session *s, const char *job_id, int64_t after, int64_t limit,
                    int (*fn)(void *ctx, const struct bso_trial_row *row), void *ctx);
        int (*count)(struct bso_session *s, const char *job_id, int64_t counts[3]);
        int (*waiting)(struct bso_session *s, const char *before, int64_t limit,
                       int (*fn)(void *ctx, const struct bso_waiting_trial *t), void *ctx);
        int (*longest_run)(struct bso_session *s, const char *job_id, double *seconds);
        int (*import)(struct bso_session *s, const char *job_id, const struct bso_trial_row *r);
        int (*add_progress)(struct bso_session *s, const char *job_id, int64_t number,
                            const struct bso_progress_point *pt);
    } trials;
    /* What the policies learn per batch size: Zeus's arms, the bso policy's statistics. */
    struct {
        int (*write_arm)(struct bso_session *s, const char *job_id, const struct bso_arm *a,
                         bool is_new);
        int (*save_stat)(struct bso_session *s, const struct bso_job *job, size_t i);
    } learning;
    /* The hardware side: device and power-limit profiles, sizes that do not fit, and the job a
     * job was transferred from. */
    struct {
        int (*save_profile)(struct bso_session *s, const char *job_id,
                            const struct bso_profile_entry *e, size_t n);
        int (*list_profile)(struct bso_session *s, const char *job_id,
                            int (*fn)(void *ctx, const struct bso_profile_entry *e), void *ctx);
        int (*save_unfit)(struct bso_session *s, const char *job_id, const char *sizes);
        int (*save_power)(struct bso_session *s, const char *job_id,
                          const struct bso_power_profile *p);
        int (*power_limit)(struct bso_session *s, const char *job_id, int64_t batch_size,
                           double *limit_w);
        int (*list_power)(struct bso_session *s, const char *job_id,
                          int (*fn)(void *ctx, const struct bso_power_profile *p), void *ctx);
        int (*save_origin)(struct bso_session *s, const char *job_id,
                           const struct bso_job_origin *o);
        int (*load_origin)(struct bso_session *s, const char *job_id, struct bso_job_origin *o);
        int (*save_data_version)(struct bso_session *s, const char *job_id, const char *version);
        int (*load_data_version)(struct bso_session *s, const char *job_id,
                                 struct bso_data_version *v);
    } hardware;
    /* API tokens (store.h), each in a transaction of its own. */
    struct {
        int (*insert)(struct bso_session *s, const struct bso_token *t, const char *hash,
                      int64_t *id);
        int (*find)(struct bso_session *s, const char *hash, struct bso_token *out);
        int (*list)(struct bso_session *s, const char *tenant,
                    int (*fn)(void *ctx, const struct bso_token *t), void *ctx);
        int (*revoke)(struct bso_session *s, int64_t id, const char *tenant, int64_t *revoked);
        int (*count)(struct bso_session *s, int64_t *active);
    } tokens;
};

extern const struct bso_store_ops bso_sqlite_ops;
extern const struct bso_store_ops bso_postgres_ops;

/* Sets s->errmsg from a format; returns code. */
int bso_session_fail(struct bso_session *s, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
