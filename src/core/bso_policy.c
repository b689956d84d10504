/* BSO's own policy: which batch size runs next (first runs, search, Thompson sampling, rescue
 * within a recurrence) and when a run stops; see bso_policy.h and docs/policy.md. The rest of
 * the policy: bso_size.c, bso_estimate.c, bso_epoch_cost.c, bso_posterior.c, bso_search.c,
 * bso_first_search.c, bso_thompson.c, bso_rescue.c, bso_change.c. */
#include "core/bso_policy.h"

#include <math.h>
#include <stdio.h>

#include "bso/error.h"
#include "core/bso_policy_internal.h"
#include "core/job.h"

/* An exploring run past its expected epochs is assumed to need this share again of the epochs
 * it has run: what stopping it weighs against a fresh run of the best (bso_policy_decide). */
#define OVERDUE 0.25

/* Whether size i may be the best: it reached the target (since the job last changed, when
 * fresh_only), may run, and did not just fail. */
static bool may_be_best(const struct bso_job *job, size_t i, bool fresh_only)
{
    return job->stats[i].successes > 0 && bso_policy_usable(job, i) && !bso_policy_struck(job, i) &&
           (!fresh_only || bso_policy_fresh(job, i));
}

/* Of the sizes that may be the best (may_be_best), the one of least `cost`, the first on a tie;
 * -1 where none may. */
static int cheapest(const struct bso_job *job, bool fresh_only,
                    double (*cost)(const struct bso_job *, size_t))
{
    int best = -1;
    double best_cost = INFINITY;
    for (size_t i = 0; i < job->spec.n_batch_sizes; i++) {
        if (!may_be_best(job, i, fresh_only))
            continue;
        const double c = cost(job, i);
        if (best < 0 || c < best_cost) {
            best = (int)i;
            best_cost = c;
        }
    }
    return best;
}

static double expected_cost(const struct bso_job *job, size_t i)
{
    return bso_bs_expected_cost(&job->stats[i]);
}

int bso_policy_best_good(const struct bso_job *job, bool fresh_only)
{
    return cheapest(job, fresh_only, expected_cost);
}

static int best_good(const struct bso_job *job)
{
    return bso_policy_best_good(job, false);
}

/* What a model trained at size i costs: where its runs have missed (run to max_epochs without
 * reaching), bso_policy_cost_per_model; where none missed, its expected cost. */
static double cost_of_a_model(const struct bso_job *job, size_t i)
{
    return job->stats[i].misses > 0 ? bso_policy_cost_per_model(job, i) : expected_cost(job, i);
}

/* By cost_of_a_model, not by expected cost, which counts only the runs that reached: a size
 * that reaches one run in five, cheap when it does, would hold every other size's runs to twice
 * that and stop runs of a size that reaches four in five just short of the target (held-out
 * set 888's syn4 on g1: 8 reaches at 36 epochs one run in five, 4 at 26-42 four in five; runs
 * at 4 that needed 42 were stopped at 39, and the recurrence went on at 8, which missed). */
int bso_policy_bound_size(const struct bso_job *job)
{
    return cheapest(job, true, cost_of_a_model);
}

/* The first size for a job transferred from another before any of its own runs: the one of
 * least prior epochs x (stand-in) cost per sample; -1 once a size has run, or without priors. */
static int transferred_start(const struct bso_job *job)
{
    int best = -1;
    double best_cost = INFINITY;
    for (size_t k = 0; k < job->spec.n_batch_sizes; k++) {
        const struct bso_bs_stat *s = &job->stats[k];
        if (s->runs > 0 || s->crashes > 0)
            return -1;
        const double cost = s->prior_epochs * bso_policy_sample_cost(job, k);
        if (bso_policy_usable(job, k) && s->prior_epochs > 0 && isfinite(cost) &&
            cost < best_cost) {
            best = (int)k;
            best_cost = cost;
        }
    }
    return best;
}

/* How many runs at sizes that never reached the target may run to max_epochs in a recurrence
 * (the runs since the last that reached) of a job that never changed before it explores no
 * further. One such failure is the search's ordinary price; a second says the search has run
 * into sizes that do not reach, and the recurrence, which still needs a model, goes back to the
 * sizes that did (a moved job's first search on synthetic workloads tried two such sizes and
 * three one-epoch probes before its best, five launches without a model). After a change,
 * exploring is how the job finds where its optimum went, and it goes on. */
