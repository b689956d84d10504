/* The pruning explorer: Zeus's test_explorer.py cases and the in-flight, failure and all-pruned
 * rules of the spec's section 3.3. */
#include "helpers.h"

#include <string.h>

#include "bso/error.h"
#include "core/explorer.h"

struct step {
    int64_t bs;
    bool converged;
    double cost;
};

/* Walks a job through steps serially, asserting each proposed batch size, then checks that the
 * next prediction builds exactly the expected arms. */
static void walk(int64_t default_bs, const struct step *steps, size_t n, const int64_t *arms,
                 size_t n_arms)
{
    struct bso_job_spec spec;
    struct bso_job job;
    explorer_job_spec(&spec, default_bs);
    start_job(&job, &spec);
    for (size_t i = 0; i < n; i++) {
        struct bso_trial t = predict_ok(&job);
        print_message("trial %lld: bs %lld (%s)\n", (long long)t.number, (long long)t.batch_size,
                      steps[i].converged ? "converges" : "fails");
        assert_int_equal(t.number, (int64_t)i + 1);
        assert_int_equal(t.type, BSO_TRIAL_EXPLORATION);
        assert_int_equal(t.batch_size, steps[i].bs);
        struct bso_decision d = report_cost(&job, &t, steps[i].cost, steps[i].converged ? 0.9 : 0.1,
                                            steps[i].converged ? 1 : spec.max_epochs);
        assert_true(d.stop_train);
        assert_int_equal(d.converged, steps[i].converged); /* the report echoes convergence */
    }
    assert_int_equal(job.stage, BSO_STAGE_PRUNING);
    struct bso_trial t = predict_ok(&job);
    assert_int_equal(job.stage, BSO_STAGE_MAB);
    assert_int_equal(t.type, BSO_TRIAL_MAB);
    assert_int_equal(job.n_arms, n_arms);
    for (size_t i = 0; i < n_arms; i++)
        assert_int_equal(job.arms[i].batch_size, arms[i]);
    bso_job_clear(&job);
}

static void test_normal(void **state)
{
    (void)state;
    const struct step steps[] = {
        {128, true, 10}, {64, true, 9},   {32, true, 8},    {16, true, 12},
        {8, false, 50},  {256, true, 20}, {32, true, 8},    {16, false, 15},
        {64, true, 9},   {128, true, 10}, {256, false, 20},
    };
    const int64_t arms[] = {32, 64, 128};
    walk(128, steps, 11, arms, 3);
}

static void test_default_is_largest(void **state)
{
    (void)state;
    const struct step steps[] = {
        {256, true, 5}, {128, true, 6}, {64, true, 7}, {32, true, 8}, {16, false, 9},
        {256, true, 5}, {128, true, 6}, {64, true, 7}, {32, true, 8},
    };
    const int64_t arms[] = {32, 64, 128, 256};
    walk(256, steps, 9, arms, 4);
}

static void test_default_is_smallest(void **state)
{
    (void)state;
    const struct step steps[] = {
        {8, true, 5}, {16, true, 6}, {32, true, 7}, {64, false, 8}, {8, true, 5}, {16, false, 6},
    };
    const int64_t arms[] = {8};
    walk(8, steps, 6, arms, 1);
}

static void test_all_converge(void **state)
{
    (void)state;
    const struct step steps[] = {
        {64, true, 10},  {32, true, 5},   {16, true, 7}, {8, true, 9},
        {128, true, 11}, {256, true, 12}, /* round 1 is anchored at 32, the cheapest */
        {32, true, 5},   {16, true, 7},   {8, true, 9},  {64, true, 10},
        {128, true, 11}, {256, true, 12},
    };
    const int64_t arms[] = {8, 16, 32, 64, 128, 256};
    walk(64, steps, 12, arms, 6);
}

static void test_only_default_converges(void **state)
{
    (void)state;
    const struct step steps[] = {{64, true, 10}, {32, false, 5}, {128, false, 5}, {64, true, 10}};
    const int64_t arms[] = {64};
    walk(64, steps, 4, arms, 1);
}

static void test_failing_default_skips_smaller_sizes(void **state)
{
    /* The default fails first: the down list breaks at once and the walk goes up. */
    struct bso_job *job = *state;
    struct bso_trial t = predict_ok(job);
    assert_int_equal(t.batch_size, 64);
    report_cost(job, &t, 10, 0.1, job->spec.max_epochs);
    t = predict_ok(job);
    assert_int_equal(t.batch_size, 128);
}

