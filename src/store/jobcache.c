/* The job cache; see jobcache.h. */
#include "store/jobcache.h"

#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bso/error.h"
#include "store/columns.h"
#include "store/store.h"

/* Trials an image keeps once its job has left pruning: clients report on the trials they were
 * just given, and an older one is read from the database. */
#define RECENT_TRIALS 8
/* Change counters, by job id hash: a job read from the database is kept only if its stripe did
 * not move while it was read. */
#define STRIPES 64
/* What malloc adds to each block, for the budget. */
#define BLOCK_OVERHEAD 16

/* An image stores the spec without its 256-entry batch size array: the part before it, the
 * sizes it uses, and the part after it. */
#define SPEC_HEAD offsetof(struct bso_job_spec, batch_sizes)
#define SPEC_TAIL_AT offsetof(struct bso_job_spec, n_batch_sizes)
#define SPEC_TAIL (sizeof(struct bso_job_spec) - SPEC_TAIL_AT)

struct image {
    struct image *hnext;       /* hash chain */
    struct image *prev, *next; /* recency list, most recent first */
    uint64_t hash;
    size_t bytes;
    unsigned char spec_head[SPEC_HEAD];
    unsigned char spec_tail[SPEC_TAIL];
    int64_t *sizes;
    size_t n_sizes;
    struct bso_jobcache_row row;
    struct bso_bs_stat *stats; /* n_sizes of them for the bso policy, else NULL */
    struct bso_trial *trials;  /* ascending number */
    size_t n_trials, cap_trials;
    bool all_trials; /* trials holds every trial of the job (while it is pruning) */
    struct bso_arm *arms;
    size_t n_arms;
};

struct bso_jobcache {
    pthread_mutex_t lock;
    size_t budget, bytes, n_jobs;
    struct image **buckets;
    size_t n_buckets; /* a power of two */
    struct image *newest, *oldest;
    uint64_t stripes[STRIPES];
    struct bso_jobcache_stats counters;
};

static uint64_t hash_id(const char *id)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)id; *p; p++)
        h = (h ^ *p) * 1099511628211ULL;
    return h;
}

static const char *image_id(const struct image *img)
{
    return (const char *)img->spec_head + offsetof(struct bso_job_spec, job_id);
}

/* SQLite stores a NaN as NULL, which reads back as 0.0: the image keeps what a load returns. */
static double stored(double x)
{
    return isnan(x) ? 0.0 : x;
}

static void image_free(struct image *img)
{
    if (!img)
        return;
    for (size_t i = 0; i < img->n_arms; i++)
        bso_arm_clear(&img->arms[i]);
    free(img->arms);
    free(img->trials);
    free(img->stats);
    free(img->sizes);
    free(img);
}

static size_t image_bytes(const struct image *img)
{
    size_t b = sizeof *img + BLOCK_OVERHEAD;
    b += img->n_sizes * sizeof *img->sizes + BLOCK_OVERHEAD;
    if (img->stats)
        b += img->n_sizes * sizeof *img->stats + BLOCK_OVERHEAD;
    b += img->cap_trials * sizeof *img->trials + BLOCK_OVERHEAD;
    b += img->n_arms * sizeof *img->arms + BLOCK_OVERHEAD;
    for (size_t i = 0; i < img->n_arms; i++)
        b += img->arms[i].cap_recent * sizeof *img->arms[i].recent + BLOCK_OVERHEAD;
    return b;
}

static void store_trial(struct bso_trial *dst, const struct bso_trial *src)
{
    *dst = *src;
    dst->energy_source[0] = '\0'; /* not read back by a load */
    if (dst->status == BSO_TRIAL_SUCCEEDED) {
        dst->time = stored(dst->time);
        dst->energy = stored(dst->energy);
    } else {
        dst->time = dst->energy = 0.0;
        dst->converged = false;
    }
}

/* The statistics column at offset `at` of b as the database gives it back. */
static void round_field(struct bso_bs_stat *b, size_t at)
{
    double *f = bso_column_stat_field(b, at);
    *f = stored(*f);
}

