/*
 * libbso: gradient accumulation plans. The server chooses an effective batch size; when the
 * device holds at most max_micro samples per step, training takes `steps` micro-batches of
 * `micro_batch` samples before each optimizer step, micro_batch * steps == effective exactly,
 * so the optimisation the server measures is the one it chose.
 */
#ifndef BSO_ACCUMULATE_H
#define BSO_ACCUMULATE_H

#include <stdint.h>

#include "bso/error.h"

#ifdef __cplusplus
extern "C" {
#endif

struct bso_accum_plan {
    int64_t micro_batch;
    int64_t steps;
};

/* The plan for `effective` samples per optimizer step with micro-batches of at most max_micro:
 * one step when it fits, else the largest divisor of effective that fits (fewest steps).
 * min_micro (0: half of max_micro, rounded up) is the smallest micro-batch worth using: when
 * every exact split needs a smaller one (effective is prime, say), BSO_ERANGE, and *below and
 * *above (either may be NULL) get the nearest effective sizes on each side that split exactly
 * with a micro-batch in [min_micro, max_micro] (*below is 0 when there is none).
 * BSO_EINVAL for a non-positive effective or max_micro, or min_micro > max_micro. */
BSO_API int bso_accum_plan(int64_t effective, int64_t max_micro, int64_t min_micro,
                           struct bso_accum_plan *plan, int64_t *below, int64_t *above);

#ifdef __cplusplus
}
#endif

#endif
