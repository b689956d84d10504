/* What the bso policy expects of the epochs each batch size of a job needs: what it knows of
 * the size (usable, fresh, stale, transferred), the bounds the scaling laws give, runs that
 * diverged, and central estimates (docs/policy.md, "The bso policy"). Cost per epoch:
 * bso_epoch_cost.c; the posterior along a curve over sizes: bso_posterior.c. */
#include "core/bso_policy.h"

#include <math.h>

#include "core/bso_policy_internal.h"
#include "core/job.h"

/* How far the cost per epoch of one batch size relative to another may move when a job moves
 * to another GPU (a log-normal spread): the relative costs of the same sizes differ between
 * GPU generations by tens of percent (memory bandwidth, tensor-core tiling). */
#define TRANSFER_CV 0.3

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

void bso_policy_nearest_sizes(const struct bso_job *job, size_t i,
                              bool (*keep)(const struct bso_bs_stat *), int *lo, int *hi)
{
    *lo = *hi = -1;
    for (int k = (int)i - 1; k >= 0 && *lo < 0; k--)
        if (keep(&job->stats[k]))
            *lo = k;
    for (size_t k = i + 1; k < job->spec.n_batch_sizes && *hi < 0; k++)
        if (keep(&job->stats[k]))
            *hi = (int)k;
}

/* Whether size i's last run is the one that found the change (the job's last change): it ran as
 * the best, not as a step of the search. */
bool bso_policy_raised_alarm(const struct bso_job *job, size_t i)
{
    const struct bso_bs_stat *s = &job->stats[i];
    return s->change_mark > 0 && fmax(s->success_mark, s->fail_mark) == s->change_mark;
}

/* Whether size i's run found the job's last change, whatever it ran since: it reached the target
 * before the change (pre_change_epochs) and started over from that run, its first since
 * (first_mark). Once it runs again its own mean since may lie within the noise of its mean
 * before, though its CUSUM, over every run of the shift, was not. */
