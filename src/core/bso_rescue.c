/* Never stuck without a model: which sizes a recurrence that is still looking for a model
 * does not hand out again, what a size risks where its failures spread, which size it turns to
 * when every size that reached has failed in it, and since when the target is out of reach
 * (docs/policy.md, "When the job changes", "Never stuck without a model" and "Failures that
 * spread"). */
#include "core/bso_policy.h"

#include <math.h>

#include "core/bso_policy_internal.h"
#include "core/job.h"

/* The largest fail_mark (failures) or success_mark of any size: the job's last trial number
 * when a size last failed, or last reached. Plain comparisons, not fmax (a libm call; the
 * marks are never NaN): each decision asks for the last success several times. */
static double last_mark(const struct bso_job *job, bool failures)
{
    double last = 0;
    for (size_t k = 0; k < job->spec.n_batch_sizes; k++) {
        const struct bso_bs_stat *s = &job->stats[k];
        const double mark = failures ? s->fail_mark : s->success_mark;
        if (mark > last)
            last = mark;
    }
    return last;
}

double bso_policy_last_success(const struct bso_job *job)
{
    return last_mark(job, false);
}

double bso_policy_last_failure(const struct bso_job *job)
{
    return last_mark(job, true);
}

/* Whether size i is not handed out again in the recurrence that is still looking for a model:
 * it failed after the job's last success, or it lies between two sizes that did (sizes between
 * two that failed likely fail too). A decision reads bso_policy_know_struck's table instead. */
static bool struck_by_scan(const struct bso_job *job, size_t i)
{
    const struct bso_bs_stat *st = job->stats;
    const double since = bso_policy_last_success(job);
    double failed_below = 0, failed_above = 0;
    for (size_t k = 0; k < job->spec.n_batch_sizes; k++) {
        double *failed = k < i ? &failed_below : &failed_above;
        if (k != i && st[k].fail_mark > *failed)
            *failed = st[k].fail_mark;
    }
    return st[i].fail_mark > since || (failed_below > since && failed_above > since);
}

bool bso_policy_struck(const struct bso_job *job, size_t i)
{
    return job->struck_known ? job->struck[i] : struck_by_scan(job, i);
}

void bso_policy_know_struck(struct bso_job *job)
{
    /* struck_by_scan for every size at once: the last success, then the latest failure below
     * each size (a pass up) and above it (a pass down). */
    const size_t n = job->spec.n_batch_sizes;
    const struct bso_bs_stat *st = job->stats;
    const double since = bso_policy_last_success(job);
    double failed = 0;
    for (size_t k = 0; k < n; k++) {
        job->struck[k] = failed > since; /* failed below; and above, next pass */
        if (st[k].fail_mark > failed)
            failed = st[k].fail_mark;
    }
    failed = 0;
    for (size_t k = n; k-- > 0;) {
        job->struck[k] = st[k].fail_mark > since || (job->struck[k] && failed > since);
        if (st[k].fail_mark > failed)
            failed = st[k].fail_mark;
    }
    job->struck_known = true;
}

double bso_policy_failing_evidence(const struct bso_job *job)
{
    const double since = bso_policy_last_success(job);
    double evidence = 0;
    for (size_t k = 0; k < job->spec.n_batch_sizes; k++)
        if (job->stats[k].fail_mark > since)
            evidence = fmax(evidence, bso_policy_change_evidence(job, k));
    return evidence;
}

/* A size's lowest plausible cost to the target: its epochs bound times its cost per epoch. */
static double optimistic_cost(const struct bso_job *job, size_t i)
{
    return bso_policy_epochs_bound(job, i) * bso_policy_epoch_cost(job, i);
}

/* The epochs a run at open size i is expected to need when a model is needed now: the central
 * estimate, never below the lower bound. The optimistic bound that ranks probes would send a
 * rescue to the smallest sizes, which a batch-size-proportional bound makes look cheap
 * whatever they need. */
static double expected_open_epochs(const struct bso_job *job, size_t i)
{
    return fmax(bso_policy_epochs_estimate(job, i), bso_policy_epochs_bound(job, i));
}

/* The most epochs a run may be expected to need and still be a rescue: max_epochs, with the
 * noise margin of an estimate resting on one run. */
static double rescue_reach(const struct bso_job *job)
{
    return (double)job->spec.max_epochs * bso_policy_noise_margin(job, 1);
}

/* How far (in octaves) from every size that ever reached the target an open size's estimate is
 * no longer believed in a rescue: the curve it comes from is then an extrapolation, and epochs
 * may grow far faster than it (past a small critical batch size) or a size may diverge. */
#define RESCUE_OCTAVES 2.0

/* How far (in octaves) size k lies beyond RESCUE_OCTAVES of every size that ever reached the
 * target: 0 when near one, and for every size while none has (there is no curve to
 * extrapolate then). */
