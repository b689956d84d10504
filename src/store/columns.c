/* Text columns shared by the storage backends; see columns.h. */
#include "store/columns.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bso/error.h"

int bso_column_trial_type(const char *t)
{
    return strcmp(t, "MAB") == 0          ? BSO_TRIAL_MAB
           : strcmp(t, "Concurrent") == 0 ? BSO_TRIAL_CONCURRENT
                                          : BSO_TRIAL_EXPLORATION;
}

int bso_column_trial_status(const char *t)
{
    return strcmp(t, "Succeeded") == 0 ? BSO_TRIAL_SUCCEEDED
           : strcmp(t, "Failed") == 0  ? BSO_TRIAL_FAILED
                                       : BSO_TRIAL_DISPATCHED;
}

int bso_column_stage(const char *t)
{
    return strcmp(t, "MAB") == 0 ? BSO_STAGE_MAB : BSO_STAGE_PRUNING;
}

int bso_column_parse_sizes(const char *text, struct bso_job_spec *spec)
{
    const char *p = text;
    size_t n = 0;
    if (*p++ != '[')
        return BSO_EPARSE;
    while (*p && *p != ']') {
        char *end;
        long long v = strtoll(p, &end, 10);
        if (end == p || n >= BSO_MAX_BATCH_SIZES)
            return BSO_EPARSE;
        spec->batch_sizes[n++] = v;
        p = *end == ',' ? end + 1 : end;
    }
    spec->n_batch_sizes = n;
    return *p == ']' ? 0 : BSO_EPARSE;
}

/* %.17g keeps every bit. */
char *bso_column_format_recent(const struct bso_arm *a)
{
    size_t cap = 3 + a->n_recent * 48;
    char *buf = malloc(cap);
    if (!buf)
        return NULL;
    size_t o = 0;
    buf[o++] = '[';
    for (size_t i = 0; i < a->n_recent; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s[%" PRId64 ",%.17g]", i ? "," : "",
                              a->recent[i].trial_number, a->recent[i].reward);
    buf[o++] = ']';
    buf[o] = '\0';
    return buf;
}

int bso_column_parse_recent(const char *text, struct bso_arm *a)
{
    size_t n = 0;
    for (const char *p = text; *p; p++)
        n += *p == '[';
    n = n > 0 ? n - 1 : 0;
    a->recent = n ? malloc(n * sizeof(*a->recent)) : NULL;
    if (n && !a->recent)
        return BSO_ENOMEM;
    a->cap_recent = n;
    a->n_recent = 0;
    const char *p = text + 1;
    while (a->n_recent < n) {
        p = strchr(p, '[');
        if (!p)
            return BSO_EPARSE;
        char *end;
        long long number = strtoll(p + 1, &end, 10);
        if (*end != ',')
            return BSO_EPARSE;
        double reward = strtod(end + 1, &end);
        if (*end != ']')
            return BSO_EPARSE;
        a->recent[a->n_recent++] = (struct bso_reward){number, reward};
        p = end;
    }
    return 0;
}

int bso_column_read_job(const struct bso_row *r, struct bso_job *job)
{
    struct bso_job_spec *sp = &job->spec;
    sp->has_job_id = true;
    snprintf(sp->job_id, sizeof sp->job_id, "%s", r->text(r->ctx, 0));
    snprintf(sp->job_id_prefix, sizeof sp->job_id_prefix, "%s", r->text(r->ctx, 1));
    int bad = bso_column_parse_sizes(r->text(r->ctx, 2), sp);
    sp->default_batch_size = r->i64(r->ctx, 3);
    sp->eta_knob = r->f64(r->ctx, 4);
    sp->has_beta_knob = !r->null(r->ctx, 5);
    sp->beta_knob = r->f64(r->ctx, 5);
    sp->target_metric = r->f64(r->ctx, 6);
    sp->higher_is_better_metric = r->i64(r->ctx, 7) != 0;
    sp->max_epochs = r->i64(r->ctx, 8);
    sp->num_pruning_rounds = r->i64(r->ctx, 9);
    sp->window_size = r->i64(r->ctx, 10);
    sp->mab_prior_mean = r->f64(r->ctx, 11);
    sp->mab_prior_precision = r->f64(r->ctx, 12);
    sp->mab_num_explorations = r->i64(r->ctx, 13);
    sp->has_mab_seed = !r->null(r->ctx, 14);
    sp->mab_seed = r->i64(r->ctx, 14);
    sp->max_power = r->f64(r->ctx, 15);
    sp->number_of_gpus = r->i64(r->ctx, 16);
    snprintf(sp->gpu_model, sizeof sp->gpu_model, "%s", r->text(r->ctx, 17));
    job->stage = bso_column_stage(r->text(r->ctx, 18));
    job->has_min_cost = !r->null(r->ctx, 19);
    job->min_cost = r->f64(r->ctx, 19);
    job->min_cost_batch_size = r->i64(r->ctx, 20);
    if (bso_rng_from_json(&job->rng, r->text(r->ctx, 21)) < 0)
        bad = BSO_EPARSE;
    job->last_trial_number = r->i64(r->ctx, 22);
    sp->policy = bso_policy_parse(r->text(r->ctx, 23));
    if (sp->policy < 0)
        bad = BSO_EPARSE;
    snprintf(sp->tenant, sizeof sp->tenant, "%s", r->text(r->ctx, 24));
    if (!r->null(r->ctx, 25) && bso_column_parse_unfit(r->text(r->ctx, 25), sp) < 0)
        bad = BSO_EPARSE;
    sp->power_profiled = r->i64(r->ctx, 26) != 0;
    job->refusals = r->i64(r->ctx, 27);
    return bad < 0 ? BSO_EPARSE : 0;
}

