/*
 * BSO's own policy (docs/policy.md, "The bso policy"). It uses what Zeus's ignores: every
 * progress report carries cumulative time and energy, so a batch size's cost per epoch is known
 * after its first epoch, and a run that cannot win is stopped early.
 *
 *  - Exploration is a unimodal search in log2(batch size) around the best size so far:
 *    expansion by doubling steps, then bisection of the bracket. The next size to try is the
 *    one with the lowest optimistic cost (an epochs lower bound that respects batch-size
 *    scaling, times an interpolated cost per epoch), and only if its possible saving, over the
 *    job's expected remaining recurrences, repays a probe.
 *  - An exploring run goes on after its first epoch only if its estimated total beats the
 *    best. Later, what it spent is sunk: it is stopped only when its expected remaining cost
 *    passes a fresh run of the best, or when it is expected to need more than max_epochs.
 *  - Exploitation is Thompson sampling over the sizes that have finished a run, with each
 *    size's epochs shrunk toward a smooth curve shared by all sizes.
 *  - Safety: beta * the best expected cost (of the size whose model costs least, its runs
 *    that missed counted) stops any run; max_epochs stops every run.
 */
#ifndef BSO_CORE_BSO_POLICY_H
#define BSO_CORE_BSO_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bso_job;
struct bso_trial;
struct bso_report;
struct bso_decision;

/* What the policy knows about one batch size. */
enum bso_bs_status {
    BSO_BS_UNTRIED = 0,
    BSO_BS_GOOD,       /* at least one run reached the target */
    BSO_BS_KILLED,     /* an exploring run was stopped as hopeless */
    BSO_BS_FAILED,     /* a run hit max_epochs without reaching the target */
    BSO_BS_PASSED,     /* stopped after one epoch as not promising: tried again if that changes */
    BSO_BS_INFEASIBLE, /* BSO_CRASHES_INFEASIBLE runs in a row ended without a final report
                          (out of memory, crashes): never chosen again until the job is reset */
};

/* The longest window_size the bso policy keeps exactly, run by run; a longer one fades each
 * size's older runs to keep about that many (docs/policy.md). */
#define BSO_EPOCHS_WINDOW_MAX 16

