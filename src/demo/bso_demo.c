/*
 * bso-demo: drives the policy core through a job's recurrences on a synthetic workload and
 * prints every decision, so the pruning walk and the bandit can be watched without a server.
 * The workload is Zeus's golden scenario G (src/sim/scenario_g.h): batch size 8 never converges
 * and the others converge after one epoch with a cost that wobbles around a per-size base.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bso/error.h"
#include "core/job.h"
#include "os/os.h"
#include "sim/scenario_g.h"

static int usage(void)
{
    fprintf(stderr, "usage: bso-demo [--seed N] [--window N] [--trials N]\n"
                    "  Replays a synthetic recurring job through the BSO policy and prints each "
                    "trial.\n");
    return 2;
}

static int parse_int(const char *s, int64_t min, int64_t *out)
{
    char *end;
    long long v = strtoll(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < min)
        return -1;
    *out = v;
    return 0;
}

int main(int argc, char **argv)
{
    int64_t seed = -1, window = 0, n_trials = 51;
    for (int i = 1; i < argc; i++) {
        int64_t *dst = NULL;
        int64_t min = 0;
        if (strcmp(argv[i], "--seed") == 0)
            dst = &seed;
        else if (strcmp(argv[i], "--window") == 0)
            dst = &window;
        else if (strcmp(argv[i], "--trials") == 0) {
            dst = &n_trials;
            min = 1;
        } else
            return usage();
        if (i + 1 >= argc || parse_int(argv[++i], min, dst) < 0) {
            fprintf(stderr, "bso-demo: %s needs an integer >= %" PRId64 "\n", argv[i - 1], min);
            return 2;
        }
    }

    struct bso_job_spec spec;
    bso_scenario_g_spec(&spec, window, seed);

    struct bso_spec_errors errs = {0};
    if (bso_job_spec_validate(&spec, &errs) < 0) {
        for (size_t i = 0; i < errs.n; i++)
            fprintf(stderr, "bso-demo: %s: %s\n", errs.e[i].field, errs.e[i].msg);
        return 1;
    }
    uint32_t entropy[4];
    if (bso_os_entropy(entropy, 4) < 0) {
        fprintf(stderr, "bso-demo: no entropy from the kernel\n");
        return 1;
    }
    struct bso_job job;
    if (bso_job_init(&job, &spec, entropy, 4) < 0) {
        fprintf(stderr, "bso-demo: %s\n", bso_job_errmsg(&job));
        return 1;
    }

    printf("%5s  %-7s  %-11s  %5s  %8s  %s\n", "trial", "stage", "type", "bs", "cost", "outcome");
    int status = 0;
    for (int64_t k = 1; k <= n_trials; k++) {
        struct bso_trial t;
        unsigned changed;
        if (bso_job_predict(&job, &t, &changed) < 0) {
            fprintf(stderr, "bso-demo: %s\n", bso_job_errmsg(&job));
            status = 1;
            break;
        }
        struct bso_report rep = bso_scenario_g_report(k, t.batch_size);
        struct bso_decision d;
        size_t arm;
        if (bso_job_report(&job, &t, &rep, &d, &changed, &arm) < 0) {
            fprintf(stderr, "bso-demo: %s\n", bso_job_errmsg(&job));
            status = 1;
            break;
        }
        printf("%5" PRId64 "  %-7s  %-11s  %5" PRId64 "  %8.1f  %s\n", t.number,
               bso_stage_name(job.stage), bso_trial_type_name(t.type), t.batch_size, d.cost,
               d.converged ? "converged" : "pruned/failed");
    }
    if (job.stage == BSO_STAGE_MAB) {
        printf("\narms: %6s  %14s  %14s  %5s\n", "bs", "mean reward", "precision", "n");
        for (size_t i = 0; i < job.n_arms; i++)
            printf("      %6" PRId64 "  %14.3f  %14.6g  %5" PRId64 "\n", job.arms[i].batch_size,
                   job.arms[i].param_mean, job.arms[i].param_precision,
                   job.arms[i].num_observations);
    }
    bso_job_clear(&job);
    return status;
}
