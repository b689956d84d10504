/* The service over the SQLite store: Zeus's messages, persistence, migrations, and the golden
 * scenario with the store closed and reopened (a server restart) along the way. */
#include "helpers.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bso/error.h"
#include "server/log.h"
#include "server/service.h"
#include "server/sweeper.h"
#include "sim/scenario_g.h"
#include "store/store.h"

/* The power limit a prediction carries (the power tests look at it). */
static double power_w;

static char dir[64];
static char url[128];

static int make_dir(void **state)
{
    (void)state;
    if (make_temp_dir(dir, sizeof dir, "bso-test") < 0)
        return -1;
    snprintf(url, sizeof url, "sqlite:///%s/bso.db", dir);
    bso_log_setup(BSO_LOG_ERROR, BSO_LOG_TEXT, 2);
    return 0;
}

static int remove_dir(void **state)
{
    (void)state;
    return remove_temp_dir(dir);
}

static struct bso_store *open_store(const char *u)
{
    struct bso_store *st = NULL;
    char err[512];
    int rc = bso_store_open(u, NULL, &st, err, sizeof err);
    if (rc != 0)
        fail_msg("open %s: %s", u, err);
    return st;
}

static struct bso_session *session(struct bso_store *st)
{
    struct bso_session *s;
    assert_int_equal(bso_store_session(st, &s), 0);
    return s;
}

/* Registers the fake job (Zeus policy) through the service and dispatches its first trial. */
static void register_fake_job(struct bso_session *s, struct bso_job_spec *spec,
                              struct bso_trial *first)
{
    struct bso_spec_errors errs = {0};
    char msg[BSO_SVC_MSG_MAX];
    bool created, switched;
    fake_job_spec(spec);
    assert_int_equal(bso_job_spec_validate(spec, &errs), 0);
    assert_int_equal(bso_svc_register(s, spec, BSO_POLICY_ZEUS, &created, NULL, msg), 0);
    assert_true(created);
    assert_int_equal(bso_svc_predict(s, spec->job_id, first, &switched, NULL, NULL, &power_w, msg),
                     0);
}

/* Counts a trial's stored progress points (trial_row's progress). */
static int count_points(void *ctx, const struct bso_trial_row *row)
{
    size_t *n = ctx;
    *n = 0;
    for (const char *p = row->progress; p && (p = strstr(p, "[")) != NULL; p++)
        (*n)++;
    if (*n > 0)
        (*n)--; /* the outer array */
    return 0;
}

static size_t points_of_first_trial(struct bso_session *s, const char *job_id)
{
    size_t n = 0;
    assert_int_equal(bso_session_begin_read(s), 0);
    assert_int_equal(bso_session_list_trials(s, job_id, 0, 1, count_points, &n), 0);
    bso_session_rollback(s);
    return n;
}

/* A report with progress appends one point per epoch while the run lasts, at most
 * BSO_PROGRESS_MAX; repeats and reports without it add nothing. */
static void test_progress_points(void **state)
{
    (void)state;
    struct bso_store *st = open_store("sqlite:///:memory:");
    struct bso_session *s = session(st);
    struct bso_job_spec spec;
    struct bso_trial first;
    register_fake_job(s, &spec, &first);
    char msg[BSO_SVC_MSG_MAX];
    struct bso_decision d;
    struct bso_trial_key key = {spec.job_id, first.batch_size, first.number};
    struct bso_report r = {.time = 1,
                           .energy = 1,
                           .metric = 0.1,
                           .current_epoch = 1,
                           .has_progress = true,
                           .samples = 100,
                           .mean_batch_size = 50};
    assert_int_equal(points_of_first_trial(s, spec.job_id), 0);
    assert_int_equal(bso_svc_report(s, &key, &r, &d, msg), 0);
    assert_int_equal(bso_svc_report(s, &key, &r, &d, msg), 0); /* the same epoch again */
    assert_int_equal(points_of_first_trial(s, spec.job_id), 1);
    r.current_epoch = 2;
    r.has_progress = false;
    assert_int_equal(bso_svc_report(s, &key, &r, &d, msg), 0);
    assert_int_equal(points_of_first_trial(s, spec.job_id), 1);
    r.has_progress = true;
    r.current_epoch = 3;
    r.metric = 0.9; /* reaches the target: the run ends with this point */
    assert_int_equal(bso_svc_report(s, &key, &r, &d, msg), 0);
    assert_true(d.stop_train);
    r.current_epoch = 4;
    assert_int_equal(bso_svc_report(s, &key, &r, &d, msg), 0);
    assert_int_equal(points_of_first_trial(s, spec.job_id), 2);
    bso_session_release(s);
    bso_store_close(st);
}

