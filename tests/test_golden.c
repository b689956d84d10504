/* Zeus's golden scenario G (spec Appendix B): seeded serial jobs whose batch-size sequences for
 * trials 1-51, and final arms, were recorded from the original server. Reproduced exactly. */
#include "helpers.h"

#include <stdio.h>
#include <string.h>

#include "sim/scenario_g.h"

struct golden {
    int64_t window, seed;
    int64_t want[51];
};

static const struct golden runs[] = {
    {0, 42, {64, 32, 16, 8,  128, 256, 16, 32, 64, 128, 256, 64, 16, 64, 64, 64, 64,
             64, 64, 64, 64, 64,  64,  64, 64, 64, 16,  64,  64, 64, 64, 64, 64, 64,
             64, 64, 64, 64, 64,  64,  64, 16, 64, 64,  64,  64, 64, 64, 64, 64, 64}},
    {3, 42, {64, 32, 16, 8,  128, 256, 16, 32, 64, 128, 256, 64, 16, 64, 64, 64, 64,
             32, 64, 64, 64, 32,  16,  64, 32, 32, 32,  32,  32, 32, 64, 64, 32, 32,
             64, 32, 32, 32, 32,  32,  32, 32, 32, 32,  32,  32, 32, 32, 32, 32, 32}},
    {0, 1, {64, 32, 16, 8,  128, 256, 16, 32, 64, 128, 256, 16, 64, 16, 16, 16, 64,
            64, 16, 16, 64, 16,  64,  64, 16, 64, 16,  16,  16, 64, 16, 64, 64, 64,
            64, 64, 64, 64, 16,  64,  64, 16, 16, 64,  16,  16, 64, 64, 64, 64, 64}},
};

/* Runs scenario G for 51 trials, asserting each choice; leaves the job for arm checks. */
static void replay(const struct golden *g, struct bso_job *job)
{
    struct bso_job_spec spec;
    bso_scenario_g_spec(&spec, g->window, g->seed);
    start_job(job, &spec);
    char line[512];
    size_t o = 0;
    for (int64_t k = 1; k <= 51; k++) {
        struct bso_trial t = predict_ok(job);
        assert_int_equal(t.number, k);
        struct bso_report r = bso_scenario_g_report(k, t.batch_size);
        struct bso_decision d;
        unsigned changed;
        size_t arm;
        assert_int_equal(bso_job_report(job, &t, &r, &d, &changed, &arm), 0);
        assert_true(d.stop_train);
        o += (size_t)snprintf(line + o, sizeof line - o, "%s%lld", k > 1 ? "," : "",
                              (long long)t.batch_size);
        if (t.batch_size != g->want[k - 1])
            fail_msg("window %lld seed %lld, trial %lld: got batch size %lld, Zeus chose %lld",
                     (long long)g->window, (long long)g->seed, (long long)k,
                     (long long)t.batch_size, (long long)g->want[k - 1]);
    }
    print_message("window %lld seed %lld: %s\n", (long long)g->window, (long long)g->seed, line);
}

static void test_sequences(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
        struct bso_job job;
        replay(&runs[i], &job);
        bso_job_clear(&job);
    }
}

static void test_final_arms_window0_seed42(void **state)
{
    (void)state;
    /* (bs, mean, precision, reward precision, n), all to the last bit. */
    static const struct {
        int64_t bs;
        double mean, prec, reward_prec;
        int64_t n;
    } arms[5] = {
        {16, -5360.0, 2.4582104228121928e-05, 4.9164208456243854e-06, 5},
        {32, -5600.0, 8.888888888888889e-05, 4.4444444444444447e-05, 2},
        {64, -5069.230769230769, 0.00018969635918837243, 4.864009209958267e-06, 39},
        {128, -5850.0, 8.888888888888889e-05, 4.4444444444444447e-05, 2},
        {256, -7400.0, 8.888888888888889e-05, 4.4444444444444447e-05, 2},
    };
    struct bso_job job;
    replay(&runs[0], &job);
    assert_int_equal(job.n_arms, 5);
    for (size_t i = 0; i < 5; i++) {
        const struct bso_arm *a = &job.arms[i];
        print_message("arm (%lld, %.17g, %.17g, %.17g, %lld)\n", (long long)a->batch_size,
                      a->param_mean, a->param_precision, a->reward_precision,
                      (long long)a->num_observations);
        assert_int_equal(a->batch_size, arms[i].bs);
        assert_memory_equal(&a->param_mean, &arms[i].mean, sizeof(double));
        assert_memory_equal(&a->param_precision, &arms[i].prec, sizeof(double));
        assert_memory_equal(&a->reward_precision, &arms[i].reward_prec, sizeof(double));
        assert_int_equal(a->num_observations, arms[i].n);
    }
    bso_job_clear(&job);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sequences),
        cmocka_unit_test(test_final_arms_window0_seed42),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
