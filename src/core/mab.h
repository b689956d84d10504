/*
 * Choosing a batch size in the MAB stage by Gaussian Thompson sampling (Zeus's GaussianTS).
 */
#ifndef BSO_CORE_MAB_H
#define BSO_CORE_MAB_H

#include <stddef.h>
#include <stdint.h>

#include "core/arm.h"
#include "core/rng.h"

/* Picks a batch size among arms[0..n) (ascending batch size). A random order of the arms is
 * always drawn first; the first arm in that order with fewer than num_explorations observations
 * is returned. Otherwise each arm, in ascending order, draws a sample of its mean reward, and the
 * largest sample wins (the first on ties). BSO_EINVAL when n is 0, BSO_ENOMEM, or BSO_ERANGE past
 * BSO_CHOICE_MAX arms. */
int bso_mab_choose(const struct bso_arm *arms, size_t n, int64_t num_explorations, bso_rng *rng,
                   int64_t *batch_size);

#endif
