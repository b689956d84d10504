/* The posterior of the epochs each batch size of a job needs, as Thompson sampling and change
 * detection read it: the run-to-run spread pooled over sizes, and each size's mean shrunk
 * toward a smooth curve of epochs against batch size (docs/policy.md, "The bso policy",
 * item 5). */
#include "core/bso_policy.h"

#include <math.h>

#include "core/bso_policy_internal.h"
#include "core/job.h"

/* What the pooled spread's prior (BSO_PRIOR_CV) is worth, in runs. */
#define PRIOR_RUNS 2.0
/* After the job changed, each size is shrunk toward a line fitted near it: the other sizes
 * weigh less with their distance, as a Gaussian of this many octaves (a size 4x away counts
 * 61%, 16x away 14%). A change that hit the sizes on one side of some batch size bends a line
 * through every size where it did not happen, and holds a size re-measured since (the new
 * optimum, known from one run) to the sizes the change moved. Before any change, the line
 * through every size: its slope rests on more of them. */
#define LOCAL_OCTAVES 2.0

/* How far sizes scatter about the curve beyond their own noise: assumed until three sizes can
 * tell, and never less. */
#define PRIOR_SCATTER 0.2
#define MIN_SCATTER 0.02

/* After a change, how far the curve near a size may pull its mean: at most this many standard
 * errors of the size's own mean (Efron and Morris's limited translation, with their usual one).
 * The pull is a normal prior, which takes every size to lie about as far off the line as the
 * rest; after a change the line mixes sizes re-measured since with sizes known from before,
 * and a change may move some sizes and not their neighbours, so a re-measured size was held to
 * a line its own runs contradict (movielens-1m after x1.3 at its optimum alone: 8192, one run
 * since in 5 epochs, read as 5.85 from a line bent by 16384's 8). Without a change the line
 * through every size is trusted as it is: a lone unlucky run is more often noise than news
 * ("Limited translation after a change" in docs/policy.md). */
#define MAX_PULL_SE 1.0

void bso_policy_size_spread(const struct bso_bs_stat *s, bool without_streak, double *ss,
                            double *dof)
{
    double n = (double)s->successes, sum = s->sum_epochs, sum_sq = s->sum_sq_epochs;
    if (without_streak && s->streak_runs > 0 && s->streak_runs < n - 1 && s->n_window == 0) {
        n -= s->streak_runs;
        sum -= s->streak_sum_epochs;
        sum_sq -= s->streak_sum_sq_epochs;
    }
    *ss = *dof = 0;
    if (n < 2)
        return;
    const double m = sum / n;
    const double d = sum_sq - n * m * m;
    *ss = d > 0 ? d / (m * m) : 0;
    *dof = n - 1;
}

/* The relative spread of a size's epochs-to-target from run to run, as a variance of log
 * epochs, pooled over sizes (each run beyond a size's first is one degree of freedom), with a
 * prior worth PRIOR_RUNS runs: BSO_PRIOR_CV, or where `past` the spread of the runs forgotten
 * at the job's changes, if any were (past_spread_ss); without the runs of the streaks that
 * `drifting` marks (NULL: none: bso_policy_size_spread). */
static double pooled_cv2(const struct bso_job *job, const bool *drifting, bool past)
{
    double prior = BSO_PRIOR_CV * BSO_PRIOR_CV, past_ss = 0, past_dof = 0;
    for (size_t i = 0; past && i < job->spec.n_batch_sizes; i++) {
        past_ss += job->stats[i].past_spread_ss;
        past_dof += job->stats[i].past_spread_dof;
    }
    if (past_dof > 0)
        prior = past_ss / past_dof;
    double sq = PRIOR_RUNS * prior, dof = PRIOR_RUNS;
    for (size_t i = 0; i < job->spec.n_batch_sizes; i++) {
        double ss, n1;
        bso_policy_size_spread(&job->stats[i], drifting && drifting[i], &ss, &n1);
        sq += ss;
        dof += n1;
    }
    return sq / dof;
}

double bso_policy_pooled_cv2(const struct bso_job *job)
{
    return pooled_cv2(job, NULL, false);
}

void bso_fit_add(struct bso_line_fit *f, double x, double y, double w)
{
    f->w += w;
    f->x += w * x;
    f->y += w * y;
    f->xx += w * x * x;
    f->xy += w * x * y;
    f->points++;
}

