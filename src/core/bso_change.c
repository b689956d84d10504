/* How the bso policy learns from a finished run, and finds that the job changed: CUSUM tests
 * on each size's epochs and failures, a new level of cost per epoch, and what a change makes
 * it forget (docs/policy.md, "When the job changes"). */
#include "core/bso_policy.h"

#include <math.h>
#include <stdlib.h>

#include "core/bso_policy_internal.h"
#include "core/job.h"

/* Change detection (docs/policy.md, "When the job changes"): a CUSUM over each size's
 * standardised surprises in log epochs. Surprises under DRIFT_SLACK standard deviations cancel
 * out; an upward sum past DRIFT_ALARM says the job changed (about one false alarm in several
 * hundred runs of a stationary size, and a 1.5x change is found within two or three runs), a
 * downward one that the size got cheaper. */
#define DRIFT_SLACK 0.5
#define DRIFT_ALARM 6.0
/* Failing to reach is rarer and costlier evidence: a likelihood ratio of 20 (one failure of a
 * size that reached some twenty times without failing) says the job changed. */
#define FAIL_ALARM 3.0
/* From this upward sum on, a run stopped for its cost also counts as a surprise, at the epochs
 * it ran (a lower bound on those it needed): it confirms a drift already building. Alone, such
 * stops are no evidence of one: a size that diverges now and then is stopped too. */
#define CONFIRM_FROM (DRIFT_ALARM / 2)
/* Two sizes drifting up at once (each at least CONFIRM_FROM) raise the alarm when their sums
 * together pass this: one size's alarm and another's confirmation. A shift that hits several
 * sizes while the job takes turns between them builds at each apart, and each CUSUM alone took
 * five recurrences to find sentiment140's epochs going from 3 to 4 at 64 and 128 (its new
 * optimum, 32, was judged at their 4 epochs meanwhile). At DRIFT_ALARM alone (any two sizes
 * halfway) the false alarms over the stationary 140 seeds rose from 104 to 137; at this, 112. */
#define TWO_SIZES_ALARM (DRIFT_ALARM + CONFIRM_FROM)
/* How far (in standard deviations) a size's first run may lie below its runs since before it
 * says the job changed right after it: as far as one run alone must surprise to raise the
 * alarm (its surprise less the slack past DRIFT_ALARM). */
#define FIRST_RUN_ALARM (DRIFT_ALARM + DRIFT_SLACK)
/* How far (in standard deviations) one run must surprise to raise the alarm after the user
 * declared that the job changed (bso_policy_declare_change): the declaration stands for the
 * rest of the evidence, and what is left to show is that the change matters at the size, by a
 * conventional two-sided test at about 5%. A run that fails to reach needs the same likelihood
 * ratio, e^(DECLARED_SURPRISE - DRIFT_SLACK), against the size's failure rate. */
#define DECLARED_SURPRISE 2.0

/* How surprising a run that reached in e epochs, at a size that reached before, is: in standard
 * deviations of its predicted log epochs (its posterior and the run-to-run spread). The
 * run-to-run spread leaves out the runs of every drift already half-way to its alarm
 * (CONFIRM_FROM): those runs are the shift under test, and counted as noise they widened the
 * spread that each next run of the shift was held to, so that a shift seen at two sizes in
 * turn (sentiment140's epochs from 3 to 4 at 64 and 128) surprised less with every run and
 * took up to 16 recurrences to raise the alarm. Below that mark a streak is more often noise,
 * and leaving its runs out (any streak) tripled the false alarms. */
static double surprise(const struct bso_job *job, size_t i, double e)
{
    double mean_log[BSO_MAX_BATCH_SIZES], sd_log[BSO_MAX_BATCH_SIZES], cv2;
    bool drifting[BSO_MAX_BATCH_SIZES];
    for (size_t k = 0; k < job->spec.n_batch_sizes; k++)
        drifting[k] = fmax(job->stats[k].drift_up, job->stats[k].drift_down) >= CONFIRM_FROM;
    bso_policy_posterior(job, drifting, mean_log, sd_log, &cv2);
    const double sd = sqrt(cv2 + sd_log[i] * sd_log[i]);
    return (log(e) - mean_log[i]) / sd;
}

