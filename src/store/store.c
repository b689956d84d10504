/* Backend selection by URL, session pooling and dispatch; see store.h. */
#include "store/store_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bso/error.h"
#include "core/pyfmt.h"

struct bso_store {
    const struct bso_store_ops *ops;
    void *backend;
    /* Jobs kept in memory, or NULL. Writers then take `writer` first and hand the cache what
     * they changed before they let go of it, so the next writer finds the cache current. */
    struct bso_jobcache *cache;
    pthread_mutex_t writer;
    pthread_mutex_t lock; /* guards the pool */
    pthread_cond_t returned;
    struct bso_session *free;
    int open_sessions;
    int session_limit;
};

/* URL schemes and the backend behind each. */
static const struct {
    const char *prefix;
    const struct bso_store_ops *ops;
} schemes[] = {
    {"sqlite:///", &bso_sqlite_ops},
    {"sqlite+aiosqlite:///", &bso_sqlite_ops}, /* Zeus's async driver URL */
    {"sqlite+pysqlite:///", &bso_sqlite_ops},
    {"postgresql://", &bso_postgres_ops},
    {"postgres://", &bso_postgres_ops},
    {"postgresql+asyncpg://", &bso_postgres_ops}, /* Zeus's async driver URL */
    {"postgresql+psycopg://", &bso_postgres_ops},
    {"postgresql+psycopg2://", &bso_postgres_ops},
};

static const struct bso_store_ops *pick(const char *url, const char **target)
{
    for (size_t i = 0; i < sizeof schemes / sizeof *schemes; i++) {
        size_t n = strlen(schemes[i].prefix);
        if (strncmp(url, schemes[i].prefix, n) == 0) {
            *target = url + n;
            return schemes[i].ops;
        }
    }
    return NULL;
}

const char *bso_store_redact_url(const char *url, char *buf, size_t cap)
{
    /* scheme://user:password@host... : the password is what lies between the first ':'
     * after "//" and the last '@' before the path. */
    const char *auth = strstr(url, "//");
    const char *end = auth ? auth + 2 + strcspn(auth + 2, "/?") : NULL;
    const char *at = NULL;
    for (const char *p = auth ? auth + 2 : url; end && p < end; p++)
        if (*p == '@')
            at = p;
    const char *colon = at ? memchr(auth + 2, ':', (size_t)(at - auth - 2)) : NULL;
    if (!colon) {
        snprintf(buf, cap, "%s", url);
        return buf;
    }
    snprintf(buf, cap, "%.*s***%s", (int)(colon + 1 - url), url, at);
    return buf;
}

int bso_session_fail(struct bso_session *s, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->errmsg, sizeof s->errmsg, fmt, ap);
    va_end(ap);
    return code;
}

int bso_store_open(const char *url, const struct bso_store_options *opt, struct bso_store **out,
                   char *err, size_t errcap)
{
    const char *target;
    const struct bso_store_ops *ops = url ? pick(url, &target) : NULL;
    if (!ops) {
        char shown[512];
        snprintf(err, errcap,
                 "unsupported database URL '%s': use sqlite:///relative.db, "
                 "sqlite:////absolute/path.db, sqlite:///:memory: or "
                 "postgresql://user:password@host:port/database",
                 url ? bso_store_redact_url(url, shown, sizeof shown) : "");
        return BSO_EINVAL;
    }
    struct bso_store *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(err, errcap, "out of memory");
        return BSO_ENOMEM;
    }
    s->ops = ops;
    int rc = ops->backend.open(target, opt, &s->backend, err, errcap);
    if (rc < 0) {
        free(s);
        return rc;
    }
    if (opt && opt->cache_bytes > 0 && ops->backend.cacheable(s->backend) &&
        !(s->cache = bso_jobcache_new(opt->cache_bytes))) {
        ops->backend.close(s->backend);
        free(s);
        snprintf(err, errcap, "out of memory");
        return BSO_ENOMEM;
    }
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->writer, NULL);
    pthread_cond_init(&s->returned, NULL);
    s->session_limit = ops->backend.session_limit(s->backend);
    *out = s;
    return 0;
}

