/* A replay plan (jobs x policies x power modes x seeds), its results and its outputs:
 * summary.csv, curves.csv, a printed table and regret.svg. */
#ifndef BSO_SIM_REPORT_H
#define BSO_SIM_REPORT_H

#include <stdio.h>

#include "sim/sim.h"

#define SIM_MAX_JOBS 256 /* workload x GPU pairs */
#define SIM_MAX_ARMS 16  /* (policy, power, profile, move) combinations: all sixteen */

struct sim_arm {
    int policy;   /* enum bso_policy */
    bool jit;     /* --power jit, else max */
    bool profile; /* --profile probe, else none */
    int move;     /* --move: 0 none given, 1 fresh, 2 transfer */
};

/* One phase of one job under one (policy, power), over all seeds. */
struct sim_phase_cell {
    int64_t first, n;      /* recurrences */
    double oracle;         /* the phase's expected cost per recurrence at its best size */
    int64_t optimum;       /* that size (0 when no size reaches the target) */
    double ratio;          /* mean over seeds of (phase cost / (n x oracle)) */
    int64_t no_model;      /* recurrences without a model in time, summed over seeds */
    double no_model_floor; /* what any policy would leave without one (sim_phase_result), summed */
    double stopped;        /* runs stopped without reaching, per recurrence */
    double lag;            /* mean over seeds */
    int64_t never;         /* seeds that never settled on a near-optimal size in the phase */
    int64_t changes_found; /* times the policy found a change in the phase, summed over seeds */
    int64_t gave_up;       /* recurrences given up at SIM_MAX_LAUNCHES, summed over seeds */
    int64_t refused;       /* recurrences the policy refused a batch size, summed over seeds */
};

struct sim_cell { /* one job under one (policy, power) over all seeds */
    double oracle, base;
    double mean, sd; /* cumulative cost over seeds */
    double settle, failed;
    double *curve; /* mean cost per recurrence */
    size_t n_phases;
    struct sim_phase_cell phase[SIM_MAX_PHASES];
};

struct sim_plan {
    struct sim_job jobs[SIM_MAX_JOBS];
    size_t n_jobs;
    struct sim_options opt; /* eta, beta, recurrences, server, probe */
    struct sim_arm arms[SIM_MAX_ARMS];
    size_t n_arms;
    int64_t seed_first, seed_last;
    struct sim_cell cells[SIM_MAX_JOBS][SIM_MAX_ARMS];
};

int sim_plan_run(struct sim_plan *plan, char *err, size_t errcap);
void sim_print_table(const struct sim_plan *plan, FILE *f);
/* Whether the plan's jobs change during their life (--change), and the table per phase. */
bool sim_plan_changes(const struct sim_plan *plan);
void sim_print_changes(const struct sim_plan *plan, FILE *f);
int sim_write_outputs(const struct sim_plan *plan, const char *dir, char *err, size_t errcap);
void sim_plan_free(struct sim_plan *plan);

#endif
