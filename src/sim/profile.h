/*
 * A device profile derived from the traces, as bso.probe would measure it: samples/s and
 * joules/sample of every batch size at the GPU's largest power limit, with the probe's
 * measurement noise, and the cost of the probe itself (a few training steps per size).
 */
#ifndef BSO_SIM_PROFILE_H
#define BSO_SIM_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/traces.h"

struct sim_profile_entry {
    int64_t bs;
    bool feasible; /* false: did not fit (the rates are NAN) */
    double samples_per_s, joules_per_sample;
};

/* What a probe costs and how exactly it measures. */
struct sim_probe_options {
    int64_t steps; /* training steps per size (warm-up included): bso.probe's 1 + 3 */
    double noise;  /* log-normal scatter of each measured rate (0: exact) */
};

/* The profile of every batch size of job: one entry each in job->bs order, then the sizes that
 * do not fit (job->unfit) as infeasible; out holds job->n_bs + job->n_unfit. The noise is
 * drawn from a stream seeded by (seed, workload, batch size), so every policy meets the same
 * profile. Needs job->w.samples_per_epoch. */
void sim_profile_derive(const struct sim_job *job, const struct sim_probe_options *po, int64_t seed,
                        struct sim_profile_entry *out);

/* The probe's own time (s) and energy (J): po->steps steps at every size at the largest power
 * limit, and one failed step at twice the largest size (the try that finds the limit) charged
 * as two steps of the largest. */
void sim_probe_cost(const struct sim_job *job, const struct sim_probe_options *po, double *time,
                    double *energy);

#endif