/* Registers spec (made a bso-policy job reaching at a metric of 0.5 or more) through the
 * service, on a new in-memory SQLite store; *st and the returned session are the caller's. */
static struct bso_session *register_bso_job(struct bso_store **st, struct bso_job_spec *spec)
{
    struct bso_spec_errors errs = {0};
    char msg[BSO_SVC_MSG_MAX];
    bool created;
    *st = open_store("sqlite:///:memory:");
    struct bso_session *s = session(*st);
    spec->policy = BSO_POLICY_BSO;
    spec->target_metric = 0.5;
    spec->higher_is_better_metric = true;
    assert_int_equal(bso_job_spec_validate(spec, &errs), 0);
    assert_int_equal(bso_svc_register(s, spec, BSO_POLICY_BSO, &created, NULL, msg), 0);
    return s;
}

/* A bso-policy job whose runs reach in 3 epochs at a cost per epoch of 1, then of nothing at all
 * (a client that measures no time or energy), then of 100: every report is stored, and every
 * prediction is one of the job's sizes. A run at no cost read as the job's cost per epoch jumping
 * by a factor of 0, every size's cost went to 0, and the next run that cost something jumped it
 * by infinity: 0 times infinity is not a number, which the store refused ("The database is
 * unavailable") at that report and every one after it. */
static void test_runs_at_no_cost_then_some_are_stored(void **state)
{
    (void)state;
    struct bso_store *st;
    struct bso_job_spec spec;
    char msg[BSO_SVC_MSG_MAX];
    bool switched;
    fake_job_spec(&spec);
    spec.window_size = 0;
    spec.max_epochs = 10;
    struct bso_session *s = register_bso_job(&st, &spec);
    for (int k = 0; k < 30; k++) {
        struct bso_trial t;
        if (bso_svc_predict(s, spec.job_id, &t, &switched, NULL, NULL, &power_w, msg) != 0)
            fail_msg("prediction %d: %s", k, msg);
        assert_true(bso_job_spec_index(&spec, t.batch_size) >= 0);
        const double per_epoch = k < 10 ? 1 : k < 20 ? 0 : 100;
        const struct bso_trial_key key = {spec.job_id, t.batch_size, t.number};
        const struct bso_report r = {
            .time = 3 * per_epoch, .energy = 3 * per_epoch, .metric = 0.9, .current_epoch = 3};
        struct bso_decision d;
        if (bso_svc_report(s, &key, &r, &d, msg) != 0)
            fail_msg("run %d: %s", k, msg);
        if (!d.converged)
            fail_msg("run %d at %lld: %s", k, (long long)t.batch_size, d.message);
    }
    bso_session_release(s);
    bso_store_close(st);
}

/* What a run at batch size bs needs in the made-up job of test_service_decides_as_in_memory at
 * its run k: epochs to the target (a little noise), and seconds per epoch. The job changes as
 * it goes: every size's epoch costs 1.5 times as much (more data), then the large sizes' epochs
 * get cheaper, then the small sizes need more epochs than max_epochs allows. */
static void made_up_run(int64_t bs, int k, uint32_t *noise, int64_t *needed, double *per_epoch)
{
    const double base = 7 + 3 * fabs(log2((double)bs / 64)); /* fewest at 64 */
    *noise = *noise * 1664525u + 1013904223u;
    const double jitter = (double)(*noise >> 30) - 1.5; /* -1.5 .. 1.5 */
    double epochs = base + jitter;
    if (k >= 45 && bs <= 64)
        epochs *= 1.6;
    *needed = (int64_t)ceil(epochs);
    *per_epoch = 40 / pow((double)bs, 0.6) + 1;
    if (k >= 15)
        *per_epoch *= 1.5;
    if (k >= 30 && bs >= 128)
        *per_epoch *= 0.6;
}