/* Whether size i, whose epochs drift up, and another size that drifts up too together pass
 * TWO_SIZES_ALARM. Not while a change the user declared is pending: the declaration raised
 * every size's sum to near the alarm, for a run that surprises to confirm
 * (bso_policy_declare_change). */
static bool drifting_at_two_sizes(const struct bso_job *job, size_t i)
{
    const struct bso_bs_stat *s = &job->stats[i];
    if (s->drift_up < CONFIRM_FROM || s->declared_mark > 0)
        return false;
    for (size_t k = 0; k < job->spec.n_batch_sizes; k++)
        if (k != i && job->stats[k].drift_up >= CONFIRM_FROM &&
            s->drift_up + job->stats[k].drift_up > TWO_SIZES_ALARM)
            return true;
    return false;
}

/* The log-likelihood ratio of a run's outcome (reached or not) between "the size now fails
 * at least half the time" and its failure rate so far (with half a failure of prior). Some
 * runs never reach without anything having changed (a diverged seed): a size that failed
 * before needs more failures in a row to raise the alarm. */
static double failure_evidence(const struct bso_bs_stat *s, bool reached)
{
    const double fails = s->total_runs - s->total_successes;
    const double p0 = (fails + 0.5) / (s->total_runs + 1);
    const double p1 = fmax(0.5, (1 + p0) / 2);
    return reached ? log((1 - p1) / (1 - p0)) : log(p1 / p0);
}

/* Empties size s's streak (below): its CUSUM sums start again, or its runs start over. */
static void end_streak(struct bso_bs_stat *s)
{
    s->streak_runs = s->streak_sum_epochs = s->streak_sum_sq_epochs = 0;
}

/* Counts a run that reached at size s (its sums just updated) in the streak of runs since its
 * CUSUM sums were last both 0; the streak ends, and is emptied, when they are. */
static void follow_streak(struct bso_bs_stat *s, double e)
{
    if (s->drift_up <= 0 && s->drift_down <= 0) {
        end_streak(s);
        return;
    }
    s->streak_runs++;
    s->streak_sum_epochs += e;
    s->streak_sum_sq_epochs += e * e;
}

/* Size s reached since the change but drifts itself: only the runs of its streak are known to
 * be from after the change, and they replace the rest (at their mean; their spread kept). */
static void keep_streak(const struct bso_job *job, struct bso_bs_stat *s)
{
    const int64_t n = (int64_t)s->streak_runs;
    const double m = s->streak_sum_epochs / s->streak_runs;
    const double per = bso_bs_cost_per_epoch(s);
    bso_bs_clear_epochs(s);
    for (int64_t r = 0; r < n; r++)
        bso_bs_add_epochs(s, m, job->spec.window_size);
    s->sum_sq_epochs = s->streak_sum_sq_epochs;
    s->runs = n;
    s->epochs_sum = isfinite(per) ? (double)n * m : 0;
    s->cost_sum = isfinite(per) ? per * (double)n * m : 0;
}

/* Size s forgets its runs at a change (those before its streak where `before_streak`): their
 * spread joins what the job's changes made it forget (past_spread_ss, the spread Thompson
 * sampling starts from after a change). The runs of a drift that built up to the alarm count
 * too: leaving them out as the change rather than noise did worse (docs/policy.md). */
static void remember_spread(struct bso_bs_stat *s, bool before_streak)
{
    double ss, dof;
    bso_policy_size_spread(s, before_streak, &ss, &dof);
    s->past_spread_ss += ss;
    s->past_spread_dof += dof;
}

/* The job changed (size i's runs said so): what was learnt before weighs as one run per size,
 * so the runs to come decide; sizes ruled out are open to the search again, each with its
 * measured cost per epoch; size i starts over from the run that showed the change, unless
 * `i_stays` (its failures raised the alarm, and it had missed before: see
 * bso_policy_observe), when it keeps its epochs as every other size known from before does.
 * i is n_batch_sizes for a change found in hindsight (first_run_out_of_place): then every
 * size that reached since it keeps what it knows. */