static void store_stat(struct bso_bs_stat *dst, const struct bso_bs_stat *src)
{
    *dst = *src;
    /* The statistics row's columns, as the database keeps them. */
    for (int k = 0; k < BSO_STAT_SUMS; k++)
        round_field(dst, bso_column_stat_sum_fields[k]);
    for (int k = 0; k < BSO_STAT_CHANGE; k++)
        round_field(dst, bso_column_stat_change_fields[k]);
}

static int store_arm(struct bso_arm *dst, const struct bso_arm *src)
{
    if (bso_arm_copy(dst, src) < 0)
        return BSO_ENOMEM;
    dst->param_mean = stored(dst->param_mean);
    dst->param_precision = stored(dst->param_precision);
    dst->reward_precision = stored(dst->reward_precision);
    return 0;
}

/* Deep copies of n arms; NULL with nothing allocated on failure (or when n is 0). */
static struct bso_arm *copy_arms(const struct bso_arm *src, size_t n)
{
    struct bso_arm *a = n ? calloc(n, sizeof *a) : NULL;
    if (!a)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (store_arm(&a[i], &src[i]) < 0) {
            while (i-- > 0)
                bso_arm_clear(&a[i]);
            free(a);
            return NULL;
        }
    return a;
}

static struct bso_jobcache_row row_of(const struct bso_job *job)
{
    return (struct bso_jobcache_row){
        job->stage, job->has_min_cost,      job->min_cost, job->min_cost_batch_size,
        job->rng,   job->last_trial_number, job->refusals};
}

/* The row as the database holds it once written. */
static struct bso_jobcache_row stored_row(struct bso_jobcache_row r)
{
    r.min_cost = r.has_min_cost ? stored(r.min_cost) : 0.0;
    return r;
}

/* An image of a job loaded with every part. */
static struct image *image_from_job(const struct bso_job *job)
{
    struct image *img = calloc(1, sizeof *img);
    if (!img)
        return NULL;
    const struct bso_job_spec *sp = &job->spec;
    memcpy(img->spec_head, sp, SPEC_HEAD);
    memcpy(img->spec_tail, (const unsigned char *)sp + SPEC_TAIL_AT, SPEC_TAIL);
    img->n_sizes = sp->n_batch_sizes;
    img->sizes = malloc(img->n_sizes * sizeof *img->sizes + 1);
    if (!img->sizes)
        goto oom;
    memcpy(img->sizes, sp->batch_sizes, img->n_sizes * sizeof *img->sizes);
    img->row = stored_row(row_of(job));
    if (sp->policy == BSO_POLICY_BSO) {
        img->stats = malloc(img->n_sizes * sizeof *img->stats + 1);
        if (!img->stats)
            goto oom;
        for (size_t i = 0; i < img->n_sizes; i++)
            store_stat(&img->stats[i], &job->stats[i]);
    }
    img->all_trials = job->stage == BSO_STAGE_PRUNING;
    if (img->all_trials && job->n_trials) {
        img->trials = malloc(job->n_trials * sizeof *img->trials);
        if (!img->trials)
            goto oom;
        for (size_t i = 0; i < job->n_trials; i++)
            store_trial(&img->trials[i], &job->trials[i]);
        img->n_trials = img->cap_trials = job->n_trials;
    }
    if (job->stage == BSO_STAGE_MAB && job->n_arms) {
        if (!(img->arms = copy_arms(job->arms, job->n_arms)))
            goto oom;
        img->n_arms = job->n_arms;
    }
    img->hash = hash_id(sp->job_id);
    img->bytes = image_bytes(img);
    return img;
oom:
    image_free(img);
    return NULL;
}

