/*
 * Training traces in the format of shared/traces/README.md: summary_train.csv (the epoch at
 * which each run reached a target, per batch size) and summary_power_<gpu>.csv (seconds per
 * epoch and mean power per batch size and power limit), joined into one workload.
 */
#ifndef BSO_SIM_TRACES_H
#define BSO_SIM_TRACES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/spec.h"

/* Batch sizes per workload and GPU (as many as a job may have), runs per batch size, power
 * limits per batch size. */
#define SIM_MAX_BS BSO_MAX_BATCH_SIZES
#define SIM_MAX_PATHS 256
#define SIM_MAX_PL 32

/* One recurring job to simulate: the README's job settings. */
struct sim_workload {
    char dataset[48], network[48], optimizer[24];
    double target;
    bool higher_is_better;
    int64_t max_epochs;
    int64_t default_bs;        /* before capping at the largest batch size the GPU trace has */
    int64_t samples_per_epoch; /* the training set's size (the probe's cost); 0: unknown */
};

/* Built-in workloads (the README's table). *n gets the count. */
const struct sim_workload *sim_builtin_workloads(size_t *n);

/* Reads workloads from a CSV with the header
 * dataset,network,optimizer,target_metric,higher_is_better,max_epochs,default_batch_size and,
 * optionally, samples_per_epoch.
 * Returns the count, or -1 with a reason in err. */
int sim_read_workloads(const char *path, struct sim_workload *out, size_t cap, char *err,
                       size_t errcap);

/* What the traces say about one batch size of a workload on a GPU. */
struct sim_bs {
    int64_t bs;
    size_t n_paths;
    int64_t target_epoch[SIM_MAX_PATHS]; /* -1: this run never reached the target */
    size_t n_pl;
    double pl[SIM_MAX_PL]; /* power limits (W), ascending */
    double time_per_epoch[SIM_MAX_PL];
    double power[SIM_MAX_PL]; /* mean power (W) */
};

/* A workload joined with its traces on one GPU. */
struct sim_job {
    struct sim_workload w;
    char gpu[32];
    size_t n_bs;
    struct sim_bs bs[SIM_MAX_BS]; /* ascending; sizes present in both files with paths */
    int64_t default_bs;           /* capped at the largest batch size in the power trace */
    double max_power;             /* the largest power limit in the GPU's trace */
    /* Sizes the training trace has beyond the largest the GPU's power trace has: they did
     * not fit its memory (ascending). Registered only with --unfit-sizes. */
    size_t n_unfit;
    int64_t unfit[SIM_MAX_BS];
};

/* Loads workload w for GPU gpu from dir. Returns 0, or -1 with a reason in err (missing files,
 * bad columns, no data for the workload). */
int sim_load(const char *dir, const char *gpu, const struct sim_workload *w, struct sim_job *job,
             char *err, size_t errcap);

#endif
