/* BSO's own policy; see bso_policy.h and docs/policy.md. */
#include "core/bso_policy.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bso/error.h"
#include "core/job.h"
#include "core/rng.h"

/* A run exploring a batch size is stopped when even its optimistic total cost passes this
 * multiple of the best size's expected cost. 1.0 would kill near-ties; much more wastes. */
#define OVERDUE 0.25
/* The spread of epochs-to-target, relative to the mean, assumed before any size has two runs. */
#define PRIOR_CV 0.15
#define PRIOR_RUNS 2.0
#define PRIOR_SCATTER 0.2
#define MIN_SCATTER 0.02
/* How cost per epoch is assumed to scale with batch size before two sizes are measured:
 * (b_measured / b)^this, halfway between flat and perfect scaling. */
#define PER_EPOCH_PRIOR_SLOPE 0.5
/* How far the cost per epoch of one batch size relative to another may move when a job moves
 * to another GPU (a log-normal spread): the relative costs of the same sizes differ between
 * GPU generations by tens of percent (memory bandwidth, tensor-core tiling). */
#define TRANSFER_CV 0.3
/* Fewest recurrences assumed still to come when weighing a probe against its saving. */
#define MIN_HORIZON 10.0
/* How many one-epoch probes a passed-over size gets in all, so the search always ends. */
#define MAX_PROBES 3
/* Change detection (docs/policy.md, "When the job changes"): a CUSUM over each size's
 * standardised surprises in log epochs. Surprises under DRIFT_SLACK standard deviations cancel
 * out; a sum past DRIFT_ALARM says the job changed (about one false alarm in several hundred
 * runs of a stationary size, and a 1.5x change is found within two or three runs). */
#define DRIFT_SLACK 0.5
#define DRIFT_ALARM 6.0
/* Failing to reach is rarer and costlier evidence: a likelihood ratio of 20 (one failure of a
 * size that reached some twenty times without failing) says the job changed. */
#define FAIL_ALARM 3.0
/* A run whose cost per epoch is this factor off its size's (either way) shows a new level: the
 * data set grew, the cluster changed. Measurement noise of time and energy is far smaller. */
#define PER_EPOCH_SHIFT 1.25

static double per_epoch(const struct bso_bs_stat *s)
{
    return s->epochs_sum > 0 ? s->cost_sum / s->epochs_sum : NAN;
}

/* How much dearer a size's first epoch is than its steady epochs, learnt from first runs that
 * went past their first epoch (1 until there is one). */
static double warm_up(const struct bso_job *job)
{
    double first = 0, steady = 0;
    for (size_t a = 0; a < job->spec.n_batch_sizes; a++) {
        first += job->stats[a].warm_first_sum;
        steady += job->stats[a].warm_steady_sum;
    }
    return first > 0 && steady > 0 && first > steady ? first / steady : 1;
}

/* Cost per epoch of a size, with warm-up taken out of sizes measured on first epochs only. */
static double steady_epoch(const struct bso_job *job, size_t i)
{
    const struct bso_bs_stat *s = &job->stats[i];
    const bool one_epoch_runs = s->epochs_sum > 0 && s->epochs_sum == (double)s->runs;
    return one_epoch_runs ? per_epoch(s) / warm_up(job) : per_epoch(s);
}

static double mean_epochs(const struct bso_bs_stat *s)
{
    return s->sum_epochs / (double)s->successes;
}

/* A size's epochs to the target: one more run's worth, within a window of the last w runs
 * (w 0: all of them), and none at all. A window up to BSO_EPOCHS_WINDOW_MAX keeps its runs'
 * epochs and drops the oldest exactly; a longer one (or a size whose runs were counted before
 * windows were kept) fades the older runs instead, their mean kept, to about w runs. */
static void add_epochs(struct bso_bs_stat *s, double e, int64_t w)
{
    const bool exact = w > 0 && w <= BSO_EPOCHS_WINDOW_MAX && s->n_window == s->successes;
    if (w > 0 && !exact && s->successes >= w) {
        const double keep = (double)(w - 1) / (double)s->successes;
        s->sum_epochs *= keep;
        s->sum_sq_epochs *= keep;
        s->successes = w - 1;
    }
    if (s->successes == 0 || e < s->min_epochs)
        s->min_epochs = e;
    s->successes++;
    s->sum_epochs += e;
    s->sum_sq_epochs += e * e;
    if (!exact)
        return;
    s->window[s->n_window++] = (float)e;
    if (s->n_window <= w)
        return;
    memmove(s->window, s->window + 1, (size_t)w * sizeof *s->window);
    s->n_window = s->successes = w;
    s->sum_epochs = s->sum_sq_epochs = 0;
    s->min_epochs = s->window[0];
    for (int64_t k = 0; k < w; k++) {
        const double x = s->window[k];
        s->sum_epochs += x;
        s->sum_sq_epochs += x * x;
        s->min_epochs = fmin(s->min_epochs, x);
    }
}

static void clear_epochs(struct bso_bs_stat *s)
{
    s->successes = s->n_window = 0;
    s->sum_epochs = s->sum_sq_epochs = s->min_epochs = 0;
}

static double expected_cost(const struct bso_bs_stat *s)
{
    return mean_epochs(s) * per_epoch(s);
}

