/* Backend selection by URL, session pooling and dispatch; see store.h. */
#include "store/store_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bso/error.h"

struct bso_store {
    const struct bso_store_ops *ops;
    void *backend;
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
        snprintf(err, errcap,
                 "unsupported database URL '%s': use sqlite:///relative.db, "
                 "sqlite:////absolute/path.db or sqlite:///:memory:",
                 url ? url : "");
        return BSO_EINVAL;
    }
    struct bso_store *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(err, errcap, "out of memory");
        return BSO_ENOMEM;
    }
    s->ops = ops;
    int rc = ops->open(target, opt, &s->backend, err, errcap);
    if (rc < 0) {
        free(s);
        return rc;
    }
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->returned, NULL);
    s->session_limit = ops->session_limit(s->backend);
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
        store->ops->session_free(s);
    }
    store->ops->close(store->backend);
    pthread_cond_destroy(&store->returned);
    pthread_mutex_destroy(&store->lock);
    free(store);
}

const char *bso_store_backend(const struct bso_store *store)
{
    return store->ops->name;
}

int bso_store_schema_version(const struct bso_store *store)
{
    return store->ops->schema_version(store->backend);
}

const char *bso_store_migrations_sql(const char *url)
{
    const char *target;
    const struct bso_store_ops *ops = url ? pick(url, &target) : NULL;
    return ops ? ops->migrations_sql() : NULL;
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
        s = store->ops->session_new(store->backend, err, sizeof err);
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

int bso_session_begin_write(struct bso_session *s, const char *job_id)
{
    return s->ops->begin_write(s, job_id);
}

int bso_session_begin_read(struct bso_session *s)
{
    return s->ops->begin_read(s);
}

int bso_session_commit(struct bso_session *s)
{
    return s->ops->commit(s);
}

void bso_session_rollback(struct bso_session *s)
{
    s->ops->rollback(s);
}

int bso_session_load_job(struct bso_session *s, const char *job_id, unsigned load,
                         struct bso_job *job)
{
    return s->ops->load_job(s, job_id, load, job);
}

int bso_session_insert_job(struct bso_session *s, const struct bso_job *job)
{
    return s->ops->insert_job(s, job);
}

int bso_session_save(struct bso_session *s, const struct bso_job *job, unsigned changed,
                     const struct bso_trial *trial, bool trial_is_new, size_t arm_index)
{
    return s->ops->save(s, job, changed, trial, trial_is_new, arm_index);
}

int bso_session_load_trial(struct bso_session *s, const char *job_id, int64_t number,
                           struct bso_trial *trial)
{
    return s->ops->load_trial(s, job_id, number, trial);
}

int bso_session_delete_job(struct bso_session *s, const char *job_id)
{
    return s->ops->delete_job(s, job_id);
}

int bso_session_job_exists(struct bso_session *s, const char *job_id)
{
    return s->ops->job_exists(s, job_id);
}

int bso_session_list_jobs(struct bso_session *s, const char *after, int64_t limit,
                          int (*fn)(void *ctx, const struct bso_job_summary *row), void *ctx)
{
    return s->ops->list_jobs(s, after, limit, fn, ctx);
}

int bso_session_list_trials(struct bso_session *s, const char *job_id, int64_t after, int64_t limit,
                            int (*fn)(void *ctx, const struct bso_trial_row *row), void *ctx)
{
    return s->ops->list_trials(s, job_id, after, limit, fn, ctx);
}

int bso_session_count_trials(struct bso_session *s, const char *job_id, int64_t counts[3])
{
    return s->ops->count_trials(s, job_id, counts);
}

int bso_session_ping(struct bso_session *s)
{
    return s->ops->ping(s);
}