static void forget(struct bso_job *job, size_t i, double since, bool i_stays)
{
    /* A change the user declared came then, no earlier (bso_policy_declare_change); the
     * declaration is spent on the alarm it led to. */
    for (size_t k = 0; k < job->spec.n_batch_sizes; k++) {
        since = fmax(since, job->stats[k].declared_mark);
        job->stats[k].declared_mark = 0;
    }
    /* The change came after size i last reached before this run (`since`): a size that
     * reached since (and has not failed since) is known from after it, and keeps what it
     * knows; if it drifts itself, only the runs of its drift. Its sums start again. */
    for (size_t k = 0; k < job->spec.n_batch_sizes; k++) {
        struct bso_bs_stat *s = &job->stats[k];
        const double measured = bso_bs_cost_per_epoch(s);
        /* Its cost per epoch is kept, at the weight of one epoch (or one run); unmeasured
         * stays unmeasured. */
        const double per = isfinite(measured) ? measured : 0;
        const double one = per > 0 ? 1 : 0;
        s->pre_change_epochs = s->successes > 0 ? bso_bs_mean_epochs(s) : 0;
        if (k != i && s->successes > 0 && s->success_mark > since &&
            s->success_mark > s->fail_mark) {
            s->pre_change_epochs = 0; /* known from after the change: nothing to compare */
            s->changes_since_run = 0;
            s->change_mark = since > 0 ? since : 1;
            if ((s->drift_up > 0 || s->drift_down > 0) && s->streak_runs > 0 &&
                s->streak_runs < (double)s->successes) {
                if (s->streak_runs < (double)s->successes - 1)
                    remember_spread(s, true); /* the runs before its streak */
                keep_streak(job, s);
            }
            s->drift_up = s->drift_down = 0;
            end_streak(s);
            continue;
        }
        const bool starts_over = k == i && !i_stays;
        s->changes_since_run++; /* i's, whose run found the change, is reset by that run */
        const bool keeps_sums =
            !starts_over && (s->status == BSO_BS_UNTRIED || s->status == BSO_BS_INFEASIBLE);
        if (!keeps_sums) /* its runs are forgotten below: it starts over, or keeps their mean */
            remember_spread(s, false);
        s->drift_up = s->drift_down = s->drift_fail = s->misses = 0;
        end_streak(s);
        s->censored_epochs = 0;
        s->change_mark = (double)job->last_trial_number;
        if (starts_over || keeps_sums) {
            if (starts_over) { /* one epoch of its cost stays, weighed with the run's */
                bso_bs_clear_epochs(s);
                s->runs = 1;
                s->epochs_sum = one;
                s->cost_sum = per;
                s->status = BSO_BS_UNTRIED;
            }
            continue;
        }
        if (s->successes > 0) {
            const double m = bso_bs_mean_epochs(s);
            bso_bs_clear_epochs(s);
            bso_bs_add_epochs(s, m, job->spec.window_size);
            s->runs = 1;
            s->epochs_sum = one * m;
            s->cost_sum = per * m;
        } else {
            s->status = BSO_BS_PASSED; /* re-checked: a one-epoch probe tells again */
            s->runs = 0;
            s->epochs_sum = one;
            s->cost_sum = per;
        }
    }
}

/* The size whose jump in cost per epoch marked the others as a guess (follow_epoch_cost): of
 * the sizes measured and left unmarked, the one nearest to i; -1 if none is. */
static int jumped_size(const struct bso_job *job, size_t i)
{
    int jumped = -1;
    for (size_t k = 0; k < job->spec.n_batch_sizes; k++) {
        const struct bso_bs_stat *o = &job->stats[k];
        if (k != i && o->cost_shift == 0 && o->epochs_sum > 0 &&
            (jumped < 0 || abs((int)k - (int)i) < abs(jumped - (int)i)))
            jumped = (int)k;
    }
    return jumped;
}