/* The job as a load with `load` returns it. */
static int copy_out(const struct image *img, unsigned load, struct bso_job *job)
{
    bso_job_reset(job);
    struct bso_job_spec *sp = &job->spec;
    memcpy(sp, img->spec_head, SPEC_HEAD);
    memcpy((unsigned char *)sp + SPEC_TAIL_AT, img->spec_tail, SPEC_TAIL);
    memcpy(sp->batch_sizes, img->sizes, img->n_sizes * sizeof *img->sizes);
    const struct bso_jobcache_row *r = &img->row;
    job->stage = r->stage;
    job->has_min_cost = r->has_min_cost;
    job->min_cost = r->min_cost;
    job->min_cost_batch_size = r->min_cost_batch_size;
    job->rng = r->rng;
    job->last_trial_number = r->last_trial_number;
    job->refusals = r->refusals;
    if (img->stats)
        memcpy(job->stats, img->stats, img->n_sizes * sizeof *img->stats);
    else
        bso_job_clear_stats(job);
    if ((load & BSO_LOAD_TRIALS) && img->row.stage == BSO_STAGE_PRUNING && img->n_trials) {
        job->trials = malloc(img->n_trials * sizeof *job->trials);
        if (!job->trials)
            return BSO_ENOMEM;
        memcpy(job->trials, img->trials, img->n_trials * sizeof *job->trials);
        job->n_trials = job->cap_trials = img->n_trials;
    }
    if ((load & BSO_LOAD_ARMS) && img->row.stage == BSO_STAGE_MAB && img->n_arms) {
        if (!(job->arms = copy_arms(img->arms, img->n_arms))) {
            bso_job_clear(job);
            return BSO_ENOMEM;
        }
        job->n_arms = img->n_arms;
    }
    return 0;
}

static struct bso_trial *image_trial(struct image *img, int64_t number)
{
    for (size_t i = img->n_trials; i-- > 0;)
        if (img->trials[i].number == number)
            return &img->trials[i];
    return NULL;
}

/* ---- the table and the recency list (the caller holds the lock) ---- */

static struct image **slot(struct bso_jobcache *c, const char *id, uint64_t h)
{
    struct image **p = &c->buckets[h & (c->n_buckets - 1)];
    while (*p && !((*p)->hash == h && strcmp(image_id(*p), id) == 0))
        p = &(*p)->hnext;
    return p;
}

static void unlink_recency(struct bso_jobcache *c, struct image *img)
{
    *(img->prev ? &img->prev->next : &c->newest) = img->next;
    *(img->next ? &img->next->prev : &c->oldest) = img->prev;
    img->prev = img->next = NULL;
}

static void push_newest(struct bso_jobcache *c, struct image *img)
{
    img->prev = NULL;
    img->next = c->newest;
    *(c->newest ? &c->newest->prev : &c->oldest) = img;
    c->newest = img;
}

static void remove_image(struct bso_jobcache *c, struct image *img)
{
    struct image **p = slot(c, image_id(img), img->hash);
    *p = img->hnext;
    unlink_recency(c, img);
    c->bytes -= img->bytes;
    c->n_jobs--;
    image_free(img);
}

static void grow_table(struct bso_jobcache *c)
{
    const size_t n = c->n_buckets * 2;
    struct image **b = calloc(n, sizeof *b);
    if (!b)
        return; /* longer chains, still correct */
    for (size_t i = 0; i < c->n_buckets; i++)
        for (struct image *img = c->buckets[i], *next; img; img = next) {
            next = img->hnext;
            img->hnext = b[img->hash & (n - 1)];
            b[img->hash & (n - 1)] = img;
        }
    free(c->buckets);
    c->buckets = b;
    c->n_buckets = n;
}

static void evict(struct bso_jobcache *c)
{
    while (c->bytes > c->budget && c->oldest) {
        remove_image(c, c->oldest);
        c->counters.evictions++;
    }
}

static void resized(struct bso_jobcache *c, struct image *img)
{
    c->bytes -= img->bytes;
    img->bytes = image_bytes(img);
    c->bytes += img->bytes;
}

/* ---- public ---- */

struct bso_jobcache *bso_jobcache_new(size_t budget_bytes)
{
    struct bso_jobcache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->n_buckets = 64;
    c->buckets = calloc(c->n_buckets, sizeof *c->buckets);
    if (!c->buckets) {
        free(c);
        return NULL;
    }
    c->budget = budget_bytes;
    pthread_mutex_init(&c->lock, NULL);
    return c;
}