/* The service, which reads the job back from the store for every request (no cache), decides
 * exactly as the same job kept in memory, through changes in epochs and in cost per epoch, runs
 * that end without a report and a change the user declares, with and without a window and a
 * device profile: whatever a decision changes in the job is stored. A run that bore out a
 * guessed jump in cost per epoch changed other sizes than its own, and only its own was stored
 * (variant 0 fails on the code before that fix). */
static void test_service_decides_as_in_memory(void **state)
{
    (void)state;
    for (int variant = 0; variant < 4; variant++) {
        const int window = variant % 2 ? 3 : 0;
        const bool profiled = variant >= 2;
        struct bso_store *st;
        struct bso_job_spec spec;
        char msg[BSO_SVC_MSG_MAX];
        bool switched;
        explorer_job_spec(&spec, 64);
        snprintf(spec.job_id, sizeof spec.job_id, "in-memory-%d", variant);
        spec.window_size = window;
        spec.has_mab_seed = true;
        spec.mab_seed = 7;
        spec.has_beta_knob = true;
        spec.beta_knob = 2;
        spec.max_epochs = 20;
        struct bso_session *s = register_bso_job(&st, &spec);
        struct bso_job mem;
        const uint32_t unused[1] = {0};
        assert_int_equal(bso_job_init(&mem, &spec, unused, 1), 0);
        /* A device profile before any run (bso.probe), which the search's estimates of cost
         * per epoch lean on until runs measure it; it says small sizes are the cheaper per
         * sample, which the runs then contradict. */
        if (profiled) {
            struct bso_profile_entry profile[6];
            struct bso_job_spec echoed;
            for (size_t j = 0; j < spec.n_batch_sizes; j++) {
                const double bs = (double)spec.batch_sizes[j];
                profile[j] = (struct bso_profile_entry){.batch_size = spec.batch_sizes[j],
                                                        .feasible = true,
                                                        .samples_per_s = 4000 / pow(bs, 0.3),
                                                        .joules_per_sample = pow(bs, 0.3) / 50,
                                                        .peak_memory_bytes = -1};
                bso_policy_set_profile(&mem, j, profile[j].samples_per_s,
                                       profile[j].joules_per_sample);
            }
            assert_int_equal(
                bso_svc_profile(s, spec.job_id, profile, spec.n_batch_sizes, &echoed, msg), 0);
        }
        uint32_t noise = 12345;
        for (int k = 0; k < 70; k++) {
            struct bso_trial t, m;
            unsigned changed;
            size_t at;
            const int rs =
                bso_svc_predict(s, spec.job_id, &t, &switched, NULL, NULL, &power_w, msg);
            const int rm = bso_job_predict(&mem, &m, &changed);
            if (rs != rm || (rs == 0 && (t.batch_size != m.batch_size || t.number != m.number)))
                fail_msg("variant %d, run %d: the service handed out %lld (trial %lld, rc %d), "
                         "the job in memory %lld (trial %lld, rc %d)",
                         variant, k, (long long)t.batch_size, (long long)t.number, rs,
                         (long long)m.batch_size, (long long)m.number, rm);
            if (rs != 0)
                continue;
            const struct bso_trial_key key = {spec.job_id, t.batch_size, t.number};
            if (k % 17 == 16) { /* it ended without a report */
                assert_int_equal(bso_svc_end_trial(s, &key, msg), 0);
                bso_job_end_trial(&mem, &m, &changed, &at);
                continue;
            }
            int64_t needed;
            double per_epoch;
            made_up_run(t.batch_size, k, &noise, &needed, &per_epoch);
            for (int64_t e = 1;; e++) {
                const struct bso_report r = {.time = per_epoch * (double)e,
                                             .energy = 200 * per_epoch * (double)e,
                                             .metric = e >= needed ? 0.9 : 0.1,
                                             .current_epoch = e};
                struct bso_decision ds, dm;
                if (bso_svc_report(s, &key, &r, &ds, msg) != 0)
                    fail_msg("variant %d, run %d, epoch %lld: %s", variant, k, (long long)e, msg);
                assert_int_equal(bso_job_report(&mem, &m, &r, &dm, &changed, &at), 0);
                if (ds.stop_train != dm.stop_train || ds.converged != dm.converged)
                    fail_msg("variant %d, run %d at %lld, epoch %lld: the service says %s, the job "
                             "in memory %s",
                             variant, k, (long long)t.batch_size, (long long)e, ds.message,
                             dm.message);
                if (ds.stop_train)
                    break;
            }
            if (k == 52) { /* the user says the job changed */
                int64_t sizes;
                assert_int_equal(bso_svc_declare_change(s, spec.job_id, &sizes, msg), 0);
                assert_int_equal((size_t)sizes, bso_policy_declare_change(&mem));
            }
        }
        bso_job_clear(&mem);
        bso_session_release(s);
        bso_store_close(st);
    }
}

