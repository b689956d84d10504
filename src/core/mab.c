/* Gaussian Thompson sampling over the arms; see mab.h. */
#include "core/mab.h"

#include <math.h>
#include <stdlib.h>

#include "bso/error.h"

int bso_mab_choose(const struct bso_arm *arms, size_t n, int64_t num_explorations, bso_rng *rng,
                   int64_t *batch_size)
{
    if (n == 0)
        return BSO_EINVAL;
    int64_t *sizes = malloc(2 * n * sizeof(*sizes));
    if (!sizes)
        return BSO_ENOMEM;
    int64_t *order = sizes + n;
    for (size_t i = 0; i < n; i++)
        sizes[i] = arms[i].batch_size;
    int rc = bso_rng_choice_all(rng, sizes, n, order);
    if (rc < 0) {
        free(sizes);
        return rc;
    }
    /* Exploration phase: an arm seen fewer times than asked is pulled first, in random order. */
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < n; j++) {
            if (arms[j].batch_size == order[i] && arms[j].num_observations < num_explorations) {
                *batch_size = order[i];
                free(sizes);
                return 0;
            }
        }
    }
    free(sizes);

    size_t best = 0;
    double best_sample = 0;
    for (size_t i = 0; i < n; i++) {
        /* An infinite precision gives scale 0: the sample is the mean, yet a draw is consumed. */
        double scale = sqrt(1.0 / arms[i].param_precision);
        double sample = bso_rng_normal(rng, arms[i].param_mean, scale);
        if (i == 0 || sample > best_sample) {
            best = i;
            best_sample = sample;
        }
    }
    *batch_size = arms[best].batch_size;
    return 0;
}
