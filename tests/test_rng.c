/* The RNG against the vectors of the Zeus spec's Appendix B (taken with numpy 1.24.2), and its
 * JSON state format. Wider agreement with numpy is checked by vs_numpy. */
#include "helpers.h"

#include <stdio.h>
#include <string.h>

#include "bso/error.h"
#include "core/rng.h"

struct vector {
    uint64_t seed;
    const char *state, *inc;
    uint64_t next64[3];
    int64_t choice[5];
    double normal[5];
};

static const struct vector vectors[] = {
    {1,
     "207833532711051698738587646355624148094",
     "194290289479364712180083596243593368443",
     {9441442522235856127ULL, 17532960557476522086ULL, 2659275481604167885ULL},
     {128, 32, 64, 256, 16},
     {0.9053558666731177, 0.4463745723640113, -0.5369532353602852, 0.5811181041963531,
      0.36457239618607573}},
    {42,
     "274674114334540486603088602300644985544",
     "332724090758049132448979897138935081983",
     {14276969152011380360ULL, 8095878257575067585ULL, 15838336090824644132ULL},
     {256, 32, 16, 128, 64},
     {-1.9510351886538364, -1.302179506862318, 0.12784040316728537, -0.3162425923435822,
      -0.016801157504288795}},
    {123456,
     "170740881631534979674546372191819977557",
     "86625949289666656544807559270110712949",
     {11741606243044876999ULL, 7098522298777632033ULL, 875213546532881991ULL},
     {64, 256, 128, 16, 32},
     {0.37132784584580114, 1.1599888209353904, 0.3783525374156672, -0.11718593629335504,
      2.2080092083228324}},
};

static void test_seed_state_and_next64(void **state)
{
    (void)state;
    for (size_t v = 0; v < 3; v++) {
        bso_rng rng;
        bso_rng_seed(&rng, vectors[v].seed);
        char s[48], inc[48];
        bso_u128_to_dec(rng.state, s, sizeof s);
        bso_u128_to_dec(rng.inc, inc, sizeof inc);
        print_message("seed %llu: state %s inc %s\n", (unsigned long long)vectors[v].seed, s, inc);
        assert_string_equal(s, vectors[v].state);
        assert_string_equal(inc, vectors[v].inc);
        for (int i = 0; i < 3; i++) {
            uint64_t x = bso_rng_next64(&rng);
            print_message("  next64[%d] = %llu\n", i, (unsigned long long)x);
            assert_true(x == vectors[v].next64[i]);
        }
    }
}

static void test_choice_then_normals(void **state)
{
    (void)state;
    const int64_t items[5] = {16, 32, 64, 128, 256};
    for (size_t v = 0; v < 3; v++) {
        bso_rng rng;
        bso_rng_seed(&rng, vectors[v].seed);
        int64_t out[5];
        assert_int_equal(bso_rng_choice_all(&rng, items, 5, out), 0);
        print_message("seed %llu: choice [%lld,%lld,%lld,%lld,%lld]\n",
                      (unsigned long long)vectors[v].seed, (long long)out[0], (long long)out[1],
                      (long long)out[2], (long long)out[3], (long long)out[4]);
        assert_memory_equal(out, vectors[v].choice, sizeof out);
        for (int i = 0; i < 5; i++) {
            double z = bso_rng_normal(&rng, 0, 1);
            print_message("  normal[%d] = %.17g\n", i, z);
            /* Bit-exact, not approximately equal. */
            assert_memory_equal(&z, &vectors[v].normal[i], sizeof z);
        }
    }
}

static void test_json_matches_zeus_text(void **state)
{
    (void)state;
    bso_rng rng;
    bso_rng_seed(&rng, 42);
    char buf[BSO_RNG_JSON_MAX];
    assert_true(bso_rng_to_json(&rng, buf, sizeof buf) > 0);
    print_message("%s\n", buf);
    assert_string_equal(buf, "{\"bit_generator\": \"PCG64\", \"state\": {\"state\": "
                             "274674114334540486603088602300644985544, \"inc\": "
                             "332724090758049132448979897138935081983}, \"has_uint32\": 0, "
                             "\"uinteger\": 0}");
    /* Too small a buffer is refused, not truncated. */
    assert_int_equal(bso_rng_to_json(&rng, buf, 40), BSO_ERANGE);
}

