/*
 * Shared between the files of the bso policy only (bso_size.c, bso_estimate.c,
 * bso_epoch_cost.c, bso_posterior.c, bso_search.c, bso_thompson.c, bso_rescue.c,
 * bso_change.c, bso_policy.c); everyone else
 * goes through bso_policy.h. Size i is an index
 * into the job's batch sizes; nothing here allocates or keeps a pointer.
 */
#ifndef BSO_CORE_BSO_POLICY_INTERNAL_H
#define BSO_CORE_BSO_POLICY_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bso_job;
struct bso_bs_stat;

/* A run whose cost per epoch is this factor off its size's (either way) shows a new level: the
 * data set grew, the cluster changed. Measurement noise of time and energy is far smaller. */
#define BSO_PER_EPOCH_SHIFT 1.25
/* The spread of epochs-to-target from run to run, relative to the mean, assumed before any
 * size has two runs (and never less, when judging a run that did not reach). */
#define BSO_PRIOR_CV 0.15

/* bso_size.c: one size's epochs to the target. */
double bso_bs_mean_epochs(const struct bso_bs_stat *s);
/* Its cost per epoch `per` without the guess that made it dearer when another size's cost
 * jumped (cost_shift): what it is judged by until a run tests the guess. */
double bso_bs_unguessed(const struct bso_bs_stat *s, double per);
/* The factor by which a run that cost `cost` in `epochs` epochs moved the size's cost per epoch,
 * where it passes BSO_PER_EPOCH_SHIFT either way; 1 otherwise, and where either is at no cost
 * (a client that measures no time or energy): a factor of 0 or infinity is no level to move by
 * (one wiped every size's costs, and the next made them not a number). */
double bso_bs_per_epoch_jump(const struct bso_bs_stat *s, double cost, double epochs);
/* Its level of cost (cost_level): 1 where no jump moved it. */
double bso_bs_cost_level(const struct bso_bs_stat *s);
/* One more run that reached in e epochs, within a window of the last w runs (0: all). */
void bso_bs_add_epochs(struct bso_bs_stat *s, double e, int64_t w);
/* The chance that a run at the size reaches the target: its runs that reached against those
 * that ran to max_epochs without (misses), half of each as prior. */
double bso_bs_reach_chance(const struct bso_bs_stat *s);
/* Forgets every run's epochs (not its cost per epoch). */
void bso_bs_clear_epochs(struct bso_bs_stat *s);

/* bso_estimate.c: what the policy knows and expects of size i. */
/* The epochs size i needed in the job this one was transferred from, while it has not reached
 * here; 0 otherwise. */
double bso_policy_transferred_prior(const struct bso_job *job, size_t i);
bool bso_policy_usable(const struct bso_job *job, size_t i); /* fits, does not keep crashing */
bool bso_policy_fresh(const struct bso_job *job, size_t i);  /* reached since the last change */
bool bso_policy_stale(const struct bso_job *job, size_t i);  /* reached only before it */
bool bso_policy_raised_alarm(const struct bso_job *job, size_t i); /* its last run found it */
bool bso_policy_transferred(const struct bso_job *job);            /* holds another job's epochs */
bool bso_policy_rechecked(const struct bso_job *job, size_t i);
/* The sizes nearest to i below (*lo) and above (*hi) it whose statistics `keep` accepts; -1
 * where none is. */
void bso_policy_nearest_sizes(const struct bso_job *job, size_t i,
                              bool (*keep)(const struct bso_bs_stat *), int *lo, int *hi);
/* How far above an estimate of epochs resting on `runs` runs a run's epochs may lie by chance:
 * two spreads of that estimate and of the run's own noise, the run-to-run spread never taken
 * below BSO_PRIOR_CV (integer epochs make the pooled spread look tighter than runs are). */
