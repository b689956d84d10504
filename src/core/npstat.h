/*
 * Sum, mean and population variance computed the way numpy computes them for a 1-D float64
 * array (pairwise summation with an 8-way unrolled base case), so that arm statistics match
 * Zeus's np.sum / np.mean / np.var to the last bit.
 */
#ifndef BSO_CORE_NPSTAT_H
#define BSO_CORE_NPSTAT_H

#include <stddef.h>

double bso_np_sum(const double *a, size_t n);
/* n must be > 0. */
double bso_np_mean(const double *a, size_t n);
/* Population variance (ddof = 0); n must be > 0. */
double bso_np_var(const double *a, size_t n);

#endif
