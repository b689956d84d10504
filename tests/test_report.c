/* The report decision: cost bound, max epochs, convergence direction, and the exact messages. */
#include "helpers.h"

#include <math.h>
#include <string.h>

#include "bso/error.h"
#include "core/cost.h"
#include "core/report.h"

static struct bso_job_spec spec_with(double beta, bool higher_is_better)
{
    struct bso_job_spec s;
    struct bso_spec_errors errs = {0};
    fake_job_spec(&s);
    s.has_beta_knob = beta > 0;
    s.beta_knob = beta;
    s.higher_is_better_metric = higher_is_better;
    assert_int_equal(bso_job_spec_validate(&s, &errs), 0);
    return s;
}

static void test_cost_formula(void **state)
{
    (void)state;
    assert_true(bso_cost(3000.123, 14.438, 0.5, 3000) == 23157.0615);
    assert_true(bso_cost(100, 2, 1.0, 500) == 100);
    assert_true(bso_cost(100, 2, 0.0, 500) == 1000);
}

static void test_first_result_is_never_early_stopped(void **state)
{
    (void)state;
    struct bso_job_spec s = spec_with(2.0, true);
    struct bso_report r = {.time = 1e6, .energy = 1e9, .metric = 0.1, .current_epoch = 3};
    struct bso_decision d;
    bso_report_decide(&s, false, 0, 1024, &r, &d);
    assert_false(d.stop_train);
    assert_string_equal(d.message, "Stop condition not met, keep training");
}

static void test_cost_bound_equality_keeps_training(void **state)
{
    (void)state;
    struct bso_job_spec s = spec_with(2.0, true);
    /* min_cost is half this cost, so beta 2 puts the bound exactly on it. */
    struct bso_report r = {.time = 2.0 / 3.0, .energy = 0, .metric = 0.1, .current_epoch = 1};
    struct bso_decision d;
    const double bound_cost = bso_cost(0, r.time, 0.5, 3000);
    bso_report_decide(&s, true, bound_cost / 2.0, 64, &r, &d);
    assert_true(d.cost == bound_cost);
    assert_false(d.stop_train); /* cost == beta * min_cost is still within */
    /* One ulp more is over. */
    bso_report_decide(&s, true, nextafter(bound_cost, 0) / 2.0, 64, &r, &d);
    assert_true(d.stop_train);
    assert_false(d.converged);
}

static void test_over_bound_message(void **state)
{
    (void)state;
    struct bso_job_spec s = spec_with(2.0, true);
    /* Zeus's test_report: trial 2 costs 48000 > 2 * 23157.0615. */
    struct bso_report r = {.time = 30, .energy = 6000, .metric = 0.55, .current_epoch = 5};
    struct bso_decision d;
    bso_report_decide(&s, true, 23157.0615, 1024, &r, &d);
    assert_true(d.stop_train);
    assert_false(d.converged); /* reached the target, but over the bound */
    assert_string_equal(d.message, "Batch Size(1024) exceeded the cost upper bound: current "
                                   "cost(48000.0) >\n                    "
                                   "beta_knob(2.0)*min_cost(23157.0615)");
}

static void test_beta_disabled_never_early_stops(void **state)
{
    (void)state;
    struct bso_job_spec s = spec_with(-1, true);
    assert_false(s.has_beta_knob);
    struct bso_report r = {.time = 1e9, .energy = 1e12, .metric = 0.1, .current_epoch = 99};
    struct bso_decision d;
    bso_report_decide(&s, true, 1.0, 64, &r, &d);
    assert_false(d.stop_train);
    r.current_epoch = 100;
    bso_report_decide(&s, true, 1.0, 64, &r, &d);
    assert_true(d.stop_train);
    assert_false(d.converged);
    assert_string_equal(d.message, "Train failed to converge within max_epoch(100)");
    r.current_epoch = 250; /* past the cap stops too */
    bso_report_decide(&s, true, 1.0, 64, &r, &d);
    assert_true(d.stop_train);
}

static void test_convergence_direction(void **state)
{
    (void)state;
    struct bso_job_spec hi = spec_with(2.0, true), lo = spec_with(2.0, false);
    struct bso_report r = {.time = 1, .energy = 1, .metric = 0.5, .current_epoch = 1};
    struct bso_decision d;
    bso_report_decide(&hi, false, 0, 64, &r, &d); /* metric == target counts as reached */
    assert_true(d.stop_train && d.converged);
    assert_string_equal(d.message, "Train succeeded");
    bso_report_decide(&lo, false, 0, 64, &r, &d);
    assert_true(d.stop_train && d.converged);
    r.metric = 0.6;
    bso_report_decide(&hi, false, 0, 64, &r, &d);
    assert_true(d.converged);
    bso_report_decide(&lo, false, 0, 64, &r, &d);
    assert_false(d.stop_train);
}

static void test_report_check(void **state)
{
    (void)state;
    char msg[128];
    struct bso_report ok = {.time = 0, .energy = 0, .metric = -3, .current_epoch = 0};
    assert_int_equal(bso_report_check(&ok, msg, sizeof msg), 0);
    struct bso_report bad[] = {
        {.time = -1, .energy = 0, .metric = 0, .current_epoch = 1},
        {.time = NAN, .energy = 0, .metric = 0, .current_epoch = 1},
        {.time = 1, .energy = -0.5, .metric = 0, .current_epoch = 1},
        {.time = 1, .energy = INFINITY, .metric = 0, .current_epoch = 1},
        {.time = 1, .energy = 1, .metric = NAN, .current_epoch = 1},
        {.time = 1, .energy = 1, .metric = 0, .current_epoch = -1},
    };
    const char *want[] = {"time", "time", "energy", "energy", "metric", "current_epoch"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(bso_report_check(&bad[i], msg, sizeof msg), BSO_EINVAL);
        assert_true(strncmp(msg, want[i], strlen(want[i])) == 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cost_formula),
        cmocka_unit_test(test_first_result_is_never_early_stopped),
        cmocka_unit_test(test_cost_bound_equality_keeps_training),
        cmocka_unit_test(test_over_bound_message),
        cmocka_unit_test(test_beta_disabled_never_early_stops),
        cmocka_unit_test(test_convergence_direction),
        cmocka_unit_test(test_report_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
