/* Job state and the policy operations; see job.h and docs/policy.md. */
#include "core/job.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>

#include "bso/error.h"
#include "core/bso_policy_internal.h"
#include "core/cost.h"
#include "core/explorer.h"
#include "core/mab.h"

__attribute__((format(printf, 3, 4))) static int fail(struct bso_job *job, int code,
                                                      const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(job->errmsg, sizeof job->errmsg, fmt, ap);
    va_end(ap);
    return code;
}

static int bso_report(struct bso_job *job, struct bso_trial *trial, const struct bso_report *rep,
                      struct bso_decision *out, unsigned *changed, size_t *stat_index);

const char *bso_job_errmsg(const struct bso_job *job)
{
    return job->errmsg;
}

int bso_job_init(struct bso_job *job, const struct bso_job_spec *spec, const uint32_t *entropy,
                 size_t n_entropy)
{
    memset(job, 0, sizeof(*job));
    job->spec = *spec;
    job->stage = BSO_STAGE_PRUNING;
    job->min_cost_batch_size = spec->default_batch_size;
    if (spec->has_mab_seed)
        bso_rng_seed(&job->rng, (uint64_t)spec->mab_seed);
    else if (bso_rng_seed_words(&job->rng, entropy, n_entropy) < 0)
        return fail(job, BSO_EINVAL, "an unseeded job needs 1 to %d words of entropy",
                    BSO_SEEDSEQ_MAX_WORDS);
    return 0;
}

void bso_job_reset(struct bso_job *job)
{
    memset(job, 0, offsetof(struct bso_job, stats));
    job->errmsg[0] = '\0';
}

void bso_job_clear_stats(struct bso_job *job)
{
    memset(job->stats, 0, job->spec.n_batch_sizes * sizeof job->stats[0]);
}

void bso_job_clear(struct bso_job *job)
{
    if (!job)
        return;
    for (size_t i = 0; i < job->n_arms; i++)
        bso_arm_clear(&job->arms[i]);
    free(job->arms);
    free(job->trials);
    job->arms = NULL;
    job->trials = NULL;
    job->n_arms = job->n_trials = job->cap_trials = 0;
}

struct bso_trial *bso_job_find_trial(struct bso_job *job, int64_t number)
{
    for (size_t i = job->n_trials; i-- > 0;)
        if (job->trials[i].number == number)
            return &job->trials[i];
    return NULL;
}

struct bso_arm *bso_job_find_arm(struct bso_job *job, int64_t batch_size)
{
    for (size_t i = 0; i < job->n_arms; i++)
        if (job->arms[i].batch_size == batch_size)
            return &job->arms[i];
    return NULL;
}

static int keep_trial(struct bso_job *job, const struct bso_trial *t)
{
    if (job->n_trials == job->cap_trials) {
        size_t cap = job->cap_trials ? job->cap_trials * 2 : 16;
        struct bso_trial *grown = realloc(job->trials, cap * sizeof(*grown));
        if (!grown)
            return fail(job, BSO_ENOMEM, "out of memory");
        job->trials = grown;
        job->cap_trials = cap;
    }
    job->trials[job->n_trials++] = *t;
    return 0;
}

static double trial_reward(const struct bso_job *job, const struct bso_trial *t)
{
    return -bso_cost(t->energy, t->time, job->spec.eta_knob, job->spec.max_power);
}

/* Builds the bandit from pruning's survivors: each arm is fitted on its explorations (one per
 * round) and remembers every final result of its batch size for later refits. */
static int construct_mab(struct bso_job *job, const struct bso_explore_result *ex)
{
    struct bso_arm *arms = calloc(ex->n_arms, sizeof(*arms));
    if (!arms)
        return fail(job, BSO_ENOMEM, "out of memory");
    double rewards[BSO_MAX_PRUNING_ROUNDS];
    int rc = 0;
    for (size_t a = 0; a < ex->n_arms && rc == 0; a++) {
        const int64_t bs = ex->arms[a];
        bso_arm_init(&arms[a], bs);
        size_t n = 0;
        for (int64_t r = 0; r < job->spec.num_pruning_rounds; r++) {
            const struct bso_trial *t = bso_exploration_in_round(job->trials, job->n_trials, bs, r);
            if (t)
                rewards[n++] = trial_reward(job, t);
        }
        rc = bso_arm_fit(&arms[a], job->spec.mab_prior_mean, job->spec.mab_prior_precision, rewards,
                         n);
        for (size_t i = 0; i < job->n_trials && rc == 0; i++) {
            const struct bso_trial *t = &job->trials[i];
            if (t->batch_size == bs && t->status == BSO_TRIAL_SUCCEEDED)
                rc = bso_arm_remember(&arms[a], t->number, trial_reward(job, t),
                                      job->spec.window_size);
        }
    }
    if (rc < 0) {
        for (size_t a = 0; a < ex->n_arms; a++)
            bso_arm_clear(&arms[a]);
        free(arms);
        return fail(job, rc, "could not build the bandit's arms: %s", bso_strerror(rc));
    }
    job->arms = arms;
    job->n_arms = ex->n_arms;
    job->stage = BSO_STAGE_MAB;
    return 0;
}

