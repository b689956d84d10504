/* What one epoch at each batch size of a job costs the bso policy: measured (with the first
 * epoch's warm-up taken out), scaled by a device profile, or interpolated between measured
 * sizes (docs/policy.md, "The bso policy", items 2 and 6). */
#include "core/bso_policy.h"

#include <math.h>

#include "core/bso_policy_internal.h"
#include "core/job.h"

/* How cost per epoch is assumed to scale with batch size before two sizes are measured:
 * (b_measured / b)^this, halfway between flat and perfect scaling. */
#define PER_EPOCH_PRIOR_SLOPE 0.5

/* How much dearer a size's first epoch is than its steady epochs, learnt from first runs that
 * went past their first epoch (1 until there is one). */
static double warm_up_factor(const struct bso_job *job)
{
    double first = 0, steady = 0;
    for (size_t a = 0; a < job->spec.n_batch_sizes; a++) {
        first += job->stats[a].warm_first_sum;
        steady += job->stats[a].warm_steady_sum;
    }
    return first > 0 && steady > 0 && first > steady ? first / steady : 1;
}

/* The steady cost per epoch a first epoch costing `first` implies. Warm-up is partly a fixed
 * cost per run (a process's cold start: on an H200 the same 0.3 s at every size, which as a
 * factor ran from 1.2 to 4.4, docs/policy.md "A move in real training") and partly a factor of
 * an epoch (JIT power profiling runs the epoch at other limits). With two or more sizes' first
 * runs that went on (one pair each: first epoch, steady epochs), first = fixed + factor x steady
 * is fitted over them by least squares; with fewer, or where the fit says neither (factor not
 * positive, fixed negative), the learnt factor alone (warm_up_factor). Never more than
 * `first`, nor a smaller share of it than any of those first runs kept. */
double bso_policy_steady_cost(const struct bso_job *job, double first)
{
    const double by_factor = first / warm_up_factor(job);
    double n = 0, x = 0, y = 0, xx = 0, xy = 0, least_share = 1;
    for (size_t a = 0; a < job->spec.n_batch_sizes; a++) {
        const double f = job->stats[a].warm_first_sum, st = job->stats[a].warm_steady_sum;
        if (!(f > 0 && st > 0))
            continue;
        n++;
        x += st;
        y += f;
        xx += st * st;
        xy += st * f;
        least_share = fmin(least_share, st / f);
    }
    const double spread = n >= 2 ? xx - x * x / n : 0;
    if (!(spread > 1e-9 * xx))
        return by_factor;
    const double factor = (xy - x * y / n) / spread, fixed = (y - factor * x) / n;
    if (!(factor > 0) || fixed < 0)
        return by_factor;
    return fmin(first, fmax((first - fixed) / factor, first * least_share));
}

