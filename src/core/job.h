/*
 * A job's learning state and the three policy operations on it: hand out a batch size for a new
 * trial (predict), take a progress report, and end a trial that will not report. Pure and
 * deterministic given the RNG state; storage is the caller's job. Each operation says through a
 * mask of BSO_CHANGED_* bits which parts of the state it changed, so a store writes only those.
 *
 * What the job holds in memory: the spec, the derived fields, the RNG, the trials of the pruning
 * stage (the explorer and the MAB construction read them) and, in the MAB stage, the arms. Trials
 * of the MAB stage are not kept: the caller owns their records and passes them back in.
 */
#ifndef BSO_CORE_JOB_H
#define BSO_CORE_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/arm.h"
#include "core/bso_policy.h"
#include "core/report.h"
#include "core/rng.h"
#include "core/spec.h"
#include "core/trial.h"

enum bso_changed {
    BSO_CHANGED_TRIAL = 1 << 0,     /* the trial passed in or out was created or updated */
    BSO_CHANGED_STAGE = 1 << 1,     /* stage became MAB (bso policy: its first Thompson pick) */
    BSO_CHANGED_ARMS = 1 << 2,      /* every arm was created */
    BSO_CHANGED_ARM = 1 << 3,       /* one arm was refitted (its index is returned) */
    BSO_CHANGED_RNG = 1 << 4,       /* the RNG state advanced */
    BSO_CHANGED_MIN_COST = 1 << 5,  /* min_cost and min_cost_batch_size */
    BSO_CHANGED_STATS = 1 << 6,     /* the bso policy's statistics of one size (its index is
                                       returned where an arm's would be) */
    BSO_CHANGED_ALL_STATS = 1 << 7, /* the bso policy revised every size's statistics (it found
                                       that the job changed) */
    BSO_CHANGED_REFUSALS = 1 << 8,  /* the bso policy refused a prediction (refusals) */
};

/* The changes a store writes to the job's own row (stage, minimum, RNG, last trial number,
 * refusals), besides a new trial, whose number the row records. */
#define BSO_CHANGED_JOB_ROW                                                                        \
    (BSO_CHANGED_STAGE | BSO_CHANGED_RNG | BSO_CHANGED_MIN_COST | BSO_CHANGED_REFUSALS)

struct bso_job {
    struct bso_job_spec spec; /* validated: batch sizes ascending */
    enum bso_stage stage;
    bool has_min_cost;
    double min_cost; /* lowest cost of any final result (converged or not, as in Zeus) */
    int64_t min_cost_batch_size; /* its batch size; the default until then */
    bso_rng rng;
    int64_t last_trial_number;
    /* Under the bso policy: predictions answered BSO_EPRUNED since the job's last run (a job
     * that never trained tries its sizes again once enough recurrences went without a model;
     * bso_policy_choose). */
    int64_t refusals;
    /* Owned. Pruning-stage trials, ascending trial number. */
    struct bso_trial *trials;
    size_t n_trials, cap_trials;
    /* Owned. MAB-stage arms, ascending batch size. */
    struct bso_arm *arms;
    size_t n_arms;
    /* Not stored: while the bso policy decides (bso_policy_choose, bso_policy_decide), which
     * sizes are struck out of the recurrence under way, so that the search's scans ask it of
     * every size without scanning every size again (bso_policy_struck); false otherwise. */
    bool struck_known;
    bool struck[BSO_MAX_BATCH_SIZES];
    /* The bso policy's knowledge of each batch size (index as spec.batch_sizes). */
    struct bso_bs_stat stats[BSO_MAX_BATCH_SIZES];
    char errmsg[512]; /* why the last failing call failed */
};

/* The exact texts of Zeus's failures, for callers that answer with them. */
#define BSO_MSG_ALL_PRUNED                                                                         \
    "No converged batch sizes has observed. Reconfigure batch_sizes and re-launch the job."

/* Starts a new job from a validated spec. A seeded spec seeds the RNG like numpy's
 * default_rng(mab_seed); otherwise the caller's entropy words (from the OS) seed it, so that
 * unseeded jobs still get one proper random stream. Release with bso_job_clear(). */
int bso_job_init(struct bso_job *job, const struct bso_job_spec *spec, const uint32_t *entropy,
                 size_t n_entropy);
/* Empties *job for a store to fill: everything zero, except that the per-size statistics are
 * left for bso_job_clear_stats once the batch sizes are known (zeroing all BSO_MAX_BATCH_SIZES
 * of them would cost more than the rest of a request's policy work). */
void bso_job_reset(struct bso_job *job);
/* Zeroes the statistics of the job's spec.n_batch_sizes sizes. */
void bso_job_clear_stats(struct bso_job *job);

/* Frees what the job owns. NULL is a no-op. */
void bso_job_clear(struct bso_job *job);

/* The trial of that number among the kept pruning-stage trials, or NULL. */
struct bso_trial *bso_job_find_trial(struct bso_job *job, int64_t number);
/* The arm of that batch size, or NULL. */
struct bso_arm *bso_job_find_arm(struct bso_job *job, int64_t batch_size);

/* Creates the next trial and writes it to *trial. In the pruning stage it is an exploration or a
 * concurrent trial, and is kept; when pruning has just finished the arms are built, the stage
 * becomes MAB and the bandit chooses. BSO_EPRUNED (message BSO_MSG_ALL_PRUNED) when every batch
 * size was pruned; BSO_ENOMEM. *changed is right even on failure: the stage may have switched
 * before the bandit ran out of memory. */
int bso_job_predict(struct bso_job *job, struct bso_trial *trial, unsigned *changed);

/* Handles a progress report on *trial (the caller's record; the kept copy is updated too).
 * On success *out says whether to stop. A final report marks the trial Succeeded, may lower
 * min_cost and, in the MAB stage, refits the arm (*arm_index; under the bso policy, the index of
 * the batch size whose statistics changed). Reports on an already final trial
 * answer with its stored outcome and change nothing. Errors, each with bso_job_errmsg():
 * BSO_EINVAL bad numbers; BSO_ESTATE the trial failed, or a pruning-stage trial reports after
 * the switch to MAB; BSO_ENOTFOUND no arm for its batch size; BSO_ENOMEM. */
int bso_job_report(struct bso_job *job, struct bso_trial *trial, const struct bso_report *rep,
                   struct bso_decision *out, unsigned *changed, size_t *arm_index);

/* Ends a trial that will not report (its process is gone): Dispatched becomes Failed, anything
 * else is left as it is. Never fails. Under the bso policy it counts against its batch size
 * (BSO_CHANGED_STATS, the size's index in *stat_index). */
void bso_job_end_trial(struct bso_job *job, struct bso_trial *trial, unsigned *changed,
                       size_t *stat_index);

/* The batch sizes the job no longer tries because their runs kept ending without a report:
 * bso policy, from its statistics; Zeus policy, from the pruning trials (while it prunes and
 * they are loaded). Writes up to n_batch_sizes sizes into out; returns how many. */
size_t bso_job_infeasible_sizes(const struct bso_job *job, int64_t *out);

/* Why the last failing call on this job failed. */
const char *bso_job_errmsg(const struct bso_job *job);

#endif