static int mab_choose(struct bso_job *job, int64_t *bs, unsigned *changed)
{
    const bso_rng before = job->rng;
    int rc = bso_mab_choose(job->arms, job->n_arms, job->spec.mab_num_explorations, &job->rng, bs);
    if (rc < 0) {
        job->rng = before;
        return fail(job, rc, "could not choose an arm: %s", bso_strerror(rc));
    }
    if (!bso_rng_equal(&before, &job->rng))
        *changed |= BSO_CHANGED_RNG;
    return 0;
}

/* The bso policy has no size for this request: counts the refusal (a job that never trained
 * tries again after enough of them) and says when the sizes run again. BSO_EPRUNED. */
static int refuse(struct bso_job *job, unsigned *changed)
{
    job->refusals++;
    *changed |= BSO_CHANGED_REFUSALS;
    bool any_can_run = false;
    for (size_t i = 0; i < job->spec.n_batch_sizes; i++)
        any_can_run |= bso_policy_usable(job, i);
    if (!any_can_run) /* not the target's fault: say so */
        return fail(job, BSO_EPRUNED,
                    "No batch size of the job can run: each was found not to fit the device (it "
                    "ran out of memory, or a profile marked it \"feasible\": false). "
                    "Reconfigure batch_sizes, or post a profile that finds one feasible.");
    int64_t passes;
    const int64_t wanted = bso_policy_refusals_to_next_pass(job, &passes);
    const long long max_epochs = (long long)job->spec.max_epochs;
    if (wanted < 0)
        return fail(job, BSO_EPRUNED,
                    "No batch size reached the target within max_epochs (%lld). "
                    "Reconfigure batch_sizes or max_epochs.",
                    max_epochs);
    if (wanted == 0)
        return fail(job, BSO_EPRUNED,
                    "No batch size reached the target within max_epochs (%lld) in %lld runs "
                    "of each; the next request starts another pass over the sizes. "
                    "Reconfigure batch_sizes or max_epochs if the target is out of reach.",
                    max_epochs, (long long)passes);
    return fail(job, BSO_EPRUNED,
                "No batch size reached the target within max_epochs (%lld) in %lld runs of "
                "each; another pass over the sizes starts after %lld more request%s without "
                "one. Reconfigure batch_sizes or max_epochs if the target is out of reach.",
                max_epochs, (long long)passes, (long long)wanted, wanted == 1 ? "" : "s");
}

/* Prediction under the bso policy: no pruning stage, no kept trials. */
static int bso_predict(struct bso_job *job, struct bso_trial *t, unsigned *changed)
{
    const bso_rng before = job->rng;
    int rc = bso_policy_choose(job, &t->batch_size);
    if (rc == BSO_EPRUNED)
        return refuse(job, changed);
    if (rc < 0)
        return fail(job, rc, "could not choose a batch size: %s", bso_strerror(rc));
    job->refusals = 0; /* counted since the job's last run */
    const int i = bso_job_spec_index(&job->spec, t->batch_size);
    t->type = job->stats[i].successes > 0 ? BSO_TRIAL_MAB : BSO_TRIAL_EXPLORATION;
    /* The job's stage tells readers that Thompson sampling has begun (the search may still
     * probe now and then as the job's expected future grows). */
    if (t->type == BSO_TRIAL_MAB && job->stage != BSO_STAGE_MAB) {
        job->stage = BSO_STAGE_MAB;
        *changed |= BSO_CHANGED_STAGE;
    }
    if (!bso_rng_equal(&before, &job->rng))
        *changed |= BSO_CHANGED_RNG;
    job->last_trial_number = t->number;
    *changed |= BSO_CHANGED_TRIAL;
    return 0;
}

