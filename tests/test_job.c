/* Job-level flows: Zeus's test_server.py scenarios replayed on the core, plus the edge cases the
 * spec found by probing (late concurrent reports, failed trials, duplicates, bad numbers). */
#include "helpers.h"

#include <math.h>
#include <string.h>

#include "bso/error.h"

static struct bso_decision report(struct bso_job *job, struct bso_trial *t, double time,
                                  double energy, double metric, int64_t epoch, int *rc,
                                  unsigned *changed)
{
    struct bso_report r = {
        .time = time, .energy = energy, .metric = metric, .current_epoch = epoch};
    struct bso_decision d;
    memset(&d, 0, sizeof d);
    size_t arm;
    *rc = bso_job_report(job, t, &r, &d, changed, &arm);
    return d;
}

static void test_predict_then_concurrent(void **state)
{
    struct bso_job *job = *state;
    struct bso_trial t1 = predict_ok(job), t2 = predict_ok(job);
    assert_int_equal(t1.batch_size, 1024);
    assert_int_equal(t1.number, 1);
    assert_int_equal(t2.batch_size, 1024);
    assert_int_equal(t2.number, 2);
    assert_int_equal(t2.type, BSO_TRIAL_CONCURRENT);
}

static void test_report_then_over_budget(void **state)
{
    struct bso_job *job = *state;
    struct bso_trial t1 = predict_ok(job), t2 = predict_ok(job);
    int rc;
    unsigned changed;
    struct bso_decision d = report(job, &t1, 14.438, 3000.123, 0.55, 98, &rc, &changed);
    assert_int_equal(rc, 0);
    assert_true(d.stop_train && d.converged);
    assert_int_equal(changed, BSO_CHANGED_TRIAL | BSO_CHANGED_MIN_COST);
    assert_int_equal(t1.status, BSO_TRIAL_SUCCEEDED);
    assert_true(job->min_cost == 23157.0615);
    /* A keep-training report changes nothing. */
    d = report(job, &t2, 1, 1, 0.1, 1, &rc, &changed);
    assert_int_equal(rc, 0);
    assert_false(d.stop_train);
    assert_int_equal(changed, 0);
    assert_int_equal(t2.status, BSO_TRIAL_DISPATCHED);
    d = report(job, &t2, 30, 6000, 0.55, 2, &rc, &changed);
    assert_int_equal(rc, 0);
    assert_true(d.stop_train);
    assert_false(d.converged);
    assert_int_equal(changed, BSO_CHANGED_TRIAL);
    assert_non_null(strstr(d.message, "cost upper bound"));
    /* The kept pruning copy follows the caller's record. */
    assert_int_equal(bso_job_find_trial(job, 2)->status, BSO_TRIAL_SUCCEEDED);
}

static void test_already_reported_is_idempotent(void **state)
{
    struct bso_job *job = *state;
    struct bso_trial t = predict_ok(job);
    int rc;
    unsigned changed;
    report(job, &t, 10, 10, 0.1, 100, &rc, &changed); /* max epochs: final, not converged */
    assert_int_equal(rc, 0);
    const double min_cost = job->min_cost;
    struct bso_decision d = report(job, &t, 1, 1, 0.9, 1, &rc, &changed);
    assert_int_equal(rc, 0);
    assert_true(d.stop_train);
    assert_false(d.converged); /* the stored outcome, not this report's */
    assert_string_equal(d.message, "Result for this trial(1) is already reported.");
    assert_int_equal(changed, 0);
    assert_true(job->min_cost == min_cost);
    assert_true(t.time == 10);
}

static void test_end_trial_flow(void **state)
{
    struct bso_job *job = *state;
    struct bso_trial t = predict_ok(job);
    unsigned changed;
    size_t stat;
    bso_job_end_trial(job, &t, &changed, &stat);
    assert_int_equal(t.status, BSO_TRIAL_FAILED);
    assert_int_equal(changed, BSO_CHANGED_TRIAL);
    bso_job_end_trial(job, &t, &changed, &stat); /* repeating is harmless */
    assert_int_equal(changed, 0);
    /* Reporting a failed trial is refused and stores nothing. */
    int rc;
    report(job, &t, 1, 1, 0.9, 1, &rc, &changed);
    assert_int_equal(rc, BSO_ESTATE);
    assert_string_equal(bso_job_errmsg(job),
                        "Trial(1) is already reported but converged is not set.");
    assert_false(job->has_min_cost);
    /* The failed exploration is issued again. */
    struct bso_trial again = predict_ok(job);
    assert_int_equal(again.batch_size, 1024);
    assert_int_equal(again.type, BSO_TRIAL_EXPLORATION);
    report(job, &again, 1, 1, 0.9, 1, &rc, &changed);
    assert_int_equal(rc, 0);
    bso_job_end_trial(job, &again, &changed, &stat); /* after a final report: a no-op */
    assert_int_equal(changed, 0);
    assert_int_equal(again.status, BSO_TRIAL_SUCCEEDED);
}