void bso_column_read_trial(const struct bso_row *r, struct bso_trial *t)
{
    t->number = r->i64(r->ctx, 0);
    t->batch_size = r->i64(r->ctx, 1);
    t->type = bso_column_trial_type(r->text(r->ctx, 2));
    t->status = bso_column_trial_status(r->text(r->ctx, 3));
    t->time = r->f64(r->ctx, 4);
    t->energy = r->f64(r->ctx, 5);
    t->converged = r->i64(r->ctx, 6) != 0;
}

/* Where field f of a size's statistics lives. */
#define STAT(f) offsetof(struct bso_bs_stat, f)

const size_t bso_column_stat_sum_fields[BSO_STAT_SUMS] = {
    STAT(sum_epochs),       STAT(sum_sq_epochs),  STAT(min_epochs),
    STAT(cost_sum),         STAT(epochs_sum),     STAT(censored_epochs),
    STAT(first_epoch_cost), STAT(warm_first_sum), STAT(warm_steady_sum)};

const size_t bso_column_stat_change_fields[BSO_STAT_CHANGE] = {
    STAT(drift_up),
    STAT(drift_down),
    STAT(success_mark),
    STAT(fail_mark),
    STAT(change_mark),
    STAT(total_runs),
    STAT(total_successes),
    STAT(drift_fail),
    STAT(prior_epochs),
    STAT(streak_runs),
    STAT(streak_sum_epochs),
    STAT(streak_sum_sq_epochs),
    STAT(cost_shift),
    STAT(pre_change_epochs),
    STAT(misses),
    STAT(misses_before_reaching),
    STAT(first_epochs),
    STAT(first_mark),
    STAT(declared_mark),
    STAT(past_spread_ss),
    STAT(past_spread_dof),
    STAT(cost_level),
    STAT(changes_since_run),
    STAT(shortfall),
    STAT(drop_factor),
    STAT(drop_mark),
};

double *bso_column_stat_field(struct bso_bs_stat *b, size_t at)
{
    return (double *)(void *)((char *)b + at);
}

static const double *stat_value(const struct bso_bs_stat *b, size_t at)
{
    return (const double *)(const void *)((const char *)b + at);
}

void bso_column_read_stat(const struct bso_row *r, struct bso_job *job)
{
    const int i = bso_job_spec_index(&job->spec, r->i64(r->ctx, 0));
    if (i < 0)
        return;
    struct bso_bs_stat *b = &job->stats[i];
    b->status = (int)r->i64(r->ctx, 1);
    b->runs = r->i64(r->ctx, 2);
    b->successes = r->i64(r->ctx, 3);
    for (int k = 0; k < BSO_STAT_SUMS; k++)
        *bso_column_stat_field(b, bso_column_stat_sum_fields[k]) = r->f64(r->ctx, 4 + k);
    b->crashes = r->i64(r->ctx, 4 + BSO_STAT_SUMS);
    b->profile_samples_per_s = r->f64(r->ctx, 5 + BSO_STAT_SUMS);
    b->profile_joules_per_sample = r->f64(r->ctx, 6 + BSO_STAT_SUMS);
    for (int k = 0; k < BSO_STAT_CHANGE; k++)
        *bso_column_stat_field(b, bso_column_stat_change_fields[k]) =
            r->f64(r->ctx, 7 + BSO_STAT_SUMS + k);
    /* Only how the window forgets depends on it: a bad one is dropped, not the job. */
    (void)bso_column_parse_window(r->text(r->ctx, 7 + BSO_STAT_SUMS + BSO_STAT_CHANGE), b);
}

