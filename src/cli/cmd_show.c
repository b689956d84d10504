/* `bso show JOB`: a job's stage, best batch size so far, what the policy knows of each size,
 * power profiles, and the batch size during its latest runs. */
#include "cli/cli.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* The bso policy's view of each batch size, and the best so far. */
/* `declared`: the user said the job changed, which is why its sizes are close to the alarm. */
static void show_bs_stats(json_t *stats, bool declared)
{
    printf("\n%10s %-8s %5s %9s %7s %11s %14s %14s %7s\n", "BATCH SIZE", "STATUS", "RUNS",
           "REACHED", "MISSED", "MEAN EPOCHS", "COST/EPOCH", "EXPECTED COST", "CHANGE");
    json_t *st;
    size_t i;
    int64_t best = -1, building_at = -1;
    double best_cost = INFINITY, building = 0.5; /* said below from half the alarm on */
    bool any_prior = false;
    json_array_foreach(stats, i, st)
    {
        char epochs[32], per[32], cost[32];
        json_t *mean = json_object_get(st, "mean_epochs");
        cli_fmt_num(epochs, sizeof epochs, mean, 2);
        /* Not yet reached here, but inherited from the job this one was transferred from: a
         * prior, in brackets. */
        const double prior = json_number_value(json_object_get(st, "prior_epochs"));
        if (!json_is_number(mean) && prior > 0) {
            snprintf(epochs, sizeof epochs, "(%.2f)", prior);
            any_prior = true;
        }
        cli_fmt_num(per, sizeof per, json_object_get(st, "cost_per_epoch"), 1);
        cli_fmt_num(cost, sizeof cost, json_object_get(st, "expected_cost"), 1);
        const int64_t bs = json_integer_value(json_object_get(st, "batch_size"));
        /* A size whose runs diverged bounds nothing (docs/policy.md): not "failed" or "killed". */
        const char *status =
            json_is_true(json_object_get(st, "diverged")) ? "diverged" : cli_str(st, "status");
        /* CHANGE: how far this size's runs have gone towards saying that the job changed (a
         * share of the alarm; "-" for none, or from a server too old to say). */
        char change[16] = "-";
        const double evidence = json_number_value(json_object_get(st, "change_evidence"));
        if (evidence >= 0.005)
            snprintf(change, sizeof change, "%.0f%%", 100 * evidence);
        if (evidence > building) {
            building = evidence;
            building_at = bs;
        }
        /* MISSED: runs to max_epochs without reaching (0 from a server too old to count them). */
        printf("%10" PRId64 " %-8s %5" PRId64 " %9" PRId64 " %7" PRId64 " %11s %14s %14s %7s\n", bs,
               status, (int64_t)json_integer_value(json_object_get(st, "runs")),
               (int64_t)json_integer_value(json_object_get(st, "successes")),
               (int64_t)json_integer_value(json_object_get(st, "misses")), epochs, per, cost,
               change);
        json_t *e = json_object_get(st, "expected_cost");
        if (json_is_number(e) && json_number_value(e) < best_cost) {
            best_cost = json_number_value(e);
            best = bs;
        }
    }
    if (any_prior)
        printf("(epochs): inherited from the job this one was transferred from, until its own "
               "runs reach\n");
    if (best >= 0)
        printf("\nbest batch size so far: %" PRId64 " (lowest expected cost %.1f)\n", best,
               best_cost);
    if (building_at >= 0 && !declared)
        printf("the job may be changing: the runs at batch size %" PRId64
               " are %.0f%% of the way to saying so\n",
               building_at, 100 * building);
}

/* The power limit chosen per batch size, with what each limit measured. */
static void show_power(json_t *profiles)
{
    size_t i, k;
    json_t *p, *m;
    printf("\npower limits (profiled in a run's first epoch; later runs set the chosen one):\n");
    printf("%10s %9s   %s\n", "BATCH SIZE", "CHOSEN W", "MEASURED: limit W samples/s power W");
    json_array_foreach(profiles, i, p)
    {
        printf("%10" PRId64 " %9.0f  ",
               (int64_t)json_integer_value(json_object_get(p, "batch_size")),
               json_number_value(json_object_get(p, "power_limit")));
        json_array_foreach(json_object_get(p, "measurements"), k, m)
        {
            printf(" %.0f:%.1f:%.1f", json_number_value(json_object_get(m, "power_limit")),
                   json_number_value(json_object_get(m, "samples_per_s")),
                   json_number_value(json_object_get(m, "power")));
        }
        printf("\n");
    }
}

