/* The bso policy's rules, one at a time, on a small job driven through the core. */
#include "helpers.h"

#include <stdio.h>
#include <string.h>

#include "bso/error.h"

/* A bso-policy job: batch sizes 16..256, default 64, target 0.9, max 20 epochs, cost per epoch
 * set by the reports (energy 0, eta 0.5, max_power 1000: cost = 500 * time). */
static void start(struct bso_job *job)
{
    static const int64_t sizes[] = {16, 32, 64, 128, 256};
    struct bso_job_spec spec;
    bso_job_spec_defaults(&spec);
    snprintf(spec.job_id_prefix, sizeof spec.job_id_prefix, "p");
    snprintf(spec.gpu_model, sizeof spec.gpu_model, "A100");
    set_batch_sizes(&spec, sizes, 5);
    spec.default_batch_size = 64;
    spec.target_metric = 0.9;
    spec.max_epochs = 20;
    spec.max_power = 1000;
    spec.number_of_gpus = 1;
    spec.has_mab_seed = true;
    spec.mab_seed = 7;
    spec.policy = BSO_POLICY_BSO;
    start_job(job, &spec);
}

/* Runs a trial epoch by epoch at `per_epoch` cost, reaching the target at epoch `reach` (0:
 * never); returns the epoch at which the policy stopped it. */
static int64_t run(struct bso_job *job, struct bso_trial *t, double per_epoch, int64_t reach,
                   struct bso_decision *d)
{
    for (int64_t e = 1; e <= 40; e++) {
        struct bso_report r = {.time = per_epoch * (double)e / 500,
                               .energy = 0,
                               .metric = reach && e >= reach ? 0.95 : 0.1,
                               .current_epoch = e};
        unsigned changed;
        size_t arm;
        assert_int_equal(bso_job_report(job, t, &r, d, &changed, &arm), 0);
        if (d->stop_train)
            return e;
    }
    fail_msg("the policy never stopped the run");
    return 0;
}

static void test_default_first_and_success(void **state)
{
    (void)state;
    struct bso_job job;
    start(&job);
    struct bso_trial t = predict_ok(&job);
    assert_int_equal(t.batch_size, 64);
    assert_int_equal(t.type, BSO_TRIAL_EXPLORATION);
    struct bso_decision d;
    assert_int_equal(run(&job, &t, 100, 10, &d), 10);
    assert_true(d.converged);
    assert_int_equal(job.stats[2].status, BSO_BS_GOOD);
    assert_true(job.has_min_cost && job.min_cost == 1000);
    bso_job_clear(&job);
}

static void test_max_epochs_fail_then_smaller_sizes(void **state)
{
    (void)state;
    struct bso_job job;
    start(&job);
    struct bso_trial t = predict_ok(&job);
    struct bso_decision d;
    assert_int_equal(run(&job, &t, 100, 0, &d), 20); /* never reaches: stopped at max_epochs */
    assert_false(d.converged);
    assert_non_null(strstr(d.message, "max_epoch(20)"));
    assert_int_equal(job.stats[2].status, BSO_BS_FAILED);
    /* Nothing reached the target yet: smaller sizes next. */
    assert_int_equal(predict_ok(&job).batch_size, 32);
    bso_job_clear(&job);
}

static void test_probe_stopped_when_hopeless(void **state)
{
    (void)state;
    struct bso_job job;
    start(&job);
    struct bso_trial t = predict_ok(&job);
    struct bso_decision d;
    run(&job, &t, 100, 10, &d); /* 64: 10 epochs at 100 = 1000 */
    t = predict_ok(&job);
    assert_int_equal(t.type, BSO_TRIAL_EXPLORATION);
    assert_true(t.batch_size == 32 || t.batch_size == 128); /* one octave either way */
    /* A per-epoch cost so high that even its optimistic total loses: stopped after epoch 1. */
    assert_int_equal(run(&job, &t, 5000, 0, &d), 1);
    assert_false(d.converged);
    assert_non_null(strstr(d.message, "not promising"));
    const int i = bso_job_spec_index(&job.spec, t.batch_size);
    assert_int_equal(job.stats[i].status, BSO_BS_PASSED);
    bso_job_clear(&job);
}

static void test_exploring_run_killed_on_optimistic_bound(void **state)
{
    (void)state;
    struct bso_job job;
    start(&job);
    struct bso_trial t = predict_ok(&job);
    struct bso_decision d;
    run(&job, &t, 100, 10, &d); /* best: 1000 */
    t = predict_ok(&job);
    /* Cheap enough per epoch to pass its go/no-go (about 14 or 7 epochs of 70 against 1000),
     * but it never reaches: stopped once its cost passes 1.3 times the best (epoch 19: 1330),
     * before max_epochs. */
    int64_t stopped = run(&job, &t, 70, 0, &d);
    assert_int_equal(stopped, 19);
    assert_non_null(strstr(d.message, "cannot beat the best"));
    bso_job_clear(&job);
}

static void test_all_failed_is_pruned(void **state)
{
    (void)state;
    struct bso_job job;
    start(&job);
    for (int k = 0; k < 5; k++) {
        struct bso_trial t = predict_ok(&job);
        struct bso_decision d;
        run(&job, &t, 100, 0, &d);
    }
    struct bso_trial t;
    unsigned changed;
    assert_int_equal(bso_job_predict(&job, &t, &changed), BSO_EPRUNED);
    assert_non_null(strstr(bso_job_errmsg(&job), "No batch size reached the target"));
    bso_job_clear(&job);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_first_and_success),
        cmocka_unit_test(test_max_epochs_fail_then_smaller_sizes),
        cmocka_unit_test(test_probe_stopped_when_hopeless),
        cmocka_unit_test(test_exploring_run_killed_on_optimistic_bound),
        cmocka_unit_test(test_all_failed_is_pruned),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
