/* The largest-fitting-batch-size search; see include/bso/probe.h. */
#include "bso/probe.h"

#include <stdlib.h>
#include <string.h>

static int cmp_i64(const void *a, const void *b)
{
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int bso_probe_search_init(struct bso_probe_search *s, const int64_t *sizes, size_t n)
{
    if (!s || !sizes || n == 0 || n > BSO_PROBE_MAX_CANDIDATES)
        return BSO_EINVAL;
    memcpy(s->sizes, sizes, n * sizeof *sizes);
    qsort(s->sizes, n, sizeof *s->sizes, cmp_i64);
    for (size_t i = 0; i < n; i++)
        if (s->sizes[i] <= 0 || (i > 0 && s->sizes[i] == s->sizes[i - 1]))
            return BSO_EINVAL;
    s->n = n;
    s->fit = -1;
    s->unfit = (long)n;
    s->pending = -1;
    s->tries = 0;
    return 0;
}

int64_t bso_probe_search_next(struct bso_probe_search *s)
{
    if (s->pending >= 0)
        return s->sizes[s->pending];
    if (s->unfit - s->fit <= 1)
        return 0; /* the boundary is found */
    long i;
    if (s->fit < 0) {
        i = 0; /* the smallest first: if it does not fit, nothing does */
    } else if (s->unfit == (long)s->n) {
        /* Doubling: the first candidate at least twice the largest that fit. */
        const int64_t want = 2 * s->sizes[s->fit];
        i = s->fit + 1;
        while (i < (long)s->n - 1 && s->sizes[i] < want)
            i++;
    } else {
        i = s->fit + (s->unfit - s->fit) / 2; /* bisect */
    }
    s->pending = i;
    return s->sizes[i];
}

int bso_probe_search_record(struct bso_probe_search *s, int64_t bs, bool fits)
{
    if (s->pending < 0 || s->sizes[s->pending] != bs)
        return BSO_EINVAL;
    if (fits)
        s->fit = s->pending;
    else
        s->unfit = s->pending;
    s->pending = -1;
    s->tries++;
    return 0;
}

int64_t bso_probe_search_largest(const struct bso_probe_search *s)
{
    return s->fit >= 0 ? s->sizes[s->fit] : 0;
}