const char *bso_bs_status_name(int status)
{
    static const char *const names[] = {"untried", "good",   "killed",
                                        "failed",  "passed", "infeasible"};
    return status >= 0 && status <= BSO_BS_INFEASIBLE ? names[status] : "unknown";
}

double bso_bs_cost_per_epoch(const struct bso_bs_stat *s)
{
    return per_epoch(s);
}

double bso_bs_expected_cost(const struct bso_bs_stat *s)
{
    return s->successes > 0 ? expected_cost(s) : NAN;
}

/* Whether size i may run at all: it fits the device and does not keep crashing. */
static bool usable(const struct bso_job *job, size_t i)
{
    return job->stats[i].status != BSO_BS_INFEASIBLE && !bso_spec_unfit(&job->spec, i);
}

/* The job's last trial number when any size last reached the target. */
static double last_success(const struct bso_job *job)
{
    double last = 0;
    for (size_t k = 0; k < job->spec.n_batch_sizes; k++)
        if (job->stats[k].success_mark > last)
            last = job->stats[k].success_mark;
    return last;
}

/* Whether size i is not handed out again in the recurrence that is still looking for a model:
 * it failed after the job's last success, or it lies between two sizes that did (sizes
 * between two that failed likely fail too). */
static bool struck(const struct bso_job *job, size_t i)
{
    const double since = last_success(job);
    if (job->stats[i].fail_mark > since)
        return true;
    bool below = false, above = false;
    for (size_t k = 0; k < job->spec.n_batch_sizes; k++)
        if (job->stats[k].fail_mark > since) {
            below |= k < i;
            above |= k > i;
        }
    return below && above;
}

/* Whether size i reached the target since the policy last found that the job changed (always,
 * for a job that never changed). */
static bool fresh(const struct bso_job *job, size_t i)
{
    const struct bso_bs_stat *s = &job->stats[i];
    return s->success_mark >= s->change_mark;
}

/* Whether size i reached the target only before the policy last found that the job changed:
 * what it knows is a stand-in until its next run. */
static bool stale(const struct bso_job *job, size_t i)
{
    return job->stats[i].successes > 0 && !fresh(job, i);
}

/* The index of the size with the lowest expected cost among those that reached the target
 * (since the job last changed, when fresh_only) and did not just fail, or -1. */
static int best_good_of(const struct bso_job *job, bool fresh_only)
{
    int best = -1;
    for (size_t i = 0; i < job->spec.n_batch_sizes; i++)
        if (job->stats[i].successes > 0 && usable(job, i) && !struck(job, i) &&
            (!fresh_only || fresh(job, i)) &&
            (best < 0 || expected_cost(&job->stats[i]) < expected_cost(&job->stats[best])))
            best = (int)i;
    return best;
}

static int best_good(const struct bso_job *job)
{
    return best_good_of(job, false);
}

/* Whether a size larger than i reached the target in fewer epochs than the fewest seen at or
 * below i: the data contradict "a larger batch needs at least as many epochs" there (the job
 * changed at some sizes, or runs are noisy), so estimates that rest on it are not trusted. */
static bool contradicted(const struct bso_job *job, size_t i)
{
    if (!(job->stats[i].change_mark > 0))
        return false; /* never changed: noise alone, which the bounds already allow for */
    double at_or_below = INFINITY, above = INFINITY;
    for (size_t a = 0; a < job->spec.n_batch_sizes; a++) {
        const struct bso_bs_stat *s = &job->stats[a];
        if (s->successes == 0)
            continue;
        double *fewest = a <= i ? &at_or_below : &above;
        if (s->min_epochs < *fewest)
            *fewest = s->min_epochs;
    }
    return above < at_or_below;
}

/* The epochs size i needed in the job this one was transferred from, while it has not reached
 * here (then it joined its runs); 0 otherwise. */
static double transferred_prior(const struct bso_job *job, size_t i)
{
    return job->stats[i].successes == 0 ? job->stats[i].prior_epochs : 0;
}

/* Whether the job still holds epochs transferred from another job (bso transfer) at a size
 * that has not reached here yet. */
static bool transferred(const struct bso_job *job)
{
    for (size_t k = 0; k < job->spec.n_batch_sizes; k++)
        if (job->stats[k].prior_epochs > 0)
            return true;
    return false;
}

/* Whether an exploring run at size i is judged by the optimistic epochs bound rather than
 * the central estimate: after the job changed, its first run since (the estimates rest on
 * evidence from before, which the change may have falsified at some sizes but not others),
 * and wherever the data contradict the bound's assumption. */
static bool rechecked(const struct bso_job *job, size_t i)
{
    return (job->stats[i].change_mark > 0 && job->stats[i].runs == 0) || contradicted(job, i);
}

/* A lower bound on the epochs size i needs: a larger batch needs at least as many epochs as a
 * smaller one, and a smaller batch at least proportionally fewer than a larger one. With few
 * noisy runs per size, the first bound takes the fewest epochs seen at any smaller size (the
 * largest would let one unlucky run block every larger size). A run stopped after e epochs
 * without reaching shows its own size needs more than e. */