struct bso_bs_stat {
    int status; /* enum bso_bs_status */
    int64_t runs;
    int64_t successes;
    double sum_epochs, sum_sq_epochs, min_epochs; /* over successful runs */
    double cost_sum, epochs_sum;                  /* over every run: cost per epoch */
    double censored_epochs; /* the most epochs a stopped run used without reaching: it needs more */
    /* Warm-up: a size's first run may pay extra in its first epoch (compilation, autotuning,
     * power profiling). Its first-epoch cost, and, for first runs that went on, that cost and
     * their steady cost per epoch, learn how much. */
    double first_epoch_cost;
    double warm_first_sum, warm_steady_sum;
    int64_t crashes; /* runs in a row that ended without a final report */
    /* The device profile's measurements of this size (POST /jobs/ID/profile); 0: none. */
    double profile_samples_per_s, profile_joules_per_sample;
    /* Change detection: cumulative sums of how far this size's runs took more (up) or fewer
     * (down) epochs than its posterior predicted, beyond a slack (a CUSUM test). */
    double drift_up, drift_down;
    /* The same for failing to reach: the log-likelihood ratio of "it now fails often" against
     * its failure rate so far, summed over runs (a Bernoulli CUSUM). */
    double drift_fail;
    /* The runs that reached since drift_up and drift_down were last both 0, and the sum and sum
     * of squares of their epochs: a size drifting on its own when another raises the alarm
     * keeps just these (bso_change.c, forget). */
    double streak_runs, streak_sum_epochs, streak_sum_sq_epochs;
    /* The factor by which a jump in cost per epoch seen at another size moved this size's
     * cost per epoch, on the guess that the whole job got dearer (more data), until a run here
     * tells (bso_change.c, follow_epoch_cost); 0: nothing pending. */
    double cost_shift;
    /* The factor by which jumps in cost per epoch (the size's own, and guesses from others'
     * that held) have moved this size's cost per epoch; 0 or 1: none. Where two measured sizes
     * stand at different levels, a jump hit one and not the other, and a size between them
     * may lie on either side of it (bso_policy_probe_epoch_cost). */
    double cost_level;
    /* The job's last trial number when this size's last run reached the target, and when
     * its last run ended without: a size that failed after the job's last success failed in
     * the recurrence that is still looking for a model. */
    double success_mark, fail_mark;
    /* The job's last trial number when the policy last found that the job changed (the same in
     * every size; 0: never). Evidence from before it may disagree with the present. */
    double change_mark;
    /* This size's mean epochs when the policy last found that the job changed (0: it had not
     * reached the target, or it kept what it knew): beside its runs since, how far the change
     * moved its epochs (bso_posterior.c, common_shift). */
    double pre_change_epochs;
    /* How many times the policy found that the job changed since this size last ran (since the
     * job began, for a size that never ran): a size beyond one that the last change spared is
     * judged as before it only if no earlier change came since it ran (bso_estimate.c,
     * beyond_a_spared_size). */
    double changes_since_run;
    /* How far the closest of this size's runs to max_epochs ended from the target, in the
     * metric's units (its last report); 0 while none did. In a job that never trained, the
     * sizes closest to reaching run first in each pass from the third (try_again). */
    double shortfall;
    /* Every run that reported at this size, and those that reached: plain counts, which
     * `runs` and `successes` (the weights of the evidence the policy keeps) stop being once
     * the job changed or a window forgets. */
    double total_runs, total_successes;
    /* Runs that ran to max_epochs without reaching the target (since the job last changed, for
     * a size that started over then): beside `successes`, how often a run here reaches. */
    double misses;
    /* `misses` as it stood when a run here last reached: more than 0 when the size reached
     * again after running to max_epochs, so that a miss here is no news (bso_change.c). */
    double misses_before_reaching;
    /* The epochs of the first run that reached the target since this size's epochs last
     * started (0: not known, as when they are kept as a mean across a change), and the job's
     * last trial number then: a first run far below every run since says that the job
     * changed right after it (bso_change.c, first_run_out_of_place). */
    double first_epochs, first_mark;
    /* The job's last trial number when its user last said that it changed
     * (bso_policy_declare_change; the same at every size), 0: never. The alarm that such a
     * declaration leads to places the change there: runs before it are from before. */
    double declared_mark;
    /* The run-to-run spread of the runs this size forgot at the job's changes (bso_change.c,
     * forget), as the pooled spread counts it: their relative sum of squares about their mean,
     * and its degrees of freedom. A change moves the epochs sizes need, not how much runs of
     * the job vary: Thompson sampling after a change starts from this spread instead of the
     * prior's (bso_posterior.c). */
    double past_spread_ss, past_spread_dof;
    /* Epochs-to-target this size needed in the job this one was transferred from (other
     * hardware; epochs do not depend on it), until the size reaches here: then it joins the
     * size's runs as one run more. 0: none. */
    double prior_epochs;
    /* The factor by which this size's epochs fell at its last downward alarm (the run that
     * raised it over the size's mean before), and the job's last trial number then; 0: none.
     * Its epochs start over from that run; a size whose epochs are from before then is moved
     * by the factor where the scaling fit reads the curve's shape, as if the whole job got
     * easier, but keeps its own epochs (bso_estimate.c, scaling_point). */
    double drop_factor, drop_mark;
    /* With a window (window_size from 1 to BSO_EPOCHS_WINDOW_MAX): the epochs of the runs that
     * sum_epochs holds, oldest first, so that the oldest leaves exactly as the next arrives.
     * n_window stays 0 without one (or a larger one, which fades instead). */
    float window[BSO_EPOCHS_WINDOW_MAX]; /* float: a job holds 256 sizes' worth */
    int64_t n_window;
};

/* "untried", "good", "killed", "failed", "passed" or "infeasible". */
const char *bso_bs_status_name(int status);

/* A size's cost per epoch over all its runs, and its expected cost to the target (mean epochs
 * of its successful runs times that); NAN where unknown. */
double bso_bs_cost_per_epoch(const struct bso_bs_stat *s);
double bso_bs_expected_cost(const struct bso_bs_stat *s);

/* Cost per epoch of size i as the policy estimates it: measured; else scaled from the
 * nearest measured size by the device profile's cost per sample of both; else interpolated
 * in log2(batch size) between measured sizes. NAN when nothing is measured. */
double bso_policy_epoch_cost(const struct bso_job *job, size_t i);

/* Records a device profile's measurements of size i (samples/s and J/sample; NAN or <= 0:
 * not measured), which bso_policy_epoch_cost scales unmeasured sizes by. */
void bso_policy_set_profile(struct bso_job *job, size_t i, double samples_per_s,
                            double joules_per_sample);

/* The job's trial number when the bso policy last found that the job changed (bso_policy_observe);
 * 0 when it never has, or the job is under another policy. */
int64_t bso_policy_change_trial(const struct bso_job *job);