double bso_interpolate(double x0, double y0, double x1, double y1, double x)
{
    return y0 + (y1 - y0) * (x - x0) / (x1 - x0);
}

/* The slope, or `otherwise` with fewer than two distinct x. */
double bso_fit_slope(const struct bso_line_fit *f, double otherwise)
{
    const double den = f->w * f->xx - f->x * f->x;
    return f->points >= 2 && den > 0 ? (f->w * f->xy - f->x * f->y) / den : otherwise;
}

/* A size's point on the shared curve of epochs against batch size: its log mean epochs,
 * weighted by its runs that reached; a size that has not reached here but needed some epochs in
 * the job this one was transferred from, that, as one run. Returns the weight (0: none). */
static double curve_point(const struct bso_job *job, size_t i, double *log_epochs)
{
    const struct bso_bs_stat *s = &job->stats[i];
    if (s->successes > 0) {
        *log_epochs = log(bso_bs_mean_epochs(s));
        return (double)s->successes;
    }
    if (bso_policy_transferred_prior(job, i) > 0) {
        *log_epochs = log(bso_policy_transferred_prior(job, i));
        return 1;
    }
    return 0;
}

/* The curve's log epochs at size i: a line through every size's point (log_e, weight; weight
 * 0: none), each weighed down by its distance from i as a Gaussian of LOCAL_OCTAVES. */
static double local_curve(const struct bso_job *job, const double *log_e, const double *weight,
                          size_t i)
{
    const double x = log2((double)job->spec.batch_sizes[i]);
    struct bso_line_fit fit = {0};
    for (size_t k = 0; k < job->spec.n_batch_sizes; k++) {
        if (!(weight[k] > 0))
            continue;
        const double xk = log2((double)job->spec.batch_sizes[k]);
        const double d = (xk - x) / LOCAL_OCTAVES;
        bso_fit_add(&fit, xk, log_e[k], weight[k] * exp(-d * d / 2));
    }
    const double slope = bso_fit_slope(&fit, 0);
    return (fit.y - slope * fit.x) / fit.w + slope * x;
}

/* The curve's log epochs at size i after a change (local_curve), where `at` says what the
 * change did at each size (bso_policy_change_at): near a size it spared, without the sizes it
 * moved. A change hits a range of sizes, and a curve across its edge bends a spared size toward
 * the moved ones' new epochs (movielens-1m on the A40 after x1.3 at 16384: 8192, 4.6 epochs over
 * five runs since, was held up by the curve through 16384's new 6-8, 16384 looked the cheaper,
 * and the job went back to it for ten recurrences). The same near a stale size, known only from
 * before the change, which no run has shown moved or spared: what the moved sizes need now says
 * nothing of whether the change reached it (the common shift moves it where every size that
 * ran since agrees), and bent toward them it was never run again to find out (movielens-1m on
 * the A40 after x1.3 at 16384 alone: 8192, 5 epochs in its one run before, read as 5.7 beside
 * 16384's new 6.4, and the job stayed on 16384, 11% dearer, for the rest of its life). */
static double curve_after_a_change(const struct bso_job *job, const double *log_e,
                                   const double *weight, const enum bso_change_at *at, size_t i)
{
    const bool unmoved =
        at[i] == BSO_CHANGE_SPARED || (at[i] == BSO_CHANGE_UNKNOWN && bso_policy_stale(job, i));
    if (!unmoved)
        return local_curve(job, log_e, weight, i);
    double same_side[BSO_MAX_BATCH_SIZES];
    for (size_t k = 0; k < job->spec.n_batch_sizes; k++)
        same_side[k] = at[k] == BSO_CHANGE_MOVED ? 0 : weight[k];
    return local_curve(job, log_e, same_side, i);
}

/* How many sizes that reached since the change must agree on how far it moved their epochs
 * before the sizes known only from before are moved alike: two may agree by chance where the
 * change hit some sizes and not others (both on the side it hit). */
#define COMMON_SHIFT_SIZES 3

bool bso_policy_change_shift(const struct bso_job *job, size_t i, double *shift)
{
    const struct bso_bs_stat *s = &job->stats[i];
    if (!(s->pre_change_epochs > 0) || s->successes == 0 || !bso_policy_fresh(job, i))
        return false;
    *shift = log(bso_bs_mean_epochs(s) / s->pre_change_epochs);
    return true;
}

