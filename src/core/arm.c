/* Gaussian Thompson-sampling arms; see arm.h and docs/policy.md. */
#include "core/arm.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bso/error.h"
#include "core/npstat.h"

void bso_arm_init(struct bso_arm *arm, int64_t bs)
{
    memset(arm, 0, sizeof(*arm));
    arm->batch_size = bs;
}

void bso_arm_clear(struct bso_arm *arm)
{
    if (!arm)
        return;
    free(arm->recent);
    arm->recent = NULL;
    arm->n_recent = arm->cap_recent = 0;
}

int bso_arm_copy(struct bso_arm *dst, const struct bso_arm *src)
{
    *dst = *src;
    dst->recent = NULL;
    dst->cap_recent = dst->n_recent;
    if (src->n_recent == 0)
        return 0;
    dst->recent = malloc(src->n_recent * sizeof(*dst->recent));
    if (!dst->recent)
        return BSO_ENOMEM;
    memcpy(dst->recent, src->recent, src->n_recent * sizeof(*dst->recent));
    return 0;
}

int bso_arm_fit(struct bso_arm *arm, double prior_mean, double prior_precision,
                const double *rewards, size_t n)
{
    if (n == 0)
        return BSO_EINVAL;
    const double var = bso_np_var(rewards, n);
    const double reward_prec = var == 0.0 ? INFINITY : 1.0 / var;
    if (isinf(reward_prec)) {
        /* No spread (one observation, or identical ones): sampling returns the mean itself. */
        arm->param_precision = INFINITY;
        arm->param_mean = bso_np_mean(rewards, n);
    } else {
        arm->param_precision = prior_precision + (double)n * reward_prec;
        arm->param_mean = (prior_precision * prior_mean + reward_prec * bso_np_sum(rewards, n)) /
                          arm->param_precision;
    }
    arm->reward_precision = reward_prec;
    arm->num_observations = (int64_t)n;
    return 0;
}

/* How many of the most recent results a refit can use besides the new one. */
static size_t keep_limit(int64_t window_size)
{
    return window_size > 0 ? (size_t)(window_size - 1) : SIZE_MAX;
}

int bso_arm_remember(struct bso_arm *arm, int64_t trial_number, double reward, int64_t window_size)
{
    const size_t keep = keep_limit(window_size);
    size_t pos = arm->n_recent;
    while (pos > 0 && arm->recent[pos - 1].trial_number > trial_number)
        pos--;
    /* Older than everything kept in a full window: no refit will ever read it. */
    bool store = keep > 0 && !(arm->n_recent >= keep && pos == 0);
    if (store && arm->n_recent == arm->cap_recent && arm->n_recent < keep) {
        size_t cap = arm->cap_recent ? arm->cap_recent * 2 : 4;
        if (cap > keep)
            cap = keep;
        struct bso_reward *grown = realloc(arm->recent, cap * sizeof(*grown));
        if (!grown)
            return BSO_ENOMEM;
        arm->recent = grown;
        arm->cap_recent = cap;
    }
    arm->n_results++;
    if (!store)
        return 0;
    if (arm->n_recent >= keep) {
        /* Full window: drop the oldest to make room. */
        memmove(arm->recent, arm->recent + 1, (pos - 1) * sizeof(*arm->recent));
        pos--;
        arm->n_recent--;
    } else {
        memmove(arm->recent + pos + 1, arm->recent + pos,
                (arm->n_recent - pos) * sizeof(*arm->recent));
    }
    arm->recent[pos] = (struct bso_reward){trial_number, reward};
    arm->n_recent++;
    return 0;
}

int bso_arm_observe(struct bso_arm *arm, int64_t trial_number, double reward, int64_t window_size,
                    double prior_mean, double prior_precision)
{
    /* Zeus reads the last window_size results newest first; when it got a full window it drops
     * the oldest and reverses them to oldest first. The new reward goes last either way. The
     * order matters to the last bit of the sums. */
    const size_t n = arm->n_recent;
    double small[64];
    double *rewards = n + 1 <= 64 ? small : malloc((n + 1) * sizeof(*rewards));
    if (!rewards)
        return BSO_ENOMEM;
    const bool full = window_size > 0 && arm->n_results >= window_size;
    for (size_t i = 0; i < n; i++)
        rewards[i] = full ? arm->recent[i].reward : arm->recent[n - 1 - i].reward;
    rewards[n] = reward;

    struct bso_arm fitted = *arm;
    int rc = bso_arm_fit(&fitted, prior_mean, prior_precision, rewards, n + 1);
    if (rewards != small)
        free(rewards);
    if (rc < 0)
        return rc;
    rc = bso_arm_remember(&fitted, trial_number, reward, window_size);
    if (rc < 0)
        return rc;
    *arm = fitted;
    return 0;
}
