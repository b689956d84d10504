/* The bso policy's exploration: a unimodal search in log2(batch size) around the best size,
 * probing a size only when its possible saving repays the probe (docs/policy.md, "The bso
 * policy", item 2). */
#include "core/bso_policy.h"

#include <math.h>

#include "core/bso_policy_internal.h"
#include "core/job.h"

/* Fewest recurrences assumed still to come when weighing a probe against its saving. */
#define MIN_HORIZON 10.0
/* How many one-epoch probes a passed-over size gets in all, so the search always ends. */
#define MAX_PROBES 3
/* How many runs a size whose run diverged gets again. */
#define MAX_RETRIES 1

double bso_policy_horizon(const struct bso_job *job)
{
    double runs = 0;
    for (size_t k = 0; k < job->spec.n_batch_sizes; k++)
        runs += (double)job->stats[k].successes;
    return runs > MIN_HORIZON ? runs : MIN_HORIZON;
}

bool bso_policy_risk_pays(const struct bso_job *job, size_t i, double e, double per, double best)
{
    const double could_save =
        (best - bso_policy_epochs_bound(job, i) * per) * bso_policy_horizon(job);
    return could_save > ((double)job->spec.max_epochs - e) * per;
}

/* Sizes the search may still try: never tried, passed over after one epoch (a few times), or
 * whose run diverged beyond what a smaller size's steps allow (once more: some seeds diverge
 * at any size). */
bool bso_policy_open_size(const struct bso_job *job, size_t i)
{
    const struct bso_bs_stat *s = &job->stats[i];
    return bso_policy_usable(job, i) && !bso_policy_struck(job, i) &&
           (s->status == BSO_BS_UNTRIED || (s->status == BSO_BS_PASSED && s->runs < MAX_PROBES) ||
            (s->runs <= MAX_RETRIES && bso_policy_diverged_in_steps(job, i)));
}

/* Whether size i bounds the search on its side: it was tried and may not be tried again, and
 * what its runs showed is about its epochs. Sizes that cannot run (unfit, infeasible) and sizes
 * whose runs diverged are as good as absent. */
static bool bounds_search(const struct bso_job *job, int i)
{
    return bso_policy_usable(job, (size_t)i) && !bso_policy_open_size(job, (size_t)i) &&
           !bso_policy_diverged(job, (size_t)i);
}

/* The open size (never tried, where `untried`) whose log2 is closest to `target` among indices
 * in [from, to]; -1 if none. */
static int closest_open(const struct bso_job *job, int from, int to, double target, bool untried)
{
    int best = -1;
    for (int k = from; k <= to; k++) {
        if (!bso_policy_open_size(job, (size_t)k) ||
            (untried && job->stats[k].status != BSO_BS_UNTRIED))
            continue;
        double d = fabs(log2((double)job->spec.batch_sizes[k]) - target);
        if (best < 0 || d < fabs(log2((double)job->spec.batch_sizes[best]) - target))
            best = k;
    }
    return best;
}

/* The cost per epoch a probe of size c is weighed at. A size made dearer only by a guess (a
 * jump seen elsewhere) is weighed at its own cost, as Thompson sampling draws it: a probe there
 * tests the guess. One never run, between sizes a jump moved and did not move, at the lower of
 * their levels where that is less: its first epoch tells which side of the jump it is on (time
 * x2 at and above librispeech's optimum on the V100: the job left the dearer 48 for 24, and 32
 * between them, now the cheapest, was weighed at a cost halfway to 48's new level and never
 * run). */
static double probe_per_epoch(const struct bso_job *job, int c)
{
    return bso_bs_unguessed(&job->stats[c], job->stats[c].status == BSO_BS_UNTRIED
                                                ? bso_policy_probe_epoch_cost(job, (size_t)c)
                                                : bso_policy_epoch_cost(job, (size_t)c));
}

/* What a probe of size c is expected to cost by the central estimate of its epochs (a size
 * passed over: what its go/no-go and stop read), where probe_gain takes the optimistic bound;
 * INFINITY where no estimate can be made, so that such a size ranks last. */
