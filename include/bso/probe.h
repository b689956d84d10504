/*
 * libbso: the search for the largest batch size that fits a device, shared by every front-end
 * (the Python probe drives it). Fitting is assumed monotone: if a size fits, every smaller one
 * does. The search walks the candidates by doubling from the smallest, then bisects between the
 * last size that fit and the first that did not, so it never tries a size whose outcome is
 * already implied.
 *
 *   struct bso_probe_search s;
 *   bso_probe_search_init(&s, sizes, n);
 *   for (int64_t bs; (bs = bso_probe_search_next(&s)) > 0;)
 *       bso_probe_search_record(&s, bs, try_it(bs));
 *   largest = bso_probe_search_largest(&s);   // 0: nothing fits
 */
#ifndef BSO_PROBE_H
#define BSO_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bso/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define BSO_PROBE_MAX_CANDIDATES 256

struct bso_probe_search {
    int64_t sizes[BSO_PROBE_MAX_CANDIDATES]; /* ascending, distinct */
    size_t n;
    long fit;     /* index of the largest size known to fit, or -1 */
    long unfit;   /* index of the smallest size known not to fit, or n */
    long pending; /* the index handed out by next and not yet recorded, or -1 */
    int tries;
};

/* Starts a search over n candidate sizes (any order; duplicates and non-positive sizes are
 * refused with BSO_EINVAL, as are n == 0 and n > BSO_PROBE_MAX_CANDIDATES). */
BSO_API int bso_probe_search_init(struct bso_probe_search *s, const int64_t *sizes, size_t n);
/* The next size to try, or 0 when the largest fitting size is known. Asking again before
 * recording gives the same size. */
BSO_API int64_t bso_probe_search_next(struct bso_probe_search *s);
/* Whether bs fit. BSO_EINVAL when bs is not the size next() gave. */
BSO_API int bso_probe_search_record(struct bso_probe_search *s, int64_t bs, bool fits);
/* The largest size known to fit (0 when none does). */
BSO_API int64_t bso_probe_search_largest(const struct bso_probe_search *s);

#ifdef __cplusplus
}
#endif

#endif