double bso_policy_noise_margin(const struct bso_job *job, int64_t runs);
/* Two standard deviations, in log epochs, of the gap between a size's mean over `runs` runs and
 * one run more (cv2: the run-to-run variance of log epochs): how far a figure must lie from the
 * size's mean before it is taken for more than noise. */
double bso_policy_two_spreads(double cv2, double runs);
/* bso_policy_diverged (bso_policy.h) by the second law alone (a larger batch needs no more
 * steps), which a change in the job does not break; the first, that a larger batch needs at
 * least as many epochs, is only counted on before any change. */
bool bso_policy_diverged_in_steps(const struct bso_job *job, size_t i);
double bso_policy_epochs_bound(const struct bso_job *job, size_t i);
double bso_policy_epochs_estimate(const struct bso_job *job, size_t i);
/* Whether the estimate's scaling exponent is still the assumed 0.5: fewer than two sizes tell
 * how epochs grow with batch size. */
bool bso_policy_slope_guessed(const struct bso_job *job);
double bso_policy_judged_epochs(const struct bso_job *job, size_t i);
double bso_policy_passed_epochs(const struct bso_job *job, size_t i);

/* bso_epoch_cost.c: what an epoch costs (bso_policy_epoch_cost in bso_policy.h). */
/* The steady cost per epoch a size's first epoch, costing `first`, implies (warm-up taken out:
 * a fixed cost per run and a factor, fitted over the sizes' first runs). */
double bso_policy_steady_cost(const struct bso_job *job, double first);
double bso_policy_sample_cost(const struct bso_job *job, size_t i);
/* What one epoch at size i, unmeasured, may cost at best, as a probe is weighed: its cost per
 * epoch (bso_policy_epoch_cost), or, where the measured sizes either side of it stand at
 * different levels of cost (cost_level, without guesses no run has borne out: a jump hit one
 * and not the other, or is only guessed at one), the interpolation with both at the lower one
 * if that is less (the jump's range may end on either side of i). */
double bso_policy_probe_epoch_cost(const struct bso_job *job, size_t i);

/* bso_posterior.c */
/* The pooled run-to-run variance of log epochs. */
double bso_policy_pooled_cv2(const struct bso_job *job);
/* Each size's posterior mean and sd of log epochs (NAN where none reached), and the pooled
 * run-to-run variance of log epochs, that without the runs of the streaks `drifting` marks
 * (n_batch_sizes flags, or NULL: every run counts). Arrays of n_batch_sizes. */
void bso_policy_posterior(const struct bso_job *job, const bool *drifting, double *mean_log,
                          double *sd_log, double *cv2);
/* The posterior Thompson sampling draws from: as bso_policy_epochs_posterior, but after a
 * change the pooled spread starts from the spread of the runs the change made the sizes
 * forget (past_spread_ss), not from BSO_PRIOR_CV. The runs since a change are few, and where
 * the epochs are whole numbers they often agree exactly (movielens-1m's 16384 at 8, 8, 8, 8
 * after its epochs doubled), so a spread from them alone shrinks toward nothing and holds
 * Thompson sampling to a size that one unlucky run made look dear. The change detector keeps
 * the plain prior (docs/policy.md, "Thompson sampling after a change"). */
void bso_policy_sampling_posterior(const struct bso_job *job, double *mean_log, double *sd_log);
/* How far the job's last change moved size i's log epochs (*shift: its mean since against its
 * mean when the change was found), if it reached both before the change and since; false where
 * it cannot tell. */
bool bso_policy_change_shift(const struct bso_job *job, size_t i, double *shift);
/* The same for a size that reached since the change, where it had not reached before: against
 * what the nearest sizes either side of it that had needed then, interpolated in log size
 * (false where no such size lies on one side); otherwise bso_policy_change_shift. */
