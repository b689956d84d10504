/*
 * The synthetic recurring jobs bso-bench drives: each job has its own best batch size, and
 * every batch size a cost per epoch and a number of epochs to the target, with noise, so that
 * a policy explores, stops runs early (beta, max_epochs) and settles into Thompson sampling.
 * Deterministic given (seed, job, trial).
 */
#ifndef BSO_BENCH_WORKLOAD_H
#define BSO_BENCH_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

#define BSO_BENCH_MAX_SIZES 256

/* The batch sizes every job of a run offers (shared: a run may have 100,000 jobs). */
struct bso_bench_sizes {
    int n;
    int64_t v[BSO_BENCH_MAX_SIZES]; /* ascending, 16 to 2048 */
    int64_t default_size;           /* the one nearest 256 */
};

/* n sizes (1 to BSO_BENCH_MAX_SIZES): powers of two from 16 up to 8 of them, else spaced
 * evenly in log between 16 and 2048. */
void bso_bench_sizes_init(struct bso_bench_sizes *s, int n);

struct bso_bench_job {
    char id[64];
    const struct bso_bench_sizes *sizes;
    int64_t max_epochs;
    double best_log2; /* log2 of the size that needs the fewest epochs */
    uint64_t seed;
};

/* Job number k of a workload seeded by seed, with max_epochs epochs at most. */
void bso_bench_job_init(struct bso_bench_job *j, const struct bso_bench_sizes *sizes, uint64_t seed,
                        size_t k, int64_t max_epochs);

/* The JSON specification of j into buf: Zeus's fields, plus "policy" unless policy is NULL
 * (the server's default). 0, or -1 when buf is too small. */
int bso_bench_job_spec(const struct bso_bench_job *j, const char *policy, char *buf, size_t cap);

struct bso_job;
struct bso_report;

/* Starts j in-process as the server would after registering bso_bench_job_spec(j, policy):
 * the same specification, seeded the same way. 0, or a negative BSO_E* code. */
int bso_bench_job_start(struct bso_job *job, const struct bso_bench_job *j, int policy);

/* One run: the epoch at which it reaches the target (0: never, within max_epochs) and its
 * time (s) and energy (J) per epoch. */
struct bso_bench_run {
    int64_t reach_epoch;
    double epoch_time, epoch_energy;
};

/* The run of j at batch_size for trial `trial`. */
struct bso_bench_run bso_bench_run(const struct bso_bench_job *j, int64_t batch_size,
                                   int64_t trial);

/* What the run reports after `epoch` epochs: cumulative time and energy, and the metric, which
 * is the target (0.5) exactly from reach_epoch on. */
struct bso_report bso_bench_report(const struct bso_bench_run *run, int64_t epoch);

#endif
