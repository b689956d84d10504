/* bso-bench --policy-cpu: the CPU the policy core itself takes per predict and per report,
 * in-process (no HTTP, no database), for jobs with a given number of batch sizes. */
#ifndef BSO_BENCH_POLICY_CPU_H
#define BSO_BENCH_POLICY_CPU_H

#include <stdbool.h>
#include <stdint.h>

#include "bench/workload.h"

/* Replays recurrences of synthetic jobs under each policy for about `seconds` each and prints
 * microseconds of CPU per call, by policy and stage (text or one JSON object). 0, or a
 * negative BSO_E* code. */
int bso_policy_cpu(const struct bso_bench_sizes *sizes, int64_t max_epochs, double seconds,
                   uint64_t seed, bool json);

#endif
