/* The policy core's CPU per call; see policy_cpu.h. */
#include "bench/policy_cpu.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "bso/error.h"
#include "core/job.h"
#include "core/spec.h"

/* What is timed: predict and report, each in the exploring and the bandit stage. */
enum { PREDICT_EXPLORE, PREDICT_BANDIT, REPORT_EXPLORE, REPORT_BANDIT, N_KINDS };
static const char *const kind_names[N_KINDS] = {"predict_explore", "predict_bandit",
                                                "report_explore", "report_bandit"};

struct tally {
    double cpu_s[N_KINDS], max_s[N_KINDS];
    long calls[N_KINDS];
};

static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void count(struct tally *t, int kind, double s)
{
    t->cpu_s[kind] += s;
    t->calls[kind]++;
    if (s > t->max_s[kind])
        t->max_s[kind] = s;
}

/* Runs recurrences of successive jobs under policy for about `seconds` of CPU. */
static int replay(const struct bso_bench_sizes *sizes, int64_t max_epochs, double seconds,
                  uint64_t seed, int policy, struct tally *t)
{
    struct bso_bench_job bj;
    struct bso_job job;
    memset(t, 0, sizeof *t);
    const double begin = thread_cpu_s();
    for (size_t k = 0; thread_cpu_s() - begin < seconds; k++) {
        bso_bench_job_init(&bj, sizes, seed, k, max_epochs);
        int rc = bso_bench_job_start(&job, &bj, policy);
        if (rc < 0)
            return rc;
        /* 100 recurrences per job: exploration, then mostly the bandit. */
        for (int r = 0; r < 100; r++) {
            struct bso_trial trial;
            unsigned changed;
            const bool bandit = policy == BSO_POLICY_ZEUS ? job.stage == BSO_STAGE_MAB : r > 20;
            double t0 = thread_cpu_s();
            rc = bso_job_predict(&job, &trial, &changed);
            count(t, bandit ? PREDICT_BANDIT : PREDICT_EXPLORE, thread_cpu_s() - t0);
            if (rc == BSO_EPRUNED)
                break; /* every size failed: the next job */
            if (rc < 0) {
                bso_job_clear(&job);
                return rc;
            }
            const struct bso_bench_run run = bso_bench_run(&bj, trial.batch_size, trial.number);
            for (int64_t e = 1; e <= max_epochs; e++) {
                const struct bso_report rep = bso_bench_report(&run, e);
                struct bso_decision d;
                size_t arm;
                t0 = thread_cpu_s();
                rc = bso_job_report(&job, &trial, &rep, &d, &changed, &arm);
                count(t, bandit ? REPORT_BANDIT : REPORT_EXPLORE, thread_cpu_s() - t0);
                if (rc < 0 || d.stop_train)
                    break; /* a refused report (a late pruning trial) ends the run too */
            }
        }
        bso_job_clear(&job);
    }
    return 0;
}

int bso_policy_cpu(const struct bso_bench_sizes *sizes, int64_t max_epochs, double seconds,
                   uint64_t seed, bool json)
{
    static const int policies[] = {BSO_POLICY_ZEUS, BSO_POLICY_BSO};
    if (json)
        printf("{\"batch_sizes\": %d, \"policy_cpu_us\": {", sizes->n);
    else
        printf("policy CPU per call, in-process, %d batch sizes (microseconds: mean, max)\n\n"
               "%-8s %-16s %10s %10s %10s\n",
               sizes->n, "policy", "call", "calls", "mean", "max");
    for (int p = 0; p < 2; p++) {
        struct tally t;
        int rc = replay(sizes, max_epochs, seconds, seed, policies[p], &t);
        if (rc < 0)
            return rc;
        if (json)
            printf("%s\"%s\": {", p ? ", " : "", bso_policy_name(policies[p]));
        for (int k = 0, first = 1; k < N_KINDS; k++) {
            if (t.calls[k] == 0)
                continue;
            const double mean = t.cpu_s[k] / (double)t.calls[k] * 1e6, max = t.max_s[k] * 1e6;
            if (json)
                printf("%s\"%s\": {\"calls\": %ld, \"mean\": %.3f, \"max\": %.3f}",
                       first ? "" : ", ", kind_names[k], t.calls[k], mean, max);
            else
                printf("%-8s %-16s %10ld %10.3f %10.3f\n", bso_policy_name(policies[p]),
                       kind_names[k], t.calls[k], mean, max);
            first = 0;
        }
        if (json)
            printf("}");
    }
    if (json)
        printf("}}\n");
    return 0;
}