void bso_store_close(struct bso_store *store)
{
    if (!store)
        return;
    while (store->free) {
        struct bso_session *s = store->free;
        store->free = s->next_free;
        store->ops->backend.session_free(s);
    }
    store->ops->backend.close(store->backend);
    bso_jobcache_free(store->cache);
    pthread_cond_destroy(&store->returned);
    pthread_mutex_destroy(&store->writer);
    pthread_mutex_destroy(&store->lock);
    free(store);
}

const char *bso_store_backend(const struct bso_store *store)
{
    return store->ops->name;
}

int bso_store_schema_version(const struct bso_store *store)
{
    return store->ops->backend.schema_version(store->backend);
}

const char *bso_store_migrations_sql(const char *url)
{
    const char *target;
    const struct bso_store_ops *ops = url ? pick(url, &target) : NULL;
    return ops ? ops->backend.migrations_sql() : NULL;
}

int bso_store_session(struct bso_store *store, struct bso_session **out)
{
    pthread_mutex_lock(&store->lock);
    while (!store->free && store->session_limit > 0 && store->open_sessions >= store->session_limit)
        pthread_cond_wait(&store->returned, &store->lock);
    struct bso_session *s = store->free;
    if (s)
        store->free = s->next_free;
    else
        store->open_sessions++; /* reserve the slot before connecting outside the lock */
    pthread_mutex_unlock(&store->lock);
    if (!s) {
        char err[256];
        s = store->ops->backend.session_new(store->backend, err, sizeof err);
        if (!s) {
            pthread_mutex_lock(&store->lock);
            store->open_sessions--;
            pthread_cond_signal(&store->returned);
            pthread_mutex_unlock(&store->lock);
            return BSO_EIO;
        }
        s->ops = store->ops;
        s->store = store;
    }
    s->next_free = NULL;
    s->errmsg[0] = '\0';
    *out = s;
    return 0;
}

void bso_session_release(struct bso_session *s)
{
    if (!s)
        return;
    bso_session_set_scope(s, NULL);
    struct bso_store *store = s->store;
    pthread_mutex_lock(&store->lock);
    s->next_free = store->free;
    store->free = s;
    pthread_cond_signal(&store->returned);
    pthread_mutex_unlock(&store->lock);
}

const char *bso_session_errmsg(const struct bso_session *s)
{
    return s->errmsg;
}

/* ---- transactions; with a cache, a read transaction begins in the database only when it
 * first needs the database ---- */

static int ensure_tx(struct bso_session *s)
{
    if (!s->deferred)
        return 0;
    s->deferred = false;
    return s->ops->tx.begin_read(s);
}

static void forget_pending(struct bso_session *s)
{
    for (size_t i = 0; i < s->n_pending; i++)
        bso_jobcache_change_clear(&s->pending[i]);
    s->n_pending = 0;
    s->pending_overflow = false;
}

/* Tells the cache what a transaction changed: once it committed, or, when the commit failed,
 * forgets those jobs. */
static void settle(struct bso_session *s, bool committed)
{
    struct bso_jobcache *c = s->store->cache;
    if (s->pending_overflow)
        bso_jobcache_clear(c);
    for (size_t i = 0; i < s->n_pending; i++) {
        s->pending[i].drop |= !committed;
        bso_jobcache_apply(c, &s->pending[i]);
    }
    forget_pending(s);
}

static void end_write(struct bso_session *s)
{
    if (s->writing)
        pthread_mutex_unlock(&s->store->writer);
    s->writing = false;
}

int bso_session_begin_write(struct bso_session *s, const char *job_id)
{
    if (!s->store->cache)
        return s->ops->tx.begin_write(s, job_id);
    pthread_mutex_lock(&s->store->writer);
    s->writing = true;
    const int rc = s->ops->tx.begin_write(s, job_id);
    if (rc < 0)
        end_write(s);
    return rc;
}

int bso_session_begin_read(struct bso_session *s)
{
    if (!s->store->cache)
        return s->ops->tx.begin_read(s);
    s->deferred = true;
    return 0;
}

int bso_session_commit(struct bso_session *s)
{
    if (!s->store->cache)
        return s->ops->tx.commit(s);
    if (s->deferred) {
        s->deferred = false;
        return 0;
    }
    const int rc = s->ops->tx.commit(s);
    if (s->writing)
        settle(s, rc == 0);
    end_write(s);
    return rc;
}

