/* The synthetic jobs of bso-bench; see workload.h. */
#include "bench/workload.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/job.h"
#include "core/report.h"
#include "core/spec.h"

/* splitmix64: a small, good mixer for deterministic per-(job, trial) noise. */
static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* Uniform in [0, 1). */
static double unit(uint64_t x)
{
    return (double)(mix(x) >> 11) * 0x1.0p-53;
}

void bso_bench_sizes_init(struct bso_bench_sizes *s, int n)
{
    s->n = n;
    for (int i = 0; i < n; i++) {
        int64_t v = n <= 8 ? (int64_t)16 << i
                           : (int64_t)llround(16.0 * pow(128.0, (double)i / (double)(n - 1)));
        s->v[i] = i > 0 && v <= s->v[i - 1] ? s->v[i - 1] + 1 : v;
    }
    s->default_size = s->v[0];
    for (int i = 0; i < n; i++)
        if (fabs(log2((double)s->v[i]) - 8) < fabs(log2((double)s->default_size) - 8))
            s->default_size = s->v[i];
}

void bso_bench_job_init(struct bso_bench_job *j, const struct bso_bench_sizes *sizes, uint64_t seed,
                        size_t k, int64_t max_epochs)
{
    snprintf(j->id, sizeof j->id, "bench-%06zu", k);
    j->sizes = sizes;
    j->max_epochs = max_epochs;
    j->seed = mix(seed ^ mix(k));
    j->best_log2 = 5.0 + 4.0 * unit(j->seed); /* best between 32 and 512 */
}

int bso_bench_job_spec(const struct bso_bench_job *j, const char *policy, char *buf, size_t cap)
{
    char sizes[BSO_BENCH_MAX_SIZES * 7];
    size_t o = 0;
    for (int i = 0; i < j->sizes->n; i++)
        o += (size_t)snprintf(sizes + o, sizeof sizes - o, "%s%lld", i ? ", " : "",
                              (long long)j->sizes->v[i]);
    char extra[64] = "";
    if (policy)
        snprintf(extra, sizeof extra, ", \"policy\": \"%s\"", policy);
    int n = snprintf(buf, cap,
                     "{\"job_id\": \"%s\", \"job_id_prefix\": \"bench\", \"batch_sizes\": [%s], "
                     "\"default_batch_size\": %lld, \"target_metric\": 0.5, \"max_epochs\": %lld, "
                     "\"max_power\": 300, \"number_of_gpus\": 1, \"gpu_model\": \"bench-gpu\", "
                     "\"mab_seed\": %llu%s}",
                     j->id, sizes, (long long)j->sizes->default_size, (long long)j->max_epochs,
                     (unsigned long long)(j->seed % 1000000), extra);
    return n > 0 && (size_t)n < cap ? 0 : -1;
}

int bso_bench_job_start(struct bso_job *job, const struct bso_bench_job *j, int policy)
{
    struct bso_job_spec spec;
    struct bso_spec_errors errs = {0};
    bso_job_spec_defaults(&spec);
    bso_job_spec_set_text(&spec, BSO_SPEC_JOB_ID, j->id, strlen(j->id), &errs);
    bso_job_spec_set_text(&spec, BSO_SPEC_JOB_ID_PREFIX, "bench", 5, &errs);
    bso_job_spec_set_text(&spec, BSO_SPEC_GPU_MODEL, "bench-gpu", 9, &errs);
    bso_job_spec_set_batch_sizes(&spec, j->sizes->v, (size_t)j->sizes->n, &errs);
    spec.default_batch_size = j->sizes->default_size;
    spec.target_metric = 0.5;
    spec.max_epochs = j->max_epochs;
    spec.max_power = 300;
    spec.number_of_gpus = 1;
    spec.has_mab_seed = true;
    spec.mab_seed = (int64_t)(j->seed % 1000000); /* as in bso_bench_job_spec */
    spec.policy = policy;
    int rc = bso_job_spec_validate(&spec, &errs);
    return rc < 0 ? rc : bso_job_init(job, &spec, NULL, 0);
}

struct bso_bench_run bso_bench_run(const struct bso_bench_job *j, int64_t batch_size, int64_t trial)
{
    struct bso_bench_run run;
    const double x = log2((double)batch_size);
    const uint64_t r = mix(j->seed ^ mix((uint64_t)trial * 131 + (uint64_t)batch_size));
    /* Epochs grow with the distance (in octaves) from the job's best size: a third of the cap
     * at the best, the cap about four octaves away, and +-15% from run to run. */
    const double far = fabs(x - j->best_log2);
    const double epochs = (double)j->max_epochs * (0.35 + 0.16 * far) * (0.85 + 0.3 * unit(r));
    run.reach_epoch = epochs <= (double)j->max_epochs ? (int64_t)ceil(epochs) : 0;
    if (run.reach_epoch < 1 && epochs <= (double)j->max_epochs)
        run.reach_epoch = 1;
    /* Larger batches are faster per epoch, with diminishing returns; power grows with them. */
    run.epoch_time = 30.0 * (0.25 + 16.0 / (double)batch_size);
    run.epoch_energy = run.epoch_time * (150.0 + 15.0 * (x - 4.0));
    return run;
}

struct bso_report bso_bench_report(const struct bso_bench_run *run, int64_t epoch)
{
    const int64_t reach = run->reach_epoch;
    const double e = (double)epoch;
    const double metric = reach <= 0       ? 0.4 * (1.0 - 1.0 / (e + 1)) /* never reaches 0.5 */
                          : epoch >= reach ? 0.5
                                           : 0.5 * e / (double)(reach + 1);
    return (struct bso_report){.time = run->epoch_time * e,
                               .energy = run->epoch_energy * e,
                               .metric = metric,
                               .current_epoch = epoch};
}
