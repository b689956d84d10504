/* See cmdline.h. */
#include "bench/cmdline.h"

#include <math.h>
#include <stdlib.h>
#include <time.h>

bool bso_bench_whole(const char *s, double lo, double hi, double *v)
{
    char *end;
    *v = strtod(s, &end);
    return *s && *end == '\0' && *v >= lo && *v <= hi && *v == floor(*v);
}

double bso_bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