static void test_bad_report_numbers_change_nothing(void **state)
{
    struct bso_job *job = *state;
    struct bso_trial t = predict_ok(job);
    int rc;
    unsigned changed;
    report(job, &t, -1, 1, 0.9, 1, &rc, &changed);
    assert_int_equal(rc, BSO_EINVAL);
    assert_string_equal(bso_job_errmsg(job), "time must be a finite number of seconds >= 0");
    report(job, &t, 1, NAN, 0.9, 1, &rc, &changed);
    assert_int_equal(rc, BSO_EINVAL);
    report(job, &t, 1e308, 1e308, 0.9, 1, &rc, &changed); /* finite, but the cost is not */
    assert_int_equal(rc, BSO_EINVAL);
    assert_string_equal(bso_job_errmsg(job), "time and energy are too large: the cost passes "
                                             "1e+100, where the policy's sums overflow");
    /* A finite cost whose square is not (a Zeus arm's variance then was not a number). */
    report(job, &t, 1e160, 0, 0.9, 1, &rc, &changed);
    assert_int_equal(rc, BSO_EINVAL);
    assert_int_equal(t.status, BSO_TRIAL_DISPATCHED);
    assert_false(job->has_min_cost);
}

/* Zeus's test_mab_stage: 50 rounds of (predict, concurrent predict, converged report with the
 * same cost) carry the job through pruning into the MAB stage with zero-variance arms. */
static void test_mab_stage_with_identical_costs(void **state)
{
    struct bso_job *job = *state;
    bool switched = false;
    for (int i = 0; i < 50; i++) {
        struct bso_trial a, b;
        unsigned ca, cb;
        assert_int_equal(bso_job_predict(job, &a, &ca), 0);
        assert_int_equal(bso_job_predict(job, &b, &cb), 0);
        if (ca & BSO_CHANGED_STAGE) {
            assert_false(switched);
            switched = true;
            assert_true(ca & BSO_CHANGED_ARMS);
            for (size_t k = 0; k < job->n_arms; k++)
                assert_true(isinf(job->arms[k].param_precision));
        }
        int rc;
        unsigned changed;
        struct bso_decision d = report(job, &a, 10, 100, 0.9, 1, &rc, &changed);
        assert_int_equal(rc, 0);
        assert_true(d.converged);
        /* b was issued alongside a: in the pruning stage a concurrent trial; its report is
         * refused only if it was issued before the switch and arrives after it. */
        d = report(job, &b, 10, 100, 0.9, 1, &rc, &changed);
        if (rc != 0) {
            assert_int_equal(rc, BSO_ESTATE);
            assert_string_equal(bso_job_errmsg(job), "Cannot update an arm since this trial is "
                                                     "not issued from MAB stage.");
            assert_int_equal(b.status, BSO_TRIAL_DISPATCHED);
        }
    }
    assert_true(switched);
    assert_int_equal(job->stage, BSO_STAGE_MAB);
    assert_int_equal(job->last_trial_number, 100);
}

static void test_late_concurrent_report_after_switch(void **state)
{
    struct bso_job *job = *state;
    /* Round 0: 64 converges with a concurrent trial left pending; 32 and 128 fail. */
    struct bso_trial e = predict_ok(job);
    struct bso_trial c = predict_ok(job);
    assert_int_equal(c.type, BSO_TRIAL_CONCURRENT);
    report_cost(job, &e, 10, 0.9, 1);
    struct bso_trial t = predict_ok(job);
    report_cost(job, &t, 10, 0.1, job->spec.max_epochs);
    t = predict_ok(job);
    report_cost(job, &t, 10, 0.1, job->spec.max_epochs);
    unsigned changed;
    t = predict_ok(job);
    assert_int_equal(job->stage, BSO_STAGE_MAB);
    assert_int_equal(t.batch_size, 64);
    int rc;
    report(job, &c, 1, 1, 0.9, 1, &rc, &changed);
    assert_int_equal(rc, BSO_ESTATE);
    assert_int_equal(c.status, BSO_TRIAL_DISPATCHED);
    /* A MAB trial at a batch size without an arm (only a corrupt store makes one). */
    struct bso_trial stray = {
        .number = 99, .batch_size = 8, .type = BSO_TRIAL_MAB, .status = BSO_TRIAL_DISPATCHED};
    report(job, &stray, 1, 1, 0.9, 1, &rc, &changed);
    assert_int_equal(rc, BSO_ENOTFOUND);
    assert_string_equal(bso_job_errmsg(job), "MAB stage but Arm for batch size(8) is not found.");
    /* The MAB trial's result refits its arm. */
    size_t arm = 99;
    struct bso_report r = {.time = 1, .energy = 1, .metric = 0.9, .current_epoch = 1};
    struct bso_decision d;
    assert_int_equal(bso_job_report(job, &t, &r, &d, &changed, &arm), 0);
    assert_true(changed & BSO_CHANGED_ARM);
    assert_int_equal(arm, 0);
    assert_int_equal(job->arms[0].num_observations, 2);
}