static double epochs_bound(const struct bso_job *job, size_t i)
{
    double from_smaller = INFINITY, from_larger = 1;
    const double b = (double)job->spec.batch_sizes[i];
    for (size_t a = 0; a < job->spec.n_batch_sizes; a++) {
        const struct bso_bs_stat *s = &job->stats[a];
        if (s->successes == 0)
            continue;
        const double ba = (double)job->spec.batch_sizes[a];
        if (ba <= b && s->min_epochs < from_smaller)
            from_smaller = s->min_epochs;
        if (ba > b && s->min_epochs * b / ba > from_larger)
            from_larger = s->min_epochs * b / ba;
    }
    /* The bound from smaller sizes rests on sizes behaving alike; after the job changed, or
     * where the data contradict it, only the proportional bound from larger sizes holds until
     * the size has run again. */
    if (rechecked(job, i))
        from_smaller = INFINITY;
    double lb = isinf(from_smaller) || from_larger > from_smaller ? from_larger : from_smaller;
    /* A transferred prior is a better guess than any bound, but a size known only from other
     * hardware is uncertain twice: its epochs by the run-to-run spread (PRIOR_CV), its cost
     * per epoch here by how far sizes' relative costs move between GPUs (TRANSFER_CV). The
     * bound is optimistic by one of their joint spread. */
    const double prior = transferred_prior(job, i);
    if (prior > 0)
        lb = prior * exp(-sqrt(PRIOR_CV * PRIOR_CV + TRANSFER_CV * TRANSFER_CV));
    if (job->stats[i].censored_epochs + 1 > lb && job->stats[i].censored_epochs > 0)
        lb = job->stats[i].censored_epochs + 1;
    return lb;
}

/* A weighted least-squares line y = icpt + slope * x, accumulated point by point. */
struct line_fit {
    double w, x, y, xx, xy;
    int points;
};

static void fit_add(struct line_fit *f, double x, double y, double w)
{
    f->w += w;
    f->x += w * x;
    f->y += w * y;
    f->xx += w * x * x;
    f->xy += w * x * y;
    f->points++;
}

/* The slope, or `otherwise` with fewer than two distinct x. */
static double fit_slope(const struct line_fit *f, double otherwise)
{
    const double den = f->w * f->xx - f->x * f->x;
    return f->points >= 2 && den > 0 ? (f->w * f->xy - f->x * f->y) / den : otherwise;
}

/* A central estimate of the epochs size i needs: E(a) * (b / a)^s from the nearest size a (in
 * log2) that reached the target, where s is the scaling exponent fitted (least squares on
 * log epochs against log batch size) over the sizes that reached it, clamped to [0, 1] between
 * "the same epochs" and "the same steps"; 0.5 until two sizes have. Used for the go/no-go after
 * an exploring run's first epoch; stopping later uses the optimistic epochs_bound. */
static double epochs_estimate(const struct bso_job *job, size_t i)
{
    if (transferred_prior(job, i) > 0)
        return transferred_prior(job, i); /* what the same workload needed elsewhere */
    int near = -1;
    struct line_fit fit = {0};
    const double x = log2((double)job->spec.batch_sizes[i]);
    for (size_t a = 0; a < job->spec.n_batch_sizes; a++) {
        const struct bso_bs_stat *sa = &job->stats[a];
        /* Sizes that reached the target count with their mean epochs; sizes whose runs were
         * stopped count with what those runs proved (more than they ran), so a failed probe
         * bends the fit; sizes known only from the job this one was transferred from, with
         * what they needed there (the same workload). */
        const double proved = sa->censored_epochs > 0 ? sa->censored_epochs + 1 : 0;
        const double prior = transferred_prior(job, a);
        if (sa->successes == 0 && !(proved > 0) && !(prior > 0))
            continue;
        const double xa = log2((double)job->spec.batch_sizes[a]);
        const double ya = log2(sa->successes > 0 ? mean_epochs(sa) : fmax(prior, proved));
        fit_add(&fit, xa, ya, 1);
        if (sa->successes > 0 &&
            (near < 0 || fabs(xa - x) < fabs(log2((double)job->spec.batch_sizes[near]) - x)))
            near = (int)a;
    }
    double slope = fit_slope(&fit, 0.5);
    slope = slope < 0 ? 0 : slope > 1 ? 1 : slope;
    const double ratio = (double)job->spec.batch_sizes[i] / (double)job->spec.batch_sizes[near];
    return mean_epochs(&job->stats[near]) * pow(ratio, slope);
}

/* The epochs to judge an exploring size by, once its cost per epoch is known. Above every
 * size that reached the target the optimistic bound ("at least as many epochs") is close to
 * the truth, and a wrong go is soon caught by the stop rule, so it is used; elsewhere the
 * bound (proportionally fewer epochs) is loose, so the central estimate is. */
static double judged_epochs(const struct bso_job *job, size_t i)
{
    if (transferred_prior(job, i) > 0)
        return transferred_prior(job, i);
    if (rechecked(job, i))
        return epochs_bound(job, i);
    for (size_t a = i + 1; a < job->spec.n_batch_sizes; a++)
        if (job->stats[a].successes > 0)
            return epochs_estimate(job, i);
    return epochs_bound(job, i);
}

/* The epochs a size passed over after one epoch is judged by when the search weighs probing it
 * again: the larger of what its go/no-go and the stop rule after it read, since either passed
 * it over. */
static double passed_epochs(const struct bso_job *job, size_t i)
{
    const double judged = judged_epochs(job, i);
    if (rechecked(job, i))
        return judged;
    const double central = epochs_estimate(job, i);
    return central > judged ? central : judged;
}