static void test_golden_across_restarts(void **state)
{
    (void)state;
    static const int64_t want[51] = {64, 32, 16, 8,  128, 256, 16, 32, 64, 128, 256, 64, 16,
                                     64, 64, 64, 64, 64,  64,  64, 64, 64, 64,  64,  64, 64,
                                     16, 64, 64, 64, 64,  64,  64, 64, 64, 64,  64,  64, 64,
                                     64, 64, 16, 64, 64,  64,  64, 64, 64, 64,  64,  64};
    struct bso_store *st = open_store(url);
    struct bso_session *s = session(st);
    struct bso_job_spec spec;
    struct bso_spec_errors errs = {0};
    bso_scenario_g_spec(&spec, 0, 42);
    assert_int_equal(bso_job_spec_validate(&spec, &errs), 0);
    bool created;
    char msg[BSO_SVC_MSG_MAX];
    assert_int_equal(bso_svc_register(s, &spec, BSO_POLICY_ZEUS, &created, NULL, msg), 0);
    assert_true(created);
    assert_int_equal(strncmp(spec.job_id, "g-", 2), 0);
    assert_int_equal(strlen(spec.job_id), 10);
    char id[BSO_JOB_ID_MAX + 1];
    snprintf(id, sizeof id, "%s", spec.job_id);

    for (int64_t k = 1; k <= 51; k++) {
        if (k % 7 == 0) { /* restart: every connection closed, state only in the file */
            bso_session_release(s);
            bso_store_close(st);
            st = open_store(url);
            s = session(st);
        }
        struct bso_trial t;
        bool switched;
        int64_t arms[BSO_MAX_BATCH_SIZES];
        size_t n_arms = 0;
        if (bso_svc_predict(s, id, &t, &switched, arms, &n_arms, &power_w, msg) != 0)
            fail_msg("predict %lld: %s", (long long)k, msg);
        assert_int_equal(t.number, k);
        assert_int_equal(t.batch_size, want[k - 1]);
        assert_int_equal(switched, k == 12);
        if (switched)
            assert_int_equal(n_arms, 5);
        struct bso_report r = bso_scenario_g_report(k, t.batch_size);
        struct bso_trial_key key = {id, t.batch_size, t.number};
        struct bso_decision d;
        if (bso_svc_report(s, &key, &r, &d, msg) != 0)
            fail_msg("report %lld: %s", (long long)k, msg);
        assert_true(d.stop_train);
    }
    /* The stored arms are Zeus's to the last bit. */
    struct bso_job job;
    assert_int_equal(bso_session_begin_read(s), 0);
    assert_int_equal(bso_session_load_job(s, id, BSO_LOAD_ARMS, &job), 0);
    assert_int_equal(bso_session_commit(s), 0);
    assert_int_equal(job.n_arms, 5);
    const double mean64 = -5069.230769230769, prec64 = 0.00018969635918837243;
    assert_memory_equal(&job.arms[2].param_mean, &mean64, sizeof(double));
    assert_memory_equal(&job.arms[2].param_precision, &prec64, sizeof(double));
    assert_int_equal(job.arms[2].num_observations, 39);
    bso_job_clear(&job);
    int64_t counts[3];
    assert_int_equal(bso_session_count_trials(s, id, counts), 0);
    assert_int_equal(counts[BSO_TRIAL_SUCCEEDED], 51);
    bso_session_release(s);
    assert_int_equal(bso_store_schema_version(st), 26);
    bso_store_close(st);
}

