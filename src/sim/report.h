/* A replay plan (jobs x policies x power modes x seeds), its results and its outputs:
 * summary.csv, curves.csv, a printed table and regret.svg. */
#ifndef BSO_SIM_REPORT_H
#define BSO_SIM_REPORT_H

#include <stdio.h>

#include "sim/sim.h"

#define SIM_MAX_JOBS 64
#define SIM_MAX_ARMS 8 /* (policy, power, profile) combinations */

struct sim_arm {
    int policy;   /* enum bso_policy */
    bool jit;     /* --power jit, else max */
    bool profile; /* --profile probe, else none */
};

struct sim_cell { /* one job under one (policy, power) over all seeds */
    double oracle, base;
    double mean, sd; /* cumulative cost over seeds */
    double settle, failed;
    double *curve; /* mean cost per recurrence */
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
int sim_write_outputs(const struct sim_plan *plan, const char *dir, char *err, size_t errcap);
void sim_plan_free(struct sim_plan *plan);

#endif
