/* Latency samples; see latency.h. */
#include "bench/latency.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bso/error.h"

static int reserve(struct bso_latency *l, size_t need)
{
    if (need <= l->cap)
        return 0;
    size_t cap = l->cap ? l->cap : 1024;
    while (cap < need)
        cap *= 2;
    double *ms = realloc(l->ms, cap * sizeof *ms);
    if (!ms)
        return BSO_ENOMEM;
    l->ms = ms;
    l->cap = cap;
    return 0;
}

int bso_latency_add(struct bso_latency *l, double ms)
{
    if (reserve(l, l->n + 1) < 0)
        return BSO_ENOMEM;
    l->ms[l->n++] = ms;
    return 0;
}

int bso_latency_merge(struct bso_latency *dst, const struct bso_latency *src)
{
    if (src->n == 0)
        return 0;
    if (reserve(dst, dst->n + src->n) < 0)
        return BSO_ENOMEM;
    memcpy(dst->ms + dst->n, src->ms, src->n * sizeof *src->ms);
    dst->n += src->n;
    return 0;
}

static int cmp(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void bso_latency_sort(struct bso_latency *l)
{
    if (l->n > 1)
        qsort(l->ms, l->n, sizeof *l->ms, cmp);
}

double bso_latency_pct(const struct bso_latency *l, double p)
{
    if (l->n == 0)
        return 0;
    /* Nearest rank: the smallest sample with at least p% of the samples at or below it. */
    size_t rank = (size_t)ceil(p / 100.0 * (double)l->n);
    if (rank < 1)
        rank = 1;
    if (rank > l->n)
        rank = l->n;
    return l->ms[rank - 1];
}

void bso_latency_free(struct bso_latency *l)
{
    free(l->ms);
    memset(l, 0, sizeof *l);
}
