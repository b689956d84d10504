/* Profiles derived from the traces; see profile.h. */
#include "sim/profile.h"

#include <math.h>

#include "sim/sim.h"

/* The profile noise's stream of a size: far from the run indices of the training paths. */
#define PROFILE_STREAM 0x9e3779b9u

void sim_profile_derive(const struct sim_job *job, const struct sim_probe_options *po, int64_t seed,
                        struct sim_profile_entry *out)
{
    const double n = (double)job->w.samples_per_epoch;
    for (size_t b = 0; b < job->n_bs; b++) {
        const struct sim_bs *s = &job->bs[b];
        const size_t maxp = s->n_pl - 1;
        bso_rng rng;
        sim_seed_stream(&rng, job, seed, s->bs, PROFILE_STREAM);
        const double rate_noise = exp(po->noise * bso_rng_standard_normal(&rng));
        const double power_noise = exp(po->noise * bso_rng_standard_normal(&rng));
        const double samples_per_s = n / s->time_per_epoch[maxp] * rate_noise;
        out[b] = (struct sim_profile_entry){
            .bs = s->bs,
            .feasible = true,
            .samples_per_s = samples_per_s,
            .joules_per_sample = s->power[maxp] * power_noise / samples_per_s,
        };
    }
    for (size_t u = 0; u < job->n_unfit; u++)
        out[job->n_bs + u] = (struct sim_profile_entry){job->unfit[u], false, NAN, NAN};
}

void sim_probe_cost(const struct sim_job *job, const struct sim_probe_options *po, double *time,
                    double *energy)
{
    const double n = (double)job->w.samples_per_epoch;
    *time = 0;
    *energy = 0;
    for (size_t b = 0; b < job->n_bs; b++) {
        const struct sim_bs *s = &job->bs[b];
        const size_t maxp = s->n_pl - 1;
        const double steps = (double)po->steps + (b + 1 == job->n_bs ? 2.0 : 0.0);
        const double t = steps * (double)s->bs / n * s->time_per_epoch[maxp];
        *time += t;
        *energy += t * s->power[maxp];
    }
}
