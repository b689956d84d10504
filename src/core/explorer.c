/* The pruning explorer; see explorer.h and docs/policy.md. */
#include "core/explorer.h"

#include <stdlib.h>
#include <string.h>

#include "bso/error.h"
#include "core/cost.h"

const struct bso_trial *bso_exploration_in_round(const struct bso_trial *trials, size_t n_trials,
                                                 int64_t bs, int64_t r)
{
    int64_t seen = 0;
    for (size_t i = 0; i < n_trials; i++) {
        const struct bso_trial *t = &trials[i];
        if (t->type != BSO_TRIAL_EXPLORATION || t->status == BSO_TRIAL_FAILED ||
            t->batch_size != bs)
            continue;
        if (seen++ == r)
            return t;
    }
    return NULL;
}

int64_t bso_crash_streak(const struct bso_trial *trials, size_t n_trials, int64_t bs)
{
    int64_t streak = 0;
    for (size_t i = n_trials; i-- > 0;) {
        if (trials[i].batch_size != bs || trials[i].type != BSO_TRIAL_EXPLORATION)
            continue; /* concurrent runs borrow a size that worked; their ends tell nothing */
        if (trials[i].status != BSO_TRIAL_FAILED)
            break;
        streak++;
    }
    return streak;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* What walking one direction of one round found. */
enum walk { WALK_ON, WALK_RETURN };

struct round {
    int64_t survivors[BSO_MAX_BATCH_SIZES]; /* in encounter order */
    size_t n_survivors;
    double best_cost;
    int64_t best_bs;
    bool has_best;
};

/* Visits one batch size in round r. Returns WALK_RETURN when *out holds a decision, else sets
 * *stop when this direction ends here. */
static enum walk visit(const struct bso_job_spec *spec, const struct bso_trial *trials,
                       size_t n_trials, int64_t min_cost_bs, int64_t r, int64_t bs,
                       struct round *rd, bool *stop, struct bso_explore_result *out)
{
    const struct bso_trial *t = bso_exploration_in_round(trials, n_trials, bs, r);
    const int i = bso_job_spec_index(spec, bs);
    if (!t && ((i >= 0 && bso_spec_unfit(spec, (size_t)i)) ||
               bso_crash_streak(trials, n_trials, bs) >= BSO_CRASHES_INFEASIBLE)) {
        *stop = true; /* it cannot run here: as if it had not converged */
        return WALK_ON;
    }
    if (!t) {
        out->kind = BSO_EXPLORE_TRY;
        out->batch_size = bs;
        return WALK_RETURN;
    }
    if (t->status == BSO_TRIAL_DISPATCHED) {
        out->kind = BSO_EXPLORE_CONCURRENT;
        out->batch_size = min_cost_bs;
        return WALK_RETURN;
    }
    if (!t->converged) {
        *stop = true;
        return WALK_ON;
    }
    rd->survivors[rd->n_survivors++] = bs;
    double c = bso_cost(t->energy, t->time, spec->eta_knob, spec->max_power);
    if (!rd->has_best || c < rd->best_cost) { /* strict: the first of equal costs wins */
        rd->has_best = true;
        rd->best_cost = c;
        rd->best_bs = bs;
    }
    return WALK_ON;
}

int bso_explore(const struct bso_job_spec *spec, const struct bso_trial *trials, size_t n_trials,
                int64_t min_cost_batch_size, struct bso_explore_result *out)
{
    int64_t cand[BSO_MAX_BATCH_SIZES];
    size_t n_cand = spec->n_batch_sizes;
    memcpy(cand, spec->batch_sizes, n_cand * sizeof(int64_t));
    int64_t anchor = spec->default_batch_size;
    memset(out, 0, sizeof(*out));

    for (int64_t r = 0; r < spec->num_pruning_rounds; r++) {
        struct round rd = {.n_survivors = 0, .has_best = false};
        qsort(cand, n_cand, sizeof(int64_t), cmp_i64);
        size_t a = 0;
        while (a < n_cand && cand[a] != anchor)
            a++;
        if (a == n_cand) /* the anchor is always a candidate; anything else is corrupt input */
            return BSO_ESTATE;
        /* Down from the anchor (inclusive), then up from just above it. */
        bool stop = false;
        for (size_t k = a + 1; k-- > 0 && !stop;)
            if (visit(spec, trials, n_trials, min_cost_batch_size, r, cand[k], &rd, &stop, out) ==
                WALK_RETURN)
                return 0;
        stop = false;
        for (size_t k = a + 1; k < n_cand && !stop; k++)
            if (visit(spec, trials, n_trials, min_cost_batch_size, r, cand[k], &rd, &stop, out) ==
                WALK_RETURN)
                return 0;
        if (rd.n_survivors == 0)
            return BSO_EPRUNED;
        anchor = rd.best_bs;
        memcpy(cand, rd.survivors, rd.n_survivors * sizeof(int64_t));
        n_cand = rd.n_survivors;
    }
    qsort(cand, n_cand, sizeof(int64_t), cmp_i64);
    out->kind = BSO_EXPLORE_DONE;
    memcpy(out->arms, cand, n_cand * sizeof(int64_t));
    out->n_arms = n_cand;
    return 0;
}