/* The profile's cost of one sample at size i (the job's cost of its energy and time), or NAN
 * when the profile does not say. */
static double profile_sample_cost(const struct bso_job *job, size_t i)
{
    const struct bso_bs_stat *s = &job->stats[i];
    const double eta = job->spec.eta_knob;
    if (!(s->profile_samples_per_s > 0) || (eta > 0 && !(s->profile_joules_per_sample > 0)))
        return NAN;
    return eta * s->profile_joules_per_sample +
           (1 - eta) * job->spec.max_power / s->profile_samples_per_s;
}

void bso_policy_set_profile(struct bso_job *job, size_t i, double samples_per_s,
                            double joules_per_sample)
{
    struct bso_bs_stat *s = &job->stats[i];
    s->profile_samples_per_s = samples_per_s > 0 ? samples_per_s : 0; /* NAN too */
    s->profile_joules_per_sample = joules_per_sample > 0 ? joules_per_sample : 0;
}

double bso_policy_epoch_cost(const struct bso_job *job, size_t i)
{
    const struct bso_bs_stat *st = job->stats;
    if (st[i].epochs_sum > 0)
        return steady_epoch(job, i);
    /* A profile knows how the cost per sample changes between sizes: scale the nearest
     * measured size (in log2) that the profile also covers. */
    const double own = profile_sample_cost(job, i);
    if (isfinite(own)) {
        int best = -1;
        double best_d = INFINITY;
        for (size_t k = 0; k < job->spec.n_batch_sizes; k++) {
            const double d =
                fabs(log2((double)job->spec.batch_sizes[k] / (double)job->spec.batch_sizes[i]));
            if (st[k].epochs_sum > 0 && isfinite(profile_sample_cost(job, k)) && d < best_d) {
                best = (int)k;
                best_d = d;
            }
        }
        if (best >= 0)
            return steady_epoch(job, (size_t)best) * own / profile_sample_cost(job, (size_t)best);
    }
    const size_t n = job->spec.n_batch_sizes;
    int lo = -1, hi = -1;
    for (int k = (int)i - 1; k >= 0 && lo < 0; k--)
        if (st[k].epochs_sum > 0)
            lo = k;
    for (size_t k = i + 1; k < n && hi < 0; k++)
        if (st[k].epochs_sum > 0)
            hi = (int)k;
    if (lo < 0 && hi < 0)
        return NAN;
    if (lo < 0 || hi < 0) { /* extrapolate from the two nearest on the measured side */
        int a = lo >= 0 ? lo : hi, b = -1;
        for (int k = a + (lo >= 0 ? -1 : 1); k >= 0 && k < (int)n && b < 0; k += lo >= 0 ? -1 : 1)
            if (st[k].epochs_sum > 0)
                b = k;
        if (b < 0) /* one measured size: per-sample cost falls as batches grow, by a prior */
            return steady_epoch(job, (size_t)a) *
                   pow((double)job->spec.batch_sizes[a] / (double)job->spec.batch_sizes[i],
                       PER_EPOCH_PRIOR_SLOPE);
        lo = a < b ? a : b;
        hi = a < b ? b : a;
    }
    const double x = log2((double)job->spec.batch_sizes[i]);
    const double x0 = log2((double)job->spec.batch_sizes[lo]);
    const double x1 = log2((double)job->spec.batch_sizes[hi]);
    const double y0 = log(per_epoch(&st[lo])), y1 = log(per_epoch(&st[hi]));
    return exp(y0 + (y1 - y0) * (x - x0) / (x1 - x0));
}

/* Sizes the search may still try: never tried, or passed over after one epoch (a few times). */
static bool open_size(const struct bso_job *job, size_t i)
{
    const struct bso_bs_stat *s = &job->stats[i];
    return usable(job, i) && !struck(job, i) &&
           (s->status == BSO_BS_UNTRIED || (s->status == BSO_BS_PASSED && s->runs < MAX_PROBES));
}

/* The open size whose log2 is closest to `target` among indices in [from, to]; -1 if none. */
static int closest_open(const struct bso_job *job, int from, int to, double target)
{
    int best = -1;
    for (int k = from; k <= to; k++) {
        if (!open_size(job, (size_t)k))
            continue;
        double d = fabs(log2((double)job->spec.batch_sizes[k]) - target);
        if (best < 0 || d < fabs(log2((double)job->spec.batch_sizes[best]) - target))
            best = k;
    }
    return best;
}

/* What probing size c is worth against best_cost: its possible saving over the recurrences still
 * expected, less about one epoch of it; false when it cannot beat best_cost or does not repay. */
static bool probe_gain(const struct bso_job *job, int c, double best_cost, double *gain)
{
    const int n = (int)job->spec.n_batch_sizes;
    const double per = bso_policy_epoch_cost(job, (size_t)c);
    /* Untried: judged optimistically (its first epoch will tell). Passed over: its cost
     * per epoch is known, so by the central estimate, as at its go/no-go. */
    const double optimistic = job->stats[c].status == BSO_BS_PASSED
                                  ? passed_epochs(job, (size_t)c) * per
                                  : epochs_bound(job, (size_t)c) * per;
    /* Worth a probe only if its possible saving over the recurrences still expected (as
     * many again as so far, at least MIN_HORIZON) repays about one epoch of it: the probe's
     * first epoch then measures its real cost per epoch (see bso_policy_decide). */
    double runs = 0;
    for (int k = 0; k < n; k++)
        runs += (double)job->stats[k].successes;
    const double horizon = runs > MIN_HORIZON ? runs : MIN_HORIZON;
    /* No best to beat (every size that reached just failed): the cheapest-looking goes. */
    *gain = isinf(best_cost) ? -optimistic : (best_cost - optimistic) * horizon - per;
    return optimistic < best_cost && (isinf(best_cost) || *gain > 0);
}

