/* The evidence the bso policy keeps for one batch size (struct bso_bs_stat): epochs to the
 * target over a window of runs, cost per epoch, expected cost. See bso_policy.h. */
#include "core/bso_policy.h"

#include <math.h>
#include <string.h>

#include "core/bso_policy_internal.h"

double bso_bs_cost_per_epoch(const struct bso_bs_stat *s)
{
    return s->epochs_sum > 0 ? s->cost_sum / s->epochs_sum : NAN;
}

double bso_bs_unguessed(const struct bso_bs_stat *s, double per)
{
    return s->cost_shift > 1 ? per / s->cost_shift : per;
}

double bso_bs_per_epoch_jump(const struct bso_bs_stat *s, double cost, double epochs)
{
    const double shift = cost / epochs / bso_bs_cost_per_epoch(s);
    const bool jumped = shift > BSO_PER_EPOCH_SHIFT || shift < 1 / BSO_PER_EPOCH_SHIFT;
    return jumped && shift > 0 && isfinite(shift) ? shift : 1;
}

double bso_bs_cost_level(const struct bso_bs_stat *s)
{
    return s->cost_level > 0 ? s->cost_level : 1;
}

double bso_bs_mean_epochs(const struct bso_bs_stat *s)
{
    return s->sum_epochs / (double)s->successes;
}

/* A size's epochs to the target: one more run's worth, within a window of the last w runs
 * (w 0: all of them), and none at all. A window up to BSO_EPOCHS_WINDOW_MAX keeps its runs'
 * epochs and drops the oldest exactly; a longer one (or a size whose runs were counted before
 * windows were kept) fades the older runs instead, their mean kept, to about w runs. */
void bso_bs_add_epochs(struct bso_bs_stat *s, double e, int64_t w)
{
    const bool exact = w > 0 && w <= BSO_EPOCHS_WINDOW_MAX && s->n_window == s->successes;
    if (w > 0 && !exact && s->successes >= w) {
        const double keep = (double)(w - 1) / (double)s->successes;
        s->sum_epochs *= keep;
        s->sum_sq_epochs *= keep;
        s->successes = w - 1;
    }
    if (s->successes == 0 || e < s->min_epochs)
        s->min_epochs = e;
    s->successes++;
    s->sum_epochs += e;
    s->sum_sq_epochs += e * e;
    if (!exact)
        return;
    s->window[s->n_window++] = (float)e;
    if (s->n_window <= w)
        return;
    memmove(s->window, s->window + 1, (size_t)w * sizeof *s->window);
    s->n_window = s->successes = w;
    s->sum_epochs = s->sum_sq_epochs = 0;
    s->min_epochs = s->window[0];
    for (int64_t k = 0; k < w; k++) {
        const double x = s->window[k];
        s->sum_epochs += x;
        s->sum_sq_epochs += x * x;
        s->min_epochs = fmin(s->min_epochs, x);
    }
}

void bso_bs_clear_epochs(struct bso_bs_stat *s)
{
    s->successes = s->n_window = 0;
    s->sum_epochs = s->sum_sq_epochs = s->min_epochs = 0;
    s->first_epochs = 0;
}

const char *bso_bs_status_name(int status)
{
    static const char *const names[] = {"untried", "good",   "killed",
                                        "failed",  "passed", "infeasible"};
    return status >= 0 && status <= BSO_BS_INFEASIBLE ? names[status] : "unknown";
}

double bso_bs_expected_cost(const struct bso_bs_stat *s)
{
    return s->successes > 0 ? bso_bs_mean_epochs(s) * bso_bs_cost_per_epoch(s) : NAN;
}

double bso_bs_reach_chance(const struct bso_bs_stat *s)
{
    return (s->successes + 0.5) / (s->successes + s->misses + 1);
}