static void test_register_and_messages(void **state)
{
    (void)state;
    struct bso_store *st = open_store("sqlite:///:memory:");
    struct bso_session *s = session(st);
    char msg[BSO_SVC_MSG_MAX];
    struct bso_job_spec spec, other;
    struct bso_spec_errors errs = {0};
    fake_job_spec(&spec);
    spec.has_job_id = true;
    snprintf(spec.job_id, sizeof spec.job_id, "test-a");
    assert_int_equal(bso_job_spec_validate(&spec, &errs), 0);
    bool created;
    assert_int_equal(bso_svc_register(s, &spec, BSO_POLICY_ZEUS, &created, NULL, msg), 0);
    assert_true(created);
    other = spec;
    assert_int_equal(bso_svc_register(s, &other, BSO_POLICY_ZEUS, &created, NULL, msg), 0);
    assert_false(created);
    other.default_batch_size = 512;
    struct bso_job_spec registered = {0};
    assert_int_equal(bso_svc_register(s, &other, BSO_POLICY_ZEUS, &created, &registered, msg),
                     BSO_ECONFLICT);
    assert_string_equal(msg, "JobSpec doesn't match with existing jobSpec. Use a new job_id for "
                             "different configuration");
    /* The stored spec comes back, for the answer to name what differs. */
    assert_int_equal(registered.default_batch_size, spec.default_batch_size);
    assert_true(bso_job_spec_equal(&registered, &spec));

    struct bso_trial t;
    bool sw;
    assert_int_equal(bso_svc_predict(s, "nope", &t, &sw, NULL, NULL, &power_w, msg), BSO_ENOTFOUND);
    assert_string_equal(msg, "Unknown job(nope). Please register the job first");
    assert_int_equal(bso_svc_predict(s, "test-a", &t, &sw, NULL, NULL, &power_w, msg), 0);

    struct bso_report r = {.time = 1, .energy = 1, .metric = 0.1, .current_epoch = 1};
    struct bso_decision d;
    struct bso_trial_key key = {"test-a", 32, 1};
    assert_int_equal(bso_svc_report(s, &key, &r, &d, msg), BSO_ENOTFOUND);
    assert_string_equal(msg, "Unknown trial job_id='test-a' batch_size=32 trial_number=1 time=1.0 "
                             "energy=1.0 metric=0.1 current_epoch=1");
    key.job_id = "nope";
    assert_int_equal(bso_svc_report(s, &key, &r, &d, msg), BSO_ENOTFOUND);
    assert_string_equal(msg, "Unknown job nope");
    key = (struct bso_trial_key){"test-a", 1024, 7};
    assert_int_equal(bso_svc_end_trial(s, &key, msg), BSO_ENOTFOUND);
    assert_string_equal(msg,
                        "Could not find the trial: job_id='test-a' batch_size=1024 trial_number=7");
    /* end the real trial, then a report on it is refused */
    key.trial_number = 1;
    assert_int_equal(bso_svc_end_trial(s, &key, msg), 0);
    assert_int_equal(bso_svc_end_trial(s, &key, msg), 0);
    assert_int_equal(bso_svc_report(s, &key, &r, &d, msg), BSO_ESTATE);
    assert_string_equal(msg, "Trial(1) is already reported but converged is not set.");

    assert_int_equal(bso_svc_delete(s, "nope", msg), BSO_ENOTFOUND);
    assert_string_equal(msg, "No job was deleted.");
    assert_int_equal(bso_svc_delete(s, "test-a", msg), 0);
    /* Cascade: the trial went with the job. */
    int64_t counts[3];
    assert_int_equal(bso_session_count_trials(s, "test-a", counts), 0);
    assert_int_equal(counts[0] + counts[1] + counts[2], 0);
    assert_int_equal(bso_svc_register(s, &spec, BSO_POLICY_ZEUS, &created, NULL, msg), 0);
    assert_true(created);
    bso_session_release(s);
    bso_store_close(st);
}

static int count_rows(void *ctx, const struct bso_job_summary *row)
{
    (void)row;
    (*(int *)ctx)++;
    return 0;
}

