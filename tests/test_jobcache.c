/* The job cache (store/jobcache.c): a server that keeps jobs in memory must decide exactly as
 * one that reads every job from the database. Two stores take the same requests, one with a
 * cache and one without; after every request the job the cached store serves from memory must
 * equal the one the other reads from its database, field by field. */
#include "helpers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bso/error.h"
#include "server/log.h"
#include "server/service.h"
#include "store/columns.h"
#include "store/jobcache.h"
#include "store/store.h"

/* The power limit a prediction carries (the power tests look at it). */
static double power_w;

static char dir[64];

static int make_dir(void **state)
{
    (void)state;
    if (make_temp_dir(dir, sizeof dir, "bso-cache") < 0)
        return -1;
    bso_log_setup(BSO_LOG_ERROR, BSO_LOG_TEXT, 2);
    return 0;
}

static int remove_dir(void **state)
{
    (void)state;
    return remove_temp_dir(dir);
}

static struct bso_store *open_store(const char *name, size_t cache_bytes)
{
    char url[160], err[512];
    snprintf(url, sizeof url, "sqlite:///%s/%s", dir, name);
    unlink(url + 10);
    const struct bso_store_options opt = {.cache_bytes = cache_bytes};
    struct bso_store *st = NULL;
    if (bso_store_open(url, &opt, &st, err, sizeof err) != 0)
        fail_msg("open %s: %s", url, err);
    return st;
}