static double octaves_beyond_reach(const struct bso_job *job, size_t k)
{
    const double at = log2((double)job->spec.batch_sizes[k]);
    double nearest = INFINITY;
    for (size_t j = 0; j < job->spec.n_batch_sizes; j++)
        if (job->stats[j].total_successes > 0)
            nearest = fmin(nearest, fabs(log2((double)job->spec.batch_sizes[j]) - at));
    return isfinite(nearest) ? fmax(0, nearest - RESCUE_OCTAVES) : 0;
}

static bool near_a_reached_size(const struct bso_job *job, size_t k)
{
    return octaves_beyond_reach(job, k) == 0;
}

/* Whether size k may train the model a recurrence still needs (rescue): it may run, is not
 * struck out in the recurrence, and reached the target before or is open, near a size that
 * reached (near_a_reached_size), and expected to reach it within `reach` epochs. Its expected
 * cost then goes to *cost. */
static bool may_rescue(const struct bso_job *job, size_t k, double reach, double *cost)
{
    const struct bso_bs_stat *s = &job->stats[k];
    if (!bso_policy_usable(job, k) || bso_policy_struck(job, k))
        return false;
    if (s->successes > 0) {
        *cost = bso_bs_expected_cost(s);
        return true;
    }
    if (!bso_policy_open_size(job, k) || !near_a_reached_size(job, k))
        return false;
    const double epochs = expected_open_epochs(job, k);
    if (epochs > reach)
        return false;
    *cost = epochs * bso_policy_epoch_cost(job, k);
    return true;
}

/* What a model is expected to cost where a run that reaches costs `run`, and each run reaches
 * only with chance p at `per` an epoch: that run, and (1 - p) / p runs to max_epochs wasted on
 * the way. */
static double per_model(const struct bso_job *job, double run, double p, double per)
{
    return run + (1 - p) / p * (double)job->spec.max_epochs * per;
}

/* Whether size k's failure since the job's last success is news: k had reached the target, and
 * this is the first run there to max_epochs (a size that misses now and then failing once more
 * says nothing about the job). */
static bool failure_is_news(const struct bso_bs_stat *s, double since)
{
    return s->fail_mark > since && s->total_successes > 0 && s->misses <= 1 &&
           s->misses_before_reaching == 0;
}

void bso_policy_spread(const struct bso_job *job, struct bso_spread *out)
{
    const double since = bso_policy_last_success(job);
    const int n = (int)job->spec.n_batch_sizes;
    out->origin = -1;
    for (int i = 0; i < n; i++)
        if (failure_is_news(&job->stats[i], since) &&
            (out->origin < 0 || job->stats[i].fail_mark < job->stats[out->origin].fail_mark))
            out->origin = i;
    out->lo = out->hi = out->origin;
    if (out->origin < 0)
        return;
    /* The sizes about it that failed in the recurrence too, or lie between two that did: those
     * it does not hand out again (bso_policy_struck). */
    while (out->lo > 0 && bso_policy_struck(job, (size_t)out->lo - 1))
        out->lo--;
    while (out->hi + 1 < n && bso_policy_struck(job, (size_t)out->hi + 1))
        out->hi++;
}

double bso_policy_spread_risk(const struct bso_job *job, const struct bso_spread *spread, size_t k)
{
    if (spread->origin < 0 || (int)k == spread->origin)
        return 0;
    /* How far the failures spread from their origin toward k. */
    const int edge = (int)k < spread->origin ? spread->lo : spread->hi;
    const double steps = fabs((double)(edge - spread->origin)),
                 away = fabs((double)((int)k - edge));
    if (steps < 1 || away < 1)
        return 0;
    /* A change hits a range of sizes. Each step of the spread so far went on; by Laplace's rule
     * (a uniform prior on the chance that a step goes on), after s steps out of s the next j
     * all go on with chance (s + 1) / (s + j + 1): k is spared with chance j / (s + j + 1),
     * and charged for that chance of reaching as a model is (per_model). */
    return per_model(job, 0, away / (steps + away + 1), bso_policy_epoch_cost(job, k));
}

double bso_policy_cost_per_model(const struct bso_job *job, size_t i)
{
    const struct bso_bs_stat *s = &job->stats[i];
    return per_model(job, bso_bs_expected_cost(s), bso_bs_reach_chance(s),
                     bso_bs_cost_per_epoch(s));
}

/* What a model is expected to cost at size i if the job's last change left it reaching now and
 * then, where it reached before that change but has only run to max_epochs since (misses):
 * its epochs from before the change, at a chance of reaching of one in (misses + 2) (Laplace's
 * rule: a uniform prior against its misses since), and (1 - p) / p runs to max_epochs wasted on
 * the way. NAN for any other size, or one struck out in the recurrence. A size that reaches by
 * chance since the change is otherwise the only one weighed per model, and holds the job
 * however dear, while one that missed in its first runs after the change is never tried again
 * (docs/policy.md, "Held-out synthetic workloads"). */