static void test_json_round_trip_keeps_stream(void **state)
{
    (void)state;
    bso_rng a, b;
    bso_rng_seed(&a, 7);
    (void)bso_rng_next32(&a); /* leave half a 64-bit draw buffered */
    char buf[BSO_RNG_JSON_MAX];
    assert_true(bso_rng_to_json(&a, buf, sizeof buf) > 0);
    assert_non_null(strstr(buf, "\"has_uint32\": 1"));
    assert_int_equal(bso_rng_from_json(&b, buf), 0);
    for (int i = 0; i < 100; i++)
        assert_true(bso_rng_next32(&a) == bso_rng_next32(&b));
    /* Keys in another order and other whitespace, as another JSON writer may produce. */
    const char *reordered = "{ \"uinteger\":5,\"has_uint32\":1,\n\"state\":{\"inc\":3,\"state\":"
                            "340282366920938463463374607431768211455},\"bit_generator\":\"PCG64\"}";
    assert_int_equal(bso_rng_from_json(&b, reordered), 0);
    assert_true(b.has_uint32 && b.uinteger == 5 && b.inc == 3);
    assert_true(b.state == ~(bso_u128)0);
}

static void test_json_rejects_bad_input(void **state)
{
    (void)state;
    /* Valid apart from the marked part, so each row tests one thing. */
#define STATE(gen, st, inc, has, u)                                                                \
    "{\"bit_generator\": \"" gen "\", \"state\": {\"state\": " st ", \"inc\": " inc "}, "          \
    "\"has_uint32\": " has ", \"uinteger\": " u "}"
    static const struct {
        const char *json;
        int code;
    } cases[] = {
        {"", BSO_EPARSE},
        {"null", BSO_EPARSE},
        {"{}", BSO_EPARSE},
        {"{\"bit_generator\": \"PCG64\"}", BSO_EPARSE},
        {STATE("PCG64", "1.5", "1", "0", "0"), BSO_EPARSE},    /* a float */
        {STATE("PCG64", "-1", "1", "0", "0"), BSO_EPARSE},     /* negative */
        {STATE("PCG64", "1", "1", "0", "0") " x", BSO_EPARSE}, /* trailing garbage */
        {STATE("PCG64", "340282366920938463463374607431768211456", "1", "0", "0"),
         BSO_ERANGE}, /* 2^128 */
        {STATE("MT19937", "1", "1", "0", "0"), BSO_EINVAL},
        {STATE("PCG64", "1", "2", "0", "0"), BSO_EINVAL}, /* PCG increments are odd */
        {STATE("PCG64", "1", "1", "2", "0"), BSO_EINVAL},
        {STATE("PCG64", "1", "1", "0", "4294967296"), BSO_EINVAL},
    };
#undef STATE
    bso_rng r;
    bso_rng_seed(&r, 1);
    const bso_rng before = r;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        print_message("case %zu: %s\n", i, cases[i].json);
        assert_int_equal(bso_rng_from_json(&r, cases[i].json), cases[i].code);
    }
    /* Nothing was written by the failed calls. */
    assert_true(bso_rng_equal(&r, &before));
}

/* Thousands of mutated and truncated state texts: the reader never crashes (ASan watches), and
 * whatever it accepts writes back as text it reads again to the same state. */
