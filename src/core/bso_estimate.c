/* What the bso policy expects of each batch size of a job: epochs bounds and central
 * estimates, cost per epoch (measured, from a device profile, or interpolated), and the
 * posterior of epochs shared along a curve over sizes (docs/policy.md, "The bso policy"). */
#include "core/bso_policy.h"

#include <math.h>

#include "core/bso_policy_internal.h"
#include "core/job.h"

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

/* How much dearer a size's first epoch is than its steady epochs, learnt from first runs that
 * went past their first epoch (1 until there is one). */
double bso_policy_warm_up(const struct bso_job *job)
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
    return one_epoch_runs ? bso_bs_cost_per_epoch(s) / bso_policy_warm_up(job)
                          : bso_bs_cost_per_epoch(s);
}

/* Whether size i may run at all: it fits the device and does not keep crashing. */
bool bso_policy_usable(const struct bso_job *job, size_t i)
{
    return job->stats[i].status != BSO_BS_INFEASIBLE && !bso_spec_unfit(&job->spec, i);
}

/* Whether size i reached the target since the policy last found that the job changed (always,
 * for a job that never changed). */
bool bso_policy_fresh(const struct bso_job *job, size_t i)
{
    const struct bso_bs_stat *s = &job->stats[i];
    return s->success_mark >= s->change_mark;
}

/* Whether size i's last run is the one that found the change (the job's last change): it ran as
 * the best, not as a step of the search. */
bool bso_policy_raised_alarm(const struct bso_job *job, size_t i)
{
    const struct bso_bs_stat *s = &job->stats[i];
    return s->change_mark > 0 && fmax(s->success_mark, s->fail_mark) == s->change_mark;
}

/* Whether size i reached the target only before the policy last found that the job changed:
 * what it knows is a stand-in until its next run. */
bool bso_policy_stale(const struct bso_job *job, size_t i)
{
    return job->stats[i].successes > 0 && !bso_policy_fresh(job, i);
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
bool bso_policy_transferred(const struct bso_job *job)
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
bool bso_policy_rechecked(const struct bso_job *job, size_t i)
{
    return (job->stats[i].change_mark > 0 && job->stats[i].runs == 0) || contradicted(job, i);
}

/* The relative spread of a size's epochs-to-target from run to run, as a variance of log
 * epochs, pooled over sizes (each run beyond a size's first is one degree of freedom), with
 * PRIOR_CV worth PRIOR_RUNS runs. */
static double pooled_cv2(const struct bso_job *job)
{
    double sq = PRIOR_RUNS * PRIOR_CV * PRIOR_CV, dof = PRIOR_RUNS;
    for (size_t i = 0; i < job->spec.n_batch_sizes; i++) {
        const struct bso_bs_stat *s = &job->stats[i];
        if (s->successes < 2)
            continue;
        const double m = bso_bs_mean_epochs(s);
        const double ss = s->sum_sq_epochs - (double)s->successes * m * m;
        sq += ss > 0 ? ss / (m * m) : 0;
        dof += (double)(s->successes - 1);
    }
    return sq / dof;
}

/* Whether size i's runs since the job last changed ended without reaching the target after
 * more epochs than a size that reached since allows it to need. Two laws bound a size's epochs
 * from above: a larger batch never needs more optimizer steps (E(a) <= E(b) a/b from a smaller
 * size b), and a larger batch needs at least as many epochs (E(a) <= E(b) from a larger one).
 * The second rests on sizes behaving alike, which a change may break, so after one only the
 * first holds (as for bso_policy_epochs_bound); with steps_only, only the first. Each allows
 * two spreads of margin for b's mean and the run's noise (never below PRIOR_CV: integer
 * epochs make the pooled spread look tighter than runs are). Such a run diverged (a bad seed,
 * a loss spike): it says nothing about the epochs the size needs. */
static bool diverged(const struct bso_job *job, size_t i, bool steps_only)
{
    const struct bso_bs_stat *s = &job->stats[i];
    if (s->successes > 0 || (s->status != BSO_BS_FAILED && s->status != BSO_BS_KILLED))
        return false;
    const double ran =
        s->status == BSO_BS_FAILED ? (double)job->spec.max_epochs : s->censored_epochs;
    const double cv2 = fmax(pooled_cv2(job), PRIOR_CV * PRIOR_CV);
    const bool epochs_law = !steps_only && !(s->change_mark > 0);
    const double a = (double)job->spec.batch_sizes[i];
    for (size_t k = 0; k < job->spec.n_batch_sizes; k++) {
        const struct bso_bs_stat *r = &job->stats[k];
        const double b = (double)job->spec.batch_sizes[k];
        if (k == i || r->successes == 0 || !bso_policy_fresh(job, k) || (b > a && !epochs_law))
            continue;
        const double margin = exp(2 * sqrt(cv2 * (1 + 1 / (double)r->successes)));
        if (bso_bs_mean_epochs(r) * fmax(1, a / b) * margin < ran)
            return true;
    }
    return false;
}

bool bso_policy_diverged(const struct bso_job *job, size_t i)
{
    return diverged(job, i, false);
}

bool bso_policy_diverged_in_steps(const struct bso_job *job, size_t i)
{
    return diverged(job, i, true);
}

/* A lower bound on the epochs size i needs: a larger batch needs at least as many epochs as a
 * smaller one, and a smaller batch at least proportionally fewer than a larger one. With few
 * noisy runs per size, the first bound takes the fewest epochs seen at any smaller size (the
 * largest would let one unlucky run block every larger size). A run stopped after e epochs
 * without reaching shows its own size needs more than e. */
double bso_policy_epochs_bound(const struct bso_job *job, size_t i)
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
    if (bso_policy_rechecked(job, i))
        from_smaller = INFINITY;
    double lb = isinf(from_smaller) || from_larger > from_smaller ? from_larger : from_smaller;
    /* A transferred prior is a better guess than any bound, but a size known only from other
     * hardware is uncertain twice: its epochs by the run-to-run spread (PRIOR_CV), its cost
     * per epoch here by how far sizes' relative costs move between GPUs (TRANSFER_CV). The
     * bound is optimistic by one of their joint spread. */
    const double prior = transferred_prior(job, i);
    if (prior > 0)
        lb = prior * exp(-sqrt(PRIOR_CV * PRIOR_CV + TRANSFER_CV * TRANSFER_CV));
    if (job->stats[i].censored_epochs + 1 > lb && job->stats[i].censored_epochs > 0 &&
        !bso_policy_diverged(job, i))
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
 * "the same epochs" and "the same steps"; 0.5 until two sizes have. It judges exploring runs
 * (bso_policy_judged_epochs at the go/no-go, bso_policy_decide later), but where
 * bso_policy_rechecked sends them to the optimistic bso_policy_epochs_bound. */
double bso_policy_epochs_estimate(const struct bso_job *job, size_t i)
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
        const double proved =
            sa->censored_epochs > 0 && !bso_policy_diverged(job, a) ? sa->censored_epochs + 1 : 0;
        const double prior = transferred_prior(job, a);
        if (sa->successes == 0 && !(proved > 0) && !(prior > 0))
            continue;
        const double xa = log2((double)job->spec.batch_sizes[a]);
        const double ya = log2(sa->successes > 0 ? bso_bs_mean_epochs(sa) : fmax(prior, proved));
        fit_add(&fit, xa, ya, 1);
        if (sa->successes > 0 &&
            (near < 0 || fabs(xa - x) < fabs(log2((double)job->spec.batch_sizes[near]) - x)))
            near = (int)a;
    }
    double slope = fit_slope(&fit, 0.5);
    slope = slope < 0 ? 0 : slope > 1 ? 1 : slope;
    const double ratio = (double)job->spec.batch_sizes[i] / (double)job->spec.batch_sizes[near];
    return bso_bs_mean_epochs(&job->stats[near]) * pow(ratio, slope);
}