static void test_unseeded_jobs_draw_from_their_entropy(void **state)
{
    (void)state;
    struct bso_job_spec spec;
    struct bso_spec_errors errs = {0};
    fake_job_spec(&spec);
    spec.has_mab_seed = false;
    assert_int_equal(bso_job_spec_validate(&spec, &errs), 0);
    struct bso_job a, b, c;
    const uint32_t e1[4] = {1, 2, 3, 4}, e2[4] = {1, 2, 3, 5};
    assert_int_equal(bso_job_init(&a, &spec, e1, 4), 0);
    assert_int_equal(bso_job_init(&b, &spec, e1, 4), 0);
    assert_int_equal(bso_job_init(&c, &spec, e2, 4), 0);
    assert_true(a.rng.state == b.rng.state && a.rng.inc == b.rng.inc);
    assert_memory_not_equal(&a.rng.state, &c.rng.state, sizeof a.rng.state);
    assert_int_equal(bso_job_init(&a, &spec, e1, 0), BSO_EINVAL);
    /* One stream, not one value: successive normals differ (Zeus's unseeded bug shared one). */
    double z1 = bso_rng_standard_normal(&b.rng), z2 = bso_rng_standard_normal(&b.rng);
    assert_true(z1 != z2);
    bso_job_clear(&b);
    bso_job_clear(&c);
    bso_job_clear(NULL);
}

static void test_mab_predict_reports_rng_change(void **state)
{
    struct bso_job *job = *state;
    const struct {
        int64_t bs;
        bool ok;
    } round0[] = {{64, true}, {32, false}, {128, true}, {256, false}};
    for (size_t i = 0; i < 4; i++) {
        struct bso_trial t = predict_ok(job);
        assert_int_equal(t.batch_size, round0[i].bs);
        report_cost(job, &t, 10 + (double)i, round0[i].ok ? 0.9 : 0.1,
                    round0[i].ok ? 1 : job->spec.max_epochs);
    }
    struct bso_trial t;
    unsigned changed;
    assert_int_equal(bso_job_predict(job, &t, &changed), 0);
    assert_int_equal(changed,
                     BSO_CHANGED_TRIAL | BSO_CHANGED_STAGE | BSO_CHANGED_ARMS | BSO_CHANGED_RNG);
    assert_int_equal(job->n_arms, 2);
    assert_int_equal(bso_job_predict(job, &t, &changed), 0);
    assert_int_equal(changed, BSO_CHANGED_TRIAL | BSO_CHANGED_RNG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_predict_then_concurrent, setup_fake_job, teardown_job),
        cmocka_unit_test_setup_teardown(test_report_then_over_budget, setup_fake_job, teardown_job),
        cmocka_unit_test_setup_teardown(test_already_reported_is_idempotent, setup_fake_job,
                                        teardown_job),
        cmocka_unit_test_setup_teardown(test_end_trial_flow, setup_fake_job, teardown_job),
        cmocka_unit_test_setup_teardown(test_bad_report_numbers_change_nothing, setup_fake_job,
                                        teardown_job),
        cmocka_unit_test_setup_teardown(test_mab_stage_with_identical_costs, setup_fake_job,
                                        teardown_job),
        cmocka_unit_test_setup_teardown(test_late_concurrent_report_after_switch,
                                        setup_one_round_job, teardown_job),
        cmocka_unit_test(test_unseeded_jobs_draw_from_their_entropy),
        cmocka_unit_test_setup_teardown(test_mab_predict_reports_rng_change, setup_one_round_job,
                                        teardown_job),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