static void test_failed_request_changes_nothing(void **state)
{
    (void)state;
    struct bso_store *st = open_store("sqlite:///:memory:");
    struct bso_session *s = session(st);
    char msg[BSO_SVC_MSG_MAX];
    struct bso_job_spec spec;
    struct bso_spec_errors errs = {0};
    fake_job_spec(&spec);
    assert_int_equal(bso_job_spec_validate(&spec, &errs), 0);
    bool created;
    assert_int_equal(bso_svc_register(s, &spec, BSO_POLICY_ZEUS, &created, NULL, msg), 0);
    struct bso_trial t;
    bool sw;
    assert_int_equal(bso_svc_predict(s, spec.job_id, &t, &sw, NULL, NULL, &power_w, msg), 0);
    struct bso_report bad = {.time = -1, .energy = 0, .metric = 0.9, .current_epoch = 1};
    struct bso_decision d;
    struct bso_trial_key key = {spec.job_id, t.batch_size, t.number};
    assert_int_equal(bso_svc_report(s, &key, &bad, &d, msg), BSO_EINVAL);
    assert_int_equal(bso_session_begin_read(s), 0);
    struct bso_trial stored;
    assert_int_equal(bso_session_load_trial(s, spec.job_id, 1, &stored), 0);
    assert_int_equal(stored.status, BSO_TRIAL_DISPATCHED);
    int n = 0;
    assert_int_equal(bso_session_list_jobs(s, NULL, 10, count_rows, &n), 0);
    assert_int_equal(n, 1);
    bso_session_rollback(s);
    bso_session_release(s);
    bso_store_close(st);
}

static void test_open_errors_and_migrations(void **state)
{
    (void)state;
    struct bso_store *st;
    char err[512];
    assert_int_equal(bso_store_open("mysql://x", NULL, &st, err, sizeof err), BSO_EINVAL);
    assert_non_null(strstr(err, "unsupported database URL"));
    assert_int_equal(
        bso_store_open("sqlite:////nonexistent-dir/x/y.db", NULL, &st, err, sizeof err), BSO_EIO);
    const char *sql = bso_store_migrations_sql("sqlite:///x.db");
    assert_non_null(strstr(sql, "CREATE TABLE job"));
    assert_non_null(strstr(sql, "PRAGMA user_version = 26"));
    assert_null(bso_store_migrations_sql("nope://"));
    /* Zeus's async URL works. */
    char zeus[160];
    snprintf(zeus, sizeof zeus, "sqlite+aiosqlite:///%s/zeus.db", dir);
    st = open_store(zeus);
    assert_string_equal(bso_store_backend(st), "sqlite");
    bso_store_close(st);
    /* A database from a newer bso-server is refused, not damaged. */
    sqlite3 *db;
    char path[160];
    snprintf(path, sizeof path, "%s/zeus.db", dir);
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "PRAGMA user_version = 99", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    assert_int_equal(bso_store_open(zeus, NULL, &st, err, sizeof err), BSO_ESTATE);
    assert_non_null(strstr(err, "newer"));
}

/* A database written by schema version 1 (no energy_source, policy, bs_stat or tenants) is
 * upgraded in
 * place on open, through every later migration, and keeps its jobs and trials. */
static void test_upgrade_from_version_1(void **state)
{
    (void)state;
    char u[200], path[160];
    snprintf(path, sizeof path, "%s/old.db", dir);
    snprintf(u, sizeof u, "sqlite:///%s", path);
    struct bso_store *st = open_store(u);
    struct bso_session *s = session(st);
    struct bso_job_spec spec;
    char msg[BSO_SVC_MSG_MAX];
    struct bso_trial t;
    register_fake_job(s, &spec, &t);
    bso_session_release(s);
    bso_store_close(st);
    /* Turn it back into a version-1 database. */
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(
        sqlite3_exec(
            db,
            "DROP TABLE job_data_version; DROP TABLE job_origin; DROP TABLE power_profile; "
            "ALTER TABLE job DROP COLUMN refusals; ALTER TABLE job DROP COLUMN "
            "power_profiled; DROP TABLE profile; ALTER TABLE job "
            "DROP COLUMN unfit; DROP TABLE api_token; "
            "DROP INDEX job_by_tenant; DROP INDEX trial_dispatched; "
            "ALTER TABLE job DROP COLUMN tenant; "
            "ALTER TABLE trial DROP COLUMN energy_source; ALTER TABLE trial DROP COLUMN progress; "
            "DROP TABLE bs_stat; ALTER TABLE job DROP COLUMN policy; "
            "PRAGMA user_version = 1",
            NULL, NULL, NULL),
        SQLITE_OK);
    sqlite3_close(db);
    st = open_store(u);
    assert_int_equal(bso_store_schema_version(st), 26);
    s = session(st);
    struct bso_report r = {
        .time = 1, .energy = 2, .metric = 0.9, .current_epoch = 1, .energy_source = "rapl"};
    struct bso_decision d;
    struct bso_trial_key key = {spec.job_id, t.batch_size, t.number};
    assert_int_equal(bso_svc_report(s, &key, &r, &d, msg), 0);
    assert_true(d.converged);
    bso_session_release(s);
    bso_store_close(st);
}

