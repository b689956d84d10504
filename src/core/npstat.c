/* numpy-compatible pairwise summation; see npstat.h. */
#include "core/npstat.h"

/* numpy's block size below which the unrolled loop is used instead of splitting. */
#define PAIRWISE_BLOCK 128

/* The i-th term: a[i] itself, or its squared deviation from *centre for the variance. Computing
 * the deviation here rather than into a temporary array gives the same terms, so the same sum. */
static double term(const double *a, size_t i, const double *centre)
{
    if (!centre)
        return a[i];
    double d = a[i] - *centre;
    return d * d;
}

static double pairwise(const double *a, size_t n, const double *centre)
{
    if (n < 8) {
        double res = 0.;
        for (size_t i = 0; i < n; i++)
            res += term(a, i, centre);
        return res;
    }
    if (n <= PAIRWISE_BLOCK) {
        double r[8];
        for (size_t j = 0; j < 8; j++)
            r[j] = term(a, j, centre);
        size_t i;
        for (i = 8; i < n - (n % 8); i += 8)
            for (size_t j = 0; j < 8; j++)
                r[j] += term(a, i + j, centre);
        double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++)
            res += term(a, i, centre);
        return res;
    }
    size_t half = n / 2;
    half -= half % 8;
    return pairwise(a, half, centre) + pairwise(a + half, n - half, centre);
}

double bso_np_sum(const double *a, size_t n)
{
    /* The reduction starts from the additive identity, which turns -0.0 into 0.0. */
    return 0.0 + pairwise(a, n, NULL);
}

double bso_np_mean(const double *a, size_t n)
{
    return bso_np_sum(a, n) / (double)n;
}

double bso_np_var(const double *a, size_t n)
{
    const double mean = bso_np_mean(a, n);
    return (0.0 + pairwise(a, n, &mean)) / (double)n;
}