/* How close size i's runs are to saying that the job changed: the larger of its two CUSUM sums
 * (epochs above what it needed, runs that did not reach) as a share of its alarm, in [0, 1];
 * 0 under another policy. An operator's early warning: a size that surprised once may not run
 * again soon enough to confirm it (docs/policy.md, "A drift in real training"). */
double bso_policy_change_evidence(const struct bso_job *job, size_t i);

/* The user says the job changed (new data, a new model version: POST /jobs/ID/changed): every
 * size that reached the target, and has not since the last change found only before it, is
 * watched closely, so that its next run raises the alarm (and the job re-explores, as at a
 * change it found itself) if it lies more than two standard deviations from what the size
 * predicts, or fails where the size reached. Nothing is forgotten until a run shows that the
 * change matters there. Returns how many sizes are watched (0: the job has learnt nothing to
 * re-check); a no-op under another policy. */
size_t bso_policy_declare_change(struct bso_job *job);

/* The job's trial number when its user last said that it changed, until the alarm it led to
 * (then that is the change found); 0 for none. */
int64_t bso_policy_declared_trial(const struct bso_job *job);

/* Whether size i's runs since the job last changed all stopped without reaching, after more
 * epochs than a size that reached since allows it to need by the scaling laws: a run that
 * diverged (docs/policy.md, "The bso policy", rule 2), which bounds nothing. */
bool bso_policy_diverged(const struct bso_job *job, size_t i);

/* Whether the target is out of reach for now: some run failed since the job's last success (the
 * trial number in *since, 0 when no size ever reached), and no size may train a model any
 * more (each failed since, lies between two that did, or is expected to need more than
 * max_epochs). Returns the trials since *since then, else 0 (also under the zeus policy). The
 * policy still hands out sizes, the most likely to reach first, in case the job changes back. */
int64_t bso_policy_out_of_reach(const struct bso_job *job, int64_t *since);

/* The batch size for the job's next run. BSO_EPRUNED when no size can reach the target, or, in
 * a job that never trained, until its next pass over the sizes opens (job->refusals). */
int bso_policy_choose(struct bso_job *job, int64_t *batch_size);

/* For a job that never trained: how many more predictions bso_policy_choose answers with
 * BSO_EPRUNED before the job tries its sizes again (0: the next is given a size); -1 when no
 * size may run again (each is unusable) or the job trained before. *passes: the runs to
 * max_epochs each size has made (the fewest of any). */
int64_t bso_policy_refusals_to_next_pass(const struct bso_job *job, int64_t *passes);

/* Decides on a progress report of a run at batch size index i (out->cost already set). */
void bso_policy_decide(struct bso_job *job, size_t i, const struct bso_report *rep, bool reached,
                       struct bso_decision *out);

/* The posterior of each size's mean epochs-to-target, as the mean and standard deviation of
 * its natural log: the size's own runs, shrunk toward a line in log-log fitted over every size
 * that reached the target. Sizes without a success get NAN. Both arrays hold n_batch_sizes. */
void bso_policy_epochs_posterior(const struct bso_job *job, double *mean_log, double *sd_log);

/* How a run ended, for bso_policy_observe. */
enum bso_run_end { BSO_RUN_REACHED, BSO_RUN_PASSED, BSO_RUN_KILLED, BSO_RUN_FAILED };

/* Records a run's final outcome. Returns true when the run showed that the job changed and the
 * statistics of every size were revised (the caller stores them all), false when only size
 * i's changed. */
bool bso_policy_observe(struct bso_job *job, size_t i, double cost, int64_t epochs,
                        enum bso_run_end end);

/* Records the metric that a run at size i reported when it ran to max_epochs without reaching
 * (bso_bs_stat.shortfall). */
void bso_policy_note_shortfall(struct bso_job *job, size_t i, double metric);

/* Hands the per-size epochs that `from` learnt to `to`, a job of the same workload on other
 * hardware (BSO_POLICY_BSO, both): each size both jobs have that reached the target in `from`
 * gets its posterior mean epochs as a prior worth one run (bso_bs_stat.prior_epochs), in place
 * of any an earlier transfer gave; a size that reached in `to` keeps its own runs. A size that
 * never ran in `to` and whose runs in `from` all ran to max_epochs without reaching starts
 * failed, with those misses (unless `to` allows more epochs, or no size got a prior). Costs per
 * epoch, unfit and infeasible sizes are not carried over: they belong to the hardware. Returns how
 * many sizes got a prior. */
size_t bso_policy_transfer(struct bso_job *to, const struct bso_job *from);

/* How the run that a decision stopped ended. */
enum bso_run_end bso_policy_run_end(const struct bso_job *job, const struct bso_decision *d,
                                    int64_t epoch);

#endif