bool bso_policy_change_shift_between(const struct bso_job *job, size_t i, double *shift);
/* bso_policy_change_shift_between, or where sizes known from before lie on one side of size i
 * only, against the line through the two nearest of them, extrapolated with its slope within
 * what the epochs and steps laws allow (false where fewer than two lie there). For the steps law's
 * bound after a change (bso_policy_epochs_bound), which must tell the sizes a change moved from
 * those it spared wherever they lie. */
bool bso_policy_change_shift_near(const struct bso_job *job, size_t i, double *shift);

/* What the job's last change did at size k, as far as its runs tell: moved it (its run found
 * the change, or it reached since needing more or fewer epochs than before by more than two
 * spreads, its mean's and one run's, as common_shift tests), spared it (within them), or
 * nothing known (it has not reached since). What a size that had not reached before needed
 * then is read off the sizes that had (bso_policy_change_shift_near). *cv2: the pooled spread,
 * looked up on first need (< 0 until then). bso_estimate.c. */
enum bso_change_at { BSO_CHANGE_UNKNOWN, BSO_CHANGE_SPARED, BSO_CHANGE_MOVED };
enum bso_change_at bso_policy_change_at(const struct bso_job *job, size_t k, double *cv2);
/* Size s's share of the pooled run-to-run spread: the relative sum of squares of its epochs
 * about their mean (*ss, a variance of log epochs times its degrees of freedom) and its
 * degrees of freedom (*dof: one per run beyond the first; both 0 under two runs). Without the
 * runs of its streak where `without_streak` and at least two runs from before the streak are
 * left to tell the size's spread; not under a window (its sums hold only the window's runs,
 * and a streak's may reach past them). */
void bso_policy_size_spread(const struct bso_bs_stat *s, bool without_streak, double *ss,
                            double *dof);
/* A weighted least-squares line y = icpt + slope * x, accumulated point by point. */
struct bso_line_fit {
    double w, x, y, xx, xy;
    int points;
};
void bso_fit_add(struct bso_line_fit *f, double x, double y, double w);
/* The slope, or `otherwise` with fewer than two distinct x. */
double bso_fit_slope(const struct bso_line_fit *f, double otherwise);
/* The line through (x0, y0) and (x1, y1) at x (x0 != x1): interpolation between two sizes, in
 * log size. */
double bso_interpolate(double x0, double y0, double x1, double y1, double x);

/* bso_thompson.c: Thompson sampling over the sizes that reached the target (but those that
 * just failed in the recurrence): the size of the lowest draw, or -1 when none may run. Draws
 * from the job's generator. */
int bso_policy_thompson(struct bso_job *job);

/* bso_policy.c */
/* The index of the size with the lowest expected cost among those that reached the target
 * (since the job last changed, when fresh_only) and did not just fail, or -1. */
int bso_policy_best_good(const struct bso_job *job, bool fresh_only);
/* The size beta's bound is set by: of those that reached since the job last changed and did
 * not just fail, the one whose model costs least, counting the runs that missed (-1 where
 * none is; one is wherever bso_policy_best_good(job, true) finds one). */
int bso_policy_bound_size(const struct bso_job *job);

/* bso_first_search.c: before any size reached the target (the job never trained), the index
 * of the size to run next: the default d, then smaller sizes (they need fewer epochs), then
 * larger, then passes over them again; -1 while none may run (the job is refused a size until
 * its next pass, or no size can run at all). */
int bso_policy_first_search(const struct bso_job *job, int d);

/* bso_search.c */
bool bso_policy_open_size(const struct bso_job *job, size_t i);
/* The recurrences a probe's saving is counted over: as many again as the runs that reached so
 * far (those still weighed after a change), at least MIN_HORIZON. */
double bso_policy_horizon(const struct bso_job *job);
/* Whether an exploring run at size i, e epochs in at `per` a epoch and expected to need more
 * than max_epochs, may still save more over the horizon (by its optimistic bound, against the
 * best expected cost `best`) than running on to max_epochs costs. */
