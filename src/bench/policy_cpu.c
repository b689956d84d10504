/* The policy core's CPU per call; see policy_cpu.h. */
#include "bench/policy_cpu.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "bso/error.h"
#include "core/bso_policy.h"
#include "core/job.h"
#include "core/spec.h"

/* What is timed: predict and report, each in the exploring and the bandit stage, and after
 * the job changed (the bso policy then re-checks sizes, re-fits its curve on each side of the
 * change and re-explores: its dearest decisions). */
enum {
    PREDICT_EXPLORE,
    PREDICT_BANDIT,
    PREDICT_CHANGED,
    REPORT_EXPLORE,
    REPORT_BANDIT,
    REPORT_CHANGED,
    N_KINDS
};
static const char *const kind_names[N_KINDS] = {"predict_explore", "predict_bandit",
                                                "predict_changed", "report_explore",
                                                "report_bandit",   "report_changed"};

/* Each job runs RECURRENCES recurrences; from CHANGE_AT on, its runs at the size that needs the
 * fewest epochs and above need CHANGE_FACTOR times the epochs: the sizes a job settles on (the
 * cheaper per epoch) change, and the bso policy finds it in most jobs (the count printed). */
#define RECURRENCES 100
#define CHANGE_AT 50
#define CHANGE_FACTOR 1.6

/* The run of j at batch_size for trial `trial`, after the change when `changed`. */
static struct bso_bench_run run_of(const struct bso_bench_job *j, int64_t batch_size, int64_t trial,
                                   bool changed)
{
    struct bso_bench_run run = bso_bench_run(j, batch_size, trial);
    if (changed && run.reach_epoch > 0 && log2((double)batch_size) >= j->best_log2) {
        const double e = ceil((double)run.reach_epoch * CHANGE_FACTOR);
        run.reach_epoch = e <= (double)j->max_epochs ? (int64_t)e : 0;
    }
    return run;
}

struct tally {
    double cpu_s[N_KINDS], max_s[N_KINDS];
    long calls[N_KINDS];
    long jobs, changes_found; /* jobs replayed, and those whose change the policy found */
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
        /* Exploration, then mostly the bandit, then the change and what follows it. */
        for (int r = 0; r < RECURRENCES; r++) {
            struct bso_trial trial;
            unsigned changed;
            const bool bandit = policy == BSO_POLICY_ZEUS ? job.stage == BSO_STAGE_MAB : r > 20;
            const bool after = r >= CHANGE_AT;
            const int predict = after ? PREDICT_CHANGED : bandit ? PREDICT_BANDIT : PREDICT_EXPLORE;
            const int report = after ? REPORT_CHANGED : bandit ? REPORT_BANDIT : REPORT_EXPLORE;
            double t0 = thread_cpu_s();
            rc = bso_job_predict(&job, &trial, &changed);
            count(t, predict, thread_cpu_s() - t0);
            if (rc == BSO_EPRUNED)
                break; /* every size failed: the next job */
            if (rc < 0) {
                bso_job_clear(&job);
                return rc;
            }
            const struct bso_bench_run run = run_of(&bj, trial.batch_size, trial.number, after);
            for (int64_t e = 1; e <= max_epochs; e++) {
                const struct bso_report rep = bso_bench_report(&run, e);
                struct bso_decision d;
                size_t arm;
                t0 = thread_cpu_s();
                rc = bso_job_report(&job, &trial, &rep, &d, &changed, &arm);
                count(t, report, thread_cpu_s() - t0);
                if (rc < 0 || d.stop_train)
                    break; /* a refused report (a late pruning trial) ends the run too */
            }
        }
        t->jobs++;
        t->changes_found += bso_policy_change_trial(&job) > 0;
        bso_job_clear(&job);
    }
    return 0;
}

int bso_policy_cpu(const struct bso_bench_sizes *sizes, int64_t max_epochs, double seconds,
                   uint64_t seed, bool json)
{
    static const int policies[] = {BSO_POLICY_ZEUS, BSO_POLICY_BSO};
    long jobs[2], found[2];
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
        jobs[p] = t.jobs;
        found[p] = t.changes_found;
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
        else if (policies[p] == BSO_POLICY_BSO) /* the only one that looks for changes */
            printf("%-8s %ld jobs, the change found in %ld\n", bso_policy_name(policies[p]), t.jobs,
                   t.changes_found);
        else
            printf("%-8s %ld jobs\n", bso_policy_name(policies[p]), t.jobs);
    }
    if (json) {
        printf("}, \"jobs\": {");
        for (int p = 0; p < 2; p++)
            printf("%s\"%s\": {\"replayed\": %ld, \"changes_found\": %ld}", p ? ", " : "",
                   bso_policy_name(policies[p]), jobs[p], found[p]);
        printf("}}\n");
    }
    return 0;
}