void bso_jobcache_free(struct bso_jobcache *c)
{
    if (!c)
        return;
    while (c->oldest)
        remove_image(c, c->oldest);
    free(c->buckets);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

int bso_jobcache_get(struct bso_jobcache *c, const char *job_id, unsigned load, struct bso_job *job,
                     int64_t number, struct bso_trial *trial)
{
    pthread_mutex_lock(&c->lock);
    struct image *img = *slot(c, job_id, hash_id(job_id));
    int hit = img ? BSO_JOBCACHE_HIT : BSO_JOBCACHE_MISS;
    if (img && number > 0) {
        const struct bso_trial *t = image_trial(img, number);
        if (t)
            *trial = *t;
        else
            hit = img->all_trials ? BSO_JOBCACHE_NO_TRIAL : BSO_JOBCACHE_MISS;
    }
    if (hit != BSO_JOBCACHE_MISS) {
        const int rc = copy_out(img, load, job);
        if (rc < 0) {
            pthread_mutex_unlock(&c->lock);
            return rc;
        }
        unlink_recency(c, img);
        push_newest(c, img);
        c->counters.hits++;
    } else {
        c->counters.misses++;
    }
    pthread_mutex_unlock(&c->lock);
    return hit;
}

uint64_t bso_jobcache_stamp(struct bso_jobcache *c, const char *job_id)
{
    pthread_mutex_lock(&c->lock);
    const uint64_t v = c->stripes[hash_id(job_id) % STRIPES];
    pthread_mutex_unlock(&c->lock);
    return v;
}

void bso_jobcache_put(struct bso_jobcache *c, const struct bso_job *job, uint64_t stamp)
{
    struct image *img = image_from_job(job);
    if (!img)
        return;
    pthread_mutex_lock(&c->lock);
    struct image **p = slot(c, job->spec.job_id, img->hash);
    /* Kept unless a change went by while it was read, or it would crowd out many others. */
    if (*p || c->stripes[img->hash % STRIPES] != stamp || img->bytes > c->budget / 4) {
        pthread_mutex_unlock(&c->lock);
        image_free(img);
        return;
    }
    *p = img;
    push_newest(c, img);
    c->bytes += img->bytes;
    c->counters.puts++;
    if (++c->n_jobs > c->n_buckets)
        grow_table(c);
    evict(c);
    pthread_mutex_unlock(&c->lock);
}

/* A committed write of a trial, as the trial table then holds it. */
static int apply_trial(struct image *img, const struct bso_trial *src, bool is_new)
{
    struct bso_trial t;
    store_trial(&t, src);
    if (!is_new) {
        struct bso_trial *have = image_trial(img, t.number);
        if (have)
            *have = t;
        return 0; /* an older trial the image does not keep */
    }
    if (img->n_trials == img->cap_trials) {
        const size_t cap = img->cap_trials ? img->cap_trials * 2 : 4;
        struct bso_trial *g = realloc(img->trials, cap * sizeof *g);
        if (!g)
            return BSO_ENOMEM;
        img->trials = g;
        img->cap_trials = cap;
    }
    size_t at = img->n_trials; /* numbers only grow, but keep the order whatever comes */
    while (at > 0 && img->trials[at - 1].number > t.number)
        at--;
    memmove(&img->trials[at + 1], &img->trials[at], (img->n_trials - at) * sizeof t);
    img->trials[at] = t;
    img->n_trials++;
    return 0;
}

/* Once a job leaves pruning its image keeps only its most recent trials. */
static void trim_trials(struct image *img)
{
    if (img->all_trials || img->n_trials <= RECENT_TRIALS)
        return;
    const size_t drop = img->n_trials - RECENT_TRIALS;
    memmove(img->trials, img->trials + drop, RECENT_TRIALS * sizeof *img->trials);
    img->n_trials = RECENT_TRIALS;
}

/* Mirrors the backend's save (sqlite.c be_save): the same parts, under the same conditions. */
static int apply_change(struct image *img, const struct bso_jobcache_change *chg)
{
    const unsigned ch = chg->changed;
    if ((ch & BSO_CHANGED_TRIAL) && apply_trial(img, &chg->trial, chg->trial_is_new) < 0)
        return BSO_ENOMEM;
    if ((ch & BSO_CHANGED_JOB_ROW) || ((ch & BSO_CHANGED_TRIAL) && chg->trial_is_new)) {
        img->row = stored_row(chg->row);
        if (img->row.stage == BSO_STAGE_MAB)
            img->all_trials = false;
    }
    trim_trials(img);
    if (ch & BSO_CHANGED_ARMS) {
        struct bso_arm *a = copy_arms(chg->arms, chg->n_arms);
        if (chg->n_arms && !a)
            return BSO_ENOMEM;
        for (size_t i = 0; i < img->n_arms; i++)
            bso_arm_clear(&img->arms[i]);
        free(img->arms);
        img->arms = a;
        img->n_arms = chg->n_arms;
    } else if ((ch & BSO_CHANGED_ARM) && chg->n_arms == 1) {
        size_t i = 0;
        while (i < img->n_arms && img->arms[i].batch_size != chg->arms[0].batch_size)
            i++;
        struct bso_arm a;
        if (i == img->n_arms || store_arm(&a, &chg->arms[0]) < 0)
            return BSO_ENOMEM; /* not as the database has it: forget the job */
        bso_arm_clear(&img->arms[i]);
        img->arms[i] = a;
    }
    if (ch & BSO_CHANGED_ALL_STATS)
        return BSO_ESTATE; /* rare (the job changed): the next read loads every size afresh */
    if ((ch & BSO_CHANGED_STATS) && img->stats && chg->stat_index < img->n_sizes)
        store_stat(&img->stats[chg->stat_index], &chg->stat);
    return 0;
}

void bso_jobcache_apply(struct bso_jobcache *c, const struct bso_jobcache_change *chg)
{
    const uint64_t h = hash_id(chg->job_id);
    pthread_mutex_lock(&c->lock);
    c->stripes[h % STRIPES]++;
    struct image *img = *slot(c, chg->job_id, h);
    if (img) {
        if (chg->drop || apply_change(img, chg) < 0) {
            remove_image(c, img);
        } else {
            resized(c, img);
            evict(c);
        }
    }
    pthread_mutex_unlock(&c->lock);
}

void bso_jobcache_drop(struct bso_jobcache *c, const char *job_id)
{
    struct bso_jobcache_change chg = {.drop = true};
    snprintf(chg.job_id, sizeof chg.job_id, "%s", job_id);
    bso_jobcache_apply(c, &chg);
}

void bso_jobcache_clear(struct bso_jobcache *c)
{
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < STRIPES; i++)
        c->stripes[i]++;
    while (c->oldest)
        remove_image(c, c->oldest);
    pthread_mutex_unlock(&c->lock);
}