void bso_session_rollback(struct bso_session *s)
{
    if (!s->store->cache) {
        s->ops->tx.rollback(s);
        return;
    }
    if (!s->deferred)
        s->ops->tx.rollback(s);
    s->deferred = false;
    forget_pending(s);
    end_write(s);
}

/* ---- loads: from the cache, else from the database (and then kept) ---- */

static void keep_only(struct bso_job *job, unsigned load)
{
    if (!(load & BSO_LOAD_TRIALS)) {
        free(job->trials);
        job->trials = NULL;
        job->n_trials = job->cap_trials = 0;
    }
    if (!(load & BSO_LOAD_ARMS)) {
        for (size_t i = 0; i < job->n_arms; i++)
            bso_arm_clear(&job->arms[i]);
        free(job->arms);
        job->arms = NULL;
        job->n_arms = 0;
    }
}

/* Reads a job from the database with every part, keeps it in the cache when that is safe, and
 * returns the parts `load` asks for. A read transaction's snapshot may predate a change the
 * cache already has: its job is kept only when the snapshot began just now, after the stamp. */
static int load_through(struct bso_session *s, const char *job_id, unsigned load,
                        struct bso_job *job)
{
    struct bso_jobcache *c = s->store->cache;
    const bool fresh = s->writing || s->deferred;
    const uint64_t stamp = bso_jobcache_stamp(c, job_id);
    int rc = ensure_tx(s);
    if (rc == 0)
        rc = s->ops->jobs.load(s, job_id, BSO_LOAD_TRIALS | BSO_LOAD_ARMS, job);
    if (rc < 0)
        return rc;
    if (fresh)
        bso_jobcache_put(c, job, stamp);
    keep_only(job, load);
    return 0;
}

void bso_session_set_scope(struct bso_session *s, const char *tenant)
{
    s->scoped = tenant != NULL;
    snprintf(s->scope, sizeof s->scope, "%s", tenant ? tenant : "");
}

/* Whether the session may see a job of this tenant. */
static bool in_scope(const struct bso_session *s, const char *tenant)
{
    return !s->scoped || strcmp(s->scope, tenant) == 0;
}

/* BSO_ENOTFOUND for a job outside the session's scope (the job is released). */
static int scope_check(struct bso_session *s, const char *job_id, struct bso_job *job)
{
    if (in_scope(s, job->spec.tenant))
        return 0;
    bso_job_clear(job);
    return bso_session_fail(s, BSO_ENOTFOUND, "no job %s", job_id);
}

static int load_any_job(struct bso_session *s, const char *job_id, unsigned load,
                        struct bso_job *job)
{
    if (!s->store->cache)
        return s->ops->jobs.load(s, job_id, load, job);
    const int hit = bso_jobcache_get(s->store->cache, job_id, load, job, 0, NULL);
    if (hit < 0)
        return bso_session_fail(s, hit, "out of memory");
    return hit == BSO_JOBCACHE_HIT ? 0 : load_through(s, job_id, load, job);
}

int bso_session_load_job(struct bso_session *s, const char *job_id, unsigned load,
                         struct bso_job *job)
{
    const int rc = load_any_job(s, job_id, load, job);
    return rc < 0 ? rc : scope_check(s, job_id, job);
}