int bso_job_predict(struct bso_job *job, struct bso_trial *trial, unsigned *changed)
{
    *changed = 0;
    struct bso_trial t = {.number = job->last_trial_number + 1, .status = BSO_TRIAL_DISPATCHED};
    if (job->spec.policy == BSO_POLICY_BSO) {
        int rc = bso_predict(job, &t, changed);
        if (rc == 0)
            *trial = t;
        return rc;
    }

    if (job->stage == BSO_STAGE_PRUNING) {
        struct bso_explore_result ex;
        int rc = bso_explore(&job->spec, job->trials, job->n_trials, job->min_cost_batch_size, &ex);
        if (rc == BSO_EPRUNED)
            return fail(job, rc, "%s", BSO_MSG_ALL_PRUNED);
        if (rc < 0)
            return fail(job, rc, "the pruning history is inconsistent: %s", bso_strerror(rc));
        if (ex.kind != BSO_EXPLORE_DONE) {
            t.type = ex.kind == BSO_EXPLORE_TRY ? BSO_TRIAL_EXPLORATION : BSO_TRIAL_CONCURRENT;
            t.batch_size = ex.batch_size;
            if ((rc = keep_trial(job, &t)) < 0)
                return rc;
            job->last_trial_number = t.number;
            *trial = t;
            *changed |= BSO_CHANGED_TRIAL;
            return 0;
        }
        if ((rc = construct_mab(job, &ex)) < 0)
            return rc;
        *changed |= BSO_CHANGED_STAGE | BSO_CHANGED_ARMS;
    }

    t.type = BSO_TRIAL_MAB;
    int rc = mab_choose(job, &t.batch_size, changed);
    if (rc < 0)
        return rc;
    job->last_trial_number = t.number;
    *trial = t;
    *changed |= BSO_CHANGED_TRIAL;
    return 0;
}

/* A report under the bso policy: its own stop rules, statistics instead of arms, and a
 * minimum over converged runs only. */
static int bso_report(struct bso_job *job, struct bso_trial *trial, const struct bso_report *rep,
                      struct bso_decision *out, unsigned *changed, size_t *stat_index)
{
    const struct bso_job_spec *sp = &job->spec;
    const int i = bso_job_spec_index(sp, trial->batch_size);
    if (i < 0)
        return fail(job, BSO_ENOTFOUND, "Batch size %lld is not one of the job's.",
                    (long long)trial->batch_size);
    *stat_index = (size_t)i; /* the one size whose statistics a report can change */
    const bool reached = sp->higher_is_better_metric ? rep->metric >= sp->target_metric
                                                     : rep->metric <= sp->target_metric;
    bso_policy_decide(job, (size_t)i, rep, reached, out);
    if (rep->current_epoch == 1)
        *changed |= BSO_CHANGED_STATS; /* the first epoch's cost is remembered (warm-up) */
    if (!out->stop_train)
        return 0;
    /* The policy counts a run as one epoch at least: its estimates are in log epochs and cost
     * per epoch, which a run that reached at epoch 0 (the API allows it: a client that reports
     * an evaluation before training) would leave undefined, and the job then had no size to
     * hand out. */
    const int64_t epochs = rep->current_epoch > 0 ? rep->current_epoch : 1;
    const enum bso_run_end end = bso_policy_run_end(job, out, epochs);
    if (bso_policy_observe(job, (size_t)i, out->cost, epochs, end))
        *changed |= BSO_CHANGED_ALL_STATS;
    if (end == BSO_RUN_FAILED)
        bso_policy_note_shortfall(job, (size_t)i, rep->metric);
    trial->status = BSO_TRIAL_SUCCEEDED;
    trial->time = rep->time;
    trial->energy = rep->energy;
    trial->converged = out->converged;
    snprintf(trial->energy_source, sizeof trial->energy_source, "%s",
             rep->energy_source ? rep->energy_source : "");
    *changed |= BSO_CHANGED_TRIAL | BSO_CHANGED_STATS;
    if (reached && (!job->has_min_cost || job->min_cost > out->cost)) {
        job->has_min_cost = true;
        job->min_cost = out->cost;
        job->min_cost_batch_size = trial->batch_size;
        *changed |= BSO_CHANGED_MIN_COST;
    }
    return 0;
}

/* Copies the caller's record into the kept pruning-stage copy, when there is one. */
static void sync_kept(struct bso_job *job, const struct bso_trial *trial)
{
    struct bso_trial *kept = bso_job_find_trial(job, trial->number);
    if (kept && kept != trial)
        *kept = *trial;
}