void bso_jobcache_stats(struct bso_jobcache *c, struct bso_jobcache_stats *out)
{
    pthread_mutex_lock(&c->lock);
    *out = c->counters;
    out->jobs = c->n_jobs;
    out->bytes = c->bytes;
    pthread_mutex_unlock(&c->lock);
}

int bso_jobcache_change_init(struct bso_jobcache_change *chg, const struct bso_job *job,
                             unsigned changed, const struct bso_trial *trial, bool trial_is_new,
                             size_t arm_index)
{
    memset(chg, 0, sizeof *chg);
    snprintf(chg->job_id, sizeof chg->job_id, "%s", job->spec.job_id);
    chg->changed = changed;
    chg->row = row_of(job);
    if ((changed & BSO_CHANGED_TRIAL) && trial) {
        chg->trial = *trial;
        chg->trial_is_new = trial_is_new;
    }
    if (changed & BSO_CHANGED_ARMS) {
        if (job->n_arms && !(chg->arms = copy_arms(job->arms, job->n_arms)))
            return BSO_ENOMEM;
        chg->n_arms = job->n_arms;
    } else if ((changed & BSO_CHANGED_ARM) && arm_index < job->n_arms) {
        if (!(chg->arms = copy_arms(&job->arms[arm_index], 1)))
            return BSO_ENOMEM;
        chg->n_arms = 1;
    }
    if ((changed & BSO_CHANGED_STATS) && arm_index < job->spec.n_batch_sizes) {
        chg->stat_index = arm_index;
        chg->stat = job->stats[arm_index];
    } else {
        chg->stat_index = SIZE_MAX;
    }
    return 0;
}

void bso_jobcache_change_clear(struct bso_jobcache_change *chg)
{
    if (!chg)
        return;
    for (size_t i = 0; i < chg->n_arms; i++)
        bso_arm_clear(&chg->arms[i]);
    free(chg->arms);
    chg->arms = NULL;
    chg->n_arms = 0;
}