/* The untried size nearest (in log2) halfway between g and the nearest size on side dir that has
 * run, or -1 when none lies between or none has run. */
static int halfway_to_ran(const struct bso_job *job, int g, int dir)
{
    const int n = (int)job->spec.n_batch_sizes;
    int ran = g + dir;
    while (ran >= 0 && ran < n && job->stats[ran].runs == 0)
        ran += dir;
    if (ran < 0 || ran >= n)
        return -1;
    const double mid =
        (log2((double)job->spec.batch_sizes[g]) + log2((double)job->spec.batch_sizes[ran])) / 2;
    int best = -1;
    for (int k = g + dir; k != ran; k += dir)
        if (open_size(job, (size_t)k) && job->stats[k].status == BSO_BS_UNTRIED &&
            (best < 0 || fabs(log2((double)job->spec.batch_sizes[k]) - mid) <
                             fabs(log2((double)job->spec.batch_sizes[best]) - mid)))
            best = k;
    return best;
}

/* The next size to explore around the best one g, or -1. Each side offers one candidate: the
 * bisection point of the bracket (g, nearest tried size on that side) when there is one, else
 * an expansion one octave out, or two when the last step that way found the best. */
static int explore_candidate(const struct bso_job *job, int g, double best_cost)
{
    const int n = (int)job->spec.n_batch_sizes;
    const double xg = log2((double)job->spec.batch_sizes[g]);
    int pick = -1;
    double pick_gain = 0;
    for (int dir = -1; dir <= 1; dir += 2) {
        /* The nearest tried size on this side, or past the end. Sizes that cannot run (unfit,
         * infeasible) are as good as absent: they bound nothing. */
        int edge = g + dir;
        while (edge >= 0 && edge < n &&
               (open_size(job, (size_t)edge) || !usable(job, (size_t)edge)))
            edge += dir;
        const int from = dir < 0 ? edge + 1 : g + 1, to = dir < 0 ? g - 1 : edge - 1;
        if (from > to)
            continue;
        double target;
        if (edge >= 0 && edge < n) {
            target = (xg + log2((double)job->spec.batch_sizes[edge])) / 2; /* bisect */
        } else {
            /* Expand: two octaves when a size beyond the best, on the other side, was
             * already passed (the search moved this way), else one. A size known only from
             * before the job changed was not passed by the search since: the search starts
             * again from the best size since, and steps one octave. */
            int passed = 0;
            for (int k = g - dir; k >= 0 && k < n; k -= dir)
                passed |=
                    usable(job, (size_t)k) && !open_size(job, (size_t)k) && !stale(job, (size_t)k);
            target = xg + dir * (passed ? 2.0 : 1.0);
        }
        int c = closest_open(job, from, to, target);
        if (c < 0)
            continue;
        double gain;
        bool pays = probe_gain(job, c, best_cost, &gain);
        if (!pays && !(edge >= 0 && edge < n) && transferred(job)) {
            /* A transferred job's sizes were not tried by a search moving one way on this
             * hardware, and its costs per epoch are another GPU's until measured here: an
             * expansion that does not repay gives way to the untried size halfway to the
             * nearest size that ran on that side. */
            const int half = halfway_to_ran(job, g, dir);
            if (half >= 0) {
                c = half;
                pays = probe_gain(job, c, best_cost, &gain);
            }
        }
        if (!pays)
            continue;
        if (pick < 0 || gain > pick_gain) {
            pick = c;
            pick_gain = gain;
        }
    }
    return pick;
}

/* A size's point on the shared curve of epochs against batch size: its log mean epochs,
 * weighted by its runs that reached; a size that has not reached here but needed some epochs in
 * the job this one was transferred from, that, as one run. Returns the weight (0: none). */
static double curve_point(const struct bso_job *job, size_t i, double *log_epochs)
{
    const struct bso_bs_stat *s = &job->stats[i];
    if (s->successes > 0) {
        *log_epochs = log(mean_epochs(s));
        return (double)s->successes;
    }
    if (transferred_prior(job, i) > 0) {
        *log_epochs = log(transferred_prior(job, i));
        return 1;
    }
    return 0;
}

/* The posterior of each size's mean log epochs, and the pooled run-to-run variance of log
 * epochs (*cv2); see bso_policy_epochs_posterior. */