static double central_probe_cost(const struct bso_job *job, int c)
{
    const double epochs = job->stats[c].status == BSO_BS_PASSED
                              ? bso_policy_passed_epochs(job, (size_t)c)
                              : bso_policy_epochs_estimate(job, (size_t)c);
    const double cost = epochs * probe_per_epoch(job, c);
    return isnan(cost) ? INFINITY : cost;
}

/* What probing size c is worth against best_cost: its possible saving over the recurrences still
 * expected, less about one epoch of it; false when it cannot beat best_cost or does not repay. */
static bool probe_gain(const struct bso_job *job, int c, double best_cost,
                       const struct bso_spread *spread, double *gain)
{
    const double per = probe_per_epoch(job, c);
    /* Untried: judged optimistically (its first epoch will tell). Passed over: its cost
     * per epoch is known, so by the central estimate, as at its go/no-go. */
    const double optimistic = job->stats[c].status == BSO_BS_PASSED
                                  ? bso_policy_passed_epochs(job, (size_t)c) * per
                                  : bso_policy_epochs_bound(job, (size_t)c) * per;
    /* Worth a probe only if its possible saving over the recurrences still expected repays
     * about one epoch of it: the probe's first epoch then measures its real cost per epoch
     * (see bso_policy_decide), and, in a recurrence whose failures spread toward it, the runs
     * they may waste there (bso_policy_spread_risk). No best to beat (every size that reached
     * just failed): the cheapest-looking goes. */
    *gain = isinf(best_cost) ? -optimistic
                             : (best_cost - optimistic) * bso_policy_horizon(job) - per -
                                   bso_policy_spread_risk(job, spread, (size_t)c);
    return optimistic < best_cost && (isinf(best_cost) || *gain > 0);
}

/* Whether the search passed size k on its way to the best: k was tried here and may not be
 * tried again, and did not run as a candidate for the best after the job changed (see
 * bso_policy_explore). A size that failed only in the job this one was transferred from
 * (bso_policy_transfer) was not passed by a search on this hardware. */
static bool searched_past(const struct bso_job *job, size_t k)
{
    const struct bso_bs_stat *s = &job->stats[k];
    return s->total_runs > 0 && bso_policy_usable(job, k) && !bso_policy_open_size(job, k) &&
           !(s->change_mark > 0 && s->successes > 0) && !bso_policy_raised_alarm(job, k);
}

/* The open size in [from, to] whose probe repays most against best_cost (probe_gain), with
 * its gain; -1 if none repays. */
static int most_gain_between(const struct bso_job *job, int from, int to, double best_cost,
                             const struct bso_spread *spread, double *gain)
{
    int pick = -1;
    for (int k = from; k <= to; k++) {
        double g;
        if (bso_policy_open_size(job, (size_t)k) && probe_gain(job, k, best_cost, spread, &g) &&
            (pick < 0 || g > *gain)) {
            pick = k;
            *gain = g;
        }
    }
    return pick;
}

/* Whether some open size in [from, to] would repay a probe against best_cost (probe_gain). */
static bool probe_repays_between(const struct bso_job *job, int from, int to, double best_cost,
                                 const struct bso_spread *spread)
{
    for (int k = from; k <= to; k++) {
        double gain;
        if (bso_policy_open_size(job, (size_t)k) && probe_gain(job, k, best_cost, spread, &gain))
            return true;
    }
    return false;
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
        if (bso_policy_open_size(job, (size_t)k) && job->stats[k].status == BSO_BS_UNTRIED &&
            (best < 0 || fabs(log2((double)job->spec.batch_sizes[k]) - mid) <
                             fabs(log2((double)job->spec.batch_sizes[best]) - mid)))
            best = k;
    return best;
}