/* A run at size i whose cost per epoch is far off its size's shows a new level: size i takes
 * it, and on the guess that the whole job got dearer (more data, other hardware) every other
 * measured size is moved by the same factor, marked as a guess (cost_shift). The next run at a
 * marked size tells: if its cost per epoch is where the guess put it, the job changed as a
 * whole, as far as that side of the jump goes, and the marks there are dropped; if not, the
 * jump was size i's alone and every marked size gets its own cost back. Each size's cost_level
 * follows the moves that stand. Returns whether any size other than i changed. */
static bool follow_epoch_cost(struct bso_job *job, size_t i, double cost, int64_t epochs)
{
    struct bso_bs_stat *s = &job->stats[i];
    bool all = false;
    if (s->cost_shift > 0 && s->epochs_sum > 0 && epochs >= 1) {
        /* The run's raw cost per epoch: a one-epoch probe's warm-up can only make it dearer,
         * so it never undoes a jump that was the whole job's (taking the learnt warm-up out
         * made such probes look cheap, undid true jumps, and the marks went round). */
        const double r = cost / (double)epochs / bso_bs_cost_per_epoch(s);
        const bool whole_job = r < BSO_PER_EPOCH_SHIFT && r > 1 / BSO_PER_EPOCH_SHIFT;
        /* A run that bears the guess out confirms it on its side of the size that jumped
         * only: a change may hit a range of sizes, and what this run shows is that the range
         * reaches from there to here. Sizes on the other side keep their marks until a run
         * there tells (epoch times x2 at and above librispeech's optimum on the V100: a probe
         * of 64 bore out the jump at 48, the guess stayed on 32, whose epochs cost what they
         * did, and the job kept 48 at 1.9 times 32's cost). */
        const int jumped = whole_job ? jumped_size(job, i) : -1;
        for (size_t k = 0; k < job->spec.n_batch_sizes; k++) {
            struct bso_bs_stat *o = &job->stats[k];
            if (jumped >= 0 && ((int)k > jumped) != ((int)i > jumped))
                continue;
            if (o->cost_shift > 0 && !whole_job) {
                o->cost_sum /= o->cost_shift;
                o->cost_level = bso_bs_cost_level(o) / o->cost_shift;
            }
            /* A mark dropped elsewhere changes that size too, confirmed or not: the caller
             * stores every size then (only size i's was stored when the guess held, and a
             * server that read the job back kept the marks its replay in process dropped). */
            all |= k != i && o->cost_shift != 0;
            o->cost_shift = 0;
        }
    }
    if (s->successes == 0 || epochs < 2 || !(s->epochs_sum > 0))
        return all;
    const double shift = bso_bs_per_epoch_jump(s, cost, (double)epochs);
    if (shift == 1)
        return all;
    for (size_t k = 0; k < job->spec.n_batch_sizes; k++) {
        struct bso_bs_stat *o = &job->stats[k];
        o->cost_sum *= shift;
        if (o->epochs_sum > 0)
            o->cost_level = bso_bs_cost_level(o) * shift;
        if (k != i && o->epochs_sum > 0)
            o->cost_shift = (o->cost_shift > 0 ? o->cost_shift : 1) * shift;
    }
    return true;
}

/* Whether size i's first run that reached the target (first_epochs) lies so far below the
 * runs it has had since that the job must have changed right after it: by more than
 * FIRST_RUN_ALARM standard deviations of the gap between one run and the mean of the others
 * (the pooled run-to-run spread, the first run left out of it). The CUSUM compares each run
 * with the size's posterior before it, which the runs since a change soon make up, so that one
 * or two runs from before a change in the job's first recurrences never look out of place;
 * yet they mislead the scaling fit and every size passed over against them (docs/policy.md,
 * "Other changes"). Then the first run leaves the size's epochs (their least is not kept
 * apart: the others' mean stands in for it), and the other sizes forget what they knew from
 * before it, as at an alarm. Not with a window, which forgets old runs on its own. */
