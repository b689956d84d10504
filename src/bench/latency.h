/* Latency samples of one kind of request, and their percentiles. */
#ifndef BSO_BENCH_LATENCY_H
#define BSO_BENCH_LATENCY_H

#include <stddef.h>

struct bso_latency {
    double *ms; /* samples in milliseconds, owned */
    size_t n, cap;
};

/* Adds one sample; 0, or BSO_ENOMEM. */
int bso_latency_add(struct bso_latency *l, double ms);

/* Appends every sample of src to dst; 0, or BSO_ENOMEM. */
int bso_latency_merge(struct bso_latency *dst, const struct bso_latency *src);

/* Sorts the samples; call before bso_latency_pct. */
void bso_latency_sort(struct bso_latency *l);

/* The p-th percentile (0..100, nearest rank) of sorted samples; 0 when there are none. */
double bso_latency_pct(const struct bso_latency *l, double p);

void bso_latency_free(struct bso_latency *l);

#endif