/* The epochs to judge an exploring size by, once its cost per epoch is known. Above every
 * size that reached the target the optimistic bound ("at least as many epochs") is close to
 * the truth, and a wrong go is soon caught by the stop rule, so it is used; elsewhere the
 * bound (proportionally fewer epochs) is loose, so the central estimate is. A size known only
 * from the job this one was transferred from is judged by its bound too: what it needed on
 * other hardware is a prior, not a fact, and its first run here is the re-check, as a size's
 * first run after a change is (the stop rule after it still expects the prior). */
double bso_policy_judged_epochs(const struct bso_job *job, size_t i)
{
    if (transferred_prior(job, i) > 0)
        return bso_policy_epochs_bound(job, i);
    if (bso_policy_rechecked(job, i))
        return bso_policy_epochs_bound(job, i);
    for (size_t a = i + 1; a < job->spec.n_batch_sizes; a++)
        if (job->stats[a].successes > 0)
            return bso_policy_epochs_estimate(job, i);
    return bso_policy_epochs_bound(job, i);
}

/* The epochs a size passed over after one epoch is judged by when the search weighs probing it
 * again: the larger of what its go/no-go and the stop rule after it read, since either passed
 * it over. */
double bso_policy_passed_epochs(const struct bso_job *job, size_t i)
{
    const double judged = bso_policy_judged_epochs(job, i);
    if (bso_policy_rechecked(job, i))
        return judged;
    const double central = bso_policy_epochs_estimate(job, i);
    return central > judged ? central : judged;
}

/* The profile's cost of one sample at size i (the job's cost of its energy and time), or NAN
 * when the profile does not say. */
double bso_policy_sample_cost(const struct bso_job *job, size_t i)
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
    const double own = bso_policy_sample_cost(job, i);
    if (isfinite(own)) {
        int best = -1;
        double best_d = INFINITY;
        for (size_t k = 0; k < job->spec.n_batch_sizes; k++) {
            const double d =
                fabs(log2((double)job->spec.batch_sizes[k] / (double)job->spec.batch_sizes[i]));
            if (st[k].epochs_sum > 0 && isfinite(bso_policy_sample_cost(job, k)) && d < best_d) {
                best = (int)k;
                best_d = d;
            }
        }
        if (best >= 0)
            return steady_epoch(job, (size_t)best) * own /
                   bso_policy_sample_cost(job, (size_t)best);
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
    const double y0 = log(bso_bs_cost_per_epoch(&st[lo])), y1 = log(bso_bs_cost_per_epoch(&st[hi]));
    return exp(y0 + (y1 - y0) * (x - x0) / (x1 - x0));
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
    if (transferred_prior(job, i) > 0) {
        *log_epochs = log(transferred_prior(job, i));
        return 1;
    }
    return 0;
}

/* The posterior of each size's mean log epochs, and the pooled run-to-run variance of log
 * epochs (*cv2); see bso_policy_epochs_posterior. */
void bso_policy_posterior(const struct bso_job *job, double *mean_log, double *sd_log,
                          double *cv2_out)
{
    const size_t n = job->spec.n_batch_sizes;
    const double cv2 = pooled_cv2(job);
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
        mean_log[i] = (own * log(bso_bs_mean_epochs(s)) + line * on_line) / (own + line);
        sd_log[i] = 1 / sqrt(own + line);
    }
    *cv2_out = cv2;
}

void bso_policy_epochs_posterior(const struct bso_job *job, double *mean_log, double *sd_log)
{
    double cv2;
    bso_policy_posterior(job, mean_log, sd_log, &cv2);
}
