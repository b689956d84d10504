/* numpy-compatible sums: the pairwise order is visible in the last bits. */
#include "helpers.h"

#include <math.h>

#include "core/npstat.h"

static void test_small_sum_is_left_to_right(void **state)
{
    (void)state;
    /* (1e16 + 1) + 1 loses both ones left to right; any other grouping would keep one. */
    const double a[3] = {1e16, 1, 1};
    assert_true(bso_np_sum(a, 3) == 1e16);
}

static void test_eight_way_unrolled_grouping(void **state)
{
    (void)state;
    /* With 8 values numpy adds ((a0+a1)+(a2+a3)) + ((a4+a5)+(a6+a7)): the two 1s meet first and
     * survive next to 1e16, unlike a left-to-right sum. */
    const double a[8] = {1e16, 0, 0, 0, 1, 1, 0, 0};
    assert_true(bso_np_sum(a, 8) == 1e16 + 2);
    double naive = 0;
    for (int i = 0; i < 8; i++)
        naive += a[i];
    assert_true(naive == 1e16);
}

static void test_mean_and_variance(void **state)
{
    (void)state;
    const double a[4] = {-5000, -5300, -5600, -5900};
    assert_true(bso_np_mean(a, 4) == -5450);
    assert_true(bso_np_var(a, 4) == 112500);
    const double one[1] = {-42};
    assert_true(bso_np_var(one, 1) == 0);
    /* -0.0 is normalised by the reduction's 0.0 start. */
    const double negzero[1] = {-0.0};
    assert_false(signbit(bso_np_sum(negzero, 1)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_sum_is_left_to_right),
        cmocka_unit_test(test_eight_way_unrolled_grouping),
        cmocka_unit_test(test_mean_and_variance),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
