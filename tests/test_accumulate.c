/* Gradient accumulation plans: exact splits, the fewest steps, and the nearest exact options
 * when only uselessly small micro-batches divide the effective batch size. */
#include "helpers.h"

#include "bso/accumulate.h"

static struct bso_accum_plan plan_ok(int64_t effective, int64_t max_micro)
{
    struct bso_accum_plan p;
    assert_int_equal(bso_accum_plan(effective, max_micro, 0, &p, NULL, NULL), 0);
    assert_int_equal(p.micro_batch * p.steps, effective);
    assert_true(p.micro_batch <= max_micro);
    return p;
}

static void test_fits_in_one_step(void **state)
{
    (void)state;
    struct bso_accum_plan p = plan_ok(48, 64);
    assert_int_equal(p.micro_batch, 48);
    assert_int_equal(p.steps, 1);
    p = plan_ok(64, 64);
    assert_int_equal(p.steps, 1);
    p = plan_ok(7, 64); /* small and prime: still one step */
    assert_int_equal(p.micro_batch, 7);
}

static void test_powers_of_two_and_composites(void **state)
{
    (void)state;
    struct bso_accum_plan p = plan_ok(1024, 64);
    assert_int_equal(p.micro_batch, 64);
    assert_int_equal(p.steps, 16);
    p = plan_ok(1024, 100); /* the largest divisor that fits, not the cap */
    assert_int_equal(p.micro_batch, 64);
    p = plan_ok(96, 64);
    assert_int_equal(p.micro_batch, 48);
    assert_int_equal(p.steps, 2);
    p = plan_ok(360, 50);
    assert_int_equal(p.micro_batch, 45);
    assert_int_equal(p.steps, 8);
    p = plan_ok(1000000, 999); /* large: divisors found in O(sqrt n) */
    assert_int_equal(p.micro_batch, 800);
    assert_int_equal(p.steps, 1250);
}

static void test_primes_are_refused_with_options(void **state)
{
    (void)state;
    struct bso_accum_plan p;
    int64_t below = -1, above = -1;
    /* 97 is prime: only micro-batches of 1 divide it. */
    assert_int_equal(bso_accum_plan(97, 64, 0, &p, &below, &above), BSO_ERANGE);
    assert_int_equal(below, 96); /* 48 x 2 */
    assert_int_equal(above, 98); /* 49 x 2 */
    assert_int_equal(bso_accum_plan(1021, 64, 0, &p, &below, &above), BSO_ERANGE);
    struct bso_accum_plan q;
    assert_int_equal(bso_accum_plan(below, 64, 0, &q, NULL, NULL), 0);
    assert_true(q.micro_batch >= 32 && q.micro_batch * q.steps == below);
    assert_int_equal(bso_accum_plan(above, 64, 0, &q, NULL, NULL), 0);
    assert_true(q.micro_batch >= 32 && q.micro_batch * q.steps == above);
    assert_true(below < 1021 && above > 1021 && above - below <= 64);
    /* The same prime is accepted when any micro-batch will do. */
    assert_int_equal(bso_accum_plan(97, 64, 1, &p, NULL, NULL), 0);
    assert_int_equal(p.micro_batch, 1);
    assert_int_equal(p.steps, 97);
    /* 2 x prime: the prime half fits, or it does not. */
    assert_int_equal(bso_accum_plan(2 * 61, 64, 0, &p, NULL, NULL), 0);
    assert_int_equal(p.micro_batch, 61);
    assert_int_equal(bso_accum_plan(2 * 67, 64, 0, &p, &below, &above), BSO_ERANGE);
}

static void test_bad_arguments(void **state)
{
    (void)state;
    struct bso_accum_plan p;
    assert_int_equal(bso_accum_plan(0, 64, 0, &p, NULL, NULL), BSO_EINVAL);
    assert_int_equal(bso_accum_plan(64, 0, 0, &p, NULL, NULL), BSO_EINVAL);
    assert_int_equal(bso_accum_plan(64, 32, 33, &p, NULL, NULL), BSO_EINVAL);
    assert_int_equal(bso_accum_plan(64, 32, -1, &p, NULL, NULL), BSO_EINVAL);
    assert_int_equal(bso_accum_plan(64, 32, 0, NULL, NULL, NULL), BSO_EINVAL);
}

/* Every plan for every size up to 2000 is exact, fits, and has the fewest steps. */
static void test_exhaustive_small(void **state)
{
    (void)state;
    for (int64_t max = 1; max <= 40; max += 13)
        for (int64_t e = 1; e <= 2000; e++) {
            struct bso_accum_plan p;
            if (bso_accum_plan(e, max, 1, &p, NULL, NULL) != 0)
                fail_msg("no plan for %lld with max %lld", (long long)e, (long long)max);
            assert_int_equal(p.micro_batch * p.steps, e);
            assert_true(p.micro_batch <= max);
            for (int64_t m = p.micro_batch + 1; m <= max && m <= e; m++)
                assert_true(e % m != 0); /* no larger micro-batch divides */
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fits_in_one_step),
        cmocka_unit_test(test_powers_of_two_and_composites),
        cmocka_unit_test(test_primes_are_refused_with_options),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_exhaustive_small),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