/* The open size nearest (in log2) halfway between the best g and size p beyond it, passed over
 * after a probe, when its probe repays (probe_gain) and its central estimate beats best_cost
 * (central_probe_cost); else -1. An expansion that lands on a passed-over size weighs that
 * size again, by its measured cost per epoch, and while it may still be probed (MAX_PROBES)
 * it does not bound the search, so without this the sizes between it and the best would never
 * be weighed: librispeech on the V100 went from its default, 192, to 96, passed over 24 two
 * octaves down, and stayed on 96 for good, 8.9% above 48, its optimum, never tried. Only when
 * the search has nothing else to probe (bso_policy_explore), and by the central estimate
 * rather than the optimistic bound, which below the best, bounded by the steps law alone, is
 * loose: taken as a bisection point ranked with the other side's candidate by gain, 16, halfway
 * to a passed-over 8, went before 64 when the optimum 32 of librispeech on the A40 took 1.5x
 * the time per epoch, and the job stayed on 16, 14% above 64. Sets *central to its central
 * estimate when it returns a size. */
static int halfway_to_passed(const struct bso_job *job, int g, int p, double best_cost,
                             const struct bso_spread *spread, double *central)
{
    const double mid =
        (log2((double)job->spec.batch_sizes[g]) + log2((double)job->spec.batch_sizes[p])) / 2;
    const int h = p < g ? closest_open(job, p + 1, g - 1, mid, false)
                        : closest_open(job, g + 1, p - 1, mid, false);
    double gain;
    if (h < 0 || !probe_gain(job, h, best_cost, spread, &gain))
        return -1;
    *central = central_probe_cost(job, h);
    return *central < best_cost ? h : -1;
}

/* A transferred job's untried size whose epochs on the old hardware, at its cost per epoch here,
 * beat best_cost and repay a run (as probe_gain weighs one), wherever it lies: the one of most
 * gain, or -1. The search around the best is bounded by sizes that ran once here, and one run
 * may lose a near-tie by chance; the old job's evidence past such a bound is worth a run. */
static int transferred_beyond(const struct bso_job *job, double best_cost)
{
    int pick = -1;
    double pick_gain = 0;
    for (size_t k = 0; k < job->spec.n_batch_sizes; k++) {
        const double prior = bso_policy_transferred_prior(job, k);
        if (!(prior > 0) || job->stats[k].status != BSO_BS_UNTRIED || !bso_policy_open_size(job, k))
            continue;
        const double per = bso_policy_epoch_cost(job, k);
        const double gain = (best_cost - prior * per) * bso_policy_horizon(job) - per;
        if (prior * per < best_cost && gain > 0 && (pick < 0 || gain > pick_gain)) {
            pick = (int)k;
            pick_gain = gain;
        }
    }
    return pick;
}

/* Whether the job's last change reaches past size a on side dir: a size there, run since the
 * change, needs more epochs than it did, by more than two spreads (its mean's and one run's, as
 * common_shift tests). A size that had not reached before is held to what the sizes either side
 * of it that had needed then (bso_policy_change_shift_between): librispeech on the A40 after
 * epochs x2.0 at and above its optimum (32), whose 64 first ran after the alarm at 32, doubled
 * too, and 16 below the alarm, the new optimum, went unprobed while a stale 128 was drawn. */
static bool change_reaches(const struct bso_job *job, int a, int dir)
{
    const int n = (int)job->spec.n_batch_sizes;
    double cv2 = -1;
    for (int k = a + dir; k >= 0 && k < n; k += dir) {
        double shift;
        if (!bso_policy_change_shift_between(job, (size_t)k, &shift))
            continue;
        if (cv2 < 0)
            cv2 = bso_policy_pooled_cv2(job); /* once, and only when a size can tell */
        if (shift > bso_policy_two_spreads(cv2, (double)job->stats[k].successes))
            return true;
    }
    return false;
}

/* Whether size `edge`, on side dir of the best, ends the search that way. The size whose run
 * found the change (while that is its only run since) does not where the change is seen to reach
 * past it on the best's side: a change hits a range of sizes, and one that reaches from the
 * alarm's size toward the best may have spared the sizes beyond it, which its run, the change's
 * own, says nothing about (cifar100 after epochs x2.0 at and above its optimum, 128: the search
 * moved up to 256 and 512, both doubled, and 64 below the doubled 128, the new optimum, was
 * never probed). */
static bool ends_search(const struct bso_job *job, int edge, int dir)
{
    return bounds_search(job, edge) &&
           !(bso_policy_raised_alarm(job, (size_t)edge) && change_reaches(job, edge, -dir));
}

