/*
 * The pruning explorer (Zeus's PruningExploreManager): starting at the default batch size, try
 * smaller sizes then larger ones, abandoning a direction at its first failure; repeat for
 * num_pruning_rounds rounds over the survivors, each round anchored at the cheapest survivor of
 * the round before. Only one exploration is in flight; other requests meanwhile train at the
 * cheapest batch size seen so far.
 */
#ifndef BSO_CORE_EXPLORER_H
#define BSO_CORE_EXPLORER_H

#include <stddef.h>

#include "core/spec.h"
#include "core/trial.h"

enum bso_explore_kind {
    BSO_EXPLORE_TRY,        /* start an exploration at batch_size */
    BSO_EXPLORE_CONCURRENT, /* an exploration is pending: train at batch_size meanwhile */
    BSO_EXPLORE_DONE,       /* pruning is over: arms[] survived the last round */
};

struct bso_explore_result {
    enum bso_explore_kind kind;
    int64_t batch_size;
    size_t n_arms;
    int64_t arms[BSO_MAX_BATCH_SIZES]; /* ascending */
};

/* The explorer's decision given the job's pruning-stage trials in trial-number order (failed,
 * concurrent and MAB trials are ignored, so a failed exploration is simply tried again, as in
 * Zeus; but a size whose last BSO_CRASHES_INFEASIBLE trials all ended without a report counts
 * as one that did not converge, where Zeus would retry it forever). BSO_EPRUNED when no batch
 * size survived a round. */
int bso_explore(const struct bso_job_spec *spec, const struct bso_trial *trials, size_t n_trials,
                int64_t min_cost_batch_size, struct bso_explore_result *out);

/* Runs of one batch size in a row that end without a final report (out of memory, crashes)
 * before the size counts as infeasible. */
#define BSO_CRASHES_INFEASIBLE 3

/* How many of the explorations of batch size bs, counting back from the latest, ended without
 * a report (Failed). */
int64_t bso_crash_streak(const struct bso_trial *trials, size_t n_trials, int64_t bs);

/* The r-th (0-based) non-failed exploration of bs among trials, or NULL: its exploration in
 * round r. */
const struct bso_trial *bso_exploration_in_round(const struct bso_trial *trials, size_t n_trials,
                                                 int64_t bs, int64_t r);

#endif