int bso_session_load_pair(struct bso_session *s, const char *job_id, unsigned load,
                          struct bso_job *job, int64_t number, struct bso_trial *trial,
                          enum bso_missing *missing)
{
    *missing = BSO_MISSING_NONE;
    int rc = BSO_JOBCACHE_MISS;
    if (s->store->cache) {
        rc = bso_jobcache_get(s->store->cache, job_id, load, job, number, trial);
        if (rc < 0)
            return bso_session_fail(s, rc, "out of memory");
        if (rc == BSO_JOBCACHE_HIT) {
            if ((rc = scope_check(s, job_id, job)) < 0)
                *missing = BSO_MISSING_JOB;
            return rc;
        }
    }
    if (rc == BSO_JOBCACHE_MISS) {
        rc = s->store->cache ? load_through(s, job_id, load, job)
                             : s->ops->jobs.load(s, job_id, load, job);
        if (rc == 0)
            rc = scope_check(s, job_id, job);
        if (rc == BSO_ENOTFOUND)
            *missing = BSO_MISSING_JOB;
        if (rc < 0)
            return rc;
        rc = s->ops->trials.load(s, job_id, number, trial);
    } else {
        /* The cached job (filled in) lacks the trial. */
        if ((rc = scope_check(s, job_id, job)) < 0) {
            *missing = BSO_MISSING_JOB;
            return rc;
        }
        rc = bso_session_fail(s, BSO_ENOTFOUND, "no trial %lld in job %s", (long long)number,
                              job_id);
    }
    if (rc == BSO_ENOTFOUND)
        *missing = BSO_MISSING_TRIAL;
    if (rc < 0)
        bso_job_clear(job);
    return rc;
}

int bso_session_insert_job(struct bso_session *s, const struct bso_job *job)
{
    return s->ops->jobs.insert(s, job);
}

/* The next change slot for the cache (zeroed), or NULL when the session holds as many as it
 * can: the cache is then emptied at commit. */
static struct bso_jobcache_change *pending_slot(struct bso_session *s)
{
    if (s->n_pending == BSO_PENDING_MAX) {
        s->pending_overflow = true;
        return NULL;
    }
    struct bso_jobcache_change *chg = &s->pending[s->n_pending++];
    memset(chg, 0, sizeof *chg);
    return chg;
}

/* Queues a change for the cache; one that cannot be copied makes the cache forget the job. */
static void pend(struct bso_session *s, const struct bso_job *job, unsigned changed,
                 const struct bso_trial *trial, bool trial_is_new, size_t arm_index)
{
    struct bso_jobcache_change *chg = pending_slot(s);
    if (chg && bso_jobcache_change_init(chg, job, changed, trial, trial_is_new, arm_index) < 0) {
        bso_jobcache_change_clear(chg);
        chg->drop = true;
    }
}

/* When the transaction commits, the cache forgets job_id: the next request reads it afresh
 * (after a delete, a reset, or new unfit sizes). */
static void forget_on_commit(struct bso_session *s, const char *job_id)
{
    struct bso_jobcache_change *chg = s->store->cache ? pending_slot(s) : NULL;
    if (chg) {
        snprintf(chg->job_id, sizeof chg->job_id, "%s", job_id);
        chg->drop = true;
    }
}

int bso_session_save(struct bso_session *s, const struct bso_job *job, unsigned changed,
                     const struct bso_trial *trial, bool trial_is_new, size_t arm_index)
{
    const struct bso_store_ops *ops = s->ops;
    const char *id = job->spec.job_id;
    int rc = 0;
    if (changed & BSO_CHANGED_TRIAL)
        rc = ops->trials.write(s, id, trial, trial_is_new);
    /* The job's row holds its stage, minimum, RNG, last trial number and refusals: only those. */
    if (rc == 0 &&
        ((changed & BSO_CHANGED_JOB_ROW) || ((changed & BSO_CHANGED_TRIAL) && trial_is_new)))
        rc = ops->jobs.update(s, job);
    for (size_t i = 0; rc == 0 && (changed & BSO_CHANGED_ARMS) && i < job->n_arms; i++)
        rc = ops->learning.write_arm(s, id, &job->arms[i], true);
    if (rc == 0 && (changed & BSO_CHANGED_ARM) && !(changed & BSO_CHANGED_ARMS))
        rc = ops->learning.write_arm(s, id, &job->arms[arm_index], false);
    if (rc == 0 && (changed & BSO_CHANGED_ALL_STATS))
        for (size_t i = 0; rc == 0 && i < job->spec.n_batch_sizes; i++)
            rc = ops->learning.save_stat(s, job, i);
    else if (rc == 0 && (changed & BSO_CHANGED_STATS) && arm_index < job->spec.n_batch_sizes)
        rc = ops->learning.save_stat(s, job, arm_index);
    if (rc == 0 && s->store->cache)
        pend(s, job, changed, trial, trial_is_new, arm_index);
    return rc;
}