void bso_column_format_window(const struct bso_bs_stat *b, char out[BSO_STAT_WINDOW_TEXT])
{
    size_t o = 0;
    out[o++] = '[';
    for (int64_t k = 0; k < b->n_window && k < BSO_EPOCHS_WINDOW_MAX; k++)
        o += (size_t)snprintf(out + o, BSO_STAT_WINDOW_TEXT - o, "%s%.9g", k ? "," : "",
                              (double)b->window[k]);
    out[o++] = ']';
    out[o] = '\0';
}

int bso_column_parse_window(const char *text, struct bso_bs_stat *b)
{
    b->n_window = 0;
    if (!text || !*text)
        return 0; /* written before windows were kept */
    const char *p = text;
    if (*p++ != '[')
        return BSO_EPARSE;
    while (*p != ']') {
        char *end;
        const float e = strtof(p, &end);
        if (end == p || b->n_window == BSO_EPOCHS_WINDOW_MAX || !(e > 0) || !isfinite(e) ||
            (*end != ',' && *end != ']')) {
            b->n_window = 0;
            return BSO_EPARSE;
        }
        b->window[b->n_window++] = e;
        p = *end == ',' ? end + 1 : end;
    }
    return p[1] == '\0' ? 0 : (b->n_window = 0, BSO_EPARSE);
}

void bso_column_stat_change(const struct bso_bs_stat *b, double out[BSO_STAT_CHANGE])
{
    for (int k = 0; k < BSO_STAT_CHANGE; k++)
        out[k] = *stat_value(b, bso_column_stat_change_fields[k]);
}

void bso_column_stat_sums(const struct bso_bs_stat *b, double out[BSO_STAT_SUMS])
{
    for (int k = 0; k < BSO_STAT_SUMS; k++)
        out[k] = *stat_value(b, bso_column_stat_sum_fields[k]);
}

int bso_column_read_arm(const struct bso_row *r, struct bso_arm *a)
{
    bso_arm_init(a, r->i64(r->ctx, 0));
    a->param_mean = r->f64(r->ctx, 1);
    a->param_precision = r->f64(r->ctx, 2);
    a->reward_precision = r->f64(r->ctx, 3);
    a->num_observations = r->i64(r->ctx, 4);
    a->n_results = r->i64(r->ctx, 5);
    return bso_column_parse_recent(r->text(r->ctx, 6), a);
}

void bso_column_read_summary(const struct bso_row *r, struct bso_job_summary *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->job_id, sizeof out->job_id, "%s", r->text(r->ctx, 0));
    snprintf(out->gpu_model, sizeof out->gpu_model, "%s", r->text(r->ctx, 1));
    out->stage = bso_column_stage(r->text(r->ctx, 2));
    out->n_trials = r->i64(r->ctx, 3);
    out->has_min_cost = !r->null(r->ctx, 4);
    out->min_cost = r->f64(r->ctx, 4);
    out->min_cost_batch_size = r->i64(r->ctx, 5);
    snprintf(out->created_at, sizeof out->created_at, "%s", r->text(r->ctx, 6));
    snprintf(out->tenant, sizeof out->tenant, "%s", r->text(r->ctx, 7));
    const int policy = bso_policy_parse(r->text(r->ctx, 8));
    out->policy = policy < 0 ? BSO_POLICY_ZEUS : policy;
}

int bso_column_parse_unfit(const char *text, struct bso_job_spec *spec)
{
    struct bso_job_spec sizes;
    memset(sizes.unfit, 0, sizeof sizes.unfit);
    if (bso_column_parse_sizes(text, &sizes) < 0)
        return BSO_EPARSE;
    memset(spec->unfit, 0, sizeof spec->unfit);
    for (size_t k = 0; k < sizes.n_batch_sizes; k++) {
        const int i = bso_job_spec_index(spec, sizes.batch_sizes[k]);
        if (i >= 0)
            bso_spec_set_unfit(spec, (size_t)i, true);
    }
    return 0;
}