/* Whether a size had reached before the job last changed (bso_policy_nearest_sizes). */
static bool reached_before_change(const struct bso_bs_stat *s)
{
    return s->pre_change_epochs > 0;
}

/* How far the job's last change moved size i's log epochs, where it had not reached before
 * the change: against what the nearest sizes either side of it that had needed then,
 * interpolated in log size; where such sizes lie on one side only and `extrapolate`, against
 * the line through the two nearest there, extrapolated. A size that reached before the change
 * is compared with itself (bso_policy_change_shift). */
static bool shift_against_before(const struct bso_job *job, size_t i, bool extrapolate,
                                 double *shift)
{
    const struct bso_bs_stat *s = &job->stats[i];
    if (s->pre_change_epochs > 0 || s->successes == 0 || !bso_policy_fresh(job, i))
        return bso_policy_change_shift(job, i, shift);
    int lo, hi;
    bso_policy_nearest_sizes(job, i, reached_before_change, &lo, &hi);
    const int64_t *b = job->spec.batch_sizes;
    double before;
    if (lo >= 0 && hi >= 0) {
        before = bso_interpolate(log2((double)b[lo]), log(job->stats[lo].pre_change_epochs),
                                 log2((double)b[hi]), log(job->stats[hi].pre_change_epochs),
                                 log2((double)b[i]));
    } else {
        const int near = lo >= 0 ? lo : hi;
        if (!extrapolate || near < 0)
            return false;
        int lo2, hi2;
        bso_policy_nearest_sizes(job, (size_t)near, reached_before_change, &lo2, &hi2);
        const int next = lo >= 0 ? lo2 : hi2;
        if (next < 0)
            return false;
        /* The line's slope held to what the two laws allow (epochs never fewer at a larger
         * batch, never more than in proportion to it): two sizes near each other, known from a
         * few runs in whole epochs, can slope steeply either way, and extrapolated far (squad
         * on the V100: 16 at 4.5 and 24 at 4 put 56 at 3.1 epochs, so its run in 5 after a
         * change of its cost per epoch alone read as moved). */
        const double x0 = log2((double)b[near]), y0 = log(job->stats[near].pre_change_epochs);
        const double slope =
            (log(job->stats[next].pre_change_epochs) - y0) / (log2((double)b[next]) - x0);
        before = y0 + fmin(fmax(slope, 0), log(2.0)) * (log2((double)b[i]) - x0);
    }
    *shift = log(bso_bs_mean_epochs(s)) - before;
    return true;
}

/* Only between sizes known from before, not beyond them: the epochs a size needs are a smooth
 * function of its size, which interpolation between two neighbours follows closely and a line
 * extrapolated past the last one does not (measured: extrapolating lost a little on held-out
 * workloads, docs/policy.md "A size first reached after the change is held to its neighbours
 * from before"). */
bool bso_policy_change_shift_between(const struct bso_job *job, size_t i, double *shift)
{
    return shift_against_before(job, i, false, shift);
}

bool bso_policy_change_shift_near(const struct bso_job *job, size_t i, double *shift)
{
    return shift_against_before(job, i, true, shift);
}

/* How far the job's last change moved every size's log epochs, as far as the sizes that reached
 * both before it and since can tell: their mean shift (weighted by runs since), if at least
 * COMMON_SHIFT_SIZES of them each lie within two spreads of it (their mean's and one run's:
 * cv2); else 0, the change having hit some sizes and not others, or too few having run. */
static double common_shift(const struct bso_job *job, double cv2)
{
    double shift[BSO_MAX_BATCH_SIZES], runs[BSO_MAX_BATCH_SIZES], sum = 0, weight = 0;
    int k = 0;
    for (size_t i = 0; i < job->spec.n_batch_sizes; i++) {
        if (!bso_policy_change_shift(job, i, &shift[k]))
            continue;
        runs[k] = (double)job->stats[i].successes;
        sum += runs[k] * shift[k];
        weight += runs[k];
        k++;
    }
    if (k < COMMON_SHIFT_SIZES)
        return 0;
    const double mean = sum / weight;
    for (int j = 0; j < k; j++)
        if (fabs(shift[j] - mean) > bso_policy_two_spreads(cv2, runs[j]))
            return 0;
    return mean;
}

