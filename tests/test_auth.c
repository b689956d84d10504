/* SHA-256 against FIPS 180-4's examples, and tokens: their form and their stored digest. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "server/auth.h"
#include "server/sha256.h"

static void test_sha256_vectors(void **state)
{
    (void)state;
    char hex[65];
    bso_sha256_hex("", 0, hex);
    assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    bso_sha256_hex("abc", 3, hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    /* 56 bytes: the length no longer fits the first padding block. */
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    bso_sha256_hex(two, strlen(two), hex);
    assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    /* A million 'a': many blocks. */
    char *million = malloc(1000000);
    assert_non_null(million);
    memset(million, 'a', 1000000);
    bso_sha256_hex(million, 1000000, hex);
    free(million);
    assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    /* Lengths around the padding's edges (digests from Python's hashlib). */
    static const struct {
        size_t n;
        const char *hex;
    } edges[] = {
        {55, "d5e285683cd4efc02d021a5c62014694958901005d6f71e89e0989fac77e4072"},
        {63, "75220b47218278e656f2013bb8f0c455a25eaf01e86c64924e9d48d89776d6f2"},
        {64, "7ce100971f64e7001e8fe5a51973ecdfe1ced42befe7ee8d5fd6219506b5393c"},
        {65, "9537c5fdf120482f7d58d25e9ed583f52c02b4e304ea814db1633ad565aed7e9"},
        {119, "000b48d4edf0fa7bee3c6236ecd2785baa5db4eeb8bb54341b029e0d9fa5fb0c"},
        {120, "13f05a0b594787f5ecd315edc96141bd3243203d1b7d4f0836f37308b276ba98"},
    };
    char buf[128];
    memset(buf, 'x', sizeof buf);
    for (size_t i = 0; i < sizeof edges / sizeof *edges; i++) {
        bso_sha256_hex(buf, edges[i].n, hex);
        assert_string_equal(hex, edges[i].hex);
    }
}

static void test_tokens(void **state)
{
    (void)state;
    char t1[BSO_TOKEN_LEN + 1], t2[BSO_TOKEN_LEN + 1], h[65];
    assert_int_equal(bso_token_generate(t1), 0);
    assert_int_equal(bso_token_generate(t2), 0);
    assert_int_equal(strlen(t1), BSO_TOKEN_LEN);
    assert_memory_equal(t1, "bso_", 4);
    assert_true(strspn(t1 + 4, "0123456789abcdef") == 48);
    assert_string_not_equal(t1, t2);
    bso_token_hash(t1, h);
    char again[65];
    bso_sha256_hex(t1, strlen(t1), again);
    assert_string_equal(h, again);
    assert_null(strstr(h, t1 + 4));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sha256_vectors),
        cmocka_unit_test(test_tokens),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