static bool same_double(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

static void assert_same_trial(const struct bso_trial *a, const struct bso_trial *b)
{
    assert_int_equal(a->number, b->number);
    assert_int_equal(a->batch_size, b->batch_size);
    assert_int_equal(a->type, b->type);
    assert_int_equal(a->status, b->status);
    assert_true(same_double(a->time, b->time));
    assert_true(same_double(a->energy, b->energy));
    assert_int_equal(a->converged, b->converged);
}

/* Every double field a size's statistics row stores (the store's own lists, columns.h), equal in
 * x and y. */
static void assert_same_stored_fields(const struct bso_bs_stat *x, const struct bso_bs_stat *y)
{
    struct bso_bs_stat a = *x, b = *y;
    for (int k = 0; k < BSO_STAT_SUMS; k++)
        assert_true(same_double(*bso_column_stat_field(&a, bso_column_stat_sum_fields[k]),
                                *bso_column_stat_field(&b, bso_column_stat_sum_fields[k])));
    for (int k = 0; k < BSO_STAT_CHANGE; k++)
        assert_true(same_double(*bso_column_stat_field(&a, bso_column_stat_change_fields[k]),
                                *bso_column_stat_field(&b, bso_column_stat_change_fields[k])));
}

static void assert_same_job(const struct bso_job *a, const struct bso_job *b)
{
    assert_memory_equal(&a->spec, &b->spec, sizeof a->spec);
    assert_int_equal(a->stage, b->stage);
    assert_int_equal(a->has_min_cost, b->has_min_cost);
    assert_true(same_double(a->min_cost, b->min_cost));
    assert_int_equal(a->min_cost_batch_size, b->min_cost_batch_size);
    assert_int_equal(a->last_trial_number, b->last_trial_number);
    assert_int_equal(a->refusals, b->refusals);
    char ra[BSO_RNG_JSON_MAX], rb[BSO_RNG_JSON_MAX];
    bso_rng_to_json(&a->rng, ra, sizeof ra);
    bso_rng_to_json(&b->rng, rb, sizeof rb);
    assert_string_equal(ra, rb);
    for (size_t i = 0; i < a->spec.n_batch_sizes; i++) {
        const struct bso_bs_stat *x = &a->stats[i], *y = &b->stats[i];
        assert_int_equal(x->status, y->status);
        assert_int_equal(x->runs, y->runs);
        assert_int_equal(x->successes, y->successes);
        assert_same_stored_fields(x, y);
    }
    assert_int_equal(a->n_trials, b->n_trials);
    for (size_t i = 0; i < a->n_trials; i++)
        assert_same_trial(&a->trials[i], &b->trials[i]);
    assert_int_equal(a->n_arms, b->n_arms);
    for (size_t i = 0; i < a->n_arms; i++) {
        const struct bso_arm *x = &a->arms[i], *y = &b->arms[i];
        assert_int_equal(x->batch_size, y->batch_size);
        assert_true(same_double(x->param_mean, y->param_mean));
        assert_true(same_double(x->param_precision, y->param_precision));
        assert_true(same_double(x->reward_precision, y->reward_precision));
        assert_int_equal(x->num_observations, y->num_observations);
        assert_int_equal(x->n_results, y->n_results);
        assert_int_equal(x->n_recent, y->n_recent);
        for (size_t r = 0; r < x->n_recent; r++) {
            assert_int_equal(x->recent[r].trial_number, y->recent[r].trial_number);
            assert_true(same_double(x->recent[r].reward, y->recent[r].reward));
        }
    }
}

/* The pair of stores under test, and a session on each. */
struct twin {
    struct bso_store *cached, *plain;
    struct bso_session *c, *p;
};

static void twin_open(struct twin *t, size_t cache_bytes)
{
    t->cached = open_store("cached.db", cache_bytes);
    t->plain = open_store("plain.db", 0);
    assert_int_equal(bso_store_session(t->cached, &t->c), 0);
    assert_int_equal(bso_store_session(t->plain, &t->p), 0);
}

static void twin_close(struct twin *t)
{
    bso_session_release(t->c);
    bso_session_release(t->p);
    bso_store_close(t->cached);
    bso_store_close(t->plain);
}

/* Loads a job (and a trial, when number > 0) from both, in read transactions, and compares. */
static void assert_twins_agree(struct twin *t, const char *id, int64_t number)
{
    struct bso_job a, b;
    struct bso_trial ta, tb;
    enum bso_missing ma, mb;
    for (unsigned load = 0; load <= (BSO_LOAD_TRIALS | BSO_LOAD_ARMS); load++) {
        assert_int_equal(bso_session_begin_read(t->c), 0);
        assert_int_equal(bso_session_begin_read(t->p), 0);
        int ra, rb;
        if (number > 0) {
            ra = bso_session_load_pair(t->c, id, load, &a, number, &ta, &ma);
            rb = bso_session_load_pair(t->p, id, load, &b, number, &tb, &mb);
            assert_int_equal(ra, rb);
            assert_int_equal(ma, mb);
            if (ra == 0)
                assert_same_trial(&ta, &tb);
        } else {
            ra = bso_session_load_job(t->c, id, load, &a);
            rb = bso_session_load_job(t->p, id, load, &b);
            assert_int_equal(ra, rb);
        }
        bso_session_rollback(t->c);
        bso_session_rollback(t->p);
        if (ra == 0) {
            assert_same_job(&a, &b);
            bso_job_clear(&a);
            bso_job_clear(&b);
        }
    }
}

static uint64_t next_random(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static double uniform(uint64_t *s)
{
    return (double)(next_random(s) >> 11) / 9007199254740992.0;
}

/* One trial's reports until the server says stop, on both stores, comparing each decision
 * and then the job. */
static void run_trial(struct twin *t, const char *id, const struct bso_trial *tr, uint64_t *rs)
{
    const struct bso_trial_key key = {id, tr->batch_size, tr->number};
    /* Epochs to the target grow away from 512; an epoch's time with the batch size. */
    const double lg = log2((double)tr->batch_size) - 9.0;
    const int reach = 3 + (int)(lg * lg) + (int)(uniform(rs) * 3);
    const double epoch_time = 10.0 + 200.0 / (double)tr->batch_size;
    char msg[BSO_SVC_MSG_MAX];
    for (int64_t e = 1; e <= 20; e++) {
        const struct bso_report rep = {.time = epoch_time * (double)e,
                                       .energy = 250.0 * epoch_time * (double)e,
                                       .metric = e >= reach ? 0.6 : 0.1 * (double)e / reach,
                                       .current_epoch = e,
                                       .energy_source = e % 2 ? "nvml-counter" : NULL};
        struct bso_decision da, db;
        const int ra = bso_svc_report(t->c, &key, &rep, &da, msg);
        const int rb = bso_svc_report(t->p, &key, &rep, &db, msg);
        assert_int_equal(ra, rb);
        assert_twins_agree(t, id, tr->number);
        if (ra < 0)
            break;
        assert_int_equal(da.stop_train, db.stop_train);
        assert_int_equal(da.converged, db.converged);
        if (da.stop_train)
            break;
    }
}

static void predict_both(struct twin *t, const char *id, struct bso_trial *tr)
{
    struct bso_trial other;
    bool changed_a, changed_b;
    int64_t arms[BSO_MAX_BATCH_SIZES];
    size_t n_arms;
    char msg[BSO_SVC_MSG_MAX];
    const int ra = bso_svc_predict(t->c, id, tr, &changed_a, arms, &n_arms, &power_w, msg);
    const int rb = bso_svc_predict(t->p, id, &other, &changed_b, arms, &n_arms, &power_w, msg);
    assert_int_equal(ra, 0);
    assert_int_equal(rb, 0);
    assert_same_trial(tr, &other);
    assert_int_equal(changed_a, changed_b);
    assert_twins_agree(t, id, tr->number);
}

static void end_both(struct twin *t, const char *id, const struct bso_trial *tr)
{
    const struct bso_trial_key key = {id, tr->batch_size, tr->number};
    char msg[BSO_SVC_MSG_MAX];
    assert_int_equal(bso_svc_end_trial(t->c, &key, msg), bso_svc_end_trial(t->p, &key, msg));
    assert_twins_agree(t, id, tr->number);
}

static void register_both(struct twin *t, const char *id, int policy, int64_t window)
{
    struct bso_job_spec spec;
    fake_job_spec(&spec);
    spec.has_job_id = true;
    snprintf(spec.job_id, sizeof spec.job_id, "%s", id);
    spec.policy = policy;
    spec.window_size = window;
    spec.target_metric = 0.5;
    struct bso_spec_errors errs = {0};
    assert_int_equal(bso_job_spec_validate(&spec, &errs), 0);
    struct bso_job_spec copy = spec;
    bool created;
    char msg[BSO_SVC_MSG_MAX];
    assert_int_equal(bso_svc_register(t->c, &spec, BSO_POLICY_BSO, &created, NULL, msg), 0);
    assert_int_equal(bso_svc_register(t->p, &copy, BSO_POLICY_BSO, &created, NULL, msg), 0);
    assert_twins_agree(t, id, 0);
}

/* n_jobs jobs of each policy, `rounds` recurrences each, with the irregular clients a server
 * meets: trials ended without a report, several trials of one job open at once, reports on a
 * trial long after it was given, and unknown trials. */
static void drive(struct twin *t, int n_jobs, int rounds, uint64_t seed)
{
    uint64_t rs = seed;
    char ids[16][32];
    for (int j = 0; j < n_jobs; j++) {
        snprintf(ids[j], sizeof ids[j], "test-job-%d", j);
        register_both(t, ids[j], j % 2 ? BSO_POLICY_ZEUS : BSO_POLICY_BSO, j % 3 ? 5 : 0);
    }
    struct bso_trial held[16] = {0}; /* a trial per job left open for a while */
    for (int r = 0; r < rounds; r++)
        for (int j = 0; j < n_jobs; j++) {
            struct bso_trial tr;
            predict_both(t, ids[j], &tr);
            const double u = uniform(&rs);
            if (u < 0.1) {
                end_both(t, ids[j], &tr); /* gave up before the first report */
                continue;
            }
            if (u < 0.2 && held[j].number == 0) {
                held[j] = tr; /* reported on later, after newer trials */
                continue;
            }
            run_trial(t, ids[j], &tr, &rs);
            end_both(t, ids[j], &tr);
            if (held[j].number && uniform(&rs) < 0.3) {
                run_trial(t, ids[j], &held[j], &rs);
                end_both(t, ids[j], &held[j]);
                held[j].number = 0;
            }
            assert_twins_agree(t, ids[j], tr.number + 1000); /* unknown trial */
        }
}

static void test_cache_mirrors_database(void **state)
{
    (void)state;
    struct twin t;
    twin_open(&t, 8u << 20);
    drive(&t, 4, 40, 0x9e3779b97f4a7c15ULL);
    struct bso_jobcache_stats cs;
    assert_true(bso_store_cache_stats(t.cached, &cs));
    assert_true(cs.hits > cs.misses); /* the comparisons above were served from memory */
    assert_int_equal(cs.evictions, 0);
    assert_false(bso_store_cache_stats(t.plain, &cs));
    twin_close(&t);
}

/* A bso job that never reaches its target: after two passes over its sizes each prediction is
 * refused (BSO_EPRUNED), and the refusals it counts, written on that error path, are the same
 * in the cache and in the database, until the next pass opens and a run resets them. */
static void test_refusals_mirror_database(void **state)
{
    (void)state;
    struct twin t;
    twin_open(&t, 8u << 20);
    register_both(&t, "test-never", BSO_POLICY_BSO, 0);
    char msg[BSO_SVC_MSG_MAX];
    int refused = 0, runs = 0;
    while (refused < 3 && runs < 100) {
        struct bso_trial ta, tb;
        bool changed;
        int64_t arms[BSO_MAX_BATCH_SIZES];
        size_t n_arms;
        const int ra =
            bso_svc_predict(t.c, "test-never", &ta, &changed, arms, &n_arms, &power_w, msg);
        const int rb =
            bso_svc_predict(t.p, "test-never", &tb, &changed, arms, &n_arms, &power_w, msg);
        assert_int_equal(ra, rb);
        assert_twins_agree(&t, "test-never", 0);
        if (ra == BSO_EPRUNED) {
            refused++;
            continue;
        }
        assert_int_equal(ra, 0);
        const struct bso_trial_key key = {"test-never", ta.batch_size, ta.number};
        for (int64_t e = 1;; e++) { /* never reaches 0.5: runs to max_epochs */
            const struct bso_report rep = {.time = 10.0 * (double)e,
                                           .energy = 100.0 * (double)e,
                                           .metric = 0.1,
                                           .current_epoch = e};
            struct bso_decision da, db;
            assert_int_equal(bso_svc_report(t.c, &key, &rep, &da, msg), 0);
            assert_int_equal(bso_svc_report(t.p, &key, &rep, &db, msg), 0);
            assert_int_equal(da.stop_train, db.stop_train);
            if (da.stop_train)
                break;
        }
        assert_twins_agree(&t, "test-never", ta.number);
        runs++;
    }
    assert_int_equal(refused, 3); /* one after pass 2; two after pass 3, counted since */
    bso_session_begin_read(t.p);
    struct bso_job job;
    assert_int_equal(bso_session_load_job(t.p, "test-never", 0, &job), 0);
    bso_session_rollback(t.p);
    assert_int_equal(job.refusals, 2);
    bso_job_clear(&job);
    twin_close(&t);
}

/* Every statistic the bso policy keeps of a size survives the database: saved from one
 * session, read back by a store that keeps nothing in memory. */
static void test_size_statistics_round_trip(void **state)
{
    (void)state;
    struct twin t;
    twin_open(&t, 0);
    register_both(&t, "test-stats", BSO_POLICY_BSO, 0);
    struct bso_job job, back;
    assert_int_equal(bso_session_begin_write(t.p, "test-stats"), 0);
    assert_int_equal(bso_session_load_job(t.p, "test-stats", 0, &job), 0);
    struct bso_bs_stat *s = &job.stats[1];
    for (int k = 0; k < BSO_STAT_CHANGE; k++) /* each column a value of its own */
        *bso_column_stat_field(s, bso_column_stat_change_fields[k]) = 1.25 + (double)k;
    assert_int_equal(bso_session_save(t.p, &job, BSO_CHANGED_ALL_STATS, NULL, false, 0), 0);
    assert_int_equal(bso_session_commit(t.p), 0);
    assert_int_equal(bso_session_begin_read(t.p), 0);
    assert_int_equal(bso_session_load_job(t.p, "test-stats", 0, &back), 0);
    bso_session_rollback(t.p);
    struct bso_bs_stat *b = &back.stats[1];
    for (int k = 0; k < BSO_STAT_CHANGE; k++)
        assert_true(same_double(*bso_column_stat_field(b, bso_column_stat_change_fields[k]),
                                1.25 + (double)k));
    bso_job_clear(&job);
    bso_job_clear(&back);
    twin_close(&t);
}

static void test_small_cache_evicts_and_stays_right(void **state)
{
    (void)state;
    struct twin t;
    twin_open(&t, 12 * 1024); /* room for a few jobs only */
    drive(&t, 12, 12, 7);
    struct bso_jobcache_stats cs;
    assert_true(bso_store_cache_stats(t.cached, &cs));
    assert_true(cs.evictions > 0);
    assert_true(cs.bytes <= 12 * 1024);
    assert_true(cs.hits > 0);
    twin_close(&t);
}

static void test_deleted_job_is_forgotten(void **state)
{
    (void)state;
    struct twin t;
    twin_open(&t, 1u << 20);
    register_both(&t, "test-gone", BSO_POLICY_BSO, 0);
    struct bso_trial tr;
    predict_both(&t, "test-gone", &tr);
    char msg[BSO_SVC_MSG_MAX];
    assert_int_equal(bso_svc_delete(t.c, "test-gone", msg), 0);
    assert_int_equal(bso_svc_delete(t.p, "test-gone", msg), 0);
    assert_twins_agree(&t, "test-gone", 0);
    struct bso_job job;
    assert_int_equal(bso_session_load_job(t.c, "test-gone", 0, &job), BSO_ENOTFOUND);
    /* Registered again: a new job, not the cached old one. */
    register_both(&t, "test-gone", BSO_POLICY_BSO, 0);
    assert_int_equal(bso_session_load_job(t.c, "test-gone", 0, &job), 0);
    assert_int_equal(job.last_trial_number, 0);
    bso_job_clear(&job);
    twin_close(&t);
}

static void test_stale_read_is_not_kept(void **state)
{
    (void)state;
    struct bso_jobcache *c = bso_jobcache_new(1u << 20);
    assert_non_null(c);
    struct bso_job_spec spec;
    fake_job_spec(&spec);
    spec.has_job_id = true;
    snprintf(spec.job_id, sizeof spec.job_id, "test-stale");
    struct bso_job job, out;
    start_job(&job, &spec);
    /* A reader took its stamp, then a writer's change went by: its copy is not kept. */
    const uint64_t stamp = bso_jobcache_stamp(c, "test-stale");
    bso_jobcache_drop(c, "test-stale");
    bso_jobcache_put(c, &job, stamp);
    assert_int_equal(bso_jobcache_get(c, "test-stale", 0, &out, 0, NULL), BSO_JOBCACHE_MISS);
    /* Read after the change: kept, and served. */
    bso_jobcache_put(c, &job, bso_jobcache_stamp(c, "test-stale"));
    assert_int_equal(bso_jobcache_get(c, "test-stale", 0, &out, 0, NULL), BSO_JOBCACHE_HIT);
    assert_string_equal(out.spec.job_id, "test-stale");
    bso_job_clear(&out);
    /* A job in pruning has all its trials in memory: an unknown one is known to be absent. */
    struct bso_trial tr;
    assert_int_equal(bso_jobcache_get(c, "test-stale", 0, &out, 5, &tr), BSO_JOBCACHE_NO_TRIAL);
    bso_job_clear(&out);
    struct bso_jobcache_stats cs;
    bso_jobcache_stats(c, &cs);
    assert_int_equal(cs.puts, 1);
    assert_int_equal(cs.jobs, 1);
    bso_job_clear(&job);
    bso_jobcache_free(c);
    bso_jobcache_free(NULL);
}

static void test_one_server_per_database(void **state)
{
    (void)state;
    struct bso_store *first = open_store("owned.db", 1u << 20);
    char url[160], err[512];
    snprintf(url, sizeof url, "sqlite:///%s/owned.db", dir);
    struct bso_store *second = NULL;
    assert_int_equal(bso_store_open(url, NULL, &second, err, sizeof err), BSO_ESTATE);
    assert_non_null(strstr(err, "in use by another bso-server"));
    assert_null(second);
    bso_store_close(first);
    assert_int_equal(bso_store_open(url, NULL, &second, err, sizeof err), 0);
    bso_store_close(second);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cache_mirrors_database),
        cmocka_unit_test(test_size_statistics_round_trip),
        cmocka_unit_test(test_refusals_mirror_database),
        cmocka_unit_test(test_small_cache_evicts_and_stays_right),
        cmocka_unit_test(test_deleted_job_is_forgotten),
        cmocka_unit_test(test_stale_read_is_not_kept),
        cmocka_unit_test(test_one_server_per_database),
    };
    return cmocka_run_group_tests(tests, make_dir, remove_dir);
}
