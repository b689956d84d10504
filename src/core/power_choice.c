/* The choice of a GPU power limit from per-limit measurements; see include/bso/power.h. Shared
 * by libbso's tuner and bso-sim's --power jit, so the replay chooses as a real job would. */
#include <math.h>

#include "bso/power.h"

double bso_power_cost_per_sample(const struct bso_power_point *p, double eta, double max_power_w)
{
    if (!(p->samples_per_s > 0) || !isfinite(p->samples_per_s) || !isfinite(p->power_w))
        return INFINITY;
    /* The cost function's rate, eta * power + (1 - eta) * max_power (J-equivalent per second),
     * over the work done per second. */
    return (eta * p->power_w + (1 - eta) * max_power_w) / p->samples_per_s;
}

int bso_power_choose(const struct bso_power_point *p, size_t n, double eta, double max_power_w,
                     size_t *best)
{
    if (!p || n == 0 || !best || !(eta >= 0 && eta <= 1) || !(max_power_w > 0))
        return BSO_EINVAL;
    size_t chosen = n;
    double least = INFINITY;
    for (size_t i = 0; i < n; i++) {
        const double c = bso_power_cost_per_sample(&p[i], eta, max_power_w);
        /* Equal costs go to the higher limit: the same cost sooner. */
        if (c < least || (c == least && chosen < n && p[i].limit_w > p[chosen].limit_w)) {
            least = c;
            chosen = i;
        }
    }
    if (chosen == n)
        return BSO_EINVAL;
    *best = chosen;
    return 0;
}
