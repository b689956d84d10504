/* Python-style number formatting. (vs_numpy compares thousands more values with Python.) */
#include "helpers.h"

#include <math.h>
#include <string.h>

#include "bso/error.h"
#include "core/pyfmt.h"

static void expect_repr(double v, const char *want)
{
    char buf[BSO_PYFLOAT_MAX];
    assert_int_equal(bso_pyfloat_repr(v, buf, sizeof buf), (int)strlen(want));
    assert_string_equal(buf, want);
}

static void test_float_repr(void **state)
{
    (void)state;
    expect_repr(48000.0, "48000.0");
    expect_repr(2.0, "2.0");
    expect_repr(0.1, "0.1");
    expect_repr(-0.0, "-0.0");
    expect_repr(1e16, "1e+16");
    expect_repr(9999999999999998.0, "9999999999999998.0");
    expect_repr(0.0001, "0.0001");
    expect_repr(0.00001, "1e-05");
    expect_repr(1.5e-300, "1.5e-300");
    expect_repr(INFINITY, "inf");
    expect_repr(-INFINITY, "-inf");
    expect_repr(NAN, "nan");
    expect_repr(23157.06, "23157.06");
}

static void test_float_repr_small_buffer(void **state)
{
    (void)state;
    char buf[4];
    assert_int_equal(bso_pyfloat_repr(48000.0, buf, sizeof buf), BSO_ERANGE);
}

static void test_int_list_repr(void **state)
{
    (void)state;
    char buf[64];
    const int64_t v[] = {8, 16, -32};
    assert_int_equal(bso_pyintlist_repr(v, 3, buf, sizeof buf), 12);
    assert_string_equal(buf, "[8, 16, -32]");
    assert_int_equal(bso_pyintlist_repr(v, 0, buf, sizeof buf), 2);
    assert_string_equal(buf, "[]");
    assert_int_equal(bso_pyintlist_repr(v, 3, buf, 8), BSO_ERANGE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_float_repr),
        cmocka_unit_test(test_float_repr_small_buffer),
        cmocka_unit_test(test_int_list_repr),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