/* The first size from `from` on, going dir, that ends the search on that side (ends_search):
 * its index, or -1 or n past the end. */
static int search_end(const struct bso_job *job, int from, int dir)
{
    const int n = (int)job->spec.n_batch_sizes;
    int k = from;
    while (k >= 0 && k < n && !ends_search(job, k, dir))
        k += dir;
    return k;
}

/* Before the job ever changed, once the search has nothing left to probe: a bracket edge known
 * from one run that reached, whose cost lies within two spreads of the best's (that run's noise
 * and the best's mean's: bso_policy_two_spreads), whose one run the curve through the sizes
 * calls unlucky (the posterior of its epochs, shrunk toward that curve, lies below the run),
 * and past which a probe would repay (probe_gain), runs again before it is trusted to end the
 * search; the one nearest the best's cost first, -1 when none. Where the curve agrees with the
 * run (epochs that never vary from size to size: sentiment140), a second run would only repeat
 * it. A unimodal search takes its edges at their word, and one unlucky
 * run at an edge hides every size beyond it (movielens-1m on the A40: from 2048 the search
 * stepped two octaves up to 8192, whose one run drew the path that needs 7 epochs of its 7, 4,
 * 4, 4, 5; 4096 between them beat both, and 16384, the optimum, was never tried: ten jobs in
 * 140 at 1.4-1.5 times the oracle for good, docs/policy.md "Late in a job's life"). Each edge
 * runs again once at most: then it has two runs, whether the second reached or not (one that
 * missed would otherwise run again in every recurrence). After a change, what the change moved
 * decides which sizes the search re-checks. */
static int edge_to_run_again(const struct bso_job *job, int g, double best_cost,
                             const struct bso_spread *spread)
{
    const int n = (int)job->spec.n_batch_sizes;
    double cv2 = -1, mean_log[BSO_MAX_BATCH_SIZES], sd_log[BSO_MAX_BATCH_SIZES];
    int pick = -1;
    double pick_gap = 0;
    for (int dir = -1; dir <= 1; dir += 2) {
        const int edge = search_end(job, g + dir, dir);
        if (edge < 0 || edge >= n || job->stats[edge].runs != 1 ||
            job->stats[edge].successes != 1 || bso_policy_struck(job, (size_t)edge))
            continue;
        if (cv2 < 0) { /* once, and only when an edge can use them */
            cv2 = bso_policy_pooled_cv2(job);
            bso_policy_epochs_posterior(job, mean_log, sd_log);
        }
        const double gap = log(bso_bs_expected_cost(&job->stats[edge]) / best_cost);
        if (!(gap < bso_policy_two_spreads(cv2, (double)job->stats[g].successes)) ||
            !(mean_log[edge] < log(bso_bs_mean_epochs(&job->stats[edge]))))
            continue;
        const int next = search_end(job, edge + dir, dir); /* past the edge */
        const bool beyond = dir > 0
                                ? probe_repays_between(job, edge + 1, next - 1, best_cost, spread)
                                : probe_repays_between(job, next + 1, edge - 1, best_cost, spread);
        if (beyond && (pick < 0 || gap < pick_gap)) {
            pick = edge;
            pick_gap = gap;
        }
    }
    return pick;
}

/* Whether a size that reached the target has failed since with evidence of a change building
 * (drift_fail): the job may be changing, and a miss elsewhere is then as likely the change's as
 * chance's. */
static bool failures_building(const struct bso_job *job)
{
    for (size_t k = 0; k < job->spec.n_batch_sizes; k++)
        if (job->stats[k].drift_fail > 0)
            return true;
    return false;
}