int bso_session_load_trial(struct bso_session *s, const char *job_id, int64_t number,
                           struct bso_trial *trial)
{
    const int rc = ensure_tx(s);
    return rc < 0 ? rc : s->ops->trials.load(s, job_id, number, trial);
}

int bso_session_delete_job(struct bso_session *s, const char *job_id)
{
    if (s->scoped) {
        struct bso_job job;
        const int seen = bso_session_load_job(s, job_id, 0, &job);
        if (seen < 0)
            return seen;
        bso_job_clear(&job);
    }
    const int rc = s->ops->jobs.delete(s, job_id);
    if (rc == 0)
        forget_on_commit(s, job_id);
    return rc;
}

int bso_session_reset_job(struct bso_session *s, const char *job_id)
{
    struct bso_job job;
    int rc = bso_session_load_job(s, job_id, 0, &job); /* it exists, and is the session's */
    if (rc < 0)
        return rc;
    bso_job_clear(&job);
    rc = s->ops->jobs.reset(s, job_id);
    if (rc == 0)
        forget_on_commit(s, job_id);
    return rc;
}

int bso_session_job_exists(struct bso_session *s, const char *job_id)
{
    int rc = ensure_tx(s);
    if (rc < 0 || (rc = s->ops->jobs.exists(s, job_id)) <= 0 || !s->scoped)
        return rc;
    struct bso_job job;
    rc = bso_session_load_job(s, job_id, 0, &job);
    if (rc == BSO_ENOTFOUND)
        return 0;
    if (rc == 0)
        bso_job_clear(&job);
    return rc < 0 ? rc : 1;
}

int bso_session_list_jobs(struct bso_session *s, const char *after, int64_t limit,
                          int (*fn)(void *ctx, const struct bso_job_summary *row), void *ctx)
{
    const int rc = ensure_tx(s);
    return rc < 0 ? rc : s->ops->jobs.list(s, after, limit, s->scoped ? s->scope : NULL, fn, ctx);
}

int bso_session_list_trials(struct bso_session *s, const char *job_id, int64_t after, int64_t limit,
                            int (*fn)(void *ctx, const struct bso_trial_row *row), void *ctx)
{
    const int rc = ensure_tx(s);
    return rc < 0 ? rc : s->ops->trials.list(s, job_id, after, limit, fn, ctx);
}

int bso_session_count_trials(struct bso_session *s, const char *job_id, int64_t counts[3])
{
    const int rc = ensure_tx(s);
    return rc < 0 ? rc : s->ops->trials.count(s, job_id, counts);
}

int bso_session_tally(struct bso_session *s, int64_t jobs[2], int64_t trials[3])
{
    const int rc = ensure_tx(s);
    return rc < 0 ? rc : s->ops->jobs.tally(s, jobs, trials);
}

int bso_session_ping(struct bso_session *s)
{
    const int rc = ensure_tx(s);
    return rc < 0 ? rc : s->ops->tx.ping(s);
}

bool bso_store_cache_stats(struct bso_store *store, struct bso_jobcache_stats *out)
{
    if (!store->cache)
        return false;
    bso_jobcache_stats(store->cache, out);
    return true;
}

int bso_session_save_profile(struct bso_session *s, const char *job_id,
                             const struct bso_profile_entry *e, size_t n)
{
    return s->ops->hardware.save_profile(s, job_id, e, n);
}

int bso_session_list_profile(struct bso_session *s, const char *job_id,
                             int (*fn)(void *ctx, const struct bso_profile_entry *e), void *ctx)
{
    const int rc = ensure_tx(s);
    return rc < 0 ? rc : s->ops->hardware.list_profile(s, job_id, fn, ctx);
}

int bso_session_save_power(struct bso_session *s, const char *job_id,
                           const struct bso_power_profile *p)
{
    const int rc = s->ops->hardware.save_power(s, job_id, p);
    if (rc == 0) /* the job row's power_profiled changed */
        forget_on_commit(s, job_id);
    return rc;
}

int bso_session_power_limit(struct bso_session *s, const char *job_id, int64_t batch_size,
                            double *limit_w)
{
    const int rc = ensure_tx(s);
    return rc < 0 ? rc : s->ops->hardware.power_limit(s, job_id, batch_size, limit_w);
}

