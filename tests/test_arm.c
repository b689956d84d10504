/* Arm fitting, and the O(window) update checked against a direct transcription of Zeus's refit
 * (read the window from the full history, newest first; drop and reverse when full). */
#include "helpers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bso/error.h"
#include "core/arm.h"
#include "core/rng.h"

static void test_fit_one_observation_is_exact(void **state)
{
    (void)state;
    struct bso_arm a;
    bso_arm_init(&a, 64);
    const double r[1] = {-5100};
    assert_int_equal(bso_arm_fit(&a, 0, 0, r, 1), 0);
    assert_true(isinf(a.param_precision) && isinf(a.reward_precision));
    assert_true(a.param_mean == -5100);
    assert_int_equal(a.num_observations, 1);
    const double same[3] = {-7, -7, -7}; /* identical rewards: no spread either */
    assert_int_equal(bso_arm_fit(&a, 100, 5, same, 3), 0);
    assert_true(isinf(a.param_precision) && a.param_mean == -7);
    assert_int_equal(bso_arm_fit(&a, 0, 0, r, 0), BSO_EINVAL);
    bso_arm_clear(&a);
    bso_arm_clear(NULL);
}

static void test_fit_with_prior(void **state)
{
    (void)state;
    struct bso_arm a;
    bso_arm_init(&a, 32);
    const double r[2] = {-5000, -6000}; /* var 250000 */
    assert_int_equal(bso_arm_fit(&a, 0, 0, r, 2), 0);
    assert_true(a.reward_precision == 1.0 / 250000);
    assert_true(a.param_precision == 2.0 / 250000);
    assert_true(a.param_mean == -5500);
    assert_int_equal(bso_arm_fit(&a, -1000, 1e-5, r, 2), 0);
    const double prec = 1e-5 + 2 * (1.0 / 250000);
    assert_true(a.param_precision == prec);
    assert_true(a.param_mean == (1e-5 * -1000 + (1.0 / 250000) * -11000) / prec);
}

/* Zeus's report refit, from the whole history (ascending trial numbers). */
static void zeus_refit(const struct bso_reward *hist, size_t n, int64_t window, double reward,
                       struct bso_arm *out)
{
    double *r = malloc((n + 1) * sizeof(*r));
    size_t take = window > 0 && n > (size_t)window ? (size_t)window : n;
    size_t k = 0;
    for (size_t i = 0; i < take; i++) /* newest first, LIMIT window */
        r[k++] = hist[n - 1 - i].reward;
    if (window > 0 && take >= (size_t)window) {
        k--; /* pop the oldest, then reverse to oldest first */
        for (size_t i = 0; i < k / 2; i++) {
            double t = r[i];
            r[i] = r[k - 1 - i];
            r[k - 1 - i] = t;
        }
    }
    r[k++] = reward;
    assert_int_equal(bso_arm_fit(out, 0.5, 1e-7, r, k), 0);
    free(r);
}

static int cmp_trial(const void *a, const void *b)
{
    const struct bso_reward *x = a, *y = b;
    return (x->trial_number > y->trial_number) - (x->trial_number < y->trial_number);
}

static void test_observe_matches_zeus_refit(void **state)
{
    (void)state;
    const int64_t windows[] = {0, 1, 2, 3, 5, 8, 20};
    bso_rng rng;
    bso_rng_seed(&rng, 77);
    for (size_t w = 0; w < sizeof windows / sizeof *windows; w++) {
        const int64_t window = windows[w];
        struct bso_arm arm;
        bso_arm_init(&arm, 128);
        struct bso_reward hist[300];
        size_t n = 0;
        int64_t next_number = 1;
        for (int step = 0; step < 300; step++) {
            /* Results arrive out of order now and then, as concurrent trials do. */
            int64_t number = next_number + (int64_t)bso_rng_bounded(&rng, 3);
            next_number = number + 1;
            if (step % 7 == 3 && n > 0)
                number = hist[bso_rng_bounded(&rng, n - 1)].trial_number - 1;
            bool clash = false;
            for (size_t i = 0; i < n; i++)
                clash |= hist[i].trial_number == number;
            if (clash || number < 1)
                continue;
            /* Non-integral rewards so that summation order shows in the last bits. */
            double reward = -5000 - 1000 * bso_rng_next_double(&rng);
            struct bso_arm want;
            bso_arm_init(&want, 128);
            zeus_refit(hist, n, window, reward, &want);
            assert_int_equal(bso_arm_observe(&arm, number, reward, window, 0.5, 1e-7), 0);
            assert_memory_equal(&arm.param_mean, &want.param_mean, sizeof(double));
            assert_memory_equal(&arm.param_precision, &want.param_precision, sizeof(double));
            assert_memory_equal(&arm.reward_precision, &want.reward_precision, sizeof(double));
            assert_int_equal(arm.num_observations, want.num_observations);
            hist[n++] = (struct bso_reward){number, reward};
            qsort(hist, n, sizeof *hist, cmp_trial);
            assert_int_equal(arm.n_results, (int64_t)n);
            /* The arm keeps no more than the window needs. */
            if (window > 0)
                assert_true(arm.n_recent <= (size_t)(window - 1));
            else
                assert_int_equal(arm.n_recent, n);
        }
        bso_arm_clear(&arm);
    }
}

static void test_copy_is_deep(void **state)
{
    (void)state;
    struct bso_arm a, b;
    bso_arm_init(&a, 16);
    assert_int_equal(bso_arm_remember(&a, 1, -10, 0), 0);
    assert_int_equal(bso_arm_remember(&a, 2, -20, 0), 0);
    assert_int_equal(bso_arm_copy(&b, &a), 0);
    b.recent[0].reward = 99;
    assert_true(a.recent[0].reward == -10);
    bso_arm_clear(&a);
    bso_arm_clear(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fit_one_observation_is_exact),
        cmocka_unit_test(test_fit_with_prior),
        cmocka_unit_test(test_observe_matches_zeus_refit),
        cmocka_unit_test(test_copy_is_deep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