static bool first_run_out_of_place(struct bso_job *job, size_t i)
{
    struct bso_bs_stat *s = &job->stats[i];
    const double first = s->first_epochs;
    if (!(first > 0) || job->spec.window_size > 0 || s->successes < 3)
        return false;
    s->successes--;
    s->sum_epochs -= first;
    s->sum_sq_epochs -= first * first;
    const double others = bso_bs_mean_epochs(s);
    const double se = sqrt(bso_policy_pooled_cv2(job) * (1 + 1 / (double)s->successes));
    if (!(log(others / first) > FIRST_RUN_ALARM * se)) {
        s->successes++;
        s->sum_epochs += first;
        s->sum_sq_epochs += first * first;
        return false;
    }
    s->min_epochs = others;
    s->first_epochs = 0;
    forget(job, job->spec.n_batch_sizes, s->first_mark, false);
    return true;
}

bool bso_policy_observe(struct bso_job *job, size_t i, double cost, int64_t epochs,
                        enum bso_run_end end)
{
    struct bso_bs_stat *s = &job->stats[i];
    const bool reached = end == BSO_RUN_REACHED;
    const bool was_stale = bso_policy_stale(job, i);
    s->crashes = 0; /* it reported: whatever ended earlier runs, this one ran */
    /* Failing marks a size that ran out of epochs, or one that used to reach; an exploring
     * run stopped for its cost may still reach, and marks nothing. */
    const double reached_before = s->success_mark;
    if (reached)
        s->success_mark = (double)job->last_trial_number;
    else if (end == BSO_RUN_FAILED || s->successes > 0)
        s->fail_mark = (double)job->last_trial_number;
    bool all = follow_epoch_cost(job, i, cost, epochs), alarm = false;
    /* A size known only from before the change is expected to surprise: its run replaces what
     * was known (below) instead of announcing the change again, which would re-open sizes
     * that already failed since it. */
    if (s->successes > 0 && !was_stale && end != BSO_RUN_PASSED) {
        if (reached) {
            const double z = surprise(job, i, (double)epochs);
            s->drift_up = fmax(0, s->drift_up + z - DRIFT_SLACK);
            s->drift_down = fmax(0, s->drift_down - z - DRIFT_SLACK);
            follow_streak(s, (double)epochs);
        } else if (end == BSO_RUN_KILLED && epochs >= 1 && s->drift_up >= CONFIRM_FROM) {
            /* Stopped for its cost where its epochs were already drifting up: the surprise of
             * the epochs it ran, if they exceed what it needed, without its run to the target
             * (which would have surprised at least as much). Without this, a drift whose
             * first run took a size halfway to the alarm went unconfirmed while the job moved
             * on (docs/policy.md, "A drift in real training"). */
            const double z = surprise(job, i, (double)epochs);
            if (z > 0)
                s->drift_up += z - DRIFT_SLACK;
        }
        s->drift_fail = fmax(0, s->drift_fail + failure_evidence(s, reached));
        const bool rose = s->drift_up > DRIFT_ALARM || s->drift_fail > FAIL_ALARM ||
                          (reached && drifting_at_two_sizes(job, i));
        if (rose) {
            /* A size that misses now and then can raise the alarm with a streak of misses
             * alone, the job unchanged; its epochs were not what failed, so they stay, as a
             * stand-in at one run's weight with this miss counted against it (Thompson
             * sampling weighs it), and its next run that reaches replaces them. A size that
             * never missed before is the news itself: it starts over. */
            forget(job, i, reached_before, end == BSO_RUN_FAILED && s->misses_before_reaching > 0);
            all = alarm = true;
        } else if (s->drift_down > DRIFT_ALARM) {
            /* The size got cheaper (fewer epochs): it starts over from this run (added below),
             * and nothing else is forgotten. Good news at one size says nothing against what
             * the others showed, and re-exploring after it cost more than it found. How far
             * it fell is kept, so that the scaling fit does not read the curve's shape from
             * its new epochs beside the others' old ones (drop_factor). */
            s->drop_factor = (double)epochs / bso_bs_mean_epochs(s);
            s->drop_mark = (double)job->last_trial_number;
            bso_bs_clear_epochs(s);
            s->drift_down = 0;
            end_streak(s);
        }
    }
    /* The first run at a size known only from before the job changed replaces what was
     * known: that was a stand-in until a run could tell. */
    if (was_stale && end != BSO_RUN_PASSED) {
        bso_bs_clear_epochs(s);
        s->status = BSO_BS_UNTRIED; /* set below from this run */
    }
    if (s->runs == 0 && epochs >= 2 && s->first_epoch_cost > 0) {
        s->warm_first_sum += s->first_epoch_cost;
        s->warm_steady_sum += (cost - s->first_epoch_cost) / (double)(epochs - 1);
    }
    s->total_runs++;
    s->total_successes += reached;
    s->misses += end == BSO_RUN_FAILED;
    s->runs++;
    s->changes_since_run = 0;
    s->cost_sum += cost;
    s->epochs_sum += (double)epochs;
    if (reached && s->prior_epochs > 0) { /* the transferred prior joins as one run */
        bso_bs_add_epochs(s, s->prior_epochs, job->spec.window_size);
        s->prior_epochs = 0;
    }
    if (reached) {
        if (s->successes == 0) {
            s->first_epochs = (double)epochs;
            s->first_mark = (double)job->last_trial_number;
        }
        bso_bs_add_epochs(s, (double)epochs, job->spec.window_size);
        s->status = BSO_BS_GOOD;
        s->misses_before_reaching = s->misses;
        if (!alarm && first_run_out_of_place(job, i))
            all = true;
    } else if (end == BSO_RUN_KILLED && (double)epochs > s->censored_epochs) {
        s->censored_epochs = (double)epochs;
    }
    if (!reached && s->status != BSO_BS_GOOD) {
        /* A run stopped for its cost that showed the change was held to a best from before
         * it: it proves only that the size needs more epochs than it ran (censored_epochs),
         * not that it is worse than the sizes the search goes on from, so it stays open
         * instead of bounding the search. */
        const bool stopped_by_stale_best = end == BSO_RUN_KILLED && alarm;
        s->status = end == BSO_RUN_PASSED || stopped_by_stale_best ? BSO_BS_PASSED
                    : end == BSO_RUN_KILLED                        ? BSO_BS_KILLED
                                                                   : BSO_BS_FAILED;
    }
    return all;
}