#define EXPLORING_MISSES 2

static bool explored_enough(const struct bso_job *job)
{
    if (bso_policy_change_trial(job) > 0)
        return false;
    const double since = bso_policy_last_success(job);
    int misses = 0;
    for (size_t k = 0; k < job->spec.n_batch_sizes; k++) {
        const struct bso_bs_stat *s = &job->stats[k];
        misses += s->status == BSO_BS_FAILED && s->total_successes == 0 && s->fail_mark > since;
    }
    return misses >= EXPLORING_MISSES;
}

/* How many models the job must have trained before a recurrence probes only once
 * (probed_in_this_recurrence). In its first recurrences the search brackets the default: a probe
 * stopped on one side leads to the other side's in the same recurrence, which the search needs
 * anyway (measured: holding that second probe to the next recurrence cost the stationary replay
 * 0.004; from the second model on, nothing). */
#define MODELS_BEFORE_ONE_PROBE 2

/* Whether the recurrence under way has launched a probe that trained no model, in a job that
 * has trained MODELS_BEFORE_ONE_PROBE models: then the search probes no more in it, since each
 * probe is a launch that trains no model, and the recurrence still needs one. Thompson sampling
 * (or the rescue, once the sizes that reached have failed) hands out the size likeliest to train
 * it instead, and the search goes on at the next recurrence. squad on the A40, epochs x1.6 at
 * and below its optimum from recurrence 25, seed 23: probes of 24 and 12 stopped after an epoch,
 * then 32, 16 and 8, hit by the change, ran to max_epochs; five launches, no model, though 56
 * would have reached. A probe is a run at a size that never reached, stopped before max_epochs:
 * the only run that leaves no failure mark (a run that ran out of epochs, or one at a size that
 * had reached, marks its size), so the recurrence's launches (every trial since the job's last
 * success: a recurrence ends at its first run that reaches) outnumber its marked sizes (a size
 * that failed in it runs again only as the rescue's last resort, when nothing else is left:
 * bso_policy_struck; counted as a probe then, it holds back no probe that could run). A trial
 * that ended without a report counts as one too. Any launch without a model, probe or not, stopping
 * the search instead left the held-out synthetic workloads' searches stuck: their mid-recurrence
 * probes, from the best size left after a failure, are how they got past a size that reached once
 * by luck. */
static bool probed_in_this_recurrence(const struct bso_job *job)
{
    const double since = bso_policy_last_success(job);
    double models = 0, marked = 0;
    for (size_t k = 0; k < job->spec.n_batch_sizes; k++) {
        models += job->stats[k].total_successes;
        marked += job->stats[k].fail_mark > since;
    }
    return models >= MODELS_BEFORE_ONE_PROBE && (double)job->last_trial_number - since > marked;
}

/* bso_policy_choose, with the sizes struck out of the recurrence known (bso_policy_know_struck). */
static int choose(struct bso_job *job, int64_t *batch_size)
{
    const struct bso_job_spec *sp = &job->spec;
    const int n = (int)sp->n_batch_sizes;
    const int d = bso_job_spec_index(sp, sp->default_batch_size);
    const int g = best_good(job);
    /* The best measured since the job last changed (every size that reached, if it never did):
     * where none is, but something reached before or the job changed, a model is needed now,
     * before any search. After a change, a search anchored at a size known only from before
     * would re-check its neighbours one by one, on the same side of the change as the size
     * that found it; the rescue goes to the cheapest size still expected to reach, and skips
     * sizes that failed since and those between two that did. */
    const int f = bso_policy_best_good(job, true);
    bool reached_before = false;
    for (int k = 0; k < n; k++)
        reached_before |= job->stats[k].successes > 0;
    if (f < 0 && (reached_before || bso_policy_change_trial(job) > 0)) {
        const int c = bso_policy_rescue(job);
        if (c >= 0) {
            *batch_size = sp->batch_sizes[c];
            return 0;
        }
        if (g < 0 && reached_before)
            return BSO_EPRUNED;
    }
    if (g < 0) {
        /* Transferred from another job and nothing run yet: the size the old job's epochs and
         * costs favour. */
        const int t = transferred_start(job);
        if (t >= 0) {
            *batch_size = sp->batch_sizes[t];
            return 0;
        }
        /* Nothing reached the target yet: the first search (bso_first_search.c). */
        const int first = bso_policy_first_search(job, d);
        if (first < 0)
            return BSO_EPRUNED;
        *batch_size = sp->batch_sizes[first];
        return 0;
    }
    /* The search looks around the best measured since the job last changed, when there is
     * one: a size known only from before may have moved. */
    const int a = f >= 0 ? f : g;
    const int c = explored_enough(job) || probed_in_this_recurrence(job)
                      ? -1
                      : bso_policy_explore(job, a, bso_bs_expected_cost(&job->stats[a]));
    const int pick = c >= 0 ? c : bso_policy_thompson(job);
    /* Thompson sampling draws from every size that may be the best, as g is one: none drawn
     * means a cost it could not weigh (not a number), and the best by expected cost goes. */
    *batch_size = sp->batch_sizes[pick >= 0 ? pick : g];
    return 0;
}

