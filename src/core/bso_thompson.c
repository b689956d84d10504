/* BSO's Thompson sampling over the batch sizes that reached the target: each draws its epochs
 * from the posterior (bso_posterior.c) times its cost per epoch, with what a size that just
 * failed may waste and without stale sizes the re-measured ones rule out (docs/policy.md, "The
 * bso policy", item 5, and "When the job changes"). */
#include "core/bso_policy.h"

#include <math.h>

#include "core/bso_policy_internal.h"
#include "core/job.h"
#include "core/rng.h"

double bso_policy_failed_run_cost(const struct bso_job *job, size_t i, int b)
{
    const double to_max = (double)job->spec.max_epochs * bso_bs_cost_per_epoch(&job->stats[i]);
    if (!job->spec.has_beta_knob || b < 0)
        return to_max;
    const double bound = job->spec.beta_knob * bso_bs_expected_cost(&job->stats[b]);
    return bound < to_max ? bound : to_max;
}

/* Whether stale size i lies past a rise in cost: of the sizes between i and f (the best since
 * the change) that reached since it and drew (draws[k] not NAN), or ran to max_epochs since
 * without reaching (as dear as can be), the one nearest to i costs no less than the next
 * nearest (expected). Costs that rise away from the best go on rising (the search's unimodal
 * assumption), so i, known only from before the change, is no cheaper than that nearest size,
 * and its stale draw is not to be believed (unless a run there is worth its risk: see
 * bso_policy_thompson). One such size between is not enough: a change at one size alone (a
 * spike) rises and falls again. `change`: the trial that found the change
 * (bso_policy_change_trial). */
static bool past_a_rise(const struct bso_job *job, const double *draws, int f, size_t i,
                        double change)
{
    const int dir = (int)i > f ? -1 : 1;
    int nearest = -1;
    double nearest_cost = 0;
    for (int k = (int)i + dir; k != f; k += dir) {
        const struct bso_bs_stat *s = &job->stats[k];
        double cost;
        if (!isnan(draws[k]) && bso_policy_fresh(job, (size_t)k))
            cost = bso_bs_expected_cost(s);
        else if (s->status == BSO_BS_FAILED && s->fail_mark >= change &&
                 s->fail_mark > s->success_mark)
            cost = INFINITY;
        else
            continue;
        if (nearest < 0) {
            nearest = k;
            nearest_cost = cost;
            continue;
        }
        return nearest_cost >= cost;
    }
    return false;
}

/* The best size since the change (bso_policy_best_good), looked up on first need: *known is -2
 * until then. */
static int fresh_best(const struct bso_job *job, int *known)
{
    if (*known == -2)
        *known = bso_policy_best_good(job, true);
    return *known;
}

/* The size beta's bound is set by (bso_policy_bound_size), looked up likewise. */
static int bound_size(const struct bso_job *job, int *known)
{
    if (*known == -2)
        *known = bso_policy_bound_size(job);
    return *known;
}

/* Thompson sampling over the sizes that reached the target (but those that just failed): each
 * draws its epochs from the posterior (bso_posterior.c), times its cost per
 * epoch; the lowest draw wins, but not a stale size past a rise in cost (past_a_rise). -1 when
 * there is none. */
int bso_policy_thompson(struct bso_job *job)
{
    double mean_log[BSO_MAX_BATCH_SIZES], sd_log[BSO_MAX_BATCH_SIZES];
    double draws[BSO_MAX_BATCH_SIZES];
    bso_policy_sampling_posterior(job, mean_log, sd_log);
    const double change = (double)bso_policy_change_trial(job);
    struct bso_spread spread;
    bso_policy_spread(job, &spread);
    int f = -2; /* the best since the change, once a stale size needs it */
    int b = -2; /* the size beta's bound is set by, once a failed size or a stale one needs it */
    for (size_t i = 0; i < job->spec.n_batch_sizes; i++) {
        draws[i] = NAN;
        if (job->stats[i].successes == 0 || !bso_policy_usable(job, i) || bso_policy_struck(job, i))
            continue;
        const struct bso_bs_stat *s = &job->stats[i];
        /* A size made dearer only by the guess that a jump seen elsewhere was the whole
         * job's draws at its own cost: if that makes it the pick, its run tests the guess. */
        const double per = bso_bs_unguessed(s, bso_bs_cost_per_epoch(s));
        double draw = exp(bso_rng_normal(&job->rng, mean_log[i], sd_log[i])) * per;
        /* Its last run did not reach (and another size trained a model since): the draw adds
         * the expected waste of the next not reaching either (as likely as one failure against
         * its successes, half of each as prior), a run to max_epochs or to the beta bound
         * (bso_policy_failed_run_cost), before another size trains the model. A size that ran to
         * max_epochs without reaching (missed) since the change weighs that waste at its chance of
         * missing again, whatever its last run did: a size that reaches four runs in five is
         * no sure thing between its misses. */
        const double missing = s->misses > 0 ? 1 - bso_bs_reach_chance(s) : 0;
        const double failing = s->fail_mark > s->success_mark ? 1.5 / (s->successes + 2) : 0;
        if (missing > 0 || failing > 0)
            draw +=
                fmax(missing, failing) * bso_policy_failed_run_cost(job, i, bound_size(job, &b));
        /* Failures in this recurrence that spread toward it may reach it too. */
        draws[i] = draw + bso_policy_spread_risk(job, &spread, i);
    }
    int best = -1;
    for (size_t i = 0; i < job->spec.n_batch_sizes; i++) {
        if (isnan(draws[i]))
            continue;
        /* Past a rise, unless even a run there that fails costs less than the draw would save
         * against the best since the change: then the run is worth its risk (a change that hit
         * the sizes on one side of the best leaves a far cheaper size beyond them). */
        if (bso_policy_stale(job, i) && fresh_best(job, &f) >= 0 &&
            past_a_rise(job, draws, f, i, change) &&
            !(draws[i] + bso_policy_failed_run_cost(job, i, bound_size(job, &b)) < draws[f]))
            continue;
        if (best < 0 || draws[i] < draws[best])
            best = (int)i;
    }
    return best;
}