static double missed_since_per_model(const struct bso_job *job, size_t i)
{
    const struct bso_bs_stat *s = &job->stats[i];
    if (s->successes > 0 || !(s->pre_change_epochs > 0) || !(s->misses > 0) ||
        !bso_policy_usable(job, i) || bso_policy_struck(job, i))
        return NAN;
    const double per = bso_policy_epoch_cost(job, i);
    return per_model(job, s->pre_change_epochs * per, 1 / (s->misses + 2), per);
}

/* How likely a run at size i is to reach within max_epochs when the curve there extrapolates:
 * i lies above every size that reached, the largest below it (`near`) needed e0 epochs on
 * average, and nothing says how fast epochs grow past it but the two scaling laws (a larger
 * batch needs at least as many epochs; it never needs more optimizer steps), which hold the
 * slope of log epochs against log batch size between 0 and 1. Averaged over that range, each
 * slope's estimate spread as runs spread (`sd`, of log epochs): with G(x) = x Phi(x) + phi(x),
 * the integral of Phi((c - s r) / sd) over s in [0, 1] is sd / r (G(c / sd) - G((c - r) / sd)),
 * c = ln(max_epochs / e0), r = ln(b_i / b_near). */
static double integral_of_phi(double x) /* G(x) = x Phi(x) + phi(x): an antiderivative of Phi */
{
    return x * 0.5 * erfc(-x / M_SQRT2) + exp(-x * x / 2) / sqrt(2 * M_PI);
}

static double within_by_the_laws(const struct bso_job *job, size_t i, size_t near, double sd)
{
    const double c = log((double)job->spec.max_epochs / bso_bs_mean_epochs(&job->stats[near]));
    const double r = log((double)job->spec.batch_sizes[i] / (double)job->spec.batch_sizes[near]);
    const double spread = integral_of_phi(c / sd) - integral_of_phi((c - r) / sd);
    return fmin(1, fmax(0, sd / r * spread));
}

bool bso_policy_above_every_reached(const struct bso_job *job, size_t i)
{
    for (size_t k = i + 1; k < job->spec.n_batch_sizes; k++)
        if (job->stats[k].total_successes > 0)
            return false;
    return true;
}

double bso_policy_unlucky_chance(const struct bso_job *job, size_t i)
{
    const struct bso_bs_stat *s = &job->stats[i];
    if (s->total_successes > 0 || !(s->misses > 0) || !bso_policy_usable(job, i) ||
        bso_policy_struck(job, i) || !near_a_reached_size(job, i) ||
        bso_policy_change_trial(job) > 0)
        return NAN;
    int near_below = -1; /* the largest size below i that reached */
    for (size_t k = 0; k < i; k++)
        if (job->stats[k].successes > 0)
            near_below = (int)k;
    const double cv2 = bso_policy_pooled_cv2(job);
    double within;
    if (!bso_policy_above_every_reached(job, i))
        within =
            0.5 * erfc(-log((double)job->spec.max_epochs / bso_policy_epochs_estimate(job, i)) /
                       sqrt(2 * cv2));
    else if (near_below >= 0)
        within = within_by_the_laws(job, i, (size_t)near_below, sqrt(cv2));
    else
        return NAN;
    const double chance = within / (1 + s->misses);
    return chance > 0 ? chance : NAN;
}

double bso_policy_unlucky_epochs(const struct bso_job *job, size_t i)
{
    return fmin(bso_policy_epochs_estimate(job, i), (double)job->spec.max_epochs);
}

/* What a model is expected to cost at size i if its misses were bad luck
 * (bso_policy_unlucky_chance): its central estimate, within max_epochs, at that chance of
 * reaching; NAN for any other size. A size that reached once by luck would otherwise be the
 * only one weighed per model and hold the job, one run in five reaching, while one that reaches
 * three in five but missed its first run is never tried again (docs/policy.md, "Held-out
 * synthetic workloads"). */
static double unlucky_per_model(const struct bso_job *job, size_t i)
{
    const double chance = bso_policy_unlucky_chance(job, i);
    if (isnan(chance))
        return NAN;
    const double per = bso_policy_epoch_cost(job, i);
    return per_model(job, bso_policy_unlucky_epochs(job, i) * per, chance, per);
}

/* The last resort's guess of the chance that a run at size k, `beyond` octaves beyond reach
 * (octaves_beyond_reach), reaches the target: one half near a size that ever reached, halved
 * for each octave beyond (the curve is an extrapolation there), as a prior worth one run,
 * against the runs at k that ran to max_epochs since the job last changed. */
static double last_resort_chance(const struct bso_job *job, size_t k, double beyond)
{
    return 0.5 * exp2(-beyond) / (1 + job->stats[k].misses);
}