/* bso_policy_decide, with the sizes struck out of the recurrence known. */
static void decide(struct bso_job *job, size_t i, const struct bso_report *rep, bool reached,
                   struct bso_decision *out)
{
    struct bso_bs_stat *s = &job->stats[i];
    if (rep->current_epoch == 1)
        s->first_epoch_cost = out->cost;
    /* Runs are stopped against the best measured since the job last changed: a size's cost
     * from before may no longer hold. */
    const int g = bso_policy_best_good(job, true);
    out->stop_train = true;
    out->converged = reached;
    if (reached) {
        snprintf(out->message, sizeof out->message, "Train succeeded");
        return;
    }
    if (rep->current_epoch >= job->spec.max_epochs) {
        snprintf(out->message, sizeof out->message,
                 "Train failed to converge within max_epoch(%lld)",
                 (long long)job->spec.max_epochs);
        return;
    }
    if (g >= 0 && rep->current_epoch > 0) {
        const double best = bso_bs_expected_cost(&job->stats[g]);
        if (s->successes == 0 && rep->current_epoch == 1) {
            /* Exploring, first epoch: its cost per epoch is now measured; go on only if the
             * central estimate of its total beats the best. Stopping leads to a fresh run of
             * the best, which may fail too where a size already failed in this recurrence, as
             * likely as that failure says the job changed: the best is charged that risk of a
             * failed run (squad on the A40 after epochs x1.6 at and below its optimum: with 16
             * failed, probes of 56 and 24, which would reach, were stopped after an epoch as
             * dearer than 32, which then failed as 16 had, and five launches trained no
             * model). Only here: a run that passed this and then overruns its estimate is
             * likelier hit by the change too, and the stop below bounds what it wastes (the
             * same charge there cost the held-out workloads: docs/policy.md). */
            const double to_beat =
                best + bso_policy_failing_evidence(job) *
                           bso_policy_failed_run_cost(job, (size_t)g, bso_policy_bound_size(job));
            const double total =
                bso_policy_judged_epochs(job, i) *
                (s->runs == 0 ? bso_policy_steady_cost(job, out->cost) : out->cost);
            if (total > to_beat) {
                snprintf(out->message, sizeof out->message,
                         "Batch size %lld is not promising: about %.6g expected against %.6g",
                         (long long)job->spec.batch_sizes[i], total, to_beat);
                return;
            }
        }
        if (s->successes == 0) {
            /* Exploring: what it has spent is spent. Going on costs its expected remaining
             * epochs; stopping costs a fresh run of the best size (the recurrence still needs
             * a trained model) and loses what this run would teach. So stop only when the
             * remaining cost passes a whole run of the best. Past its estimate, a run is
             * assumed to need a further OVERDUE share of what it has run. */
            const double e = (double)rep->current_epoch;
            const double per = out->cost / e;
            const double expected = bso_policy_rechecked(job, i)
                                        ? bso_policy_epochs_bound(job, i)
                                        : bso_policy_epochs_estimate(job, i);
            double left = expected - e;
            if (left < OVERDUE * e)
                left = OVERDUE * e;
            /* Expected to fail, but a probe that may save a lot (a size much cheaper per
             * epoch, where the estimate rests on a guessed slope) is worth a run's risk. */
            if (expected > (double)job->spec.max_epochs &&
                !bso_policy_risk_pays(job, i, e, per, best)) {
                snprintf(out->message, sizeof out->message,
                         "Batch size %lld is expected to need about %.3g epochs, more than "
                         "max_epochs(%lld)",
                         (long long)job->spec.batch_sizes[i], expected,
                         (long long)job->spec.max_epochs);
                return;
            }
            /* Its remaining cost passes a fresh run of the best by the estimate; but where that
             * rests on a guessed slope (one size has reached), stopping would keep the guess
             * for good, as no other size then reaches to correct it, so a probe that may save
             * much over the recurrences to come (by the optimistic bound its go rested on) runs
             * on while that saving repays what running on costs if the guess holds (up to the
             * estimate); past the estimate the ordinary rule decides. Weighing what it costs if
             * the run never reaches (to max_epochs), as past max_epochs above, stopped such
             * probes at their first epoch where max_epochs is generous (syn20 of held-out set
             * 111: 32 needs 8 epochs where the guess said 14 and max_epochs is 37, and the job
             * sat on its default 16 at 1.3 times the optimum). */
            const bool guess_on_trial =
                bso_policy_slope_guessed(job) && e < expected &&
                (best - bso_policy_epochs_bound(job, i) * per) * bso_policy_horizon(job) >
                    (expected - e) * per;
            if (left * per > best && !guess_on_trial) {
                snprintf(out->message, sizeof out->message,
                         "Batch size %lld cannot beat the best (%lld): about %.6g more to go "
                         "against %.6g for a fresh run of the best",
                         (long long)job->spec.batch_sizes[i], (long long)job->spec.batch_sizes[g],
                         left * per, best);
                return;
            }
        }
        /* When this size's cost per epoch has jumped (the data grew), every size's has, most
         * likely: the bound moves with it, so that it still stops runs for their epochs and
         * does not stop every run at once. */
        const double jump =
            s->successes > 0 ? bso_bs_per_epoch_jump(s, out->cost, (double)rep->current_epoch) : 1;
        const double moved = jump > 1 ? jump : 1; /* only a jump up moves the bound */
        /* Beta times the expected cost of the size whose model costs least
         * (bso_policy_bound_size), which is never below the best's: a run within beta times the
         * best's cost is within the bound, and the size is looked up only past that. A run at
         * that size itself is held to beta times its own expected cost, which its own
         * run-to-run noise may pass: the bound allows that noise (bso_policy_noise_margin), so
         * that a run whose epochs doubled (the job changed) reaches and shows by how much,
         * instead of being stopped just short of it and leaving its size unmeasured. */
        if (job->spec.has_beta_knob && out->cost > job->spec.beta_knob * best * moved) {
            const int b = bso_policy_bound_size(job); /* one wherever g is one */
            const double own_noise = (int)i == b ? bso_policy_noise_margin(job, s->successes) : 1;
            const double bound = bso_bs_expected_cost(&job->stats[b]);
            if (out->cost > job->spec.beta_knob * bound * moved * own_noise) {
                snprintf(out->message, sizeof out->message,
                         "Batch Size(%lld) exceeded the cost upper bound: beta_knob(%g) times "
                         "the best expected cost (%.6g, batch size %lld's, whose model costs "
                         "least)",
                         (long long)job->spec.batch_sizes[i], job->spec.beta_knob, bound,
                         (long long)job->spec.batch_sizes[b]);
                return;
            }
        }
    }
    out->stop_train = false;
    snprintf(out->message, sizeof out->message, "Stop condition not met, keep training");
}

int bso_policy_choose(struct bso_job *job, int64_t *batch_size)
{
    bso_policy_know_struck(job);
    const int rc = choose(job, batch_size);
    job->struck_known = false;
    return rc;
}

void bso_policy_decide(struct bso_job *job, size_t i, const struct bso_report *rep, bool reached,
                       struct bso_decision *out)
{
    bso_policy_know_struck(job);
    decide(job, i, rep, reached, out);
    job->struck_known = false;
}

enum bso_run_end bso_policy_run_end(const struct bso_job *job, const struct bso_decision *d,
                                    int64_t epoch)
{
    if (d->converged)
        return BSO_RUN_REACHED;
    if (epoch >= job->spec.max_epochs)
        return BSO_RUN_FAILED;
    return epoch <= 1 ? BSO_RUN_PASSED : BSO_RUN_KILLED;
}