/* Cost per epoch of a size, with warm-up taken out of sizes measured on first epochs only. */
static double steady_epoch(const struct bso_job *job, size_t i)
{
    const struct bso_bs_stat *s = &job->stats[i];
    const bool one_epoch_runs = s->epochs_sum > 0 && s->epochs_sum == (double)s->runs;
    return one_epoch_runs ? bso_policy_steady_cost(job, bso_bs_cost_per_epoch(s))
                          : bso_bs_cost_per_epoch(s);
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

/* Whether a size's cost per epoch is measured (bso_policy_nearest_sizes). */
static bool measured(const struct bso_bs_stat *s)
{
    return s->epochs_sum > 0;
}

/* Its level without a guess that another size's jump made it dearer, which no run here has
 * borne out (bso_bs_unguessed: as the search and Thompson sampling weigh it). */
static double own_level(const struct bso_bs_stat *s)
{
    return bso_bs_unguessed(s, bso_bs_cost_level(s));
}

/* Cost per epoch at size b between sizes b0 and b1 that cost c0 and c1 an epoch, by what an
 * epoch is made of: a cost per sample, the same at every size, and a cost per step (launches,
 * synchronisation, the optimizer), paid N/b times. c(b) = per_sample + per_step / b, linear in
 * 1/b, is then the curve through both, where both parts come out not negative. Interpolating in
 * log space instead overestimates the sizes between, where the curve flattens: over the traces'
 * triples of sizes up to three apart, leave-one-out, the root mean square error in log cost was
 * lower this way on 10 of the 12 workload/GPU pairs, within 0.0001 on the others
 * (tools/interpolation-error.py; docs/policy.md, "Cost per epoch between measured sizes");
 * librispeech on the V100 never tried its optimum, 48, weighed at 1.34M an epoch between 24 and 96,
 * against 1.20M measured (1.30M this way). Where one part would be negative (cost per epoch rising
 * with size, or falling faster than 1/b), the model does not hold, and log space interpolates.
 * Returns NAN outside (b0, b1). */
static double per_step_interpolate(double b0, double c0, double b1, double c1, double b)
{
    if (!(b > fmin(b0, b1) && b < fmax(b0, b1)))
        return NAN;
    const double per_step = (c0 - c1) / (1 / b0 - 1 / b1), per_sample = c1 - per_step / b1;
    return per_step >= 0 && per_sample >= 0 ? per_sample + per_step / b : NAN;
}

/* Cost per epoch at size i, interpolated between measured sizes lo and hi (extrapolated, in log
 * space, where i lies outside them); with `level` > 0, each taken back to that level of cost
 * (cost_level) first. */
static double interpolate(const struct bso_job *job, size_t i, int lo, int hi, double level)
{
    const struct bso_bs_stat *a = &job->stats[lo], *b = &job->stats[hi];
    const double b0 = (double)job->spec.batch_sizes[lo], b1 = (double)job->spec.batch_sizes[hi];
    const double b_i = (double)job->spec.batch_sizes[i];
    double c0 = bso_bs_cost_per_epoch(a), c1 = bso_bs_cost_per_epoch(b);
    if (level > 0) {
        c0 *= level / bso_bs_cost_level(a);
        c1 *= level / bso_bs_cost_level(b);
    }
    const double by_parts = per_step_interpolate(b0, c0, b1, c1, b_i);
    return isnan(by_parts) ? exp(bso_interpolate(log2(b0), log(c0), log2(b1), log(c1), log2(b_i)))
                           : by_parts;
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
    int lo, hi;
    bso_policy_nearest_sizes(job, i, measured, &lo, &hi);
    if (lo < 0 && hi < 0)
        return NAN;
    if (lo < 0 || hi < 0) { /* extrapolate from the two nearest on the measured side */
        const int n = (int)job->spec.n_batch_sizes;
        int a = lo >= 0 ? lo : hi, b = -1;
        for (int k = a + (lo >= 0 ? -1 : 1); k >= 0 && k < n && b < 0; k += lo >= 0 ? -1 : 1)
            if (st[k].epochs_sum > 0)
                b = k;
        if (b < 0) /* one measured size: per-sample cost falls as batches grow, by a prior */
            return steady_epoch(job, (size_t)a) *
                   pow((double)job->spec.batch_sizes[a] / (double)job->spec.batch_sizes[i],
                       PER_EPOCH_PRIOR_SLOPE);
        lo = a < b ? a : b;
        hi = a < b ? b : a;
    }
    return interpolate(job, i, lo, hi, 0);
}

double bso_policy_probe_epoch_cost(const struct bso_job *job, size_t i)
{
    const double per = bso_policy_epoch_cost(job, i);
    int lo, hi;
    bso_policy_nearest_sizes(job, i, measured, &lo, &hi);
    if (lo < 0 || hi < 0 || own_level(&job->stats[lo]) == own_level(&job->stats[hi]))
        return per;
    const double lower = fmin(own_level(&job->stats[lo]), own_level(&job->stats[hi]));
    return fmin(per, interpolate(job, i, lo, hi, lower));
}