/* Leases: a trial without its final report fails once its lease (measured from dispatch) has
 * run out: --lease-default before any run finished, then three times the longest run, never
 * below --lease-floor; the size is issued again. */
static void test_lease_sweep(void **state)
{
    (void)state;
    char u[200];
    snprintf(u, sizeof u, "sqlite:///%s/lease.db", dir);
    struct bso_store *st = open_store(u);
    struct bso_session *s = session(st);
    struct bso_job_spec spec;
    char msg[BSO_SVC_MSG_MAX];
    bool sw;
    struct bso_trial t1;
    register_fake_job(s, &spec, &t1);
    bso_session_release(s);
    const struct bso_config cfg = {.lease_floor_s = 100, .lease_default_s = 1000};
    const double now = (double)time(NULL);
    assert_int_equal(bso_sweep(st, &cfg, now + 50), 0);  /* younger than the floor */
    assert_int_equal(bso_sweep(st, &cfg, now + 900), 0); /* within the default lease */
    assert_int_equal(bso_sweep(st, &cfg, now + 1010), 1);
    assert_int_equal(bso_sweep(st, &cfg, now + 2000), 0); /* once */
    s = session(st);
    struct bso_trial got;
    assert_int_equal(bso_session_load_trial(s, spec.job_id, t1.number, &got), 0);
    assert_int_equal(got.status, BSO_TRIAL_FAILED);
    /* Issued again; once a run finished in 80 s the lease is 240 s. */
    struct bso_trial t2;
    assert_int_equal(bso_svc_predict(s, spec.job_id, &t2, &sw, NULL, NULL, &power_w, msg), 0);
    assert_int_equal(t2.batch_size, t1.batch_size);
    struct bso_report r = {.time = 80, .energy = 100, .metric = 0.9, .current_epoch = 1};
    struct bso_decision d;
    struct bso_trial_key key = {spec.job_id, t2.batch_size, t2.number};
    assert_int_equal(bso_svc_report(s, &key, &r, &d, msg), 0);
    struct bso_trial t3;
    assert_int_equal(bso_svc_predict(s, spec.job_id, &t3, &sw, NULL, NULL, &power_w, msg), 0);
    bso_session_release(s);
    assert_int_equal(bso_sweep(st, &cfg, now + 230), 0);
    assert_int_equal(bso_sweep(st, &cfg, now + 250), 1);
    bso_store_close(st);
}