void bso_column_read_profile(const struct bso_row *r, struct bso_profile_entry *out)
{
    memset(out, 0, sizeof *out);
    out->batch_size = r->i64(r->ctx, 0);
    out->feasible = r->i64(r->ctx, 1) != 0;
    out->samples_per_s = r->null(r->ctx, 2) ? NAN : r->f64(r->ctx, 2);
    out->joules_per_sample = r->null(r->ctx, 3) ? NAN : r->f64(r->ctx, 3);
    out->peak_memory_bytes = r->null(r->ctx, 4) ? -1 : r->i64(r->ctx, 4);
    snprintf(out->device, sizeof out->device, "%s", r->text(r->ctx, 5));
    snprintf(out->measured_at, sizeof out->measured_at, "%s", r->text(r->ctx, 6));
}

int bso_column_format_power_points(const struct bso_power_point *p, size_t n, char *buf, size_t cap)
{
    size_t o = (size_t)snprintf(buf, cap, "[");
    for (size_t i = 0; i < n && o < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s[%.17g,%.17g,%.17g]", i ? "," : "", p[i].limit_w,
                              p[i].samples_per_s, p[i].power_w);
    if (o < cap)
        o += (size_t)snprintf(buf + o, cap - o, "]");
    return o < cap ? 0 : BSO_ERANGE;
}

int bso_column_read_power(const struct bso_row *r, struct bso_power_profile *out)
{
    memset(out, 0, sizeof *out);
    out->batch_size = r->i64(r->ctx, 0);
    out->power_limit_w = r->f64(r->ctx, 1);
    snprintf(out->device, sizeof out->device, "%s", r->text(r->ctx, 3));
    snprintf(out->measured_at, sizeof out->measured_at, "%s", r->text(r->ctx, 4));
    const char *p = r->text(r->ctx, 2);
    if (*p++ != '[')
        return BSO_EPARSE;
    while (*p == '[' && out->n < BSO_POWER_MAX_LIMITS) {
        struct bso_power_point *x = &out->points[out->n];
        char *end;
        x->limit_w = strtod(p + 1, &end);
        if (*end != ',')
            return BSO_EPARSE;
        x->samples_per_s = strtod(end + 1, &end);
        if (*end != ',')
            return BSO_EPARSE;
        x->power_w = strtod(end + 1, &end);
        if (*end != ']')
            return BSO_EPARSE;
        out->n++;
        p = end + 1;
        if (*p == ',')
            p++;
    }
    return *p == ']' ? 0 : BSO_EPARSE;
}

void bso_column_read_waiting(const struct bso_row *r, struct bso_waiting_trial *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->job_id, sizeof out->job_id, "%s", r->text(r->ctx, 0));
    out->number = r->i64(r->ctx, 1);
    out->batch_size = r->i64(r->ctx, 2);
    snprintf(out->start_timestamp, sizeof out->start_timestamp, "%s", r->text(r->ctx, 3));
}

void bso_column_read_token(const struct bso_row *r, struct bso_token *out)
{
    memset(out, 0, sizeof *out);
    out->id = r->i64(r->ctx, 0);
    snprintf(out->tenant, sizeof out->tenant, "%s", r->text(r->ctx, 1));
    out->admin = r->i64(r->ctx, 2) != 0;
    snprintf(out->hint, sizeof out->hint, "%s", r->text(r->ctx, 3));
    snprintf(out->created_at, sizeof out->created_at, "%s", r->text(r->ctx, 4));
    snprintf(out->revoked_at, sizeof out->revoked_at, "%s", r->text(r->ctx, 5));
}

void bso_column_read_trial_row(const struct bso_row *r, struct bso_trial_row *out)
{
    memset(out, 0, sizeof *out);
    bso_column_read_trial(r, &out->trial);
    snprintf(out->start_timestamp, sizeof out->start_timestamp, "%s", r->text(r->ctx, 7));
    snprintf(out->end_timestamp, sizeof out->end_timestamp, "%s", r->text(r->ctx, 8));
    snprintf(out->trial.energy_source, sizeof out->trial.energy_source, "%s", r->text(r->ctx, 9));
    out->progress = r->null(r->ctx, 10) ? NULL : r->text(r->ctx, 10);
}

void bso_column_read_data_version(const struct bso_row *r, struct bso_data_version *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->version, sizeof out->version, "%s", r->text(r->ctx, 0));
    snprintf(out->since, sizeof out->since, "%s", r->text(r->ctx, 1));
}

void bso_column_read_origin(const struct bso_row *r, struct bso_job_origin *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->from_job, sizeof out->from_job, "%s", r->text(r->ctx, 0));
    out->sizes = r->i64(r->ctx, 1);
    snprintf(out->at, sizeof out->at, "%s", r->text(r->ctx, 2));
}