int bso_session_save_origin(struct bso_session *s, const char *job_id,
                            const struct bso_job_origin *o)
{
    return s->ops->hardware.save_origin(s, job_id, o);
}

int bso_session_import_trial(struct bso_session *s, const char *job_id,
                             const struct bso_trial_row *r)
{
    return s->ops->trials.import(s, job_id, r);
}

int bso_session_import_arm(struct bso_session *s, const char *job_id, const struct bso_arm *a)
{
    return s->ops->learning.write_arm(s, job_id, a, true);
}

int bso_session_add_progress(struct bso_session *s, const char *job_id, int64_t number,
                             const struct bso_progress_point *pt)
{
    return s->ops->trials.add_progress(s, job_id, number, pt); /* trial rows are not cached */
}

int bso_session_save_data_version(struct bso_session *s, const char *job_id, const char *version)
{
    return s->ops->hardware.save_data_version(s, job_id, version);
}

int bso_session_load_data_version(struct bso_session *s, const char *job_id,
                                  struct bso_data_version *v)
{
    const int rc = ensure_tx(s);
    return rc < 0 ? rc : s->ops->hardware.load_data_version(s, job_id, v);
}

int bso_session_load_origin(struct bso_session *s, const char *job_id, struct bso_job_origin *o)
{
    const int rc = ensure_tx(s);
    return rc < 0 ? rc : s->ops->hardware.load_origin(s, job_id, o);
}

int bso_session_list_power(struct bso_session *s, const char *job_id,
                           int (*fn)(void *ctx, const struct bso_power_profile *p), void *ctx)
{
    const int rc = ensure_tx(s);
    return rc < 0 ? rc : s->ops->hardware.list_power(s, job_id, fn, ctx);
}

int bso_session_save_unfit(struct bso_session *s, const struct bso_job *job)
{
    const struct bso_job_spec *sp = &job->spec;
    int64_t sizes[BSO_MAX_BATCH_SIZES];
    size_t n = 0;
    for (size_t i = 0; i < sp->n_batch_sizes; i++)
        if (bso_spec_unfit(sp, i))
            sizes[n++] = sp->batch_sizes[i];
    char text[BSO_MAX_BATCH_SIZES * 22 + 3];
    if (n > 0 && bso_pyintlist_repr(sizes, n, text, sizeof text) < 0)
        return bso_session_fail(s, BSO_ERANGE, "unfit sizes too long");
    const int rc = s->ops->hardware.save_unfit(s, sp->job_id, n > 0 ? text : NULL);
    if (rc == 0)
        forget_on_commit(s, sp->job_id);
    return rc;
}

int bso_session_waiting_trials(struct bso_session *s, const char *before, int64_t limit,
                               int (*fn)(void *ctx, const struct bso_waiting_trial *t), void *ctx)
{
    const int rc = ensure_tx(s);
    return rc < 0 ? rc : s->ops->trials.waiting(s, before, limit, fn, ctx);
}

int bso_session_longest_run(struct bso_session *s, const char *job_id, double *seconds)
{
    const int rc = ensure_tx(s);
    return rc < 0 ? rc : s->ops->trials.longest_run(s, job_id, seconds);
}

int bso_session_token_insert(struct bso_session *s, const struct bso_token *t, const char *hash,
                             int64_t *id)
{
    return s->ops->tokens.insert(s, t, hash, id);
}

int bso_session_token_find(struct bso_session *s, const char *hash, struct bso_token *out)
{
    return s->ops->tokens.find(s, hash, out);
}

int bso_session_token_list(struct bso_session *s, const char *tenant,
                           int (*fn)(void *ctx, const struct bso_token *t), void *ctx)
{
    return s->ops->tokens.list(s, tenant, fn, ctx);
}

int bso_session_token_revoke(struct bso_session *s, int64_t id, const char *tenant,
                             int64_t *revoked)
{
    return s->ops->tokens.revoke(s, id, tenant, revoked);
}

int bso_session_token_count(struct bso_session *s, int64_t *active)
{
    return s->ops->tokens.count(s, active);
}