static void test_redact_url(void **state)
{
    (void)state;
    char buf[256];
    static const char *const cases[][2] = {
        {"postgresql://bso:s3cret@db:5432/bso", "postgresql://bso:***@db:5432/bso"},
        {"postgres://u:p@ss@h/x?sslmode=require", "postgres://u:***@h/x?sslmode=require"},
        {"postgresql://bso@db/bso", "postgresql://bso@db/bso"},
        {"sqlite:////tmp/a:b@c.db", "sqlite:////tmp/a:b@c.db"},
        {"mysql://user:pw@h", "mysql://user:***@h"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        assert_string_equal(bso_store_redact_url(cases[i][0], buf, sizeof buf), cases[i][1]);
}

static int count_power(void *ctx, const struct bso_power_profile *p)
{
    struct bso_power_profile *last = ctx;
    *last = *p; /* the job has one profile here: the last row is it */
    return 0;
}

/* Power profiles: the server chooses when the client did not, refuses a size the job lacks or
 * a limit that was not measured, keeps every bit, and hands the chosen limit out with the
 * batch size of later trials. */
static void test_power_profiles(void **state)
{
    (void)state;
    char u[200];
    snprintf(u, sizeof u, "sqlite:///%s/power.db", dir);
    struct bso_store *st = open_store(u);
    struct bso_session *s = session(st);
    struct bso_job_spec spec;
    struct bso_trial t;
    char msg[BSO_SVC_MSG_MAX];
    bool sw;
    register_fake_job(s, &spec, &t);
    assert_true(isnan(power_w)); /* nothing profiled: Zeus's answer */
    struct bso_power_profile p = {.batch_size = t.batch_size, .power_limit_w = NAN, .n = 3};
    p.points[0] = (struct bso_power_point){300, 1000.0 / 3.0, 260.125};
    p.points[1] = (struct bso_power_point){250, 980, 225};
    p.points[2] = (struct bso_power_point){200, 930, 180};
    snprintf(p.device, sizeof p.device, "NVIDIA A100");
    assert_int_equal(bso_svc_power(s, spec.job_id, &p, NULL, msg), 0);
    size_t want;
    assert_int_equal(bso_power_choose(p.points, 3, spec.eta_knob, spec.max_power, &want), 0);
    assert_true(p.power_limit_w == p.points[want].limit_w);

    struct bso_power_profile bad = p;
    bad.power_limit_w = 275;
    assert_int_equal(bso_svc_power(s, spec.job_id, &bad, NULL, msg), BSO_EINVAL);
    assert_non_null(strstr(msg, "not one of the measured"));
    bad.power_limit_w = 250;
    bad.batch_size = 33;
    assert_int_equal(bso_svc_power(s, spec.job_id, &bad, NULL, msg), BSO_EINVAL);
    assert_non_null(strstr(msg, "not one of job"));
    assert_int_equal(bso_svc_power(s, "nope", &bad, NULL, msg), BSO_ENOTFOUND);

    struct bso_power_profile got;
    memset(&got, 0, sizeof got);
    assert_int_equal(bso_session_begin_read(s), 0);
    assert_int_equal(bso_session_list_power(s, spec.job_id, count_power, &got), 0);
    bso_session_rollback(s);
    assert_int_equal(got.batch_size, t.batch_size);
    assert_int_equal(got.n, 3);
    for (size_t i = 0; i < 3; i++)
        assert_true(got.points[i].limit_w == p.points[i].limit_w &&
                    got.points[i].samples_per_s == p.points[i].samples_per_s &&
                    got.points[i].power_w == p.points[i].power_w);
    assert_string_equal(got.device, "NVIDIA A100");
    assert_true(got.measured_at[0] != '\0');

    /* Every size profiled at 250 W: whatever comes next carries it. */
    for (size_t i = 0; i < spec.n_batch_sizes; i++) {
        struct bso_power_profile q = p;
        q.batch_size = spec.batch_sizes[i];
        q.power_limit_w = 250;
        assert_int_equal(bso_svc_power(s, spec.job_id, &q, NULL, msg), 0);
    }
    assert_int_equal(bso_svc_predict(s, spec.job_id, &t, &sw, NULL, NULL, &power_w, msg), 0);
    assert_true(power_w == 250);
    bso_session_release(s);
    bso_store_close(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_across_restarts),
        cmocka_unit_test(test_runs_at_no_cost_then_some_are_stored),
        cmocka_unit_test(test_service_decides_as_in_memory),
        cmocka_unit_test(test_register_and_messages),
        cmocka_unit_test(test_failed_request_changes_nothing),
        cmocka_unit_test(test_open_errors_and_migrations),
        cmocka_unit_test(test_upgrade_from_version_1),
        cmocka_unit_test(test_lease_sweep),
        cmocka_unit_test(test_power_profiles),
        cmocka_unit_test(test_progress_points),
        cmocka_unit_test(test_redact_url),
    };
    return cmocka_run_group_tests(tests, make_dir, remove_dir);
}
