/*
 * The decision on a progress report: keep training, or stop (converged, over the cost bound, or
 * out of epochs). Zeus's rules exactly: the bound is beta * the job's lowest cost so far, equality
 * still counts as within it, and the first final result of a job is never early-stopped.
 */
#ifndef BSO_CORE_REPORT_H
#define BSO_CORE_REPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/spec.h"

/* A progress report after an evaluation. time and energy are cumulative since training began. */
struct bso_report {
    double time;   /* s */
    double energy; /* J, all of the job's GPUs */
    double metric;
    int64_t current_epoch; /* 1-based count of evaluations */
    const char
        *energy_source; /* where the energy figure came from ("nvml-counter", ...), or NULL */
    /* Optional, from a run whose batch size changes while it trains: the samples it processed so
     * far and their mean per optimizer step. Recorded with the trial; the policy ignores them
     * (the run counts for the batch size the server chose). */
    bool has_progress;
    int64_t samples;
    double mean_batch_size;
};

struct bso_decision {
    bool stop_train;
    bool converged; /* reached the target within the cost bound */
    double cost;
    char message[512];
};

/* Checks the numbers in a report: time and energy finite and >= 0, metric finite, epoch >= 0.
 * Returns 0, or BSO_EINVAL with a sentence in msg. */
int bso_report_check(const struct bso_report *rep, char *msg, size_t cap);

/* Decides on rep, from a trial at batch_size, for a job whose lowest final cost so far is min_cost
 * (has_min_cost false when there is none yet). Never fails. */
void bso_report_decide(const struct bso_job_spec *spec, bool has_min_cost, double min_cost,
                       int64_t batch_size, const struct bso_report *rep, struct bso_decision *out);

#endif
