/* Starting a job moved to other hardware from the old job's epochs; see bso_policy.h
 * (bso_policy_transfer) and docs/policy.md, "Moving a job to other hardware". */
#include <math.h>

#include "core/bso_policy.h"
#include "core/bso_policy_internal.h"
#include "core/job.h"

/* The old job's epochs at batch size b, from its posterior: at a size that reached there, its
 * mean; between two such sizes, interpolated in log-log; elsewhere unknown (0). A size stopped
 * there after e epochs without reaching needs more than e. */
static double old_epochs(const struct bso_job *from, const double *mean_log, double b)
{
    int lo = -1, hi = -1;
    for (size_t k = 0; k < from->spec.n_batch_sizes; k++) {
        if (from->stats[k].successes == 0)
            continue;
        const double bk = (double)from->spec.batch_sizes[k];
        if (bk == b)
            return exp(mean_log[k]);
        if (bk < b)
            lo = (int)k;
        else if (hi < 0)
            hi = (int)k;
    }
    if (lo < 0 || hi < 0)
        return 0;
    const double x0 = log2((double)from->spec.batch_sizes[lo]);
    const double x1 = log2((double)from->spec.batch_sizes[hi]);
    const double y = bso_interpolate(x0, mean_log[lo], x1, mean_log[hi], log2(b));
    const int k = bso_job_spec_index(&from->spec, (int64_t)b);
    const double censored = k >= 0 ? from->stats[k].censored_epochs : 0;
    return exp(y) > censored + 1 || censored == 0 ? exp(y) : censored + 1;
}

/* Size i of `to`, size k of `from` (-1: none), where `learnt`: `from` gave `to` epochs at some
 * size. Where i never ran here, it starts as the old job left it when no run there ever reached
 * and its runs ran to max_epochs (failed, with its misses), so that the search is bounded there
 * and re-runs it only as it would its own failed edge (when its misses may have been bad luck
 * and the saving here repays: bso_search.c, failed_edge_to_run_again), else untried. Epochs
 * belong to the workload, so a run that needed more than max_epochs there would here too,
 * unless this job allows more epochs. */
static void carry_failure(struct bso_job *to, size_t i, const struct bso_job *from, int k,
                          bool learnt)
{
    struct bso_bs_stat *s = &to->stats[i];
    if (s->total_runs > 0 || (s->status != BSO_BS_UNTRIED && s->status != BSO_BS_FAILED))
        return;
    const struct bso_bs_stat *o = k >= 0 ? &from->stats[k] : NULL;
    const bool failed_there = learnt && o && o->total_successes == 0 &&
                              o->status == BSO_BS_FAILED && o->misses > 0 &&
                              to->spec.max_epochs <= from->spec.max_epochs;
    s->status = failed_there ? BSO_BS_FAILED : BSO_BS_UNTRIED;
    s->misses = failed_there ? o->misses : 0;
}

size_t bso_policy_transfer(struct bso_job *to, const struct bso_job *from)
{
    double mean_log[BSO_MAX_BATCH_SIZES], sd_log[BSO_MAX_BATCH_SIZES];
    bso_policy_epochs_posterior(from, mean_log, sd_log);
    size_t n = 0;
    for (size_t i = 0; i < to->spec.n_batch_sizes; i++) {
        struct bso_bs_stat *s = &to->stats[i];
        const double b = (double)to->spec.batch_sizes[i];
        const int k = bso_job_spec_index(&from->spec, to->spec.batch_sizes[i]);
        /* How cost per epoch varies between sizes on the old hardware stands in for a device
         * profile until this hardware measures (a real profile replaces it): only ratios
         * between sizes are read from it, so one cost c is written as c J/sample and c samples
         * per max_power joule, whose cost per sample is c whatever eta. */
        const double c = k >= 0 ? bso_bs_cost_per_epoch(&from->stats[k]) : NAN;
        if (isfinite(c) && c > 0 && !(s->profile_samples_per_s > 0)) {
            s->profile_joules_per_sample = c;
            s->profile_samples_per_s = to->spec.max_power / c;
        }
        /* The old job's epochs replace what an earlier transfer gave (this job's own runs stay). */
        const double e = old_epochs(from, mean_log, b);
        s->prior_epochs = e > 0 && s->successes == 0 ? e : 0;
        n += s->prior_epochs > 0;
    }
    /* From a job that has learnt no epochs this one can use, nothing comes over: it starts
     * afresh (as `bso transfer` says), its failures with the rest. */
    for (size_t i = 0; i < to->spec.n_batch_sizes; i++)
        carry_failure(to, i, from, bso_job_spec_index(&from->spec, to->spec.batch_sizes[i]), n > 0);
    return n;
}
