/* The first search of a job that has never reached its target under the bso policy: the
 * default, then smaller sizes by a galloping search, the sizes that search skipped, the larger
 * ones, and then passes over the sizes again, ever further apart; see docs/policy.md ("Passes
 * ever further apart" in "Held-out synthetic workloads"). */
#include "core/bso_policy.h"

#include <math.h>

#include "core/bso_policy_internal.h"
#include "core/job.h"

/* How many passes over the sizes, each a run to max_epochs, a job that never reached the target
 * makes at once: a run may miss by chance (a size that reaches three runs in five misses in a
 * first pass two times in five), and a second pass finds most such jobs a model. After that the
 * job is refused a size (BSO_EPRUNED) and opens pass m + 1 only once 2^(m - NEVER_TRAINED_TRIES)
 * predictions were refused since its last run: passes ever further apart (after 1, 2, 4, ...
 * refused recurrences), so that a target no size can reach costs a number of passes that grows
 * with the log of the recurrences, and a job that missed by chance is not given up for good. */
#define NEVER_TRAINED_TRIES 2

/* Whether size k may run again in a job that never trained: it ran to max_epochs and failed. */
static bool may_try_again(const struct bso_job *job, size_t k)
{
    const struct bso_bs_stat *s = &job->stats[k];
    return bso_policy_usable(job, k) && s->status == BSO_BS_FAILED && s->misses >= 1;
}

/* The fewest runs to max_epochs of the sizes that may try again (-1 when none may), and
 * whether a pass over them is under way (some ran once more than that). */
static double fewest_misses(const struct bso_job *job, bool *under_way)
{
    double fewest = -1, most = -1;
    for (size_t k = 0; k < job->spec.n_batch_sizes; k++)
        if (may_try_again(job, k)) {
            const double m = job->stats[k].misses;
            fewest = fewest < 0 || m < fewest ? m : fewest;
            most = m > most ? m : most;
        }
    *under_way = most > fewest;
    return fewest;
}

/* Whether the job's user said it changed (new data, a new model: POST /jobs/ID/changed, or a
 * new data_version) since its sizes last ran to max_epochs: what they showed was about the job
 * before, so the next pass opens at once. Both marks are the job's last trial number then, so
 * a declaration after the last failure's trial bears its number (one during that trial does
 * too, and opens a pass that was not needed, which is the cheaper mistake). */
static bool declared_since_last_failure(const struct bso_job *job)
{
    const double declared = (double)bso_policy_declared_trial(job);
    return declared > 0 && declared >= bso_policy_last_failure(job);
}

/* How many more refused predictions a pass that would make each size's run number m + 1 waits
 * for. */
static int64_t refusals_wanted(const struct bso_job *job, double fewest)
{
    if (fewest < NEVER_TRAINED_TRIES || declared_since_last_failure(job))
        return 0;
    const double wanted = ldexp(1, (int)fmin(fewest - NEVER_TRAINED_TRIES, 62));
    return wanted > (double)job->refusals ? (int64_t)(wanted - (double)job->refusals) : 0;
}

/* Whether size a goes before b in a pass over the sizes of a job that never trained: in the
 * second pass, the one that failed first (the first pass's order, which tries the sizes that
 * need fewer epochs early); from the third, when each size has run twice, the one whose runs
 * came closer to the target (a shortfall of 0, not known, after every known one), then the
 * one that failed first. */
static bool goes_before(const struct bso_bs_stat *a, const struct bso_bs_stat *b, double pass)
{
    const bool ka = a->shortfall > 0, kb = b->shortfall > 0;
    if (pass > NEVER_TRAINED_TRIES && ka != kb)
        return ka;
    if (pass > NEVER_TRAINED_TRIES && ka && a->shortfall != b->shortfall)
        return a->shortfall < b->shortfall;
    return a->fail_mark < b->fail_mark;
}

/* Before any size reached the target and once every size has been tried: the size with the
 * fewest runs to max_epochs that goes first in the pass, while a pass is under way or may
 * open; -1 otherwise. */
static int try_again(const struct bso_job *job)
{
    bool under_way;
    const double fewest = fewest_misses(job, &under_way);
    if (fewest < 0 || (!under_way && refusals_wanted(job, fewest) > 0))
        return -1;
    int best = -1;
    for (size_t k = 0; k < job->spec.n_batch_sizes; k++)
        if (may_try_again(job, k) && job->stats[k].misses <= fewest &&
            (best < 0 || goes_before(&job->stats[k], &job->stats[best], fewest + 1)))
            best = (int)k;
    return best;
}

void bso_policy_note_shortfall(struct bso_job *job, size_t i, double metric)
{
    const struct bso_job_spec *sp = &job->spec;
    const double gap =
        sp->higher_is_better_metric ? sp->target_metric - metric : metric - sp->target_metric;
    struct bso_bs_stat *s = &job->stats[i];
    if (gap > 0 && isfinite(gap) && (s->shortfall <= 0 || gap < s->shortfall))
        s->shortfall = gap;
}

int64_t bso_policy_refusals_to_next_pass(const struct bso_job *job, int64_t *passes)
{
    bool under_way;
    const double fewest = fewest_misses(job, &under_way);
    *passes = fewest > 0 ? (int64_t)fewest : 0;
    for (size_t k = 0; k < job->spec.n_batch_sizes; k++)
        if (job->stats[k].total_successes > 0 || job->stats[k].successes > 0)
            return -1;
    return fewest < 0 ? -1 : under_way ? 0 : refusals_wanted(job, fewest);
}

/* Whether size k may run and has not yet (before any size reached: the sizes still to try). */
static bool untried(const struct bso_job *job, int k)
{
    return job->stats[k].status == BSO_BS_UNTRIED && bso_policy_usable(job, (size_t)k);
}

/* Before any size has reached the target: the next size below the default d to try. The first
 * step is to the next smaller size, the second one octave below the lowest size tried, and
 * each later step twice as far as the one before (a galloping search for the largest size
 * that reaches), so that a default many sizes above it is left in a few failed runs, each up
 * to max_epochs, rather than one size at a time. What the steps skipped stays open: the search
 * climbs back from the first size that reaches, and if none below the lowest tried is left,
 * bso_policy_first_search tries the skipped ones. -1 when no size below the lowest tried is
 * untried. */
static int gallop_down(const struct bso_job *job, int d)
{
    int lowest = d, tried = 0;
    for (int k = d; k >= 0; k--)
        if (job->stats[k].status != BSO_BS_UNTRIED && bso_policy_usable(job, (size_t)k)) {
            lowest = k;
            tried++;
        }
    int next = -1;
    for (int k = lowest - 1; k >= 0 && next < 0; k--)
        if (untried(job, k))
            next = k;
    if (next < 0 || tried < 2)
        return next;
    const double target = log2((double)job->spec.batch_sizes[lowest]) - ldexp(1, tried - 2);
    int best = next;
    for (int k = next; k >= 0; k--)
        if (untried(job, k) && fabs(log2((double)job->spec.batch_sizes[k]) - target) <
                                   fabs(log2((double)job->spec.batch_sizes[best]) - target))
            best = k;
    return best;
}

int bso_policy_first_search(const struct bso_job *job, int d)
{
    if (untried(job, d))
        return d;
    const int step = gallop_down(job, d);
    if (step >= 0)
        return step;
    for (int k = d - 1; k >= 0; k--) /* below the default, what the steps skipped */
        if (untried(job, k))
            return k;
    for (int k = d + 1; k < (int)job->spec.n_batch_sizes; k++)
        if (untried(job, k))
            return k;
    return try_again(job);
}
