/*
 * PCG64 (XSL-RR 128/64) with numpy's SeedSequence seeding, buffered 32-bit draws, Lemire's
 * bounded integers, and choice without replacement. Written from the published algorithms:
 * O'Neill's PCG paper and seed_seq_fe, Lemire's "Fast random integer generation in an interval",
 * and the behaviour documented in docs/policy.md (checked against numpy by tests/rng_vs_numpy).
 */
#include "core/rng.h"

#include <stdlib.h>

#include "bso/error.h"

#define PCG_MULT_HI 0x2360ED051FC65DA4ULL
#define PCG_MULT_LO 0x4385DF649FCCF645ULL

/* SeedSequence hashing constants (from O'Neill's seed_seq_fe). */
#define SS_INIT_A 0x43b0d7e5u
#define SS_MULT_A 0x931e8875u
#define SS_INIT_B 0x8b51f9ddu
#define SS_MULT_B 0x58f38dedu
#define SS_MIX_MULT_L 0xca01f9ddu
#define SS_MIX_MULT_R 0x4973f715u
#define SS_XSHIFT 16

static void pcg_step(bso_rng *rng)
{
    rng->state = rng->state * bso_u128_make(PCG_MULT_HI, PCG_MULT_LO) + rng->inc;
}

static uint64_t pcg_output(bso_u128 state)
{
    uint64_t folded = (uint64_t)(state >> 64) ^ (uint64_t)state;
    unsigned rot = (unsigned)(state >> 122);
    return (folded >> rot) | (folded << ((64u - rot) & 63u));
}

void bso_rng_set_raw(bso_rng *rng, bso_u128 initstate, bso_u128 initseq)
{
    rng->state = 0;
    rng->inc = (initseq << 1) | 1u;
    pcg_step(rng);
    rng->state += initstate;
    pcg_step(rng);
    rng->has_uint32 = false;
    rng->uinteger = 0;
}

static uint32_t ss_hashmix(uint32_t value, uint32_t *hash_const)
{
    value ^= *hash_const;
    *hash_const *= SS_MULT_A;
    value *= *hash_const;
    value ^= value >> SS_XSHIFT;
    return value;
}

static uint32_t ss_mix(uint32_t x, uint32_t y)
{
    uint32_t r = SS_MIX_MULT_L * x - SS_MIX_MULT_R * y;
    return r ^ (r >> SS_XSHIFT);
}

int bso_rng_seed_words(bso_rng *rng, const uint32_t *words, size_t n)
{
    if (n == 0 || n > BSO_SEEDSEQ_MAX_WORDS)
        return BSO_EINVAL;

    /* Mix the entropy into the pool (SeedSequence.mix_entropy). */
    uint32_t pool[BSO_SEEDSEQ_POOL];
    uint32_t hc = SS_INIT_A;
    for (size_t i = 0; i < BSO_SEEDSEQ_POOL; i++)
        pool[i] = ss_hashmix(i < n ? words[i] : 0u, &hc);
    for (size_t src = 0; src < BSO_SEEDSEQ_POOL; src++)
        for (size_t dst = 0; dst < BSO_SEEDSEQ_POOL; dst++)
            if (src != dst)
                pool[dst] = ss_mix(pool[dst], ss_hashmix(pool[src], &hc));
    for (size_t src = BSO_SEEDSEQ_POOL; src < n; src++)
        for (size_t dst = 0; dst < BSO_SEEDSEQ_POOL; dst++)
            pool[dst] = ss_mix(pool[dst], ss_hashmix(words[src], &hc));

    /* generate_state(4, uint64): eight 32-bit words, paired little-endian. */
    uint32_t out32[8];
    uint32_t hb = SS_INIT_B;
    for (size_t i = 0; i < 8; i++) {
        uint32_t v = pool[i % BSO_SEEDSEQ_POOL];
        v ^= hb;
        hb *= SS_MULT_B;
        v *= hb;
        v ^= v >> SS_XSHIFT;
        out32[i] = v;
    }
    uint64_t s[4];
    for (size_t i = 0; i < 4; i++)
        s[i] = (uint64_t)out32[2 * i] | ((uint64_t)out32[2 * i + 1] << 32);

    bso_rng_set_raw(rng, bso_u128_make(s[0], s[1]), bso_u128_make(s[2], s[3]));
    return 0;
}

