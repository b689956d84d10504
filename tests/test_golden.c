/* Zeus's golden scenario G (spec Appendix B): a seeded serial job whose batch-size sequence for
 * trials 1-51 and final arms were recorded from the original server. Reproduced exactly. */
#include "helpers.h"

#include <stdio.h>
#include <string.h>

static double base_cost(int64_t bs)
{
    switch (bs) {
    case 8:
        return 9000;
    case 16:
        return 5300;
    case 32:
        return 5000;
    case 64:
        return 5100;
    case 128:
        return 5400;
    case 256:
        return 8000;
    }
    fail_msg("unexpected batch size %lld", (long long)bs);
    return 0;
}

/* Runs scenario G for 51 trials and writes the chosen batch sizes to seq. */
static void run_scenario(int64_t window, int64_t seed, int64_t seq[51], struct bso_job *job)
{
    static const int64_t sizes[] = {8, 16, 32, 64, 128, 256};
    struct bso_job_spec spec;
    bso_job_spec_defaults(&spec);
    snprintf(spec.job_id_prefix, sizeof spec.job_id_prefix, "g");
    snprintf(spec.gpu_model, sizeof spec.gpu_model, "A100");
    set_batch_sizes(&spec, sizes, 6);
    spec.default_batch_size = 64;
    spec.max_epochs = 10;
    spec.max_power = 1000;
    spec.number_of_gpus = 1;
    spec.window_size = window;
    spec.has_mab_seed = true;
    spec.mab_seed = seed;
    start_job(job, &spec);

    char line[512];
    size_t o = 0;
    for (int64_t k = 1; k <= 51; k++) {
        struct bso_trial t = predict_ok(job);
        assert_int_equal(t.number, k);
        const double cost = base_cost(t.batch_size) + (double)((k * 37) % 11 - 5) * 150;
        struct bso_report r = {.time = cost / 500, .energy = 0};
        r.metric = t.batch_size == 8 ? 0.1 : 0.9;
        r.current_epoch = t.batch_size == 8 ? 10 : 1;
        struct bso_decision d;
        unsigned changed;
        size_t arm;
        assert_int_equal(bso_job_report(job, &t, &r, &d, &changed, &arm), 0);
        assert_true(d.stop_train);
        seq[k - 1] = t.batch_size;
        o += (size_t)snprintf(line + o, sizeof line - o, "%s%lld", k > 1 ? "," : "",
                              (long long)t.batch_size);
    }
    print_message("window %lld seed %lld: %s\n", (long long)window, (long long)seed, line);
}

static void expect_sequence(const int64_t got[51], const int64_t want[51])
{
    for (int i = 0; i < 51; i++)
        if (got[i] != want[i])
            fail_msg("trial %d: got batch size %lld, Zeus chose %lld", i + 1, (long long)got[i],
                     (long long)want[i]);
}

static void test_window0_seed42(void **state)
{
    (void)state;
    static const int64_t want[51] = {64, 32, 16, 8,  128, 256, 16, 32, 64, 128, 256, 64, 16,
                                     64, 64, 64, 64, 64,  64,  64, 64, 64, 64,  64,  64, 64,
                                     16, 64, 64, 64, 64,  64,  64, 64, 64, 64,  64,  64, 64,
                                     64, 64, 16, 64, 64,  64,  64, 64, 64, 64,  64,  64};
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
    int64_t seq[51];
    run_scenario(0, 42, seq, &job);
    expect_sequence(seq, want);
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

static void test_window3_seed42(void **state)
{
    (void)state;
    static const int64_t want[51] = {64, 32, 16, 8,  128, 256, 16, 32, 64, 128, 256, 64, 16,
                                     64, 64, 64, 64, 32,  64,  64, 64, 32, 16,  64,  32, 32,
                                     32, 32, 32, 32, 64,  64,  32, 32, 64, 32,  32,  32, 32,
                                     32, 32, 32, 32, 32,  32,  32, 32, 32, 32,  32,  32};
    struct bso_job job;
    int64_t seq[51];
    run_scenario(3, 42, seq, &job);
    expect_sequence(seq, want);
    bso_job_clear(&job);
}

static void test_window0_seed1(void **state)
{
    (void)state;
    static const int64_t want[51] = {64, 32, 16, 8,  128, 256, 16, 32, 64, 128, 256, 16, 64,
                                     16, 16, 16, 64, 64,  16,  16, 64, 16, 64,  64,  16, 64,
                                     16, 16, 16, 64, 16,  64,  64, 64, 64, 64,  64,  64, 16,
                                     64, 64, 16, 16, 64,  16,  16, 64, 64, 64,  64,  64};
    struct bso_job job;
    int64_t seq[51];
    run_scenario(0, 1, seq, &job);
    expect_sequence(seq, want);
    bso_job_clear(&job);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_window0_seed42),
        cmocka_unit_test(test_window3_seed42),
        cmocka_unit_test(test_window0_seed1),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