size_t bso_policy_declare_change(struct bso_job *job)
{
    if (job->spec.policy != BSO_POLICY_BSO)
        return 0;
    /* Each CUSUM sum is a log-likelihood ratio for a change: it is raised to within one run's
     * worth of its alarm. Ordinary runs wear it down as they would any surprise; an alarm
     * resets every sum (forget). */
    const double left = DECLARED_SURPRISE - DRIFT_SLACK;
    size_t watched = 0;
    for (size_t k = 0; k < job->spec.n_batch_sizes; k++) {
        struct bso_bs_stat *s = &job->stats[k];
        s->declared_mark = (double)job->last_trial_number;
        if (s->successes == 0 || bso_policy_stale(job, k))
            continue;
        s->drift_up = fmax(s->drift_up, DRIFT_ALARM - left);
        s->drift_down = fmax(s->drift_down, DRIFT_ALARM - left);
        s->drift_fail = fmax(s->drift_fail, FAIL_ALARM - left);
        watched++;
    }
    return watched;
}

int64_t bso_policy_declared_trial(const struct bso_job *job)
{
    double declared = 0;
    for (size_t i = 0; job->spec.policy == BSO_POLICY_BSO && i < job->spec.n_batch_sizes; i++)
        declared = fmax(declared, job->stats[i].declared_mark);
    return (int64_t)declared;
}

double bso_policy_change_evidence(const struct bso_job *job, size_t i)
{
    if (job->spec.policy != BSO_POLICY_BSO)
        return 0;
    const struct bso_bs_stat *s = &job->stats[i];
    const double e = fmax(s->drift_up / DRIFT_ALARM, s->drift_fail / FAIL_ALARM);
    return e > 0 ? fmin(e, 1) : 0;
}

int64_t bso_policy_change_trial(const struct bso_job *job)
{
    /* A change marks every size that did not reach since it with the trial that found it, and
     * those that did with an earlier one (forget). */
    double changed = 0;
    for (size_t i = 0; job->spec.policy == BSO_POLICY_BSO && i < job->spec.n_batch_sizes; i++)
        changed = job->stats[i].change_mark > changed ? job->stats[i].change_mark : changed;
    return (int64_t)changed;
}
