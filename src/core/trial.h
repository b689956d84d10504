/* A trial: one training run that was given a batch size. */
#ifndef BSO_CORE_TRIAL_H
#define BSO_CORE_TRIAL_H

#include <stdbool.h>
#include <stdint.h>

enum bso_stage { BSO_STAGE_PRUNING, BSO_STAGE_MAB };

enum bso_trial_type {
    BSO_TRIAL_EXPLORATION, /* pruning stage, chosen by the explorer */
    BSO_TRIAL_CONCURRENT,  /* pruning stage, issued while an exploration was in flight */
    BSO_TRIAL_MAB,         /* chosen by the bandit */
};

enum bso_trial_status {
    BSO_TRIAL_DISPATCHED, /* handed out, no final report yet */
    BSO_TRIAL_SUCCEEDED,  /* final report received (converged or not) */
    BSO_TRIAL_FAILED,     /* ended before any final report */
};

struct bso_trial {
    int64_t number; /* 1, 2, 3... per job, over all types */
    int64_t batch_size;
    enum bso_trial_type type;
    enum bso_trial_status status;
    /* Set when SUCCEEDED: cumulative time (s) and energy (J), and whether it reached the target
     * within the cost bound. */
    double time;
    double energy;
    bool converged;
    char energy_source[16]; /* the client's label for the energy figure; "" when not given */
};

const char *bso_stage_name(enum bso_stage s);
const char *bso_trial_type_name(enum bso_trial_type t);
const char *bso_trial_status_name(enum bso_trial_status s);

#endif