static bool found_the_change(const struct bso_job *job, size_t i)
{
    const struct bso_bs_stat *s = &job->stats[i];
    return bso_policy_raised_alarm(job, i) ||
           (s->change_mark > 0 && s->pre_change_epochs > 0 && s->first_mark == s->change_mark);
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
double bso_policy_transferred_prior(const struct bso_job *job, size_t i)
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

enum bso_change_at bso_policy_change_at(const struct bso_job *job, size_t k, double *cv2)
{
    if (found_the_change(job, k))
        return BSO_CHANGE_MOVED;
    double shift;
    if (!bso_policy_change_shift_near(job, k, &shift))
        return BSO_CHANGE_UNKNOWN;
    if (*cv2 < 0)
        *cv2 = bso_policy_pooled_cv2(job);
    return fabs(shift) > bso_policy_two_spreads(*cv2, (double)job->stats[k].successes)
               ? BSO_CHANGE_MOVED
               : BSO_CHANGE_SPARED;
}

/* Whether size i lies beyond a size the job's last change spared, seen from every size it
 * moved (at least one): a change hits a range of sizes, so the change did not reach i, and
 * what was known of i before it holds. Only where no earlier change came since i last ran:
 * each change is read against the levels the one before left, and a size an earlier change
 * moved may look spared by the last (sentiment140 on the V100 after epochs x1.6 at and above
 * its optimum, 64: the alarm at 64, then one at 128; against 64's level since the first, the
 * second spared it, and 32, below it, was judged at 64's new 5 epochs and stopped after one;
 * it needs 3). */
static bool beyond_a_spared_size(const struct bso_job *job, size_t i)
{
    if (job->stats[i].changes_since_run > 1)
        return false;
    const int n = (int)job->spec.n_batch_sizes;
    double cv2 = -1;
    bool moved = false;
    for (int dir = -1; dir <= 1; dir += 2) {
        bool spared = false;
        for (int k = (int)i + dir; k >= 0 && k < n; k += dir) {
            const enum bso_change_at at = bso_policy_change_at(job, (size_t)k, &cv2);
            if (at == BSO_CHANGE_MOVED) {
                if (!spared)
                    return false; /* nothing between i and a moved size says the change ended */
                moved = true;
                break;
            }
            spared |= at == BSO_CHANGE_SPARED;
        }
    }
    return moved;
}

/* Whether an exploring run at size i is judged by the optimistic epochs bound rather than
 * the central estimate: after the job changed, its first run since (the estimates rest on
 * evidence from before, which the change may have falsified at some sizes but not others),
 * and wherever the data contradict the bound's assumption; but not where the change did not
 * reach i (beyond_a_spared_size): there i is judged as before the change. */
bool bso_policy_rechecked(const struct bso_job *job, size_t i)
{
    return ((job->stats[i].change_mark > 0 && job->stats[i].runs == 0) || contradicted(job, i)) &&
           !beyond_a_spared_size(job, i);
}

/* The spread the noise margin is made of: the pooled one, never below its prior. */
static double margin_cv2(const struct bso_job *job)
{
    return fmax(bso_policy_pooled_cv2(job), BSO_PRIOR_CV * BSO_PRIOR_CV);
}

double bso_policy_two_spreads(double cv2, double runs)
{
    return 2 * sqrt(cv2 * (1 + 1 / runs));
}

static double margin_of(double cv2, int64_t runs)
{
    return exp(bso_policy_two_spreads(cv2, (double)runs));
}

double bso_policy_noise_margin(const struct bso_job *job, int64_t runs)
{
    return margin_of(margin_cv2(job), runs);
}

/* Whether size i's runs since the job last changed ended without reaching the target after
 * more epochs than a size that reached since allows it to need. Two laws bound a size's epochs
 * from above: a larger batch never needs more optimizer steps (E(a) <= E(b) a/b from a smaller
 * size b), and a larger batch needs at least as many epochs (E(a) <= E(b) from a larger one).
 * The second rests on sizes behaving alike, which a change may break, so after one only the
 * first holds (as for bso_policy_epochs_bound); with steps_only, only the first. Each allows
 * bso_policy_noise_margin for b's mean and the run's noise. Such a run diverged (a bad seed,
 * a loss spike): it says nothing about the epochs the size needs. */
static bool diverged(const struct bso_job *job, size_t i, bool steps_only)
{
    const struct bso_bs_stat *s = &job->stats[i];
    if (s->successes > 0 || (s->status != BSO_BS_FAILED && s->status != BSO_BS_KILLED))
        return false;
    const double ran =
        s->status == BSO_BS_FAILED ? (double)job->spec.max_epochs : s->censored_epochs;
    double cv2 = -1;
    const bool epochs_law = !steps_only && !(s->change_mark > 0);
    const double a = (double)job->spec.batch_sizes[i];
    for (size_t k = 0; k < job->spec.n_batch_sizes; k++) {
        const struct bso_bs_stat *r = &job->stats[k];
        const double b = (double)job->spec.batch_sizes[k];
        if (k == i || r->successes == 0 || !bso_policy_fresh(job, k) || (b > a && !epochs_law))
            continue;
        if (cv2 < 0)
            cv2 = margin_cv2(job); /* once, and only when a size can tell */
        if (bso_bs_mean_epochs(r) * fmax(1, a / b) * margin_of(cv2, r->successes) < ran)
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

/* Whether a size below i reached since the job last changed, needing what it needed before
 * (measured or read off the sizes known from before: bso_policy_change_shift_near) within two
 * spreads (its mean's and one run's, as common_shift tests): the change spared it. */
static bool spared_below(const struct bso_job *job, size_t i, double cv2)
{
    for (size_t j = 0; j < i; j++) {
        double shift;
        if (bso_policy_change_shift_near(job, j, &shift) &&
            fabs(shift) <= bso_policy_two_spreads(cv2, (double)job->stats[j].successes))
            return true;
    }
    return false;
}

/* The fewest epochs larger size a has needed, as the steps law bounds smaller sizes by it. After
 * a change that spared a size below the one bounded (`spared`: spared_below) and moved a (its
 * epochs since above what it needed before by two spreads), at a's level from before: the
 * change's edge lies between the two, and the size bounded may lie on the spared side, where
 * the law holds against a's epochs from before, not against the moved ones (librispeech on the
 * V100 after epochs x1.6 at and above 48: 24 spared at 7, 48 moved to 12, which bounded 32 to 8
 * epochs and kept the job at 24; 32, spared too, needs 7). */
static double steps_bound_epochs(const struct bso_job *job, size_t a, bool spared, double cv2)
{
    const struct bso_bs_stat *s = &job->stats[a];
    double shift;
    if (spared && bso_policy_change_shift_near(job, a, &shift) &&
        shift > bso_policy_two_spreads(cv2, (double)s->successes))
        return s->min_epochs / exp(shift);
    return s->min_epochs;
}

/* A lower bound on the epochs size i needs: a larger batch needs at least as many epochs as a
 * smaller one, and a smaller batch at least proportionally fewer than a larger one (the steps
 * law: steps_bound_epochs). With few noisy runs per size, the first bound takes the fewest
 * epochs seen at any smaller size (the largest would let one unlucky run block every larger
 * size). A run stopped after e epochs without reaching shows its own size needs more than e. */
double bso_policy_epochs_bound(const struct bso_job *job, size_t i)
{
    double from_smaller = INFINITY, from_larger = 1;
    const double b = (double)job->spec.batch_sizes[i];
    const bool changed = bso_policy_change_trial(job) > 0;
    const double cv2 = changed ? bso_policy_pooled_cv2(job) : 0;
    const bool spared = changed && spared_below(job, i, cv2);
    for (size_t a = 0; a < job->spec.n_batch_sizes; a++) {
        const struct bso_bs_stat *s = &job->stats[a];
        if (s->successes == 0)
            continue;
        const double ba = (double)job->spec.batch_sizes[a];
        if (ba <= b && s->min_epochs < from_smaller)
            from_smaller = s->min_epochs;
        const double larger = ba > b ? steps_bound_epochs(job, a, spared, cv2) * b / ba : 0;
        if (larger > from_larger)
            from_larger = larger;
    }
    /* The bound from smaller sizes rests on sizes behaving alike; after the job changed, or
     * where the data contradict it, only the proportional bound from larger sizes holds until
     * the size has run again. */
    if (bso_policy_rechecked(job, i))
        from_smaller = INFINITY;
    double lb = isinf(from_smaller) || from_larger > from_smaller ? from_larger : from_smaller;
    /* A transferred prior is a better guess than any bound, but a size known only from other
     * hardware is uncertain twice: its epochs by the run-to-run spread (BSO_PRIOR_CV), its cost
     * per epoch here by how far sizes' relative costs move between GPUs (TRANSFER_CV). The
     * bound is optimistic by one of their joint spread. */
    const double prior = bso_policy_transferred_prior(job, i);
    if (prior > 0)
        lb = prior * exp(-sqrt(BSO_PRIOR_CV * BSO_PRIOR_CV + TRANSFER_CV * TRANSFER_CV));
    if (job->stats[i].censored_epochs + 1 > lb && job->stats[i].censored_epochs > 0 &&
        !bso_policy_diverged(job, i))
        lb = job->stats[i].censored_epochs + 1;
    return lb;
}

/* Whether a run stopped at size a, which proved that a needs more than `proved` epochs, says
 * more than a larger size needed on average (mean_epochs), before the job ever changed: "a larger
 * batch needs at least as many epochs" then says that run diverged rather than measured its
 * size. */
static bool past_a_larger_size(const struct bso_job *job, size_t a, double proved)
{
    if (bso_policy_change_trial(job) > 0)
        return false; /* a change may have hit the smaller sizes alone */
    for (size_t k = a + 1; k < job->spec.n_batch_sizes; k++)
        if (job->stats[k].successes > 0 && bso_bs_mean_epochs(&job->stats[k]) < proved)
            return true;
    return false;
}

/* The sizes whose epochs fell at a downward alarm (drop_factor): when, and log2 of how far.
 * Looked up once per estimate; most jobs have none. */
struct drops {
    size_t n;
    size_t size[BSO_MAX_BATCH_SIZES];
    double mark[BSO_MAX_BATCH_SIZES], log2_factor[BSO_MAX_BATCH_SIZES];
};

static void find_drops(const struct bso_job *job, struct drops *d)
{
    d->n = 0;
    for (size_t k = 0; k < job->spec.n_batch_sizes; k++)
        if (job->stats[k].drop_factor > 0) {
            d->size[d->n] = k;
            d->mark[d->n] = job->stats[k].drop_mark;
            d->log2_factor[d->n++] = log2(job->stats[k].drop_factor);
        }
}

/* log2 of how far the other sizes' epochs fell (drops) since size a's epochs were last seen (its
 * last run that reached; for a size known only by runs stopped short, its last run to
 * max_epochs; never, for one known only from another job), on the guess that the whole job got
 * easier. Where the scaling fit reads the curve's shape, a size's new epochs beside the others'
 * old ones bent it: on a held-out synthetic workload after epochs x0.5 at every size, the best
 * went from 26 epochs to 13 while a smaller size still stood at its old 20, the slope fell flat,
 * and a size four times larger, read as needing the best's 13 epochs where it needed 33, was
 * run to the target (docs/policy.md, "Detecting a change"). */
static double drops_since(const struct bso_job *job, const struct drops *d, size_t a)
{
    const struct bso_bs_stat *sa = &job->stats[a];
    const double seen =
        sa->successes > 0 ? sa->success_mark : fmax(sa->success_mark, sa->fail_mark);
    double log2_drop = 0;
    for (size_t k = 0; k < d->n; k++)
        if (d->size[k] != a && d->mark[k] > seen)
            log2_drop += d->log2_factor[k];
    return log2_drop;
}

/* What size a tells the scaling fit (bso_policy_epochs_estimate): log2 of its epochs, or false
 * when it tells nothing. Sizes that reached the target count with their mean epochs; sizes
 * whose runs were stopped with what those runs proved (more than they ran), so a failed probe
 * bends the fit, but not a run that proved more than a larger size needed (past_a_larger_size):
 * as a point of the curve it bent the slope flat, and every smaller size looked as dear per
 * sample and was stopped at its first epoch (syn20 of held-out set 777: a never-reaching run at
 * 12 made 24, on the way to the optimum 16, look dearer than the default 48; it still bounds its
 * own size, bso_policy_epochs_bound). Sizes known only from the job this one was transferred
 * from count with what they needed there (the same workload). Each is moved by the drops
 * since it was seen (drops_since; none where `drops` is NULL, to count the points only). */
static bool scaling_point(const struct bso_job *job, const struct drops *drops, size_t a,
                          double *log2_epochs)
{
    const struct bso_bs_stat *sa = &job->stats[a];
    double proved =
        sa->censored_epochs > 0 && !bso_policy_diverged(job, a) ? sa->censored_epochs + 1 : 0;
    if (proved > 0 && sa->successes == 0 && past_a_larger_size(job, a, proved))
        proved = 0;
    const double prior = bso_policy_transferred_prior(job, a);
    if (sa->successes == 0 && !(proved > 0) && !(prior > 0))
        return false;
    *log2_epochs = log2(sa->successes > 0 ? bso_bs_mean_epochs(sa) : fmax(prior, proved)) +
                   (drops ? drops_since(job, drops, a) : 0);
    return true;
}

bool bso_policy_slope_guessed(const struct bso_job *job)
{
    int points = 0;
    double y;
    for (size_t a = 0; a < job->spec.n_batch_sizes && points < 2; a++)
        points += scaling_point(job, NULL, a, &y); /* counted only */
    return points < 2;
}

/* A curve of epochs against batch size, as seen from size i: the line fitted (least squares) to
 * the points added, log2 epochs against log2 batch size, and the anchor nearest i (in log2)
 * among them with the epochs it stands for. */
struct curve {
    struct bso_line_fit fit;
    double x; /* log2 of size i */
    int near; /* the nearest anchor, or -1 */
    double near_epochs;
};

static struct curve curve_from(const struct bso_job *job, size_t i)
{
    return (struct curve){.x = log2((double)job->spec.batch_sizes[i]), .near = -1};
}

/* Adds size a's point; with anchor_epochs > 0 it may also anchor the curve, at those epochs. */
static void curve_add(struct curve *c, const struct bso_job *job, size_t a, double log2_epochs,
                      double anchor_epochs)
{
    const double xa = log2((double)job->spec.batch_sizes[a]);
    bso_fit_add(&c->fit, xa, log2_epochs, 1);
    if (anchor_epochs > 0 &&
        (c->near < 0 ||
         fabs(xa - c->x) < fabs(log2((double)job->spec.batch_sizes[c->near]) - c->x))) {
        c->near = (int)a;
        c->near_epochs = anchor_epochs;
    }
}

/* What the curve says size i needs: E(a) * (b / a)^s from its anchor a, s the fitted scaling
 * exponent clamped to [0, 1] between "the same epochs" and "the same steps", 0.5 until two
 * sizes tell it; NAN without an anchor. */
static double curve_at(const struct curve *c, const struct bso_job *job, size_t i)
{
    if (c->near < 0)
        return NAN;
    double s = bso_fit_slope(&c->fit, 0.5);
    s = s < 0 ? 0 : s > 1 ? 1 : s;
    const double ratio = (double)job->spec.batch_sizes[i] / (double)job->spec.batch_sizes[c->near];
    return c->near_epochs * pow(ratio, s);
}

/* What the sizes needed before the job last changed (pre_change_epochs) say size i needs, along
 * their curve (as bso_policy_epochs_estimate goes along the sizes that reached); NAN when none
 * had reached then. A change is a rise, so these are the fewest epochs the sizes may need now. */
static double estimate_from_before(const struct bso_job *job, size_t i)
{
    struct curve c = curve_from(job, i);
    for (size_t a = 0; a < job->spec.n_batch_sizes; a++) {
        const double e = job->stats[a].pre_change_epochs;
        if (e > 0)
            curve_add(&c, job, a, log2(e), e);
    }
    return curve_at(&c, job, i);
}

/* A central estimate of the epochs size i needs: along the curve (curve_at) through the sizes
 * that tell it (scaling_point), from the nearest size that reached the target, at its mean
 * epochs; 0.5 for the exponent until two sizes do (a guess: bso_policy_slope_guessed). While
 * none has reached since the job changed (the sizes that had failed since), the same along
 * what the sizes needed before the change (estimate_from_before): with no estimate at all,
 * every open size fell to its bound, one epoch, and a rescue went to the sizes cheapest per
 * epoch, far past any that could reach (cifar100 after epochs x3 at and above its optimum ran
 * 512, 1024, 2048 and 4096 to max_epochs before 64). The epochs bound where nothing ever
 * reached. It judges exploring runs (bso_policy_judged_epochs at the go/no-go,
 * bso_policy_decide later), but where bso_policy_rechecked sends them to the optimistic
 * bso_policy_epochs_bound. */
double bso_policy_epochs_estimate(const struct bso_job *job, size_t i)
{
    if (bso_policy_transferred_prior(job, i) > 0)
        return bso_policy_transferred_prior(job, i); /* what the same workload needed elsewhere */
    struct curve c = curve_from(job, i);
    struct drops drops;
    find_drops(job, &drops);
    for (size_t a = 0; a < job->spec.n_batch_sizes; a++) {
        double ya;
        if (scaling_point(job, &drops, a, &ya))
            curve_add(&c, job, a, ya,
                      job->stats[a].successes > 0 ? bso_bs_mean_epochs(&job->stats[a]) : 0);
    }
    if (c.near >= 0)
        return curve_at(&c, job, i);
    /* nothing reached since the change cleared the sizes that had */
    const double before = estimate_from_before(job, i);
    return isnan(before) ? bso_policy_epochs_bound(job, i) : before;
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
    if (bso_policy_transferred_prior(job, i) > 0)
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