static void test_cost_ties_go_to_the_first_encountered(void **state)
{
    /* 64 (down list) and 128 (up list) cost the same: 64 was met first and anchors round 1. */
    struct bso_job *job = *state;
    const struct step round0[] = {{64, true, 7}, {32, false, 1}, {128, true, 7}, {256, false, 1}};
    for (size_t i = 0; i < 4; i++) {
        struct bso_trial t = predict_ok(job);
        assert_int_equal(t.batch_size, round0[i].bs);
        report_cost(job, &t, round0[i].cost, round0[i].converged ? 0.9 : 0.1,
                    round0[i].converged ? 1 : job->spec.max_epochs);
    }
    assert_int_equal(predict_ok(job).batch_size, 64);
}

static void test_one_exploration_in_flight(void **state)
{
    struct bso_job *job = *state;
    struct bso_trial first = predict_ok(job);
    assert_int_equal(first.type, BSO_TRIAL_EXPLORATION);
    /* While 64 is pending every other request trains at the cheapest size so far: the default. */
    for (int i = 0; i < 3; i++) {
        struct bso_trial c = predict_ok(job);
        assert_int_equal(c.type, BSO_TRIAL_CONCURRENT);
        assert_int_equal(c.batch_size, 64);
        assert_int_equal(c.number, first.number + 1 + i);
    }
    report_cost(job, &first, 10, 0.9, 1);
    struct bso_trial next = predict_ok(job);
    assert_int_equal(next.type, BSO_TRIAL_EXPLORATION);
    assert_int_equal(next.batch_size, 32);
    /* Once 32 finishes cheaper, concurrent requests move to it. */
    struct bso_trial c = predict_ok(job);
    assert_int_equal(c.batch_size, 64);
    report_cost(job, &next, 5, 0.9, 1);
    assert_int_equal(job->min_cost_batch_size, 32);
    struct bso_trial third = predict_ok(job);
    assert_int_equal(third.type, BSO_TRIAL_EXPLORATION);
    assert_int_equal(third.batch_size, 16);
    c = predict_ok(job);
    assert_int_equal(c.type, BSO_TRIAL_CONCURRENT);
    assert_int_equal(c.batch_size, 32);
    /* Even a non-converged result sets min_cost when it is cheapest (Zeus's rule). */
    report_cost(job, &c, 1, 0.1, job->spec.max_epochs);
    assert_int_equal(job->min_cost_batch_size, 32);
    assert_true(job->min_cost < 2);
}

static void test_failed_exploration_is_reissued(void **state)
{
    struct bso_job *job = *state;
    struct bso_trial t = predict_ok(job);
    report_cost(job, &t, 10, 0.9, 1);
    t = predict_ok(job);
    assert_int_equal(t.batch_size, 32);
    unsigned changed;
    size_t stat;
    bso_job_end_trial(job, &t, &changed, &stat);
    assert_int_equal(changed, BSO_CHANGED_TRIAL);
    assert_int_equal(t.status, BSO_TRIAL_FAILED);
    assert_int_equal(bso_job_find_trial(job, t.number)->status, BSO_TRIAL_FAILED);
    struct bso_trial again = predict_ok(job);
    assert_int_equal(again.type, BSO_TRIAL_EXPLORATION);
    assert_int_equal(again.batch_size, 32);
    assert_int_equal(again.number, t.number + 1);
}

/* Zeus retries a crashing exploration forever; after BSO_CRASHES_INFEASIBLE crashes in a row
 * the size counts as not converging: the walk down stops there and goes up. */
