/* Small helpers shared by the bench programs' command lines. */
#ifndef BSO_BENCH_CMDLINE_H
#define BSO_BENCH_CMDLINE_H

#include <stdbool.h>

/* Whether s is a whole number in [lo, hi]; its value in *v. */
bool bso_bench_whole(const char *s, double lo, double hi, double *v);

/* Seconds on the monotonic clock. */
double bso_bench_now(void);

#endif