/* Before the job ever changed, once the search has nothing left to probe: the edge above every
 * size that reached, when it never reached and its runs ran to max_epochs, those misses may
 * have been bad luck (bso_policy_unlucky_chance: by every slope the scaling laws allow past the
 * largest size that reached, how likely its run was to reach), and the saving if it was repays
 * the risk of a second miss: that chance times what the edge would save against best_cost at
 * its central estimate over the fewest recurrences a probe is weighed against (MIN_HORIZON),
 * against one more run to max_epochs at the other chance. Its index, or -1. Not over the job's
 * horizon, which grows with every model trained: against it, any miss with a saving is run
 * again in the end, however unlikely its luck (over the held-out sets, 268 of the 341 cells it
 * moved then cost more; weighed over MIN_HORIZON, 121 of 187, with most of the gain kept). One run
 * that never reaches (a diverged seed) there hides every larger size from the search for the job's
 * life (a held-out synthetic workload whose default, 32, drew its one path in five that never
 * reaches: the search settled on 16, at 3.3 times the optimum, 128, for good; docs/policy.md,
 * "Held-out synthetic workloads"). Not below a size that reached, where the curve interpolates and
 * a miss it calls unlikely was more often the job's change than chance (squad on the V100 after
 * x1.6 at and above its optimum: 12, below a 16 that reached before the change, failed again in 5
 * jobs of 20), nor while failures elsewhere build toward an alarm (failures_building). Again after
 * each further miss while the saving still repays, as the chance falls with every miss (its
 * misses against a prior worth one run): a count of one, as first kept, left a default whose
 * never-reaching path came up twice in a row bounding the search for life (a held-out workload
 * at 7 times the oracle on its smallest size). */
static int failed_edge_to_run_again(const struct bso_job *job, int g, double best_cost)
{
    const int n = (int)job->spec.n_batch_sizes;
    const int edge = search_end(job, g + 1, 1);
    if (edge >= n || job->stats[edge].status != BSO_BS_FAILED ||
        !bso_policy_above_every_reached(job, (size_t)edge) || failures_building(job))
        return -1;
    const double chance = bso_policy_unlucky_chance(job, (size_t)edge);
    if (isnan(chance))
        return -1;
    const double max_epochs = (double)job->spec.max_epochs;
    const double per = bso_policy_epoch_cost(job, (size_t)edge);
    const double cost = bso_policy_unlucky_epochs(job, (size_t)edge) * per;
    const double gain = chance * (best_cost - cost) * MIN_HORIZON - (1 - chance) * max_epochs * per;
    return gain > 0 ? edge : -1;
}

/* The next size to explore around the best one g, or -1. Each side offers one candidate: the
 * bisection point of the bracket (g, nearest tried size on that side) when there is one (after a
 * change, where it does not repay, the size of most gain between it and g), else an expansion
 * one octave out, or two when the last step that way found the best. When neither repays, in
 * turn: the size halfway to a passed-over size an expansion landed on (halfway_to_passed), a
 * transferred job's size past the bounds (transferred_beyond), an edge known from one run
 * (edge_to_run_again), and an edge whose one run may have missed by bad luck
 * (failed_edge_to_run_again). */
