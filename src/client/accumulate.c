/* Gradient accumulation plans; see include/bso/accumulate.h. */
#include "bso/accumulate.h"

#include <stdbool.h>
#include <stddef.h>

/* The largest divisor of n that is at most cap (1 always divides). */
static int64_t largest_divisor_upto(int64_t n, int64_t cap)
{
    int64_t best = 1;
    for (int64_t d = 1; d * d <= n; d++) {
        if (n % d != 0)
            continue;
        const int64_t pair = n / d;
        if (d <= cap && d > best)
            best = d;
        if (pair <= cap && pair > best)
            best = pair;
    }
    return best;
}

/* Whether n splits exactly with a micro-batch in [lo, hi]. */
static bool splits(int64_t n, int64_t lo, int64_t hi)
{
    if (n <= hi)
        return n >= 1;
    return largest_divisor_upto(n, hi) >= lo;
}

int bso_accum_plan(int64_t effective, int64_t max_micro, int64_t min_micro,
                   struct bso_accum_plan *plan, int64_t *below, int64_t *above)
{
    if (effective < 1 || max_micro < 1 || min_micro < 0 || min_micro > max_micro || !plan)
        return BSO_EINVAL;
    if (min_micro == 0)
        min_micro = (max_micro + 1) / 2;
    if (effective <= max_micro) {
        *plan = (struct bso_accum_plan){effective, 1};
        return 0;
    }
    const int64_t d = largest_divisor_upto(effective, max_micro);
    if (d >= min_micro) {
        *plan = (struct bso_accum_plan){d, effective / d};
        return 0;
    }
    /* Multiples of max_micro split, so the nearest options lie within max_micro. */
    if (below) {
        *below = 0;
        for (int64_t n = effective - 1; n >= 1 && n >= effective - max_micro; n--)
            if (splits(n, min_micro, max_micro)) {
                *below = n;
                break;
            }
    }
    if (above) {
        *above = effective + max_micro;
        for (int64_t n = effective + 1; n <= effective + max_micro; n++)
            if (splits(n, min_micro, max_micro)) {
                *above = n;
                break;
            }
    }
    *plan = (struct bso_accum_plan){0, 0};
    return BSO_ERANGE;
}
