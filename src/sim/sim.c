/* The replay engine; see sim.h. */
#include "sim/sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bso/power.h"
#include "core/cost.h"
#include "core/rng.h"
#include "core/spec.h"
#include "sim/profile.h"

/* What a run that does not fit costs before it dies: process start, data loading, model set-up
 * and the first step, at the largest fitting size's power. */
#define SIM_OOM_SECONDS 60.0

static double epoch_cost(const struct sim_job *job, size_t b, size_t p, double eta)
{
    const struct sim_bs *s = &job->bs[b];
    return bso_cost(s->time_per_epoch[p] * s->power[p], s->time_per_epoch[p], eta, job->max_power);
}

/* Whether a path that reaches the target at epoch te (0: never) does so within max_epochs. */
static bool path_reaches(const struct sim_job *job, int64_t te)
{
    return te > 0 && te <= job->w.max_epochs;
}

double sim_expected_cost(const struct sim_job *job, size_t b, size_t p, double eta)
{
    const struct sim_bs *s = &job->bs[b];
    double epochs = 0;
    size_t reaching = 0;
    for (size_t i = 0; i < s->n_paths; i++) {
        int64_t te = s->target_epoch[i];
        if (path_reaches(job, te)) {
            epochs += (double)te;
            reaching++;
        } else {
            epochs += (double)job->w.max_epochs;
        }
    }
    if (reaching == 0)
        return INFINITY;
    return epochs / (double)reaching * epoch_cost(job, b, p, eta);
}

/* What profiling batch size b measures at each of the trace's limits: samples per second
 * when the workload's training set size is known, else epochs per second. */
static size_t trace_points(const struct sim_job *job, size_t b, struct bso_power_point *points)
{
    const struct sim_bs *s = &job->bs[b];
    const double work = job->w.samples_per_epoch > 0 ? (double)job->w.samples_per_epoch : 1.0;
    for (size_t p = 0; p < s->n_pl; p++)
        points[p] = (struct bso_power_point){.limit_w = s->pl[p],
                                             .samples_per_s = work / s->time_per_epoch[p],
                                             .power_w = s->power[p]};
    return s->n_pl;
}

/* The power limit a job chooses for batch size b after profiling its first epoch: the
 * client's choice (bso_power_choose) over the trace's limits. */
static size_t best_pl(const struct sim_job *job, size_t b, double eta)
{
    const struct sim_bs *s = &job->bs[b];
    struct bso_power_point points[SIM_MAX_PL];
    trace_points(job, b, points);
    size_t best;
    if (bso_power_choose(points, s->n_pl, eta, job->max_power, &best) < 0)
        return s->n_pl - 1;
    return best;
}

/* Expected cost of batch size index b at the limit the mode runs it at: its chosen limit with
 * jit, else the largest. */
static double mode_cost(const struct sim_job *job, size_t b, double eta, bool jit)
{
    return sim_expected_cost(job, b, jit ? best_pl(job, b, eta) : job->bs[b].n_pl - 1, eta);
}

size_t sim_optimum(const struct sim_job *job, double eta, bool jit)
{
    size_t best = 0;
    for (size_t b = 1; b < job->n_bs; b++)
        if (mode_cost(job, b, eta, jit) < mode_cost(job, best, eta, jit))
            best = b;
    return best;
}

void sim_reference_costs(const struct sim_job *job, double eta, bool jit, double *oracle,
                         double *base)
{
    *oracle = job->n_bs ? mode_cost(job, sim_optimum(job, eta, jit), eta, jit) : INFINITY;
    *base = INFINITY;
    for (size_t b = 0; b < job->n_bs; b++)
        if (job->bs[b].bs == job->default_bs)
            *base = mode_cost(job, b, eta, false);
}

/* How many runs a recurrence has to train its model in time (--launches; 5 when unset). */
static int64_t launches_in_time(const struct sim_options *opt)
{
    return opt->launches > 0 ? opt->launches : 5;
}