int bso_policy_explore(const struct bso_job *job, int g, double best_cost)
{
    const int n = (int)job->spec.n_batch_sizes;
    const double xg = log2((double)job->spec.batch_sizes[g]);
    struct bso_spread spread;
    bso_policy_spread(job, &spread);
    const bool changed = bso_policy_change_trial(job) > 0;
    int pick = -1, halfway = -1;
    double pick_rank = 0, halfway_cost = INFINITY;
    for (int dir = -1; dir <= 1; dir += 2) {
        /* The nearest size on this side that ends the search, or past the end. */
        const int edge = search_end(job, g + dir, dir);
        const int from = dir < 0 ? edge + 1 : g + 1, to = dir < 0 ? g - 1 : edge - 1;
        if (from > to)
            continue;
        double target;
        if (edge >= 0 && edge < n) {
            target = (xg + log2((double)job->spec.batch_sizes[edge])) / 2; /* bisect */
        } else {
            /* Expand: two octaves when a size beyond the best, on the other side, was
             * already passed (the search moved this way), else one. After the job changed,
             * the search starts again from the best size since and steps one octave: a size
             * known only from before was not passed by the search since, nor was the size
             * whose run found the change, nor one that reached since (each ran as a candidate
             * for the best, re-checking what was known before, not as a step of a search). */
            int passed = 0;
            for (int k = g - dir; k >= 0 && k < n; k -= dir)
                passed |= searched_past(job, (size_t)k);
            target = xg + dir * (passed ? 2.0 : 1.0);
        }
        int c = closest_open(job, from, to, target, false);
        if (c < 0)
            continue;
        double gain;
        bool pays = probe_gain(job, c, best_cost, &spread, &gain);
        const bool bisecting = edge >= 0 && edge < n;
        if (!pays && bisecting && changed) {
            /* After a change, a bisection point that does not repay does not speak for the
             * sizes between it and the best: a change hits a range of sizes, and an edge run
             * since it bounds the sizes near it, by the steps law, tighter than those near the
             * best (librispeech on the V100 after epochs x2.0 at and above its optimum: from
             * 24, the search weighed only 48, halfway to the doubled 96 that bounds it to 8
             * epochs, and never 32, the new optimum). The open size of most gain between the
             * bisection point and the best goes instead. Not past the bisection point, nearer
             * the edge: there the change is likelier still (cifar100 after x3.0 at and above
             * its optimum: from 64, a probe of 256 ran 89 epochs before it was stopped). Before
             * any change the bisection point stands for its half of the bracket (weighing every
             * size there cost more in probes than it found: docs/policy.md), unless it was
             * passed over (below). */
            const int inner = dir > 0
                                  ? most_gain_between(job, from, c - 1, best_cost, &spread, &gain)
                                  : most_gain_between(job, c + 1, to, best_cost, &spread, &gain);
            if (inner >= 0) {
                c = inner;
                pays = true;
            }
        }
        if (!pays && bisecting && !changed && job->stats[c].status == BSO_BS_PASSED) {
            /* Before any change, a bisection point that was passed over after its one-epoch
             * probe was judged against the best of its day, and its probe measured only its own
             * cost per epoch: it does not speak for the untried sizes of the bracket, and the one
             * nearest the bisection goes instead, if it repays (a held-out workload whose
             * optimum, 16, lay in the bracket from 8 to 24 behind 12, passed over against 24
             * before 24's one diverged run made 8 the best: every job of one seed stayed on 8,
             * 25% dearer, for life; docs/policy.md "The bso policy", item 2). */
            const int u = closest_open(job, from, to, target, true);
            if (u >= 0 && probe_gain(job, u, best_cost, &spread, &gain)) {
                c = u;
                pays = true;
            }
        }
        if (!pays && !bisecting && job->stats[c].status == BSO_BS_PASSED) {
            double central;
            const int h = halfway_to_passed(job, g, c, best_cost, &spread, &central);
            if (h >= 0 && (halfway < 0 || central < halfway_cost)) {
                halfway = h;
                halfway_cost = central;
            }
        }
        if (!pays && !bisecting && bso_policy_transferred(job)) {
            /* A transferred job's sizes were not tried by a search moving one way on this
             * hardware, and its costs per epoch are another GPU's until measured here: an
             * expansion that does not repay gives way to the untried size halfway to the
             * nearest size that ran on that side. */
            const int half = halfway_to_ran(job, g, dir);
            if (half >= 0) {
                c = half;
                pays = probe_gain(job, c, best_cost, &spread, &gain);
            }
        }
        if (!pays)
            continue;
        /* After a change, the two sides' candidates, each worth a probe by its optimistic
         * bound, are ranked by their central estimates (docs/policy.md, "The search ranks its
         * probes by the central estimate after a change"): the bounds are loose unequally, and
         * the loosest is not the likeliest saving. */
        const double rank = changed ? -central_probe_cost(job, c) : gain;
        if (pick < 0 || rank > pick_rank) {
            pick = c;
            pick_rank = rank;
        }
    }
    if (pick < 0)
        pick = halfway;
    if (pick < 0 && isfinite(best_cost))
        pick = transferred_beyond(job, best_cost);
    if (pick < 0 && !changed && isfinite(best_cost))
        pick = edge_to_run_again(job, g, best_cost, &spread);
    if (pick < 0 && !changed && isfinite(best_cost))
        pick = failed_edge_to_run_again(job, g, best_cost);
    return pick;
}
