/*
 * Trace replay of a recurring job (bso-sim's engine). Each recurrence asks the policy for a
 * batch size, runs it epoch by epoch on one sampled training path, reporting cumulative time,
 * energy and whether the target was reached, and stops when the policy says so; a run that did
 * not reach the target is followed by another in the same recurrence.
 */
#ifndef BSO_SIM_SIM_H
#define BSO_SIM_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "bso/power.h"
#include "core/rng.h"
#include "sim/change.h"
#include "sim/profile.h"
#include "sim/traces.h"

/* What predict returns when the policy refuses a batch size (BSO_EPRUNED in-process, a 409 over
 * HTTP: every size pruned, or a job that never trained waiting for its next pass): the
 * recurrence trains no model, as changes.csv's `refused` counts. */
#define SIM_REFUSED (-2)

/* The policy being replayed, behind three calls: in-process (the core) or over HTTP. */
struct sim_driver {
    void *ctx;
    int (*predict)(void *ctx, int64_t *bs, int64_t *trial);
    int (*report)(void *ctx, int64_t bs, int64_t trial, double time, double energy, double metric,
                  int64_t epoch, bool *stop, bool *converged);
    /* Hands the policy a device profile (one entry per batch size). */
    int (*profile)(void *ctx, const struct sim_profile_entry *e, size_t n);
    /* Ends a run that will not report (it ran out of memory). */
    int (*end_trial)(void *ctx, int64_t bs, int64_t trial);
    /* Starts this driver's (new) job from what `from`'s job learnt (bso_policy_transfer, or
     * POST /jobs/ID/transfer). */
    int (*transfer)(void *ctx, void *from_ctx);
    /* Hands over a --power jit profile of batch size bs (what a client posts after profiling
     * the limits in the first epoch): points[chosen] is the limit kept. */
    int (*power)(void *ctx, int64_t bs, const struct bso_power_point *points, size_t n,
                 size_t chosen);
    /* The trial at which the policy last found that the job changed (0: never), as GET /jobs/ID
     * says it. */
    int (*change_trial)(void *ctx, int64_t *trial);
    /* Tells the policy that the job changed (bso_policy_declare_change, or POST
     * /jobs/ID/changed). */
    int (*declare_change)(void *ctx);
    void (*close)(void *ctx);
    char err[512];
};

struct sim_options {
    double eta;
    double beta;  /* <= 0: early stopping off */
    bool jit;     /* --power jit */
    bool profile; /* --profile probe: a probe profiles every size before the first recurrence */
    struct sim_probe_options probe;
    bool keep_jobs;   /* --keep-jobs: leave the replayed jobs on the server (a dashboard's data) */
    bool unfit_sizes; /* --unfit-sizes register: the job also lists the sizes that do not fit */
    int64_t recurrences;
    int64_t seed;
    int policy;         /* enum bso_policy */
    const char *server; /* NULL: in-process */
    FILE *trace;        /* when set, one line per run: decisions.csv */
    const char *arm; /* the arm's name (policy, power, profile, move) for the trace; NULL: policy */
    const struct sim_changes *changes; /* --change: NULL or none for a job that never changes */
    const char *traces;                /* where a move to another GPU finds that GPU's trace */
    bool
        transfer; /* --move transfer: a job moved to another GPU starts from the old one's epochs */
    int64_t launches; /* a recurrence whose first this-many runs all failed had no model in time */
    int64_t window;   /* the jobs' window_size (0: none) */
    bool declare;     /* --declare-changes yes: the bso policy is told of each change on the
                         same GPU as it happens */
};

#define SIM_MAX_PHASES (SIM_MAX_CHANGES + 1)
/* Within the near-optimal band: expected cost at most this times the oracle's. */
#define SIM_NEAR_OPTIMAL 1.05
/* How many recurrences in a row must train with a near-optimal size to count as adapted. */
#define SIM_SETTLED_RUN 3

/* Runs one recurrence may launch before the replay gives it up without a model. */
#define SIM_MAX_LAUNCHES 100

/* One phase of a job's life: the recurrences between two changes. */
struct sim_phase_result {
    int64_t first, n; /* its first recurrence (0-based) and how many */
    double cost;      /* over its recurrences */
    double oracle;    /* the expected cost of a recurrence at its best size */
    int64_t optimum;  /* that size (0 when no size reaches the target) */
    int64_t no_model; /* recurrences whose first `launches` runs trained no model */
    /* The recurrences without a model to expect of any policy: each (1 - p)^launches, where p
     * is the chance that a run at the size most likely to reach the target reaches it (the
     * share of its paths that do). What no_model has beyond it, a policy could have spared. */
    double no_model_floor;
    int64_t stopped;       /* runs that ended without reaching the target */
    int64_t changes_found; /* times the policy found that the job changed */
    /* Recurrences given up after SIM_MAX_LAUNCHES runs without a model: they cost only the runs
     * they spent, less than training would, so a policy that loops looks cheap there. */
    int64_t gave_up;
    /* Recurrences the policy refused a batch size (SIM_REFUSED): counted in no_model, at no
     * cost; the next recurrence asks again. */
    int64_t refused;
    /* Recurrences from its start until near-optimal sizes trained SIM_SETTLED_RUN recurrences
     * in a row; n when that never happened. */
    int64_t lag;
};

struct sim_result {
    double *cost; /* per recurrence (caller frees) */
    double cumulative;
    int64_t failed_runs;
    int64_t settle; /* recurrences until the successful batch size stopped changing */
    size_t n_phases;
    struct sim_phase_result phase[SIM_MAX_PHASES];
};

/* Seeds rng from (seed, workload, batch size, k) only: the common random numbers that every
 * policy meets. k tells the streams of one size apart (the k-th run's path, the profile). */
void sim_seed_stream(bso_rng *rng, const struct sim_job *job, int64_t seed, int64_t bs, uint32_t k);

/* Opens the driver for one seeded job on `job`. 0, or -1 with drv->err set. */
int sim_driver_open(struct sim_driver *drv, const struct sim_job *job,
                    const struct sim_options *opt);

/* Points the driver's context at drv->err again, after *drv was copied. 0. */
int sim_driver_rebind(struct sim_driver *drv);

/* Replays opt->recurrences recurrences. 0, or -1 with err. */
int sim_run(const struct sim_job *job, const struct sim_options *opt, struct sim_result *res,
            char *err, size_t errcap);

/* Expected cost to reach the target with batch size index b at power-limit index p (the
 * issue's definition: expected epochs per success times the cost of an epoch); +inf when no
 * path reaches. */
double sim_expected_cost(const struct sim_job *job, size_t b, size_t p, double eta);
/* The oracle (best batch size at max power, or best pair with jit) and the base (default batch
 * size at max power). */
void sim_reference_costs(const struct sim_job *job, double eta, bool jit, double *oracle,
                         double *base);
/* The index of the oracle's batch size (least expected cost). */
size_t sim_optimum(const struct sim_job *job, double eta, bool jit);

#endif