/* The chance that a run at the size most likely to reach the target reaches it: the share of
 * that size's paths that reach within max_epochs (runs draw their path uniformly). */
static double best_reach_chance(const struct sim_job *job)
{
    double best = 0;
    for (size_t b = 0; b < job->n_bs; b++) {
        const struct sim_bs *s = &job->bs[b];
        size_t reaching = 0;
        for (size_t i = 0; i < s->n_paths; i++)
            reaching += path_reaches(job, s->target_epoch[i]);
        if (s->n_paths > 0 && (double)reaching / (double)s->n_paths > best)
            best = (double)reaching / (double)s->n_paths;
    }
    return best;
}

static size_t bs_index(const struct sim_job *job, int64_t bs)
{
    for (size_t b = 0; b < job->n_bs; b++)
        if (job->bs[b].bs == bs)
            return b;
    return SIZE_MAX;
}

/* FNV-1a, to fold the workload's name into the common random numbers' seed. */
static uint32_t fnv(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

void sim_seed_stream(bso_rng *rng, const struct sim_job *job, int64_t seed, int64_t bs, uint32_t k)
{
    const uint32_t words[6] = {(uint32_t)seed,      (uint32_t)((uint64_t)seed >> 32),
                               fnv(job->w.dataset), fnv(job->w.network),
                               (uint32_t)bs,        k};
    bso_rng_seed_words(rng, words, 6);
}

/* The training path of the k-th run at batch size index b: drawn from a stream seeded by
 * (seed, workload, batch size, k) only, so every policy meets the same paths. */
static int64_t path_epoch(const struct sim_job *job, int64_t seed, size_t b, int64_t k)
{
    const struct sim_bs *s = &job->bs[b];
    bso_rng rng;
    sim_seed_stream(&rng, job, seed, s->bs, (uint32_t)k);
    return s->target_epoch[bso_rng_bounded(&rng, s->n_paths - 1)];
}

static bool is_unfit(const struct sim_job *job, int64_t bs)
{
    for (size_t u = 0; u < job->n_unfit; u++)
        if (job->unfit[u] == bs)
            return true;
    return false;
}

struct run_state {
    int64_t runs_at[SIM_MAX_BS]; /* how many runs each batch size has had */
    bool profiled[SIM_MAX_BS];   /* jit: the first epoch at this size profiled the limits */
    int64_t recurrence;          /* the one being replayed, from 1 (for --decisions) */
};

/* One line of --decisions: the run's job, trial and size, the epoch its path reaches the target
 * at (-1: never), how it ended, its cost, which policy ran which recurrence how many epochs,
 * and the arm (policy with its power, profile and move: the arms of one replay share a policy). */
static void trace_run(const struct sim_job *job, const struct sim_options *opt,
                      const struct run_state *st, int64_t trial, int64_t bs, int64_t target_epoch,
                      const char *outcome, double cost, int64_t epochs_run)
{
    if (opt->trace)
        fprintf(opt->trace, "%s,%s,%lld,%lld,%lld,%lld,%s,%.6g,%s,%lld,%lld,%s\n", job->w.dataset,
                job->gpu, (long long)opt->seed, (long long)trial, (long long)bs,
                (long long)target_epoch, outcome, cost, bso_policy_name(opt->policy),
                (long long)st->recurrence, (long long)epochs_run,
                opt->arm ? opt->arm : bso_policy_name(opt->policy));
}

/* One run: its cost, its batch size, and whether it reached the target. */
static int run_once(const struct sim_job *job, const struct sim_options *opt,
                    struct sim_driver *drv, struct run_state *st, double *cost, int64_t *bs_out,
                    bool *reached, char *err, size_t errcap)
{
    int64_t bs, trial;
    const int got = drv->predict(drv->ctx, &bs, &trial);
    if (got < 0) {
        snprintf(err, errcap, "%s", drv->err);
        return got;
    }
    const size_t b = bs_index(job, bs);
    if (b == SIZE_MAX && opt->unfit_sizes && is_unfit(job, bs)) {
        /* Out of memory at its first step: the start-up is lost, and no report comes. */
        const struct sim_bs *top = &job->bs[job->n_bs - 1];
        const double w = top->power[top->n_pl - 1];
        *cost = bso_cost(SIM_OOM_SECONDS * w, SIM_OOM_SECONDS, opt->eta, job->max_power);
        *bs_out = bs;
        *reached = false;
        if (drv->end_trial(drv->ctx, bs, trial) < 0) {
            snprintf(err, errcap, "%s", drv->err);
            return -1;
        }
        trace_run(job, opt, st, trial, bs, -1, "out-of-memory", *cost, 0);
        return 0;
    }
    if (b == SIZE_MAX) {
        snprintf(err, errcap, "the policy chose batch size %lld, which has no trace",
                 (long long)bs);
        return -1;
    }
    const struct sim_bs *s = &job->bs[b];
    const int64_t te = path_epoch(job, opt->seed, b, st->runs_at[b]++);
    const size_t maxp = s->n_pl - 1;
    const size_t p = opt->jit ? best_pl(job, b, opt->eta) : maxp;
    double time = 0, energy = 0;
    /* The metric short of the target: by a share of a unit that falls from 1 to 0 as the run
     * nears the epoch its path reaches at (the traces give that epoch only, so a straight
     * line), a whole unit where the path never reaches. */
    const double toward = job->w.higher_is_better ? 1 : -1;
    *reached = false;
    int64_t ran = 0;
    for (int64_t e = 1; e <= 4 * job->w.max_epochs; e++) {
        ran = e;
        if (opt->jit && !st->profiled[b]) {
            /* The first epoch at a new size profiles every limit: charged at their mean. */
            double t = 0, j = 0;
            for (size_t k = 0; k < s->n_pl; k++) {
                t += s->time_per_epoch[k];
                j += s->time_per_epoch[k] * s->power[k];
            }
            time += t / (double)s->n_pl;
            energy += j / (double)s->n_pl;
            st->profiled[b] = true;
            struct bso_power_point points[SIM_MAX_PL];
            const size_t n = trace_points(job, b, points);
            if (n <= BSO_POWER_MAX_LIMITS && drv->power(drv->ctx, bs, points, n, p) < 0) {
                snprintf(err, errcap, "%s", drv->err);
                return -1;
            }
        } else {
            time += s->time_per_epoch[p];
            energy += s->time_per_epoch[p] * s->power[p];
        }
        *reached = te > 0 && e >= te;
        const double short_of = *reached ? 0 : te > 0 ? 1 - (double)e / (double)te : 1;
        bool stop, converged;
        if (drv->report(drv->ctx, bs, trial, time, energy, job->w.target - toward * short_of, e,
                        &stop, &converged) < 0) {
            snprintf(err, errcap, "%s", drv->err);
            return -1;
        }
        if (stop)
            break;
    }
    *cost = bso_cost(energy, time, opt->eta, job->max_power);
    *bs_out = bs;
    trace_run(job, opt, st, trial, bs, te > 0 ? te : -1, *reached ? "reached" : "stopped", *cost,
              ran);
    return 0;
}

/* The job of each phase: phase 0 is the job as loaded, each later one the one before with the
 * changes of its starting recurrence applied. Fills res's phase boundaries and oracles. NULL
 * with err set when out of memory or a GPU's trace is missing (the caller frees the array). */
static struct sim_job *phase_jobs(const struct sim_job *job, const struct sim_options *opt,
                                  struct sim_result *res, char *err, size_t errcap)
{
    int64_t points[SIM_MAX_CHANGES];
    size_t n_points = opt->changes ? sim_change_points(opt->changes, points) : 0;
    while (n_points > 0 && points[n_points - 1] > opt->recurrences)
        n_points--; /* changes after the last recurrence never happen */
    struct sim_job *jobs = malloc((n_points + 1) * sizeof *jobs);
    if (!jobs)
        return NULL;
    jobs[0] = *job;
    res->n_phases = n_points + 1;
    for (size_t k = 0; k <= n_points; k++) {
        if (k > 0) {
            jobs[k] = jobs[k - 1];
            if (sim_change_apply(opt->changes, points[k - 1], opt->eta, opt->jit, opt->traces,
                                 &jobs[k], err, errcap) < 0) {
                free(jobs);
                return NULL;
            }
        }
        struct sim_phase_result *ph = &res->phase[k];
        ph->first = k == 0 ? 0 : points[k - 1] - 1;
        ph->n = (k == n_points ? opt->recurrences : points[k] - 1) - ph->first;
        double base;
        sim_reference_costs(&jobs[k], opt->eta, opt->jit, &ph->oracle, &base);
        ph->optimum = isfinite(ph->oracle) && jobs[k].n_bs
                          ? jobs[k].bs[sim_optimum(&jobs[k], opt->eta, opt->jit)].bs
                          : 0;
        ph->no_model_floor =
            (double)ph->n * pow(1 - best_reach_chance(&jobs[k]), (double)launches_in_time(opt));
    }
    return jobs;
}

/* With --profile probe: the device profile (bso.probe) of the job's GPU, posted before its first
 * recurrence there, which pays for the probe (added to *cost). */
static int probe(const struct sim_job *job, const struct sim_options *opt, struct sim_driver *drv,
                 double *cost, char *err, size_t errcap)
{
    struct sim_profile_entry prof[2 * SIM_MAX_BS];
    sim_profile_derive(job, &opt->probe, opt->seed, prof);
    const size_t n = job->n_bs + (opt->unfit_sizes ? job->n_unfit : 0);
    if (drv->profile(drv->ctx, prof, n) < 0) {
        snprintf(err, errcap, "%s", drv->err);
        return -1;
    }
    double time, energy;
    sim_probe_cost(job, &opt->probe, &time, &energy);
    *cost += bso_cost(energy, time, opt->eta, job->max_power);
    return 0;
}

/* The job moved to another GPU: as a Zeus client does, it registers a new job (the GPU is part
 * of the spec), which starts afresh or, with --move transfer, from the old job's epochs. */
static int move(const struct sim_job *to, const struct sim_options *opt, struct sim_driver *drv,
                char *err, size_t errcap)
{
    struct sim_driver next;
    if (sim_driver_open(&next, to, opt) < 0) {
        snprintf(err, errcap, "%s", next.err);
        return -1;
    }
    if (opt->transfer && next.transfer(next.ctx, drv->ctx) < 0) {
        snprintf(err, errcap, "%s", next.err);
        next.close(next.ctx);
        return -1;
    }
    drv->close(drv->ctx);
    *drv = next;
    /* Its error buffer moved with it. */
    return sim_driver_rebind(drv);
}

/* How long after its start the phase's recurrences trained with a near-optimal size
 * SIM_SETTLED_RUN times in a row (trained[r]: the size index that reached the target in
 * recurrence r). */
static int64_t phase_lag(const struct sim_job *job, const struct sim_options *opt,
                         const struct sim_phase_result *ph, const size_t *trained)
{
    int64_t streak = 0;
    for (int64_t r = ph->first; r < ph->first + ph->n; r++) {
        const size_t b = trained[r];
        const bool near =
            b < job->n_bs && mode_cost(job, b, opt->eta, opt->jit) <= SIM_NEAR_OPTIMAL * ph->oracle;
        streak = near ? streak + 1 : 0;
        if (streak == SIM_SETTLED_RUN)
            return r + 1 - SIM_SETTLED_RUN - ph->first;
    }
    return ph->n;
}

int sim_run(const struct sim_job *job, const struct sim_options *opt, struct sim_result *res,
            char *err, size_t errcap)
{
    memset(res, 0, sizeof(*res));
    res->cost = calloc((size_t)opt->recurrences, sizeof(double));
    size_t *trained = calloc((size_t)opt->recurrences, sizeof *trained);
    snprintf(err, errcap, "out of memory");
    struct sim_job *jobs = res->cost && trained ? phase_jobs(job, opt, res, err, errcap) : NULL;
    if (!jobs) {
        free(trained);
        return -1;
    }
    struct sim_driver drv;
    if (sim_driver_open(&drv, job, opt) < 0) {
        snprintf(err, errcap, "%s", drv.err);
        free(jobs);
        free(trained);
        return -1;
    }
    struct run_state st;
    memset(&st, 0, sizeof st);
    int64_t last_bs = -1;
    int rc = 0;
    if (opt->profile && opt->recurrences > 0)
        rc = probe(&jobs[0], opt, &drv, &res->cost[0], err, errcap);
    const int64_t launches = launches_in_time(opt);
    int64_t change_seen = 0; /* the last change the policy found, as a trial number */
    size_t k = 0;            /* the phase */
    for (int64_t r = 0; r < opt->recurrences && rc == 0; r++) {
        while (k + 1 < res->n_phases && r >= res->phase[k + 1].first) {
            k++;
            if (strcmp(jobs[k].gpu, jobs[k - 1].gpu) == 0) {
                /* The same job changed: with --declare-changes, its user says so (the zeus
                 * policy has no such call). */
                if (opt->declare && opt->policy == BSO_POLICY_BSO &&
                    (rc = drv.declare_change(drv.ctx)) < 0) {
                    snprintf(err, errcap, "%s", drv.err);
                    break;
                }
                continue;
            }
            if ((rc = move(&jobs[k], opt, &drv, err, errcap)) < 0)
                break;
            /* The new job probes its new GPU as the old one probed its own. */
            if (opt->profile && (rc = probe(&jobs[k], opt, &drv, &res->cost[r], err, errcap)) < 0)
                break;
            memset(&st, 0, sizeof st); /* the new GPU's sizes: their runs counted afresh */
            change_seen = 0;           /* and a new job, which has found nothing yet */
        }
        if (rc < 0)
            break;
        st.recurrence = r + 1;
        struct sim_phase_result *ph = &res->phase[k];
        bool reached = false;
        int attempts = 0;
        trained[r] = SIZE_MAX;
        while (!reached && rc == 0) {
            double c;
            if (++attempts > SIM_MAX_LAUNCHES) {
                ph->gave_up++; /* no model (counted at `launches`), at the cost of its runs */
                break;
            }
            int64_t bs;
            rc = run_once(&jobs[k], opt, &drv, &st, &c, &bs, &reached, err, errcap);
            if (rc == SIM_REFUSED) {
                /* The policy gave no size: this recurrence trains no model (counted here unless
                 * its launches already ran out) and, the client getting no batch size, spends
                 * nothing more. The next recurrence asks again. */
                ph->refused++;
                if (attempts <= launches)
                    ph->no_model++;
                err[0] = '\0';
                rc = 0;
                break;
            }
            if (rc < 0)
                break;
            int64_t changed;
            if ((rc = drv.change_trial(drv.ctx, &changed)) < 0) {
                snprintf(err, errcap, "%s", drv.err);
                break;
            }
            if (changed > change_seen) {
                ph->changes_found++;
                change_seen = changed;
            }
            res->cost[r] += c;
            if (!reached) {
                res->failed_runs++;
                ph->stopped++;
                if (attempts == launches)
                    ph->no_model++;
            } else {
                trained[r] = bs_index(job, bs);
                if (bs != last_bs) {
                    last_bs = bs;
                    res->settle = r + 1;
                }
            }
        }
        res->cumulative += res->cost[r];
        ph->cost += res->cost[r];
    }
    for (size_t p = 0; p < res->n_phases && rc == 0; p++)
        res->phase[p].lag = phase_lag(&jobs[p], opt, &res->phase[p], trained);
    drv.close(drv.ctx);
    free(jobs);
    free(trained);
    return rc;
}