/* A candidate of the rescue's last resort, and the order it goes in: the best chance
 * (last_resort_chance), then the nearest a size that ever reached, then the size whose last
 * failure is the oldest (so that failures cycle through the sizes instead of repeating one),
 * then the lowest optimistic cost. */
struct last_resort {
    double chance, beyond, fail_mark, cost;
};

static bool goes_first(const struct last_resort *a, const struct last_resort *b)
{
    if (a->chance != b->chance)
        return a->chance > b->chance;
    if (a->beyond != b->beyond)
        return a->beyond < b->beyond;
    if (a->fail_mark != b->fail_mark)
        return a->fail_mark < b->fail_mark;
    return a->cost < b->cost;
}

/* The recurrence still needs a model and every size that reached the target failed in it (or
 * the job changed and none has reached since): the size most likely to be cheap that is not
 * struck out in it, one that reached judged by its expected cost, an open one by its expected
 * epochs (expected_open_epochs) times its cost per epoch. An open size whose expected epochs
 * pass max_epochs by more than the noise margin of an estimate resting on one run cannot be
 * expected to reach: a rescue there would run to max_epochs for nothing. Else the least bad
 * of those that reached and failed: the cheapest per model (bso_policy_cost_per_model), so that a
 * size that reaches one run in five is not tried again and again while one that reaches three in
 * five, a little dearer per run, is left waiting; with them, those that reached before the
 * last change and have only missed since (missed_since_per_model), and those below them whose
 * misses may have been bad luck (unlucky_per_model). -1 when nothing can run. */
int bso_policy_rescue(const struct bso_job *job)
{
    const double reach = rescue_reach(job);
    struct bso_spread spread;
    bso_policy_spread(job, &spread);
    int best = -1;
    double best_cost = INFINITY;
    for (size_t k = 0; k < job->spec.n_batch_sizes; k++) {
        double cost;
        if (!may_rescue(job, k, reach, &cost))
            continue;
        cost += bso_policy_spread_risk(job, &spread, k);
        if (best < 0 || cost < best_cost) {
            best = (int)k;
            best_cost = cost;
        }
    }
    if (best >= 0)
        return best;
    for (size_t k = 0; k < job->spec.n_batch_sizes; k++) {
        double cost = missed_since_per_model(job, k); /* NAN unless it only missed since */
        if (!isfinite(cost) && job->stats[k].successes > 0 && bso_policy_usable(job, k))
            cost = bso_policy_cost_per_model(job, k);
        if (isfinite(cost) && (best < 0 || cost < best_cost)) {
            best = (int)k;
            best_cost = cost;
        }
    }
    /* Beside them (never alone: the last resort's rotation then goes first), a size whose
     * misses may have been bad luck (unlucky_per_model). */
    for (size_t k = 0; best >= 0 && k < job->spec.n_batch_sizes; k++) {
        const double cost = unlucky_per_model(job, k);
        if (isfinite(cost) && cost < best_cost) {
            best = (int)k;
            best_cost = cost;
        }
    }
    if (best >= 0)
        return best;
    /* Nothing that ever reached can still run either: a job that trained before is never
     * given up, since what failed may have failed for the change alone. The last resort goes
     * by each size's chance of reaching (last_resort_chance): near the sizes that reached
     * first, as farther out the curve is an extrapolation (the lowest optimistic cost there is
     * that of sizes that need many times max_epochs); but as the sizes near keep failing, it
     * looks farther out, since a change that made them miss may have left others reaching
     * (an order by the oldest failure alone cycled through the near sizes for good). */
    struct last_resort pick = {0};
    for (size_t k = 0; k < job->spec.n_batch_sizes; k++) {
        if (!bso_policy_usable(job, k))
            continue;
        const double beyond = octaves_beyond_reach(job, k);
        const struct last_resort c = {.chance = last_resort_chance(job, k, beyond),
                                      .beyond = beyond,
                                      .fail_mark = job->stats[k].fail_mark,
                                      .cost = optimistic_cost(job, k)};
        if (best < 0 || goes_first(&c, &pick)) {
            best = (int)k;
            pick = c;
        }
    }
    return best;
}

int64_t bso_policy_out_of_reach(const struct bso_job *job, int64_t *since)
{
    *since = 0;
    if (job->spec.policy != BSO_POLICY_BSO)
        return 0;
    const double success = bso_policy_last_success(job);
    const double failure = bso_policy_last_failure(job);
    *since = (int64_t)success;
    if (!(failure > success))
        return 0;
    const double reach = rescue_reach(job);
    for (size_t k = 0; k < job->spec.n_batch_sizes; k++) {
        double cost;
        if (may_rescue(job, k, reach, &cost))
            return 0;
    }
    return job->last_trial_number - *since;
}
