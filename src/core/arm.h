/*
 * One arm of the Gaussian Thompson-sampling bandit: a batch size, the posterior over its mean
 * reward (reward = -cost), and the recent rewards that the next refit needs.
 *
 * Zeus refits an arm from scratch on each result, reading the window of recent results from the
 * database. Here the arm keeps exactly those rewards itself (the window_size - 1 most recent by
 * trial number, or all of them without a window), so an update costs O(window) and needs no
 * history read, while the refit stays bit-identical to Zeus's.
 */
#ifndef BSO_CORE_ARM_H
#define BSO_CORE_ARM_H

#include <stddef.h>
#include <stdint.h>

struct bso_reward {
    int64_t trial_number;
    double reward;
};

struct bso_arm {
    int64_t batch_size;
    double param_mean;        /* posterior mean of the expected reward */
    double param_precision;   /* posterior precision; +inf when the rewards have no spread */
    double reward_precision;  /* 1 / population variance of the fitted rewards; may be +inf */
    int64_t num_observations; /* rewards in the last fit */
    int64_t n_results;        /* all final results of this batch size, ever */
    /* Owned. Rewards the next refit may use, ascending trial number. */
    struct bso_reward *recent;
    size_t n_recent;
    size_t cap_recent;
};

/* An empty arm for bs. Release with bso_arm_clear(). */
void bso_arm_init(struct bso_arm *arm, int64_t bs);
/* Frees the arm's memory; the arm may be initialised again. NULL is a no-op. */
void bso_arm_clear(struct bso_arm *arm);
/* Deep copy into dst (uninitialised). BSO_ENOMEM on allocation failure. */
int bso_arm_copy(struct bso_arm *dst, const struct bso_arm *src);

/* Fits the posterior to rewards[0..n) from the prior (Zeus's _fit_arm). BSO_EINVAL when n is 0. */
int bso_arm_fit(struct bso_arm *arm, double prior_mean, double prior_precision,
                const double *rewards, size_t n);

/* Records a final result of this batch size for later refits, without refitting. Results may
 * arrive in any trial order. BSO_ENOMEM on allocation failure (the arm is unchanged). */
int bso_arm_remember(struct bso_arm *arm, int64_t trial_number, double reward, int64_t window_size);

/* A final MAB-stage result: refits the arm on the window of earlier results plus this one,
 * ordered as Zeus orders them, then remembers it. */
int bso_arm_observe(struct bso_arm *arm, int64_t trial_number, double reward, int64_t window_size,
                    double prior_mean, double prior_precision);

#endif