void bso_rng_seed(bso_rng *rng, uint64_t seed)
{
    uint32_t words[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    (void)bso_rng_seed_words(rng, words, words[1] != 0 ? 2 : 1);
}

bool bso_rng_equal(const bso_rng *a, const bso_rng *b)
{
    return a->state == b->state && a->inc == b->inc && a->has_uint32 == b->has_uint32 &&
           a->uinteger == b->uinteger;
}

uint64_t bso_rng_next64(bso_rng *rng)
{
    pcg_step(rng);
    return pcg_output(rng->state);
}

uint32_t bso_rng_next32(bso_rng *rng)
{
    if (rng->has_uint32) {
        rng->has_uint32 = false;
        return rng->uinteger;
    }
    uint64_t next = bso_rng_next64(rng);
    rng->has_uint32 = true;
    rng->uinteger = (uint32_t)(next >> 32);
    return (uint32_t)next;
}

double bso_rng_next_double(bso_rng *rng)
{
    return (double)(bso_rng_next64(rng) >> 11) * (1.0 / 9007199254740992.0);
}

static uint64_t draw32(bso_rng *rng)
{
    return bso_rng_next32(rng);
}

/* Lemire's multiply-and-reject for [0, max] on draws of the given width (32 or 64 bits); max is
 * below the width's all-ones value. numpy uses 32-bit draws whenever max fits in 32 bits, which
 * matters because they come from the half-word buffer. */
static uint64_t lemire(bso_rng *rng, uint64_t max, uint64_t (*draw)(bso_rng *), unsigned bits)
{
    const uint64_t all = bits == 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
    const uint64_t span = max + 1;
    bso_u128 m = (bso_u128)draw(rng) * span;
    uint64_t low = (uint64_t)m & all;
    if (low < span) {
        const uint64_t threshold = (all - max) % span;
        while (low < threshold) {
            m = (bso_u128)draw(rng) * span;
            low = (uint64_t)m & all;
        }
    }
    return (uint64_t)(m >> bits);
}

uint64_t bso_rng_bounded(bso_rng *rng, uint64_t max)
{
    if (max == 0)
        return 0;
    if (max == UINT32_MAX)
        return bso_rng_next32(rng);
    if (max < UINT32_MAX)
        return lemire(rng, max, draw32, 32);
    if (max == UINT64_MAX)
        return bso_rng_next64(rng);
    return lemire(rng, max, bso_rng_next64, 64);
}

static bool contains(const uint64_t *set, size_t n, uint64_t v)
{
    for (size_t i = 0; i < n; i++)
        if (set[i] == v)
            return true;
    return false;
}

int bso_rng_choice_all(bso_rng *rng, const int64_t *items, size_t n, int64_t *out)
{
    if (n > BSO_CHOICE_MAX)
        return BSO_ERANGE;
    if (n == 0)
        return 0;
    uint64_t *idx = malloc(n * sizeof(*idx));
    if (!idx)
        return BSO_ENOMEM;

    /* Floyd's algorithm over the whole population: index j draws from [0, j] and takes j itself
     * when the draw was already taken. The membership test is linear, which is fine for the
     * few dozen arms a job has; the draws, not the data structure, define the result. */
    for (size_t j = 0; j < n; j++) {
        uint64_t v = bso_rng_bounded(rng, j);
        idx[j] = contains(idx, j, v) ? j : v;
    }
    /* Fisher-Yates shuffle from the top, as numpy's _shuffle_int(n, first=1). */
    for (size_t i = n - 1; i >= 1; i--) {
        size_t k = (size_t)bso_rng_bounded(rng, i);
        uint64_t t = idx[k];
        idx[k] = idx[i];
        idx[i] = t;
    }
    for (size_t i = 0; i < n; i++)
        out[i] = items[idx[i]];
    free(idx);
    return 0;
}

double bso_rng_normal(bso_rng *rng, double loc, double scale)
{
    return loc + scale * bso_rng_standard_normal(rng);
}
