/*
 * How the backends write a job's structured fields into text columns and read them back, the
 * same way in every database: batch sizes as "[8, 16, 32]", an arm's recent rewards as
 * "[[trial_number,reward],...]" with every bit of each double, trial types and statuses by name.
 */
#ifndef BSO_STORE_COLUMNS_H
#define BSO_STORE_COLUMNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/arm.h"
#include "core/job.h"
#include "core/spec.h"
#include "core/trial.h"
#include "store/store.h"

/* A trial type or status from its stored name (an unknown one reads as the first). */
int bso_column_trial_type(const char *name);
int bso_column_trial_status(const char *name);
/* enum bso_stage of a stored stage name ("Pruning", "MAB"). */
int bso_column_stage(const char *name);

/* Batch sizes "[8, 16, 32]" (as bso_pyintlist_repr writes them) into spec. 0, or BSO_EPARSE. */
int bso_column_parse_sizes(const char *text, struct bso_job_spec *spec);

/* An arm's recent rewards as text; the caller frees it. NULL when out of memory. */
char *bso_column_format_recent(const struct bso_arm *a);
/* Reads them back into a (whose recent list is allocated here). 0, BSO_EPARSE or BSO_ENOMEM. */
int bso_column_parse_recent(const char *text, struct bso_arm *a);

/* One result row, read through its backend's accessors, so that which column holds what is
 * written once for every backend (the SELECTs list their columns in this order). A NULL reads
 * as 0, 0.0 or "". */
struct bso_row {
    const void *ctx;
    const char *(*text)(const void *ctx, int col);
    int64_t (*i64)(const void *ctx, int col);
    double (*f64)(const void *ctx, int col);
    bool (*null)(const void *ctx, int col);
};

/* job_id, job_id_prefix, batch_sizes, default_batch_size, eta_knob, beta_knob, target_metric,
 * higher_is_better_metric, max_epochs, num_pruning_rounds, window_size, mab_prior_mean,
 * mab_prior_precision, mab_num_explorations, mab_seed, max_power, number_of_gpus, gpu_model,
 * stage, min_cost, min_cost_batch_size, rng_state, last_trial_number, policy, tenant, unfit,
 * power_profiled: into a reset job
 * (bso_job_reset first). 0, or BSO_EPARSE for a corrupt row. */
int bso_column_read_job(const struct bso_row *r, struct bso_job *job);
/* trial_number, batch_size, type, status, time, energy, converged. */
void bso_column_read_trial(const struct bso_row *r, struct bso_trial *t);
/* batch_size, status, runs, successes, the nine sums, crashes, the profile's two measurements
 * and the change detector's fields and the plain counts, into the job's statistics of that size (a
 * size the job does not have is skipped). */
void bso_column_read_stat(const struct bso_row *r, struct bso_job *job);
/* batch_size, param_mean, param_precision, reward_precision, num_observations, n_results,
 * recent: into an uninitialised arm. 0, BSO_EPARSE or BSO_ENOMEM. */
int bso_column_read_arm(const struct bso_row *r, struct bso_arm *a);
/* job_id, gpu_model, stage, last_trial_number, min_cost, min_cost_batch_size, created_at,
 * tenant. */
void bso_column_read_summary(const struct bso_row *r, struct bso_job_summary *out);
/* The unfit sizes "[64, 128]" into spec->unfit (sizes the spec lacks are ignored). 0 or
 * BSO_EPARSE. */
int bso_column_parse_unfit(const char *text, struct bso_job_spec *spec);
/* batch_size, feasible, samples_per_s, joules_per_sample, peak_memory_bytes, device,
 * measured_at. */
void bso_column_read_profile(const struct bso_row *r, struct bso_profile_entry *out);
/* A power profile's measurements as "[[limit_w,samples_per_s,power_w],...]", every bit of each
 * double kept. 0, or BSO_ERANGE when cap is too small. */
int bso_column_format_power_points(const struct bso_power_point *p, size_t n, char *buf,
                                   size_t cap);
/* batch_size, power_limit, measurements, device, measured_at. 0, or BSO_EPARSE for corrupt
 * measurements. */
int bso_column_read_power(const struct bso_row *r, struct bso_power_profile *out);
/* from_job, sizes, transferred_at. */
void bso_column_read_origin(const struct bso_row *r, struct bso_job_origin *out);
/* version, since. */
void bso_column_read_data_version(const struct bso_row *r, struct bso_data_version *out);
/* job_id, trial_number, batch_size, start_timestamp. */
void bso_column_read_waiting(const struct bso_row *r, struct bso_waiting_trial *out);
/* id, tenant, admin, hint, created_at, revoked_at. */
void bso_column_read_token(const struct bso_row *r, struct bso_token *out);
/* A trial's columns, then start_timestamp, end_timestamp, energy_source, progress. */
void bso_column_read_trial_row(const struct bso_row *r, struct bso_trial_row *out);

/* The nine sums of a statistics row, in column order, for the writers. */
#define BSO_STAT_SUMS 9
void bso_column_stat_sums(const struct bso_bs_stat *b, double out[BSO_STAT_SUMS]);
/* The change detector's fields and the plain counts (drift_up, drift_down, success_mark,
 * fail_mark, change_mark, total_runs, total_successes, drift_fail, prior_epochs, streak_runs,
 * streak_sum_epochs, streak_sum_sq_epochs, cost_shift, pre_change_epochs, misses,
 * misses_before_reaching, first_epochs, first_mark, declared_mark, past_spread_ss,
 * past_spread_dof, cost_level, changes_since_run, shortfall, drop_factor, drop_mark), the
 * columns of a statistics row before the window, in order. */
#define BSO_STAT_CHANGE 26
void bso_column_stat_change(const struct bso_bs_stat *b, double out[BSO_STAT_CHANGE]);
/* Where in struct bso_bs_stat each of those columns lives (offsetof, each a double), in the
 * same order: the one list the readers, the writers and the job cache go by, so that a new
 * column is added in one place. */
extern const size_t bso_column_stat_sum_fields[BSO_STAT_SUMS];
extern const size_t bso_column_stat_change_fields[BSO_STAT_CHANGE];
/* The double at offset `at` (one of those lists) of a size's statistics. */
double *bso_column_stat_field(struct bso_bs_stat *b, size_t at);
/* A size's window of recent epochs (the last column) as "[e1,e2,...]", oldest first, with every
 * bit of each float; BSO_STAT_WINDOW_TEXT bytes always hold it. */
#define BSO_STAT_WINDOW_TEXT (BSO_EPOCHS_WINDOW_MAX * 18 + 3)
void bso_column_format_window(const struct bso_bs_stat *b, char out[BSO_STAT_WINDOW_TEXT]);
/* Reads it back into b. 0, or BSO_EPARSE (b's window then empty: add_epochs fades instead). */
int bso_column_parse_window(const char *text, struct bso_bs_stat *b);

#endif