/* bso_policy_posterior, with the pooled spread's prior from the runs forgotten at the job's
 * changes where `past` (pooled_cv2). */
static void posterior(const struct bso_job *job, const bool *drifting, bool past, double *mean_log,
                      double *sd_log, double *cv2_out)
{
    const size_t n = job->spec.n_batch_sizes;
    const double cv2 = pooled_cv2(job, drifting, past);
    /* Sizes known only from before the job changed are moved as far as every size that reached
     * since says it moved them (common_shift; a guess, which their next run tests). */
    const double shift = common_shift(job, cv2);
    /* Sizes share a smooth curve of epochs against batch size: a line in log-log, weighted
     * by runs, over the sizes that reached the target (curve_point). */
    struct bso_line_fit fit = {0};
    double log_e[BSO_MAX_BATCH_SIZES], weight[BSO_MAX_BATCH_SIZES];
    for (size_t i = 0; i < n; i++) {
        weight[i] = curve_point(job, i, &log_e[i]);
        if (weight[i] > 0 && bso_policy_stale(job, i))
            log_e[i] += shift;
        if (weight[i] > 0)
            bso_fit_add(&fit, log2((double)job->spec.batch_sizes[i]), log_e[i], weight[i]);
    }
    const bool changed = bso_policy_change_trial(job) > 0;
    const int k = fit.points;
    const double slope = bso_fit_slope(&fit, 0);
    const double icpt = fit.w > 0 ? (fit.y - slope * fit.x) / fit.w : 0;
    /* How far sizes scatter about the line beyond their own noise: PRIOR_SCATTER until a
     * third size can tell, never below MIN_SCATTER. */
    double scatter = PRIOR_SCATTER * PRIOR_SCATTER;
    if (k >= 3) {
        double r2 = 0;
        for (size_t i = 0; i < n; i++) {
            if (!(weight[i] > 0))
                continue;
            const double r = log_e[i] - icpt - slope * log2((double)job->spec.batch_sizes[i]);
            r2 += r * r - cv2 / weight[i];
        }
        r2 /= (double)(k - 2);
        scatter = r2 > MIN_SCATTER * MIN_SCATTER ? r2 : MIN_SCATTER * MIN_SCATTER;
    }
    /* Each size's mean is shrunk toward the line (after a change, the line near it on its side
     * of the change: LOCAL_OCTAVES, curve_after_a_change) by the two precisions. */
    enum bso_change_at at[BSO_MAX_BATCH_SIZES] = {BSO_CHANGE_UNKNOWN};
    double at_cv2 = -1;
    for (size_t i = 0; changed && i < n; i++)
        at[i] = bso_policy_change_at(job, i, &at_cv2);
    for (size_t i = 0; i < n; i++) {
        const struct bso_bs_stat *s = &job->stats[i];
        if (s->successes == 0) {
            mean_log[i] = sd_log[i] = NAN;
            continue;
        }
        const double own = (double)s->successes / cv2, line = 1 / scatter;
        const double on_line = changed ? curve_after_a_change(job, log_e, weight, at, i)
                                       : icpt + slope * log2((double)job->spec.batch_sizes[i]);
        const double own_log = log(bso_bs_mean_epochs(s)) + (bso_policy_stale(job, i) ? shift : 0);
        const double pulled = (own * own_log + line * on_line) / (own + line);
        const double limit = changed ? MAX_PULL_SE / sqrt(own) : INFINITY;
        mean_log[i] = fmin(fmax(pulled, own_log - limit), own_log + limit);
        sd_log[i] = 1 / sqrt(own + line);
    }
    *cv2_out = cv2;
}

void bso_policy_posterior(const struct bso_job *job, const bool *drifting, double *mean_log,
                          double *sd_log, double *cv2)
{
    posterior(job, drifting, false, mean_log, sd_log, cv2);
}

void bso_policy_epochs_posterior(const struct bso_job *job, double *mean_log, double *sd_log)
{
    double cv2;
    posterior(job, NULL, false, mean_log, sd_log, &cv2);
}

void bso_policy_sampling_posterior(const struct bso_job *job, double *mean_log, double *sd_log)
{
    double cv2;
    posterior(job, NULL, true, mean_log, sd_log, &cv2);
}