bool bso_policy_risk_pays(const struct bso_job *job, size_t i, double e, double per, double best);
/* The next size to probe around the best size g (expected cost best_cost), or -1. */
int bso_policy_explore(const struct bso_job *job, int g, double best_cost);

/* bso_thompson.c */
/* What a run at size i that does not reach is expected to cost: max_epochs of it, or less
 * where the beta bound (beta times the expected cost of size b, bso_policy_bound_size) stops it
 * first; b -1 where no size sets a bound. */
double bso_policy_failed_run_cost(const struct bso_job *job, size_t i, int b);

/* bso_rescue.c: never stuck without a model. */
/* The job's last success: the last trial at which any size reached the target (0: none). */
double bso_policy_last_success(const struct bso_job *job);
/* The job's last trial number when a size last ran to max_epochs without reaching (the largest
 * fail_mark), 0 if none ever did. */
double bso_policy_last_failure(const struct bso_job *job);
bool bso_policy_struck(const struct bso_job *job, size_t i); /* not again in this recurrence */
/* Fills job->struck for every size (what bso_policy_struck says) and sets job->struck_known,
 * for a decision that asks it of every size it scans; the caller clears struck_known when the
 * decision is made, before anything changes the marks. */
void bso_policy_know_struck(struct bso_job *job);
/* What a model is expected to cost at size i, which reached the target, when each run there
 * reaches only by chance (bso_bs_reach_chance): its expected cost, and (1 - p) / p runs to
 * max_epochs wasted on the way. */
double bso_policy_cost_per_model(const struct bso_job *job, size_t i);
/* How near the failures of the recurrence still looking for a model came to raising the alarm
 * that the job changed: the most change evidence (bso_policy_change_evidence, 0 to 1) of a size
 * that failed since the last run that reached; 0 when none did. */
double bso_policy_failing_evidence(const struct bso_job *job);
/* Where the failures of the recurrence still looking for a model began (origin: the first size
 * whose failure was news; -1: none) and the run of sizes about it that failed in it too, or are
 * struck out between two that did: [lo, hi]. Looked up once per decision (bso_policy_spread). */
struct bso_spread {
    int origin, lo, hi;
};
void bso_policy_spread(const struct bso_job *job, struct bso_spread *out);
/* What a run at size k risks where those failures have spread from their origin toward k: the
 * chance that they go on to k, as runs to max_epochs at k wasted on the way; 0 where they have
 * not spread (docs/policy.md, "Failures that spread"). */
double bso_policy_spread_risk(const struct bso_job *job, const struct bso_spread *spread, size_t k);
/* The chance that a run at size i reaches the target if its misses were bad luck: a size that
 * never reached and ran to max_epochs (misses), near a size that reached, in a job that never
 * changed (after a change, misses are the change's as likely as chance's). Its chance of
 * reaching, as a prior worth one run against its misses: below a size that reached (a smaller
 * batch needs fewer epochs, so the curve there interpolates), how likely the curve's central
 * estimate (bso_policy_epochs_estimate), spread as runs spread (the pooled run-to-run spread of
 * log epochs), is to be within max_epochs; above every size that reached, where the curve
 * extrapolates, the same over every slope the scaling laws allow. NAN for any other size, or
 * one struck out in the recurrence. */
double bso_policy_unlucky_chance(const struct bso_job *job, size_t i);
/* Whether no size above i ever reached the target (in the job's whole life). */
bool bso_policy_above_every_reached(const struct bso_job *job, size_t i);
/* The epochs a run at size i needs if its misses were bad luck: its central estimate
 * (bso_policy_epochs_estimate), within max_epochs. Callers multiply by the cost per epoch they
 * already have for what such a run costs. */
double bso_policy_unlucky_epochs(const struct bso_job *job, size_t i);
/* The size a recurrence still looking for a model turns to when every size that reached the
 * target failed in it (or the job changed and none has reached since); -1 when nothing can
 * run. */
int bso_policy_rescue(const struct bso_job *job);

#endif
