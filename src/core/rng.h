/*
 * A numpy-compatible random number generator: PCG64 seeded through SeedSequence, as
 * np.random.default_rng(seed) builds it, with the draws the policy needs (bounded integers,
 * choice without replacement, standard normal by numpy's 256-level ziggurat). A seeded bso_rng
 * produces bit for bit the same numbers as numpy 1.24, so a seeded job makes Zeus's choices.
 *
 * The state is a plain value: copy it, store it, restore it. No I/O and no globals.
 */
#ifndef BSO_CORE_RNG_H
#define BSO_CORE_RNG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/u128.h"

typedef struct bso_rng {
    bso_u128 state;
    bso_u128 inc;
    bool has_uint32;   /* a buffered upper half of the last 64-bit output is waiting */
    uint32_t uinteger; /* that buffered half */
} bso_rng;

/* numpy's SeedSequence pool holds four 32-bit words. */
#define BSO_SEEDSEQ_POOL 4
/* Upper bound on entropy words accepted by bso_rng_seed_words(). */
#define BSO_SEEDSEQ_MAX_WORDS 64

/* Seeds like np.random.default_rng(seed) for a non-negative integer seed. */
void bso_rng_seed(bso_rng *rng, uint64_t seed);

/* Seeds like default_rng(SeedSequence(entropy)) where the entropy integer is given as
 * little-endian 32-bit words (word 0 least significant; no trailing zero words, except a single
 * 0 word for the integer 0). BSO_EINVAL when n is 0 or above BSO_SEEDSEQ_MAX_WORDS. */
int bso_rng_seed_words(bso_rng *rng, const uint32_t *words, size_t n);

/* Sets the raw PCG64 state directly, as numpy's pcg64_set_seed(state, inc) would. */
void bso_rng_set_raw(bso_rng *rng, bso_u128 initstate, bso_u128 initseq);

/* Whether two generators are in the same state (they will draw the same numbers). */
bool bso_rng_equal(const bso_rng *a, const bso_rng *b);

uint64_t bso_rng_next64(bso_rng *rng);
uint32_t bso_rng_next32(bso_rng *rng);
/* Uniform double in [0, 1) with 53 random bits. */
double bso_rng_next_double(bso_rng *rng);

/* Uniform integer in [0, max] as numpy's random_bounded_uint64(off=0, rng=max, unmasked). */
uint64_t bso_rng_bounded(bso_rng *rng, uint64_t max);

/* Maximum population size for bso_rng_choice_all() (numpy switches algorithm above it). */
#define BSO_CHOICE_MAX 10000

/* A random permutation of items, as Generator.choice(items, n, replace=False) returns it
 * (Floyd's sampling then a shuffle). out must hold n items and may not alias items.
 * BSO_ERANGE when n exceeds BSO_CHOICE_MAX, BSO_ENOMEM on allocation failure. */
int bso_rng_choice_all(bso_rng *rng, const int64_t *items, size_t n, int64_t *out);

/* numpy's Generator.standard_normal() and Generator.normal(loc, scale). */
double bso_rng_standard_normal(bso_rng *rng);
double bso_rng_normal(bso_rng *rng, double loc, double scale);

/* Serialises the state exactly as Zeus stores json.dumps(bit_generator.state):
 * {"bit_generator": "PCG64", "state": {"state": S, "inc": I}, "has_uint32": H, "uinteger": U}
 * Returns the length written or BSO_ERANGE when cap is too small (BSO_RNG_JSON_MAX suffices). */
#define BSO_RNG_JSON_MAX 192
int bso_rng_to_json(const bso_rng *rng, char *buf, size_t cap);

/* Parses that JSON (any key order, any JSON whitespace). BSO_EPARSE on malformed text,
 * BSO_EINVAL when the bit generator is not PCG64 or a field is out of range. *rng is written
 * only on success. */
int bso_rng_from_json(bso_rng *rng, const char *json);

#endif