static void posterior(const struct bso_job *job, double *mean_log, double *sd_log, double *cv2_out)
{
    const size_t n = job->spec.n_batch_sizes;
    /* The relative spread of a size's epochs-to-target from run to run, pooled over sizes
     * (each run beyond a size's first is one degree of freedom), with PRIOR_CV worth
     * PRIOR_RUNS runs. */
    double sq = PRIOR_RUNS * PRIOR_CV * PRIOR_CV, dof = PRIOR_RUNS;
    for (size_t i = 0; i < n; i++) {
        const struct bso_bs_stat *s = &job->stats[i];
        if (s->successes < 2)
            continue;
        const double m = mean_epochs(s);
        const double ss = s->sum_sq_epochs - (double)s->successes * m * m;
        sq += ss > 0 ? ss / (m * m) : 0;
        dof += (double)(s->successes - 1);
    }
    const double cv2 = sq / dof;
    /* Sizes share a smooth curve of epochs against batch size: a line in log-log, weighted
     * by runs, over the sizes that reached the target (curve_point). */
    struct line_fit fit = {0};
    double log_e[BSO_MAX_BATCH_SIZES], weight[BSO_MAX_BATCH_SIZES];
    for (size_t i = 0; i < n; i++) {
        weight[i] = curve_point(job, i, &log_e[i]);
        if (weight[i] > 0)
            fit_add(&fit, log2((double)job->spec.batch_sizes[i]), log_e[i], weight[i]);
    }
    const int k = fit.points;
    const double slope = fit_slope(&fit, 0);
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
    /* Each size's mean is shrunk toward the line by the two precisions. */
    for (size_t i = 0; i < n; i++) {
        const struct bso_bs_stat *s = &job->stats[i];
        if (s->successes == 0) {
            mean_log[i] = sd_log[i] = NAN;
            continue;
        }
        const double own = (double)s->successes / cv2, line = 1 / scatter;
        const double on_line = icpt + slope * log2((double)job->spec.batch_sizes[i]);
        mean_log[i] = (own * log(mean_epochs(s)) + line * on_line) / (own + line);
        sd_log[i] = 1 / sqrt(own + line);
    }
    *cv2_out = cv2;
}

void bso_policy_epochs_posterior(const struct bso_job *job, double *mean_log, double *sd_log)
{
    double cv2;
    posterior(job, mean_log, sd_log, &cv2);
}

/* What a run at size i that does not reach is expected to cost: max_epochs of it, or less
 * where the beta bound stops it first. */
static double failed_run_cost(const struct bso_job *job, size_t i)
{
    const double to_max = (double)job->spec.max_epochs * per_epoch(&job->stats[i]);
    const int g = best_good_of(job, true);
    if (!job->spec.has_beta_knob || g < 0)
        return to_max;
    const double bound = job->spec.beta_knob * expected_cost(&job->stats[g]);
    return bound < to_max ? bound : to_max;
}

/* Thompson sampling over the sizes that reached the target (but those that just failed, unless
 * `all`): each draws its epochs from the posterior above, times its cost per epoch; the lowest
 * draw wins. -1 when there is none. */
static int thompson(struct bso_job *job, bool all)
{
    double mean_log[BSO_MAX_BATCH_SIZES], sd_log[BSO_MAX_BATCH_SIZES];
    bso_policy_epochs_posterior(job, mean_log, sd_log);
    int best = -1;
    double best_draw = 0;
    for (size_t i = 0; i < job->spec.n_batch_sizes; i++) {
        if (job->stats[i].successes == 0 || !usable(job, i) || (!all && struck(job, i)))
            continue;
        const struct bso_bs_stat *s = &job->stats[i];
        double draw = exp(bso_rng_normal(&job->rng, mean_log[i], sd_log[i])) * per_epoch(s);
        /* Its last run did not reach (and another size trained a model since): the draw adds
         * the expected waste of the next not reaching either (as likely as one failure against
         * its successes, half of each as prior), a run to max_epochs or to the stop at beta
         * times the best, before another size trains the model. Not in a rescue (`all`),
         * where every candidate just failed. */
        if (!all && s->fail_mark > s->success_mark)
            draw += 1.5 / ((double)s->successes + 2) * failed_run_cost(job, i);
        if (best < 0 || draw < best_draw) {
            best = (int)i;
            best_draw = draw;
        }
    }
    return best;
}

/* A size's lowest plausible cost to the target: its epochs bound times its cost per epoch. */
static double optimistic_cost(const struct bso_job *job, size_t i)
{
    return epochs_bound(job, i) * bso_policy_epoch_cost(job, i);
}

/* What a run at open size i is expected to cost when a model is needed now: its central
 * estimate of epochs (never below its lower bound) times its cost per epoch. The optimistic
 * bound that ranks probes would send a rescue to the smallest sizes, which a batch-size-
 * proportional bound makes look cheap whatever they need. */
static double expected_open_cost(const struct bso_job *job, size_t i)
{
    return fmax(epochs_estimate(job, i), epochs_bound(job, i)) * bso_policy_epoch_cost(job, i);
}

/* The recurrence still needs a model and every size that reached the target failed in it (or
 * the job changed and none has reached since): the size most likely to be cheap that is not
 * struck out in it, one that reached judged by its expected cost, an open one by its expected
 * cost from the estimates (expected_open_cost). Else the least bad of those that failed. -1
 * when nothing can run. */