static void test_crashing_size_becomes_infeasible(void **state)
{
    struct bso_job *job = *state;
    struct bso_trial t = predict_ok(job);
    assert_int_equal(t.batch_size, 64);
    report_cost(job, &t, 10, 0.9, 1);
    unsigned changed;
    size_t stat;
    int64_t infeasible[BSO_MAX_BATCH_SIZES];
    for (int k = 0; k < BSO_CRASHES_INFEASIBLE; k++) {
        assert_int_equal(bso_job_infeasible_sizes(job, infeasible), 0);
        t = predict_ok(job);
        assert_int_equal(t.batch_size, 32); /* retried, as Zeus does, until the K-th crash */
        bso_job_end_trial(job, &t, &changed, &stat);
    }
    assert_int_equal(bso_job_infeasible_sizes(job, infeasible), 1);
    assert_int_equal(infeasible[0], 32);
    t = predict_ok(job);
    assert_int_equal(t.type, BSO_TRIAL_EXPLORATION);
    assert_int_equal(t.batch_size, 128);
    /* A run that reports in between breaks the streak: 128 crashes twice, then converges. */
    bso_job_end_trial(job, &t, &changed, &stat);
    t = predict_ok(job);
    assert_int_equal(t.batch_size, 128);
    bso_job_end_trial(job, &t, &changed, &stat);
    t = predict_ok(job);
    assert_int_equal(t.batch_size, 128);
    report_cost(job, &t, 12, 0.9, 1);
    assert_int_equal(bso_crash_streak(job->trials, job->n_trials, 128), 0);
    assert_int_equal(bso_crash_streak(job->trials, job->n_trials, 32), 3);
}

static void test_all_pruned(void **state)
{
    struct bso_job *job = *state;
    const int64_t order[] = {64, 128};
    for (size_t i = 0; i < 2; i++) {
        struct bso_trial t = predict_ok(job);
        assert_int_equal(t.batch_size, order[i]);
        report_cost(job, &t, 10, 0.1, job->spec.max_epochs);
    }
    for (int i = 0; i < 2; i++) { /* the job stays stuck, as in Zeus */
        struct bso_trial t;
        unsigned changed = 99;
        assert_int_equal(bso_job_predict(job, &t, &changed), BSO_EPRUNED);
        assert_string_equal(bso_job_errmsg(job), BSO_MSG_ALL_PRUNED);
        assert_int_equal(changed, 0);
    }
    assert_int_equal(job->last_trial_number, 2);
}

static void test_explore_direct(void **state)
{
    (void)state;
    struct bso_job_spec spec;
    struct bso_spec_errors errs = {0};
    explorer_job_spec(&spec, 32);
    assert_int_equal(bso_job_spec_validate(&spec, &errs), 0);
    struct bso_explore_result r;
    /* No history: explore the default. */
    assert_int_equal(bso_explore(&spec, NULL, 0, 32, &r), 0);
    assert_int_equal(r.kind, BSO_EXPLORE_TRY);
    assert_int_equal(r.batch_size, 32);
    /* Concurrent and MAB trials are not exploration history. */
    struct bso_trial hist[2] = {
        {.number = 1,
         .batch_size = 32,
         .type = BSO_TRIAL_CONCURRENT,
         .status = BSO_TRIAL_SUCCEEDED,
         .converged = true},
        {.number = 2,
         .batch_size = 32,
         .type = BSO_TRIAL_EXPLORATION,
         .status = BSO_TRIAL_DISPATCHED},
    };
    assert_int_equal(bso_explore(&spec, hist, 1, 16, &r), 0);
    assert_int_equal(r.kind, BSO_EXPLORE_TRY);
    assert_int_equal(r.batch_size, 32);
    assert_int_equal(bso_explore(&spec, hist, 2, 16, &r), 0);
    assert_int_equal(r.kind, BSO_EXPLORE_CONCURRENT);
    assert_int_equal(r.batch_size, 16);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_normal),
        cmocka_unit_test(test_default_is_largest),
        cmocka_unit_test(test_default_is_smallest),
        cmocka_unit_test(test_all_converge),
        cmocka_unit_test(test_only_default_converges),
        cmocka_unit_test_setup_teardown(test_failing_default_skips_smaller_sizes,
                                        setup_explorer_job, teardown_job),
        cmocka_unit_test_setup_teardown(test_cost_ties_go_to_the_first_encountered,
                                        setup_explorer_job, teardown_job),
        cmocka_unit_test_setup_teardown(test_one_exploration_in_flight, setup_explorer_job,
                                        teardown_job),
        cmocka_unit_test_setup_teardown(test_failed_exploration_is_reissued, setup_explorer_job,
                                        teardown_job),
        cmocka_unit_test_setup_teardown(test_crashing_size_becomes_infeasible, setup_explorer_job,
                                        teardown_job),
        cmocka_unit_test_setup_teardown(test_all_pruned, setup_explorer_job, teardown_job),
        cmocka_unit_test(test_explore_direct),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
