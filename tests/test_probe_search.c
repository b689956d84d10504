/* The largest-fitting-size search: it finds the boundary for every possible boundary, with
 * about log2 tries, and never tries a size whose outcome is implied by earlier ones. */
#include "helpers.h"

#include "bso/probe.h"

/* Runs the search with every size up to `limit` fitting; returns the tries it took. */
static int search(const int64_t *sizes, size_t n, int64_t limit, int64_t *largest)
{
    struct bso_probe_search s;
    assert_int_equal(bso_probe_search_init(&s, sizes, n), 0);
    int tries = 0;
    int64_t lo_fit = 0, hi_unfit = INT64_MAX;
    for (int64_t bs; (bs = bso_probe_search_next(&s)) > 0;) {
        assert_int_equal(bso_probe_search_next(&s), bs); /* stable until recorded */
        /* Never a size already implied: above a failure, or at or below a success. */
        assert_true(bs > lo_fit && bs < hi_unfit);
        const bool fits = bs <= limit;
        if (fits)
            lo_fit = bs;
        else
            hi_unfit = bs;
        assert_int_equal(bso_probe_search_record(&s, bs, fits), 0);
        tries++;
        assert_true(tries <= 64);
    }
    *largest = bso_probe_search_largest(&s);
    return tries;
}

static void test_every_boundary(void **state)
{
    (void)state;
    int64_t sizes[64];
    for (int i = 0; i < 64; i++)
        sizes[i] = 8 * (i + 1); /* 8, 16, ..., 512 */
    int worst = 0;
    for (int64_t limit = 0; limit <= 520; limit += 4) {
        int64_t largest;
        const int tries = search(sizes, 64, limit, &largest);
        const int64_t want = limit < 8 ? 0 : (limit / 8) * 8 > 512 ? 512 : (limit / 8) * 8;
        assert_int_equal(largest, want);
        if (tries > worst)
            worst = tries;
    }
    assert_true(worst <= 14); /* doubling (about 7) then bisecting (about 6) */
}

static void test_powers_of_two_and_order(void **state)
{
    (void)state;
    const int64_t sizes[] = {1024, 32, 4096, 64, 256, 128, 2048, 512}; /* any order */
    int64_t largest;
    const int tries = search(sizes, 8, 700, &largest);
    assert_int_equal(largest, 512);
    assert_true(tries <= 6);
    assert_int_equal(search(sizes, 8, 16, &largest), 1); /* the smallest fails: done */
    assert_int_equal(largest, 0);
    search(sizes, 8, 1 << 20, &largest);
    assert_int_equal(largest, 4096);
}

static void test_bad_use(void **state)
{
    (void)state;
    struct bso_probe_search s;
    const int64_t dup[] = {8, 16, 8}, neg[] = {8, -1};
    assert_int_equal(bso_probe_search_init(&s, dup, 3), BSO_EINVAL);
    assert_int_equal(bso_probe_search_init(&s, neg, 2), BSO_EINVAL);
    assert_int_equal(bso_probe_search_init(&s, dup, 0), BSO_EINVAL);
    const int64_t ok[] = {8, 16};
    assert_int_equal(bso_probe_search_init(&s, ok, 2), 0);
    assert_int_equal(bso_probe_search_record(&s, 8, true), BSO_EINVAL); /* not asked yet */
    assert_int_equal(bso_probe_search_next(&s), 8);
    assert_int_equal(bso_probe_search_record(&s, 16, true), BSO_EINVAL); /* not this one */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_boundary),
        cmocka_unit_test(test_powers_of_two_and_order),
        cmocka_unit_test(test_bad_use),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