/* The latest runs that reported their batch size over time (at most the last five trials). */
static void show_recent_progress(bso_client *cl, const char *job_id, int64_t last_trial)
{
    char suffix[64], path[1000];
    snprintf(suffix, sizeof suffix, "/trials?after=%" PRId64,
             last_trial > 5 ? last_trial - 5 : (int64_t)0);
    cli_job_path(job_id, suffix, path, sizeof path);
    if (bso_client_get(cl, path) < 0)
        return;
    json_t *page = json_loads(bso_client_body(cl), 0, NULL), *t;
    size_t i;
    bool header = false;
    json_array_foreach(json_object_get(page, "trials"), i, t)
    {
        char line[256];
        cli_batch_over_time(t, line, sizeof line);
        if (!line[0])
            continue;
        if (!header)
            printf("\nbatch size during the latest runs (per epoch):\n");
        header = true;
        printf("  trial %" PRId64 " (given %" PRId64 ", %s): %s\n",
               (int64_t)json_integer_value(json_object_get(t, "trial_number")),
               (int64_t)json_integer_value(json_object_get(t, "batch_size")), cli_str(t, "status"),
               line);
    }
    json_decref(page);
}

int cmd_show(struct ctx *c)
{
    bso_client *cl = c->cl;
    char path[900];
    cli_job_path(c->argv[0], "", path, sizeof path);
    int status = cli_check(cl, bso_client_get(cl, path));
    if (status == 0 && c->json)
        cli_print_body(cl);
    if (status || c->json)
        return status;
    json_t *job = json_loads(bso_client_body(cl), 0, NULL);
    json_t *trials = json_object_get(job, "trials");
    const char *policy = cli_str(json_object_get(job, "spec"), "policy");
    const char *stage = cli_stage(cli_str(job, "stage"), policy, false);
    printf("job      %s\npolicy   %s\nstage    %s\ntrials   %" PRId64 " (%" PRId64
           " succeeded, %" PRId64 " failed, %" PRId64 " running)\n",
           cli_str(job, "job_id"), policy, stage,
           (int64_t)json_integer_value(json_object_get(trials, "total")),
           (int64_t)json_integer_value(json_object_get(trials, "succeeded")),
           (int64_t)json_integer_value(json_object_get(trials, "failed")),
           (int64_t)json_integer_value(json_object_get(trials, "dispatched")));
    json_t *min_cost = json_object_get(job, "min_cost");
    if (json_is_number(min_cost))
        printf("min cost %.1f at batch size %" PRId64 "\n", json_number_value(min_cost),
               (int64_t)json_integer_value(json_object_get(job, "min_cost_batch_size")));
    else
        printf("min cost none yet (no run has reached the target)\n");
    json_t *arms = json_object_get(job, "arms"), *a;
    size_t i;
    int64_t best = -1;
    double best_cost = INFINITY;
    if (json_array_size(arms) > 0) {
        printf("\n%10s %6s %14s %14s\n", "BATCH SIZE", "OBS", "MEAN COST", "POSTERIOR SD");
        json_array_foreach(arms, i, a)
        {
            double mean_cost = json_number_value(json_object_get(a, "mean_cost"));
            json_t *prec = json_object_get(a, "param_precision");
            char sd[32];
            if (json_is_number(prec))
                snprintf(sd, sizeof sd, "%.1f", 1.0 / sqrt(json_number_value(prec)));
            else
                snprintf(sd, sizeof sd, "0 (exact)");
            int64_t bs = json_integer_value(json_object_get(a, "batch_size"));
            printf("%10" PRId64 " %6" PRId64 " %14.1f %14s\n", bs,
                   (int64_t)json_integer_value(json_object_get(a, "num_observations")), mean_cost,
                   sd);
            if (mean_cost < best_cost) {
                best_cost = mean_cost;
                best = bs;
            }
        }
        printf("\nbest batch size so far: %" PRId64 " (lowest mean cost %.1f)\n", best, best_cost);
    } else if (json_array_size(json_object_get(job, "batch_size_stats")) > 0) {
        show_bs_stats(json_object_get(job, "batch_size_stats"),
                      json_is_integer(json_object_get(job, "change_declared_at_trial")));
    } else {
        printf("\nbest batch size so far: %" PRId64 " (pruning: the cheapest result)\n",
               (int64_t)json_integer_value(json_object_get(job, "min_cost_batch_size")));
    }
    json_t *unfit = json_object_get(job, "unfit_batch_sizes");
    if (json_array_size(unfit) > 0) {
        printf("unfit (the device's profile says they do not fit; never dispatched):");
        json_array_foreach(unfit, i, a) printf(" %" PRId64, (int64_t)json_integer_value(a));
        printf("\n");
    }
    json_t *infeasible = json_object_get(job, "infeasible_batch_sizes");
    if (json_array_size(infeasible) > 0) {
        printf("infeasible (runs kept ending without a report; `bso reset` to retry):");
        json_array_foreach(infeasible, i, a) printf(" %" PRId64, (int64_t)json_integer_value(a));
        printf("\n");
    }
    json_t *origin = json_object_get(job, "transferred_from");
    if (json_is_object(origin)) {
        printf("transferred from %s (epochs of %" PRId64 " batch sizes, %s)\n",
               cli_str(origin, "job_id"),
               (int64_t)json_integer_value(json_object_get(origin, "batch_sizes")),
               cli_str(origin, "at"));
        /* Sizes failed with no run here: their runs there ran out of epochs (bso transfer). */
        int64_t carried = 0;
        json_t *st;
        size_t k;
        json_array_foreach(json_object_get(job, "batch_size_stats"), k, st)
        {
            carried += strcmp(cli_str(st, "status"), "failed") == 0 &&
                       json_integer_value(json_object_get(st, "runs")) == 0;
        }
        if (carried > 0)
            printf("%" PRId64 " batch size%s failed with 0 runs: never reached in %s, its runs "
                   "there running out of epochs\n",
                   carried, carried == 1 ? "" : "s", cli_str(origin, "job_id"));
    }
    json_t *changed = json_object_get(job, "change_detected_at_trial");
    if (json_is_integer(changed))
        printf("the job changed: found at trial %" PRId64
               "; what was learnt before weighs as one run per size\n",
               (int64_t)json_integer_value(changed));
    json_t *version = json_object_get(job, "data_version");
    if (json_is_object(version))
        printf("data version %s (since %s)\n", cli_str(version, "version"),
               cli_str(version, "since"));
    json_t *declared = json_object_get(job, "change_declared_at_trial");
    if (json_is_integer(declared))
        printf("the job changed after trial %" PRId64
               ", its user says (`bso changed`, or a new data version): the next run at each "
               "size it knows decides whether that matters there\n",
               (int64_t)json_integer_value(declared));
    json_t *out_of_reach = json_object_get(job, "target_out_of_reach");
    if (json_is_object(out_of_reach)) {
        json_t *since = json_object_get(out_of_reach, "since_trial");
        char when[48] = "since the job started";
        if (json_is_integer(since))
            snprintf(when, sizeof when, "since trial %" PRId64, (int64_t)json_integer_value(since));
        printf("warning: no batch size reached the target %s (%" PRId64
               " trials), and none is expected to within max_epochs: raise max_epochs or check "
               "target_metric\n",
               when, (int64_t)json_integer_value(json_object_get(out_of_reach, "trials")));
        json_t *next = json_object_get(out_of_reach, "next_pass_after");
        if (json_is_integer(next) && json_integer_value(next) > 0)
            printf("the job never trained: its sizes run again after %" PRId64
                   " more request(s) for a batch size are refused (%" PRId64 " so far)\n",
                   (int64_t)json_integer_value(next),
                   (int64_t)json_integer_value(json_object_get(out_of_reach, "refused")));
        else if (json_is_integer(next))
            printf("the job never trained: the next request for a batch size starts another "
                   "pass over its sizes\n");
    }
    if (json_array_size(json_object_get(job, "power_profiles")) > 0)
        show_power(json_object_get(job, "power_profiles"));
    show_recent_progress(cl, c->argv[0], json_integer_value(json_object_get(trials, "total")));
    json_decref(job);
    return 0;
}