int bso_job_report(struct bso_job *job, struct bso_trial *trial, const struct bso_report *rep,
                   struct bso_decision *out, unsigned *changed, size_t *arm_index)
{
    *changed = 0;
    if (trial->status == BSO_TRIAL_FAILED)
        return fail(job, BSO_ESTATE,
                    "Trial(%" PRId64 ") is already reported but converged is not set.",
                    trial->number);
    if (trial->status == BSO_TRIAL_SUCCEEDED) {
        out->stop_train = true;
        out->converged = trial->converged;
        out->cost = bso_cost(trial->energy, trial->time, job->spec.eta_knob, job->spec.max_power);
        snprintf(out->message, sizeof out->message,
                 "Result for this trial(%" PRId64 ") is already reported.", trial->number);
        return 0;
    }
    if (bso_report_check(rep, job->errmsg, sizeof job->errmsg) < 0)
        return BSO_EINVAL;

    bso_report_decide(&job->spec, job->has_min_cost, job->min_cost, trial->batch_size, rep, out);
    /* Beyond BSO_MAX_COST (no training run comes near it) the squares and sums the policies
     * learn from overflow (a Zeus arm's mean then is not a number, which the store refuses at
     * every request after). */
    if (!(out->cost <= BSO_MAX_COST))
        return fail(job, BSO_EINVAL,
                    "time and energy are too large: the cost passes %g, where the policy's sums "
                    "overflow",
                    BSO_MAX_COST);
    if (job->spec.policy == BSO_POLICY_BSO)
        return bso_report(job, trial, rep, out, changed, arm_index);
    if (!out->stop_train)
        return 0;

    if (job->stage == BSO_STAGE_MAB) {
        struct bso_arm *arm = bso_job_find_arm(job, trial->batch_size);
        if (!arm)
            return fail(job, BSO_ENOTFOUND,
                        "MAB stage but Arm for batch size(%" PRId64 ") is not found.",
                        trial->batch_size);
        if (trial->type != BSO_TRIAL_MAB)
            return fail(job, BSO_ESTATE,
                        "Cannot update an arm since this trial is not issued from MAB stage.");
        int rc = bso_arm_observe(arm, trial->number, -out->cost, job->spec.window_size,
                                 job->spec.mab_prior_mean, job->spec.mab_prior_precision);
        if (rc < 0)
            return fail(job, rc, "could not refit the arm: %s", bso_strerror(rc));
        *arm_index = (size_t)(arm - job->arms);
        *changed |= BSO_CHANGED_ARM;
    }

    trial->status = BSO_TRIAL_SUCCEEDED;
    trial->time = rep->time;
    trial->energy = rep->energy;
    snprintf(trial->energy_source, sizeof trial->energy_source, "%s",
             rep->energy_source ? rep->energy_source : "");
    trial->converged = out->converged;
    sync_kept(job, trial);
    *changed |= BSO_CHANGED_TRIAL;
    if (!job->has_min_cost || job->min_cost > out->cost) {
        job->has_min_cost = true;
        job->min_cost = out->cost;
        job->min_cost_batch_size = trial->batch_size;
        *changed |= BSO_CHANGED_MIN_COST;
    }
    return 0;
}

void bso_job_end_trial(struct bso_job *job, struct bso_trial *trial, unsigned *changed,
                       size_t *stat_index)
{
    *changed = 0;
    if (trial->status != BSO_TRIAL_DISPATCHED)
        return;
    trial->status = BSO_TRIAL_FAILED;
    sync_kept(job, trial);
    *changed |= BSO_CHANGED_TRIAL;
    const int i = bso_job_spec_index(&job->spec, trial->batch_size);
    if (job->spec.policy == BSO_POLICY_BSO && i >= 0) {
        struct bso_bs_stat *s = &job->stats[i];
        if (++s->crashes >= BSO_CRASHES_INFEASIBLE)
            s->status = BSO_BS_INFEASIBLE;
        *changed |= BSO_CHANGED_STATS;
        *stat_index = (size_t)i;
    }
}

size_t bso_job_infeasible_sizes(const struct bso_job *job, int64_t *out)
{
    size_t n = 0;
    for (size_t i = 0; i < job->spec.n_batch_sizes; i++) {
        const int64_t bs = job->spec.batch_sizes[i];
        const bool infeasible =
            job->spec.policy == BSO_POLICY_BSO
                ? job->stats[i].status == BSO_BS_INFEASIBLE
                : job->stage == BSO_STAGE_PRUNING &&
                      bso_crash_streak(job->trials, job->n_trials, bs) >= BSO_CRASHES_INFEASIBLE;
        if (infeasible)
            out[n++] = bs;
    }
    return n;
}