static void test_json_mutations(void **state)
{
    (void)state;
    bso_rng src, rng, back;
    bso_rng_seed(&src, 5);
    (void)bso_rng_next32(&src);
    char valid[BSO_RNG_JSON_MAX], buf[BSO_RNG_JSON_MAX + 8], again[BSO_RNG_JSON_MAX];
    const int n = bso_rng_to_json(&src, valid, sizeof valid);
    assert_true(n > 0);
    static const char alphabet[] = "{}[]\":, 0123456789.eE-+\\\"PCGxnull\t\n";
    bso_rng_seed(&rng, 99);
    int accepted = 0;
    for (int i = 0; i < 20000; i++) {
        memcpy(buf, valid, (size_t)n + 1);
        int edits = 1 + (int)bso_rng_bounded(&rng, 3);
        for (int e = 0; e < edits; e++) {
            size_t at = (size_t)bso_rng_bounded(&rng, (uint64_t)n - 1);
            buf[at] = alphabet[bso_rng_bounded(&rng, sizeof alphabet - 2)];
        }
        if (bso_rng_bounded(&rng, 4) == 0)
            buf[bso_rng_bounded(&rng, (uint64_t)n)] = '\0';
        bso_rng parsed;
        if (bso_rng_from_json(&parsed, buf) != 0)
            continue;
        accepted++;
        assert_true(bso_rng_to_json(&parsed, again, sizeof again) > 0);
        assert_int_equal(bso_rng_from_json(&back, again), 0);
        assert_true(bso_rng_equal(&parsed, &back));
    }
    print_message("%d of 20000 mutated states parsed\n", accepted);
}

static void test_bounded_stays_in_range(void **state)
{
    (void)state;
    bso_rng rng;
    bso_rng_seed(&rng, 3);
    const uint64_t maxes[] = {
        0, 1, 2, 5, 1000, UINT32_MAX - 1, UINT32_MAX, (1ULL << 40) + 3, UINT64_MAX - 1, UINT64_MAX};
    for (size_t m = 0; m < sizeof maxes / sizeof *maxes; m++)
        for (int i = 0; i < 2000; i++)
            assert_true(bso_rng_bounded(&rng, maxes[m]) <= maxes[m]);
    /* A range of one value draws nothing. */
    bso_rng copy = rng;
    assert_true(bso_rng_bounded(&rng, 0) == 0);
    assert_true(bso_rng_equal(&copy, &rng));
}

static void test_choice_is_a_permutation(void **state)
{
    (void)state;
    bso_rng rng;
    bso_rng_seed(&rng, 9);
    int64_t items[50], out[50];
    for (int i = 0; i < 50; i++)
        items[i] = 1000 + i;
    for (int round = 0; round < 100; round++) {
        assert_int_equal(bso_rng_choice_all(&rng, items, 50, out), 0);
        int seen[50] = {0};
        for (int i = 0; i < 50; i++) {
            assert_in_range(out[i], 1000, 1049);
            seen[out[i] - 1000]++;
        }
        for (int i = 0; i < 50; i++)
            assert_int_equal(seen[i], 1);
    }
    assert_int_equal(bso_rng_choice_all(&rng, items, BSO_CHOICE_MAX + 1, out), BSO_ERANGE);
}

static void test_seed_words_limits(void **state)
{
    (void)state;
    bso_rng rng;
    uint32_t words[BSO_SEEDSEQ_MAX_WORDS + 1] = {0};
    assert_int_equal(bso_rng_seed_words(&rng, words, 0), BSO_EINVAL);
    assert_int_equal(bso_rng_seed_words(&rng, words, BSO_SEEDSEQ_MAX_WORDS + 1), BSO_EINVAL);
    assert_int_equal(bso_rng_seed_words(&rng, words, BSO_SEEDSEQ_MAX_WORDS), 0);
    /* A 64-bit seed is two entropy words, low word first. */
    bso_rng a, b;
    bso_rng_seed(&a, 0x123456789ULL);
    const uint32_t two[2] = {0x23456789u, 0x1u};
    assert_int_equal(bso_rng_seed_words(&b, two, 2), 0);
    assert_true(bso_rng_equal(&a, &b));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seed_state_and_next64),
        cmocka_unit_test(test_choice_then_normals),
        cmocka_unit_test(test_json_matches_zeus_text),
        cmocka_unit_test(test_json_round_trip_keeps_stream),
        cmocka_unit_test(test_json_rejects_bad_input),
        cmocka_unit_test(test_json_mutations),
        cmocka_unit_test(test_bounded_stays_in_range),
        cmocka_unit_test(test_choice_is_a_permutation),
        cmocka_unit_test(test_seed_words_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