static int rescue(struct bso_job *job)
{
    int best = -1;
    double best_cost = INFINITY;
    for (size_t k = 0; k < job->spec.n_batch_sizes; k++) {
        const struct bso_bs_stat *s = &job->stats[k];
        if (!usable(job, k) || struck(job, k))
            continue;
        double cost;
        if (s->successes > 0)
            cost = expected_cost(s);
        else if (open_size(job, k))
            cost = expected_open_cost(job, k);
        else
            continue;
        if (best < 0 || cost < best_cost) {
            best = (int)k;
            best_cost = cost;
        }
    }
    if (best >= 0)
        return best;
    best = thompson(job, true);
    if (best >= 0)
        return best;
    /* Nothing that ever reached can still run either: a job that trained before is never
     * given up, since what failed may have failed for the change alone. The size whose last
     * failure is the oldest (so that failures cycle through the sizes instead of repeating
     * one), then the lowest optimistic cost. */
    best_cost = INFINITY;
    for (size_t k = 0; k < job->spec.n_batch_sizes; k++) {
        if (!usable(job, k))
            continue;
        const double cost = optimistic_cost(job, k);
        const double mark = job->stats[k].fail_mark;
        if (best < 0 || mark < job->stats[best].fail_mark ||
            (mark == job->stats[best].fail_mark && cost < best_cost)) {
            best = (int)k;
            best_cost = cost;
        }
    }
    return best;
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
        const double cost = s->prior_epochs * profile_sample_cost(job, k);
        if (usable(job, k) && s->prior_epochs > 0 && isfinite(cost) && cost < best_cost) {
            best = (int)k;
            best_cost = cost;
        }
    }
    return best;
}

int bso_policy_choose(struct bso_job *job, int64_t *batch_size)
{
    const struct bso_job_spec *sp = &job->spec;
    const int n = (int)sp->n_batch_sizes;
    const int d = bso_job_spec_index(sp, sp->default_batch_size);
    const int g = best_good(job);
    if (g < 0) {
        /* Something reached before, or the job changed: a model is needed now. */
        bool rescue_needed = false;
        for (int k = 0; k < n; k++)
            rescue_needed |= job->stats[k].change_mark > 0 || job->stats[k].successes > 0;
        if (rescue_needed) {
            const int c = rescue(job);
            if (c < 0)
                return BSO_EPRUNED;
            *batch_size = sp->batch_sizes[c];
            return 0;
        }
        /* Transferred from another job and nothing run yet: the size the old job's epochs and
         * costs favour. */
        const int t = transferred_start(job);
        if (t >= 0) {
            *batch_size = sp->batch_sizes[t];
            return 0;
        }
        /* Nothing reached the target yet: the default first, then smaller sizes (they need
         * fewer epochs), then larger ones. */
        if (job->stats[d].status == BSO_BS_UNTRIED && usable(job, (size_t)d)) {
            *batch_size = sp->batch_sizes[d];
            return 0;
        }
        for (int k = d - 1; k >= 0; k--)
            if (job->stats[k].status == BSO_BS_UNTRIED && usable(job, (size_t)k)) {
                *batch_size = sp->batch_sizes[k];
                return 0;
            }
        for (int k = d + 1; k < n; k++)
            if (job->stats[k].status == BSO_BS_UNTRIED && usable(job, (size_t)k)) {
                *batch_size = sp->batch_sizes[k];
                return 0;
            }
        return BSO_EPRUNED;
    }
    /* The search looks around the best measured since the job last changed, when there is
     * one: a size known only from before may have moved. */
    const int f = best_good_of(job, true);
    const int a = f >= 0 ? f : g;
    const int c = explore_candidate(job, a, expected_cost(&job->stats[a]));
    *batch_size = sp->batch_sizes[c >= 0 ? c : thompson(job, false)];
    return 0;
}

void bso_policy_decide(struct bso_job *job, size_t i, const struct bso_report *rep, bool reached,
                       struct bso_decision *out)
{
    struct bso_bs_stat *s = &job->stats[i];
    if (rep->current_epoch == 1)
        s->first_epoch_cost = out->cost;
    /* Runs are stopped against the best measured since the job last changed: a size's cost
     * from before may no longer hold. */
    const int g = best_good_of(job, true);
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
        const double best = expected_cost(&job->stats[g]);
        if (s->successes == 0 && rep->current_epoch == 1) {
            /* Exploring, first epoch: its cost per epoch is now measured; go on only if the
             * central estimate of its total beats the best. */
            const double total =
                judged_epochs(job, i) * out->cost / (s->runs == 0 ? warm_up(job) : 1);
            if (total > best) {
                snprintf(out->message, sizeof out->message,
                         "Batch size %lld is not promising: about %.6g expected against %.6g",
                         (long long)job->spec.batch_sizes[i], total, best);
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
            const double expected =
                rechecked(job, i) ? epochs_bound(job, i) : epochs_estimate(job, i);
            double left = expected - e;
            if (left < OVERDUE * e)
                left = OVERDUE * e;
            if (expected > (double)job->spec.max_epochs) {
                snprintf(out->message, sizeof out->message,
                         "Batch size %lld is expected to need about %.3g epochs, more than "
                         "max_epochs(%lld)",
                         (long long)job->spec.batch_sizes[i], expected,
                         (long long)job->spec.max_epochs);
                return;
            }
            if (left * per > best) {
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
        const double shift =
            s->successes > 0 ? out->cost / (double)rep->current_epoch / per_epoch(s) : 1;
        const double moved = shift > PER_EPOCH_SHIFT ? shift : 1;
        if (job->spec.has_beta_knob && out->cost > job->spec.beta_knob * best * moved) {
            snprintf(out->message, sizeof out->message,
                     "Batch Size(%lld) exceeded the cost upper bound: beta_knob(%g) times the "
                     "best expected cost (%.6g)",
                     (long long)job->spec.batch_sizes[i], job->spec.beta_knob, best);
            return;
        }
    }
    out->stop_train = false;
    snprintf(out->message, sizeof out->message, "Stop condition not met, keep training");
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

/* How surprising a run that reached in e epochs, at a size that reached before, is: in standard
 * deviations of its predicted log epochs (its posterior and the run-to-run spread). */
static double surprise(const struct bso_job *job, size_t i, double e)
{
    double mean_log[BSO_MAX_BATCH_SIZES], sd_log[BSO_MAX_BATCH_SIZES], cv2;
    posterior(job, mean_log, sd_log, &cv2);
    const double sd = sqrt(cv2 + sd_log[i] * sd_log[i]);
    return (log(e) - mean_log[i]) / sd;
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

/* The job changed (size i's runs said so): what was learnt before weighs as one run per size,
 * so the runs to come decide; sizes ruled out are open to the search again, each with its
 * measured cost per epoch; size i starts over from the run that showed the change. */
static void forget(struct bso_job *job, size_t i)
{
    /* The change came after size i last reached: a size that reached since (and has not
     * failed since) is known from after it, and keeps what it knows. */
    const double since = job->stats[i].success_mark;
    for (size_t k = 0; k < job->spec.n_batch_sizes; k++) {
        struct bso_bs_stat *s = &job->stats[k];
        const double measured = per_epoch(s);
        /* Its cost per epoch is kept, at the weight of one epoch (or one run); unmeasured
         * stays unmeasured. */
        const double per = isfinite(measured) ? measured : 0;
        const double one = per > 0 ? 1 : 0;
        if (k != i && s->successes > 0 && s->success_mark > since &&
            s->success_mark > s->fail_mark) {
            s->change_mark = since > 0 ? since : 1;
            continue;
        }
        s->drift_up = s->drift_down = s->drift_fail = 0;
        s->censored_epochs = 0;
        s->change_mark = (double)job->last_trial_number;
        if (k == i || s->status == BSO_BS_UNTRIED || s->status == BSO_BS_INFEASIBLE) {
            if (k == i) { /* one epoch of its cost stays, weighed with the run's */
                clear_epochs(s);
                s->runs = 1;
                s->epochs_sum = one;
                s->cost_sum = per;
                s->status = BSO_BS_UNTRIED;
            }
            continue;
        }
        if (s->successes > 0) {
            const double m = mean_epochs(s);
            clear_epochs(s);
            add_epochs(s, m, job->spec.window_size);
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

/* A run's cost per epoch far off its size's shows a new level for the whole job (more data,
 * other hardware): size i takes the new level, and every other measured size is moved by the
 * same factor until its own next run says better. Returns whether it did. */
static bool follow_epoch_cost(struct bso_job *job, size_t i, double cost, int64_t epochs)
{
    struct bso_bs_stat *s = &job->stats[i];
    if (s->successes == 0 || epochs < 2 || !(s->epochs_sum > 0))
        return false;
    const double shift = cost / (double)epochs / per_epoch(s);
    if (!(shift > PER_EPOCH_SHIFT || shift < 1 / PER_EPOCH_SHIFT))
        return false;
    for (size_t k = 0; k < job->spec.n_batch_sizes; k++)
        job->stats[k].cost_sum *= shift;
    return true;
}

bool bso_policy_observe(struct bso_job *job, size_t i, double cost, int64_t epochs,
                        enum bso_run_end end)
{
    struct bso_bs_stat *s = &job->stats[i];
    const bool reached = end == BSO_RUN_REACHED;
    const bool was_stale = stale(job, i);
    s->crashes = 0; /* it reported: whatever ended earlier runs, this one ran */
    /* Failing marks a size that ran out of epochs, or one that used to reach; an exploring
     * run stopped for its cost may still reach, and marks nothing. */
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
        }
        s->drift_fail = fmax(0, s->drift_fail + failure_evidence(s, reached));
        if (s->drift_up > DRIFT_ALARM || s->drift_down > DRIFT_ALARM ||
            s->drift_fail > FAIL_ALARM) {
            forget(job, i);
            all = alarm = true;
        }
    }
    /* The first run at a size known only from before the job changed replaces what was
     * known: that was a stand-in until a run could tell. */
    if (was_stale && end != BSO_RUN_PASSED) {
        clear_epochs(s);
        s->status = BSO_BS_UNTRIED; /* set below from this run */
    }
    if (s->runs == 0 && epochs >= 2 && s->first_epoch_cost > 0) {
        s->warm_first_sum += s->first_epoch_cost;
        s->warm_steady_sum += (cost - s->first_epoch_cost) / (double)(epochs - 1);
    }
    s->total_runs++;
    s->total_successes += reached;
    s->runs++;
    s->cost_sum += cost;
    s->epochs_sum += (double)epochs;
    if (reached && s->prior_epochs > 0) { /* the transferred prior joins as one run */
        add_epochs(s, s->prior_epochs, job->spec.window_size);
        s->prior_epochs = 0;
    }
    if (reached) {
        add_epochs(s, (double)epochs, job->spec.window_size);
        s->status = BSO_BS_GOOD;
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
