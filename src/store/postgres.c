/*
 * PostgreSQL storage on libpq, behind the same interface as SQLite (store.h), for several
 * bso-server replicas in front of one database.
 *
 * Correct across processes: a write transaction first takes a transaction-scoped advisory lock
 * on its job id, so every replica's requests for one job take turns, and everything a request
 * reads and writes (trial numbers, arms, statistics, the RNG state) happens under that lock
 * in one transaction. Nothing is kept in memory between requests (the store's job cache stays
 * off), so no replica can act on another's stale state. Reads run in REPEATABLE READ, one
 * snapshot per request.
 *
 * A session is one connection, with its statements prepared on first use. When the database
 * goes away, requests fail with BSO_EIO (the server answers 503) and the next request after a
 * growing pause (0.1 s to 5 s) connects again.
 */
#include <inttypes.h>
#include <libpq-fe.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bso/error.h"
#include "core/pyfmt.h"
#include "store/columns.h"
#include "store/sql_rows.h"
#include "store/store_impl.h"
#include "os/os.h"

/* Migrations, in order; migration i brings bso_schema.version from i to i + 1. Never edit one
 * that has shipped; add another. Versions are numbered as SQLite's, so that a schema version
 * means the same tables in both: PostgreSQL support came with SQLite's schema 3, all at once. */
static const char *const migrations[] = {
    "",
    "",
    "CREATE TABLE job (\n"
    "  job_id TEXT COLLATE \"C\" PRIMARY KEY,  -- ordered bytewise, as SQLite orders it\n"
    "  job_id_prefix TEXT NOT NULL,\n"
    "  batch_sizes TEXT NOT NULL,\n"
    "  default_batch_size BIGINT NOT NULL,\n"
    "  eta_knob DOUBLE PRECISION NOT NULL,\n"
    "  beta_knob DOUBLE PRECISION,\n"
    "  target_metric DOUBLE PRECISION NOT NULL,\n"
    "  higher_is_better_metric INTEGER NOT NULL,\n"
    "  max_epochs BIGINT NOT NULL,\n"
    "  num_pruning_rounds BIGINT NOT NULL,\n"
    "  window_size BIGINT NOT NULL,\n"
    "  mab_prior_mean DOUBLE PRECISION NOT NULL,\n"
    "  mab_prior_precision DOUBLE PRECISION NOT NULL,\n"
    "  mab_num_explorations BIGINT NOT NULL,\n"
    "  mab_seed BIGINT,\n"
    "  max_power DOUBLE PRECISION NOT NULL,\n"
    "  number_of_gpus BIGINT NOT NULL,\n"
    "  gpu_model TEXT NOT NULL,\n"
    "  stage TEXT NOT NULL CHECK (stage IN ('Pruning', 'MAB')),\n"
    "  min_cost DOUBLE PRECISION,\n"
    "  min_cost_batch_size BIGINT NOT NULL,\n"
    "  rng_state TEXT NOT NULL,\n"
    "  last_trial_number BIGINT NOT NULL,\n"
    "  created_at TEXT NOT NULL,\n"
    "  policy TEXT NOT NULL DEFAULT 'zeus'\n"
    ");\n"
    "CREATE TABLE trial (\n"
    "  job_id TEXT NOT NULL REFERENCES job (job_id) ON DELETE CASCADE,\n"
    "  trial_number BIGINT NOT NULL,\n"
    "  batch_size BIGINT NOT NULL,\n"
    "  type TEXT NOT NULL CHECK (type IN ('Exploration', 'Concurrent', 'MAB')),\n"
    "  status TEXT NOT NULL CHECK (status IN ('Dispatched', 'Succeeded', 'Failed')),\n"
    "  start_timestamp TEXT NOT NULL,\n"
    "  end_timestamp TEXT,\n"
    "  time DOUBLE PRECISION,\n"
    "  energy DOUBLE PRECISION,\n"
    "  converged INTEGER,\n"
    "  energy_source TEXT,\n"
    "  PRIMARY KEY (job_id, trial_number)\n"
    ");\n"
    "CREATE TABLE arm (\n"
    "  job_id TEXT NOT NULL REFERENCES job (job_id) ON DELETE CASCADE,\n"
    "  batch_size BIGINT NOT NULL,\n"
    "  param_mean DOUBLE PRECISION NOT NULL,\n"
    "  param_precision DOUBLE PRECISION NOT NULL,\n"
    "  reward_precision DOUBLE PRECISION NOT NULL,\n"
    "  num_observations BIGINT NOT NULL,\n"
    "  n_results BIGINT NOT NULL,\n"
    "  recent TEXT NOT NULL,\n"
    "  PRIMARY KEY (job_id, batch_size)\n"
    ");\n"
    "CREATE TABLE bs_stat (\n"
    "  job_id TEXT NOT NULL REFERENCES job (job_id) ON DELETE CASCADE,\n"
    "  batch_size BIGINT NOT NULL,\n"
    "  status INTEGER NOT NULL,\n"
    "  runs BIGINT NOT NULL,\n"
    "  successes BIGINT NOT NULL,\n"
    "  sum_epochs DOUBLE PRECISION NOT NULL,\n"
    "  sum_sq_epochs DOUBLE PRECISION NOT NULL,\n"
    "  min_epochs DOUBLE PRECISION NOT NULL,\n"
    "  cost_sum DOUBLE PRECISION NOT NULL,\n"
    "  epochs_sum DOUBLE PRECISION NOT NULL,\n"
    "  censored_epochs DOUBLE PRECISION NOT NULL,\n"
    "  first_epoch_cost DOUBLE PRECISION NOT NULL,\n"
    "  warm_first_sum DOUBLE PRECISION NOT NULL,\n"
    "  warm_steady_sum DOUBLE PRECISION NOT NULL,\n"
    "  PRIMARY KEY (job_id, batch_size)\n"
    ");\n",
    /* 4: tenants and their API tokens */
    "ALTER TABLE job ADD COLUMN tenant TEXT;    -- NULL: registered without authentication\n"
    "CREATE INDEX job_by_tenant ON job (tenant, job_id);\n"
    "CREATE TABLE api_token (\n"
    "  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,\n"
    "  tenant TEXT NOT NULL,\n"
    "  admin INTEGER NOT NULL,\n"
    "  hash TEXT NOT NULL UNIQUE,              -- SHA-256 of the token, hex; never the token\n"
    "  hint TEXT NOT NULL,                     -- its first characters\n"
    "  created_at TEXT NOT NULL,\n"
    "  revoked_at TEXT\n"
    ");\n",
    /* 5: runs in a row that ended without a report, per batch size; and the trials still
     * waiting for one, for the lease sweeper */
    "ALTER TABLE bs_stat ADD COLUMN crashes INTEGER NOT NULL DEFAULT 0;\n"
    "CREATE INDEX trial_dispatched ON trial (start_timestamp) WHERE status = 'Dispatched';\n",
    /* 6: what a probe measured per batch size (POST /jobs/ID/profile), and the sizes it
     * found not to fit */
    "ALTER TABLE job ADD COLUMN unfit TEXT;     -- [64, 128], or NULL\n"
    "CREATE TABLE profile (\n"
    "  job_id TEXT NOT NULL REFERENCES job (job_id) ON DELETE CASCADE,\n"
    "  batch_size INTEGER NOT NULL,\n"
    "  feasible INTEGER NOT NULL,\n"
    "  samples_per_s DOUBLE PRECISION,\n"
    "  joules_per_sample DOUBLE PRECISION,\n"
    "  peak_memory_bytes BIGINT,\n"
    "  device TEXT NOT NULL,\n"
    "  measured_at TEXT NOT NULL,\n"
    "  PRIMARY KEY (job_id, batch_size)\n"
    ");\n",
    /* 7: the profile's measurements per batch size, for the bso policy's estimates */
    "ALTER TABLE bs_stat ADD COLUMN profile_samples_per_s DOUBLE PRECISION NOT NULL DEFAULT 0;\n"
    "ALTER TABLE bs_stat ADD COLUMN profile_joules_per_sample DOUBLE PRECISION NOT NULL DEFAULT "
    "0;\n",
    /* 8: the power limit chosen per batch size, and what each limit measured */
    "CREATE TABLE power_profile (\n"
    "  job_id TEXT NOT NULL REFERENCES job (job_id) ON DELETE CASCADE,\n"
    "  batch_size BIGINT NOT NULL,\n"
    "  power_limit DOUBLE PRECISION NOT NULL,  -- W per GPU\n"
    "  measurements TEXT NOT NULL,             -- [[limit_w,samples_per_s,power_w],...]\n"
    "  device TEXT NOT NULL,\n"
    "  measured_at TEXT NOT NULL,\n"
    "  PRIMARY KEY (job_id, batch_size)\n"
    ");\n",
    /* 9: whether a job has any power profile, so predictions skip the lookup otherwise */
    "ALTER TABLE job ADD COLUMN power_profiled INTEGER NOT NULL DEFAULT 0;\n"
    "UPDATE job SET power_profiled = 1 WHERE job_id IN (SELECT job_id FROM power_profile);\n",
    /* 10: the bso policy's change detector per batch size (see bso_policy.h) */
    "ALTER TABLE bs_stat ADD COLUMN drift_up DOUBLE PRECISION NOT NULL DEFAULT 0;\n"
    "ALTER TABLE bs_stat ADD COLUMN drift_down DOUBLE PRECISION NOT NULL DEFAULT 0;\n"
    "ALTER TABLE bs_stat ADD COLUMN success_mark DOUBLE PRECISION NOT NULL DEFAULT 0;\n"
    "ALTER TABLE bs_stat ADD COLUMN fail_mark DOUBLE PRECISION NOT NULL DEFAULT 0;\n"
    "ALTER TABLE bs_stat ADD COLUMN change_mark DOUBLE PRECISION NOT NULL DEFAULT 0;\n"
    "ALTER TABLE bs_stat ADD COLUMN total_runs DOUBLE PRECISION NOT NULL DEFAULT 0;\n"
    "ALTER TABLE bs_stat ADD COLUMN total_successes DOUBLE PRECISION NOT NULL DEFAULT 0;\n"
    "ALTER TABLE bs_stat ADD COLUMN drift_fail DOUBLE PRECISION NOT NULL DEFAULT 0;\n"
    "ALTER TABLE bs_stat ADD COLUMN prior_epochs DOUBLE PRECISION NOT NULL DEFAULT 0;\n"
    "CREATE TABLE job_origin (\n"
    "  job_id TEXT PRIMARY KEY REFERENCES job (job_id) ON DELETE CASCADE,\n"
    "  from_job TEXT NOT NULL,                 -- the job it learnt from (bso transfer)\n"
    "  sizes INTEGER NOT NULL,                 -- how many batch sizes got a prior\n"
    "  transferred_at TEXT NOT NULL\n"
    ");\n"
    "UPDATE bs_stat SET total_runs = runs, total_successes = successes;\n",
    /* 11: a run's progress when its batch size changes while it trains */
    "ALTER TABLE trial ADD COLUMN progress TEXT; -- JSON [[epoch, time, samples, mean], ...]\n",
    /* 12: the bso policy's window of each size's recent epochs (window_size) */
    "ALTER TABLE bs_stat ADD COLUMN recent_epochs TEXT NOT NULL DEFAULT ''; -- oldest first\n",
    /* 13: the runs of each size's own drift (bso_bs_stat.streak_runs) */
    "ALTER TABLE bs_stat ADD COLUMN streak_runs DOUBLE PRECISION NOT NULL DEFAULT 0;\n"
    "ALTER TABLE bs_stat ADD COLUMN streak_sum_epochs DOUBLE PRECISION NOT NULL DEFAULT 0;\n"
    "ALTER TABLE bs_stat ADD COLUMN streak_sum_sq_epochs DOUBLE PRECISION NOT NULL DEFAULT 0;\n",
    /* 14: a cost per epoch moved on the guess that a jump elsewhere was the whole job's */
    "ALTER TABLE bs_stat ADD COLUMN cost_shift DOUBLE PRECISION NOT NULL DEFAULT 0;\n",
    /* 15: each size's mean epochs when the job last changed (how far the change moved it) */
    "ALTER TABLE bs_stat ADD COLUMN pre_change_epochs DOUBLE PRECISION NOT NULL DEFAULT 0;\n",
    /* 16: runs that ran to max_epochs without reaching (how often a size reaches) */
    "ALTER TABLE bs_stat ADD COLUMN misses DOUBLE PRECISION NOT NULL DEFAULT 0;\n",
    /* 17: misses as they stood when a size last reached (a size that misses by chance) */
    "ALTER TABLE bs_stat ADD COLUMN misses_before_reaching DOUBLE PRECISION NOT NULL DEFAULT 0;\n",
    /* 18: each size's first run since its epochs started (a change right after it) */
    "ALTER TABLE bs_stat ADD COLUMN first_epochs DOUBLE PRECISION NOT NULL DEFAULT 0;\n"
    "ALTER TABLE bs_stat ADD COLUMN first_mark DOUBLE PRECISION NOT NULL DEFAULT 0;\n",
    /* 19: when the user last said that the job changed (POST /jobs/ID/changed) */
    "ALTER TABLE bs_stat ADD COLUMN declared_mark DOUBLE PRECISION NOT NULL DEFAULT 0;\n",
    /* 20: the version of the data a job last registered with (data_version) */
    "CREATE TABLE job_data_version (\n"
    "  job_id TEXT PRIMARY KEY REFERENCES job (job_id) ON DELETE CASCADE,\n"
    "  version TEXT NOT NULL,\n"
    "  since TEXT NOT NULL                     -- when it was first registered with it\n"
    ");\n",
    /* 21: the spread of the runs each size forgot at the job's changes */
    "ALTER TABLE bs_stat ADD COLUMN past_spread_ss DOUBLE PRECISION NOT NULL DEFAULT 0;\n"
    "ALTER TABLE bs_stat ADD COLUMN past_spread_dof DOUBLE PRECISION NOT NULL DEFAULT 0;\n",
    /* 22: how far jumps in cost per epoch moved each size's (cost_level) */
    "ALTER TABLE bs_stat ADD COLUMN cost_level DOUBLE PRECISION NOT NULL DEFAULT 0;\n",
    /* 23: how many changes the policy found since each size last ran */
    "ALTER TABLE bs_stat ADD COLUMN changes_since_run DOUBLE PRECISION NOT NULL DEFAULT 0;\n",
    /* 24: for a job that never trained: the predictions refused since its last run
     * (bso_job.refusals), and how close each size's runs to max_epochs came (shortfall) */
    "ALTER TABLE job ADD COLUMN refusals BIGINT NOT NULL DEFAULT 0;\n"
    "ALTER TABLE bs_stat ADD COLUMN shortfall DOUBLE PRECISION NOT NULL DEFAULT 0;\n",
    /* 25: how far each size's epochs fell at its last downward alarm, and when */
    "ALTER TABLE bs_stat ADD COLUMN drop_factor DOUBLE PRECISION NOT NULL DEFAULT 0;\n"
    "ALTER TABLE bs_stat ADD COLUMN drop_mark DOUBLE PRECISION NOT NULL DEFAULT 0;\n",
    /* 26: a profiled batch size as large as a job's (64 bits: 2^40 was refused), and a
     * crash count as wide as the one it is read into */
    "ALTER TABLE profile ALTER COLUMN batch_size TYPE BIGINT;\n"
    "ALTER TABLE bs_stat ALTER COLUMN crashes TYPE BIGINT;\n",
};
#define N_MIGRATIONS ((int)(sizeof migrations / sizeof *migrations))

/* Migrations hold this advisory lock, so replicas that start together migrate one at a time. */
#define MIGRATION_LOCK "7316273261"

/* The time as SQLite's strftime('%Y-%m-%dT%H:%M:%fZ', 'now') writes it. */
#define NOW_TEXT                                                                                   \
    "to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"

enum stmt_id {
    ST_LOCK_JOB,
    ST_LOAD_JOB,
    ST_LOAD_TRIALS,
    ST_LOAD_ARMS,
    ST_INSERT_JOB,
    ST_UPDATE_JOB,
    ST_INSERT_TRIAL,
    ST_UPDATE_TRIAL,
    ST_INSERT_ARM,
    ST_UPDATE_ARM,
    ST_LOAD_TRIAL,
    ST_DELETE_JOB,
    ST_RESET_TRIALS,
    ST_RESET_ARMS,
    ST_RESET_STATS,
    ST_RESET_ORIGIN,
    ST_RESET_JOB,
    ST_JOB_EXISTS,
    ST_LIST_JOBS,
    ST_LIST_TRIALS,
    ST_COUNT_TRIALS,
    ST_TALLY_JOBS,
    ST_TALLY_TRIALS,
    ST_LOAD_STATS,
    ST_SAVE_STAT,
    ST_SAVE_PROFILE,
    ST_LIST_PROFILE,
    ST_SAVE_UNFIT,
    ST_SAVE_POWER,
    ST_POWER_LIMIT,
    ST_SAVE_ORIGIN,
    ST_ADD_PROGRESS,
    ST_IMPORT_TRIAL,
    ST_LOAD_ORIGIN,
    ST_SAVE_DATA_VERSION,
    ST_LOAD_DATA_VERSION,
    ST_MARK_POWER,
    ST_LIST_POWER,
    ST_WAITING_TRIALS,
    ST_LONGEST_RUN,
    ST_TOKEN_INSERT,
    ST_TOKEN_FIND,
    ST_TOKEN_LIST,
    ST_TOKEN_REVOKE,
    ST_TOKEN_COUNT,
    ST_COUNT
};

static const char *const stmt_sql[ST_COUNT] = {
    /* Every writer of one job id takes this lock first, whichever replica it runs in. */
    [ST_LOCK_JOB] = "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
    [ST_LOAD_JOB] =
        "SELECT job_id, job_id_prefix, batch_sizes, default_batch_size, eta_knob, beta_knob,"
        " target_metric, higher_is_better_metric, max_epochs, num_pruning_rounds, window_size,"
        " mab_prior_mean, mab_prior_precision, mab_num_explorations, mab_seed, max_power,"
        " number_of_gpus, gpu_model, stage, min_cost, min_cost_batch_size, rng_state,"
        " last_trial_number, policy, tenant, unfit, power_profiled, refusals FROM job"
        " WHERE job_id = $1",
    [ST_LOAD_TRIALS] = "SELECT trial_number, batch_size, type, status, time, energy, converged"
                       " FROM trial WHERE job_id = $1 ORDER BY trial_number",
    [ST_LOAD_ARMS] = "SELECT batch_size, param_mean, param_precision, reward_precision,"
                     " num_observations, n_results, recent FROM arm WHERE job_id = $1"
                     " ORDER BY batch_size",
    [ST_INSERT_JOB] =
        "INSERT INTO job (job_id, job_id_prefix, batch_sizes, default_batch_size, eta_knob,"
        " beta_knob, target_metric, higher_is_better_metric, max_epochs, num_pruning_rounds,"
        " window_size, mab_prior_mean, mab_prior_precision, mab_num_explorations, mab_seed,"
        " max_power, number_of_gpus, gpu_model, stage, min_cost, min_cost_batch_size, rng_state,"
        " last_trial_number, policy, tenant, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8,"
        " $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, "
        "$25, " NOW_TEXT ") ON CONFLICT (job_id) DO NOTHING",
    [ST_UPDATE_JOB] = "UPDATE job SET stage = $2, min_cost = $3, min_cost_batch_size = $4,"
                      " rng_state = $5, last_trial_number = $6, refusals = $7 WHERE job_id = $1",
    [ST_INSERT_TRIAL] =
        "INSERT INTO trial (job_id, trial_number, batch_size, type, status, start_timestamp)"
        " VALUES ($1, $2, $3, $4, $5, " NOW_TEXT ")",
    [ST_UPDATE_TRIAL] =
        "UPDATE trial SET status = $3, time = $4, energy = $5, converged = $6, energy_source = $7,"
        " end_timestamp = " NOW_TEXT " WHERE job_id = $1 AND trial_number = $2",
    [ST_INSERT_ARM] = "INSERT INTO arm (job_id, batch_size, param_mean, param_precision,"
                      " reward_precision, num_observations, n_results, recent)"
                      " VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    [ST_UPDATE_ARM] = "UPDATE arm SET param_mean = $3, param_precision = $4,"
                      " reward_precision = $5, num_observations = $6, n_results = $7,"
                      " recent = $8 WHERE job_id = $1 AND batch_size = $2",
    [ST_LOAD_TRIAL] = "SELECT trial_number, batch_size, type, status, time, energy, converged"
                      " FROM trial WHERE job_id = $1 AND trial_number = $2",
    [ST_DELETE_JOB] = "DELETE FROM job WHERE job_id = $1",
    [ST_RESET_TRIALS] = "DELETE FROM trial WHERE job_id = $1",
    [ST_RESET_ARMS] = "DELETE FROM arm WHERE job_id = $1",
    [ST_RESET_STATS] = "DELETE FROM bs_stat WHERE job_id = $1",
    [ST_RESET_ORIGIN] = "DELETE FROM job_origin WHERE job_id = $1",
    [ST_RESET_JOB] = "UPDATE job SET stage = 'Pruning', min_cost = NULL,"
                     " min_cost_batch_size = default_batch_size, refusals = 0 WHERE job_id = $1",
    [ST_JOB_EXISTS] = "SELECT 1 FROM job WHERE job_id = $1",
    [ST_LIST_JOBS] = "SELECT job_id, gpu_model, stage, last_trial_number, min_cost,"
                     " min_cost_batch_size, created_at, tenant, policy FROM job WHERE job_id > $1"
                     " AND ($3::text IS NULL OR coalesce(tenant, '') = $3) ORDER BY job_id"
                     " LIMIT $2",
    [ST_LIST_TRIALS] =
        "SELECT trial_number, batch_size, type, status, time, energy, converged,"
        " start_timestamp, end_timestamp, energy_source, progress FROM trial WHERE job_id = $1"
        " AND trial_number > $2 ORDER BY trial_number LIMIT $3",
    [ST_TALLY_JOBS] = "SELECT stage, count(*) FROM job GROUP BY stage",
    [ST_TALLY_TRIALS] = "SELECT status, count(*) FROM trial GROUP BY status",
    [ST_COUNT_TRIALS] = "SELECT status, count(*) FROM trial WHERE job_id = $1 GROUP BY status",
    [ST_LOAD_STATS] =
        "SELECT batch_size, status, runs, successes, sum_epochs, sum_sq_epochs,"
        " min_epochs, cost_sum, epochs_sum, censored_epochs, first_epoch_cost, warm_first_sum,"
        " warm_steady_sum, crashes, profile_samples_per_s, profile_joules_per_sample,"
        " drift_up, drift_down, success_mark, fail_mark, change_mark, total_runs, total_successes,"
        " drift_fail, prior_epochs, streak_runs, streak_sum_epochs, streak_sum_sq_epochs,"
        " cost_shift, pre_change_epochs, misses, misses_before_reaching, first_epochs,"
        " first_mark, declared_mark, past_spread_ss, past_spread_dof, cost_level,"
        " changes_since_run, shortfall, drop_factor, drop_mark, recent_epochs FROM bs_stat"
        " WHERE job_id = $1",
    [ST_SAVE_STAT] =
        "INSERT INTO bs_stat (job_id, batch_size, status, runs, successes,"
        " sum_epochs, sum_sq_epochs, min_epochs, cost_sum, epochs_sum, censored_epochs,"
        " first_epoch_cost, warm_first_sum, warm_steady_sum, crashes, profile_samples_per_s,"
        " profile_joules_per_sample, drift_up, drift_down, success_mark, fail_mark, change_mark,"
        " total_runs, total_successes, drift_fail, prior_epochs, streak_runs, streak_sum_epochs,"
        " streak_sum_sq_epochs, cost_shift, pre_change_epochs, misses, misses_before_reaching,"
        " first_epochs, first_mark, declared_mark, past_spread_ss, past_spread_dof, cost_level,"
        " changes_since_run, shortfall, drop_factor, drop_mark, recent_epochs)"
        " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17,"
        " $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32, $33, $34,"
        " $35, $36, $37, $38, $39, $40, $41, $42, $43, $44)"
        " ON CONFLICT (job_id, batch_size) DO UPDATE SET status = EXCLUDED.status,"
        " runs = EXCLUDED.runs, successes = EXCLUDED.successes,"
        " sum_epochs = EXCLUDED.sum_epochs, sum_sq_epochs = EXCLUDED.sum_sq_epochs,"
        " min_epochs = EXCLUDED.min_epochs, cost_sum = EXCLUDED.cost_sum,"
        " epochs_sum = EXCLUDED.epochs_sum, censored_epochs = EXCLUDED.censored_epochs,"
        " first_epoch_cost = EXCLUDED.first_epoch_cost,"
        " warm_first_sum = EXCLUDED.warm_first_sum, warm_steady_sum = EXCLUDED.warm_steady_sum,"
        " crashes = EXCLUDED.crashes, profile_samples_per_s = EXCLUDED.profile_samples_per_s,"
        " profile_joules_per_sample = EXCLUDED.profile_joules_per_sample,"
        " drift_up = EXCLUDED.drift_up, drift_down = EXCLUDED.drift_down,"
        " success_mark = EXCLUDED.success_mark, fail_mark = EXCLUDED.fail_mark,"
        " change_mark = EXCLUDED.change_mark, total_runs = EXCLUDED.total_runs,"
        " total_successes = EXCLUDED.total_successes, drift_fail = EXCLUDED.drift_fail,"
        " prior_epochs = EXCLUDED.prior_epochs, streak_runs = EXCLUDED.streak_runs,"
        " streak_sum_epochs = EXCLUDED.streak_sum_epochs,"
        " streak_sum_sq_epochs = EXCLUDED.streak_sum_sq_epochs,"
        " cost_shift = EXCLUDED.cost_shift, pre_change_epochs = EXCLUDED.pre_change_epochs,"
        " misses = EXCLUDED.misses, misses_before_reaching = EXCLUDED.misses_before_reaching,"
        " first_epochs = EXCLUDED.first_epochs, first_mark = EXCLUDED.first_mark,"
        " declared_mark = EXCLUDED.declared_mark, past_spread_ss = EXCLUDED.past_spread_ss,"
        " past_spread_dof = EXCLUDED.past_spread_dof, cost_level = EXCLUDED.cost_level,"
        " changes_since_run = EXCLUDED.changes_since_run, shortfall = EXCLUDED.shortfall,"
        " drop_factor = EXCLUDED.drop_factor, drop_mark = EXCLUDED.drop_mark,"
        " recent_epochs = EXCLUDED.recent_epochs",
    [ST_SAVE_PROFILE] =
        "INSERT INTO profile (job_id, batch_size, feasible, samples_per_s, joules_per_sample,"
        " peak_memory_bytes, device, measured_at) VALUES ($1, $2, $3, $4, $5, $6, $7, " NOW_TEXT
        ") ON CONFLICT (job_id, batch_size) DO UPDATE SET feasible = EXCLUDED.feasible,"
        " samples_per_s = EXCLUDED.samples_per_s, joules_per_sample = EXCLUDED.joules_per_sample,"
        " peak_memory_bytes = EXCLUDED.peak_memory_bytes, device = EXCLUDED.device,"
        " measured_at = EXCLUDED.measured_at",
    [ST_LIST_PROFILE] = "SELECT batch_size, feasible, samples_per_s, joules_per_sample,"
                        " peak_memory_bytes, device, measured_at FROM profile WHERE job_id = $1"
                        " ORDER BY batch_size",
    [ST_SAVE_UNFIT] = "UPDATE job SET unfit = $2 WHERE job_id = $1",
    [ST_SAVE_POWER] =
        "INSERT INTO power_profile (job_id, batch_size, power_limit, measurements, device,"
        " measured_at) VALUES ($1, $2, $3, $4, $5, " NOW_TEXT ") ON CONFLICT (job_id, batch_size)"
        " DO UPDATE SET power_limit = EXCLUDED.power_limit, measurements = EXCLUDED.measurements,"
        " device = EXCLUDED.device, measured_at = EXCLUDED.measured_at",
    [ST_MARK_POWER] = "UPDATE job SET power_profiled = 1 WHERE job_id = $1",
    [ST_POWER_LIMIT] =
        "SELECT power_limit FROM power_profile WHERE job_id = $1 AND batch_size = $2",
    [ST_SAVE_ORIGIN] = "INSERT INTO job_origin (job_id, from_job, sizes, transferred_at)"
                       " VALUES ($1, $2, $3, " NOW_TEXT ") ON CONFLICT (job_id) DO UPDATE SET"
                       " from_job = EXCLUDED.from_job, sizes = EXCLUDED.sizes,"
                       " transferred_at = EXCLUDED.transferred_at",
    /* As in sqlite.c: one point per epoch while Dispatched, at most BSO_PROGRESS_MAX. */
    [ST_ADD_PROGRESS] =
        "UPDATE trial SET progress = (coalesce(progress, '[]')::jsonb || jsonb_build_array("
        "jsonb_build_array($3::bigint, $4::float8, $5::bigint, $6::float8)))::text"
        " WHERE job_id = $1 AND trial_number = $2 AND status = 'Dispatched'"
        " AND coalesce((progress::jsonb -> -1 ->> 0)::bigint, 0) < $3"
        " AND coalesce(jsonb_array_length(progress::jsonb), 0) < " BSO_PROGRESS_MAX_TEXT,
    [ST_IMPORT_TRIAL] =
        "INSERT INTO trial (job_id, trial_number, batch_size, type, status, start_timestamp,"
        " end_timestamp, time, energy, converged) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9,"
        " $10)",
    [ST_LOAD_ORIGIN] = "SELECT from_job, sizes, transferred_at FROM job_origin WHERE job_id = $1",
    [ST_SAVE_DATA_VERSION] = "INSERT INTO job_data_version (job_id, version, since)"
                             " VALUES ($1, $2, " NOW_TEXT ") ON CONFLICT (job_id) DO UPDATE SET"
                             " version = EXCLUDED.version, since = EXCLUDED.since",
    [ST_LOAD_DATA_VERSION] = "SELECT version, since FROM job_data_version WHERE job_id = $1",
    [ST_LIST_POWER] = "SELECT batch_size, power_limit, measurements, device, measured_at"
                      " FROM power_profile WHERE job_id = $1 ORDER BY batch_size",
    [ST_WAITING_TRIALS] = "SELECT job_id, trial_number, batch_size, start_timestamp FROM trial"
                          " WHERE status = 'Dispatched' AND start_timestamp < $1"
                          " ORDER BY start_timestamp LIMIT $2",
    [ST_LONGEST_RUN] = "SELECT coalesce(max(time), 0) FROM trial WHERE job_id = $1"
                       " AND status = 'Succeeded'",
    [ST_TOKEN_INSERT] = "INSERT INTO api_token (tenant, admin, hash, hint, created_at)"
                        " VALUES ($1, $2, $3, $4, " NOW_TEXT ") RETURNING id",
    [ST_TOKEN_FIND] = "SELECT id, tenant, admin, hint, created_at, revoked_at FROM api_token"
                      " WHERE hash = $1 AND revoked_at IS NULL",
    [ST_TOKEN_LIST] = "SELECT id, tenant, admin, hint, created_at, revoked_at FROM api_token"
                      " WHERE $1::text IS NULL OR tenant = $1 ORDER BY id",
    [ST_TOKEN_REVOKE] = "UPDATE api_token SET revoked_at = " NOW_TEXT
                        " WHERE revoked_at IS NULL AND (id = $1 OR ($1::bigint IS NULL AND"
                        " tenant = $2))",
    [ST_TOKEN_COUNT] = "SELECT count(*) FROM api_token WHERE revoked_at IS NULL",
};

struct backend {
    char conninfo[4096]; /* a postgresql:// URL libpq understands */
    struct bso_store_options opt;
    int schema_version;
};

struct pg_session {
    struct bso_session base;
    struct backend *b;
    PGconn *conn;
    uint64_t prepared; /* a bit per enum stmt_id, for this connection */
    bool in_tx;
    double retry_at; /* after a failed connection: not before this (monotonic s) */
    double backoff;  /* the pause after the next failure */
};

static struct pg_session *ps(struct bso_session *s)
{
    return (struct pg_session *)s;
}

/* libpq's multi-line messages on one line, in place. */
static char *one_line(char *text)
{
    for (char *p = text; *p; p++)
        if (*p == '\n')
            *p = (p[1] ? ' ' : '\0');
    return text;
}

/* The connection's last error on one line. */
static const char *conn_error(PGconn *c)
{
    static __thread char line[256];
    snprintf(line, sizeof line, "%s", c ? PQerrorMessage(c) : "out of memory");
    return one_line(line);
}

/* ---- connections ---- */

/* A new connection set up as every statement here expects: floats in full precision, UTC. */
static PGconn *connect_db(const struct backend *b, char *err, size_t errcap)
{
    /* A database that does not answer fails the attempt after 5 s (the URL may say otherwise:
     * its parameters come after ours and win). */
    const char *const keys[] = {"connect_timeout", "dbname", NULL};
    const char *const values[] = {"5", b->conninfo, NULL};
    PGconn *c = PQconnectdbParams(keys, values, 1);
    if (!c || PQstatus(c) != CONNECTION_OK) {
        snprintf(err, errcap, "cannot connect to PostgreSQL: %s", conn_error(c));
        PQfinish(c);
        return NULL;
    }
    PGresult *r = PQexec(c, "SET extra_float_digits = 3; SET application_name = 'bso-server'");
    const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    if (!ok) {
        snprintf(err, errcap, "PostgreSQL: %s", conn_error(c));
        PQfinish(c);
        return NULL;
    }
    return c;
}

/* Makes sure the session has a working connection (a transaction is about to begin). */
static int ensure_connection(struct pg_session *s)
{
    if (s->conn && PQstatus(s->conn) == CONNECTION_OK)
        return 0;
    const double now = bso_os_monotonic_s();
    if (now < s->retry_at)
        return bso_session_fail(&s->base, BSO_EIO, "postgres: the database is unavailable");
    PQfinish(s->conn);
    s->prepared = 0;
    char err[512];
    s->conn = connect_db(s->b, err, sizeof err);
    if (!s->conn) {
        s->backoff = s->backoff > 0 ? (s->backoff * 2 < 5.0 ? s->backoff * 2 : 5.0) : 0.1;
        s->retry_at = now + s->backoff;
        return bso_session_fail(&s->base, BSO_EIO, "postgres: %s", err);
    }
    s->backoff = 0;
    return 0;
}

/* ---- statements ---- */

/* The most a statement binds: a statistics row (STAT_ROW_PARAMS), the widest. */
#define STAT_ROW_PARAMS (5 + BSO_STAT_SUMS + 3 + BSO_STAT_CHANGE + 1)
#define MAX_PARAMS STAT_ROW_PARAMS

/* Parameters in text form. */
struct params {
    const char *v[MAX_PARAMS];
    char buf[MAX_PARAMS][32];
    int n;
};

static void p_text(struct params *p, const char *v)
{
    p->v[p->n++] = v;
}

static void p_null(struct params *p)
{
    p->v[p->n++] = NULL;
}

static void p_int(struct params *p, int64_t v)
{
    snprintf(p->buf[p->n], sizeof p->buf[p->n], "%" PRId64, v);
    p->v[p->n] = p->buf[p->n];
    p->n++;
}

static void p_double(struct params *p, double v)
{
    if (isnan(v))
        snprintf(p->buf[p->n], sizeof p->buf[p->n], "NaN");
    else if (isinf(v))
        snprintf(p->buf[p->n], sizeof p->buf[p->n], v > 0 ? "Infinity" : "-Infinity");
    else
        snprintf(p->buf[p->n], sizeof p->buf[p->n], "%.17g", v);
    p->v[p->n] = p->buf[p->n];
    p->n++;
}

/* A value, or NULL when the row has none. */
static void p_opt_double(struct params *p, bool has, double v)
{
    if (has)
        p_double(p, v);
    else
        p_null(p);
}

static int db_fail(struct pg_session *s, const char *what, PGresult *r)
{
    const char *msg = r ? PQresultErrorMessage(r) : "";
    char line[300];
    snprintf(line, sizeof line, "%s", *msg ? msg : conn_error(s->conn));
    PQclear(r);
    return bso_session_fail(&s->base, BSO_EIO, "postgres: %s: %s", what, one_line(line));
}

/* Runs a prepared statement (preparing it on first use on this connection). The result, or
 * NULL with the failure recorded. */
static PGresult *run(struct pg_session *s, enum stmt_id id, const struct params *p,
                     const char *what)
{
    char name[16];
    snprintf(name, sizeof name, "bso%d", (int)id);
    if (!(s->prepared & (UINT64_C(1) << id))) {
        PGresult *r = PQprepare(s->conn, name, stmt_sql[id], 0, NULL);
        if (PQresultStatus(r) != PGRES_COMMAND_OK) {
            db_fail(s, what, r);
            return NULL;
        }
        PQclear(r);
        s->prepared |= UINT64_C(1) << id;
    }
    PGresult *r = PQexecPrepared(s->conn, name, p ? p->n : 0, p ? p->v : NULL, NULL, NULL, 0);
    const ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
        db_fail(s, what, r);
        return NULL;
    }
    return r;
}

/* Runs a statement that returns no rows. */
static int run_done(struct pg_session *s, enum stmt_id id, const struct params *p, const char *what)
{
    PGresult *r = run(s, id, p, what);
    if (!r)
        return BSO_EIO;
    PQclear(r);
    return 0;
}

static int exec_sql(struct pg_session *s, const char *sql, const char *what)
{
    PGresult *r = PQexec(s->conn, sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
        return db_fail(s, what, r);
    PQclear(r);
    return 0;
}

static const char *col(const PGresult *r, int row, int c)
{
    return PQgetvalue(r, row, c);
}

static bool is_null(const PGresult *r, int row, int c)
{
    return PQgetisnull(r, row, c) != 0;
}

static int64_t col_int(const PGresult *r, int row, int c)
{
    return strtoll(PQgetvalue(r, row, c), NULL, 10);
}

/* SQLite reads a NULL REAL as 0.0; so do we. */
static double col_double(const PGresult *r, int row, int c)
{
    return is_null(r, row, c) ? 0.0 : strtod(PQgetvalue(r, row, c), NULL);
}

/* Row `row` of a result for the shared column readers (columns.h, sql_rows.h). */

static const char *row_text(const void *c, int i)
{
    const struct bso_pg_row *p = c;
    return col(p->res, p->row, i);
}

static int64_t row_i64(const void *c, int i)
{
    const struct bso_pg_row *p = c;
    return is_null(p->res, p->row, i) ? 0 : col_int(p->res, p->row, i);
}

static double row_f64(const void *c, int i)
{
    const struct bso_pg_row *p = c;
    return col_double(p->res, p->row, i);
}

static bool row_null(const void *c, int i)
{
    const struct bso_pg_row *p = c;
    return is_null(p->res, p->row, i);
}

struct bso_row bso_pg_row(const struct bso_pg_row *at)
{
    return (struct bso_row){at, row_text, row_i64, row_f64, row_null};
}

#define ROW(res_, i_) bso_pg_row(&(const struct bso_pg_row){(res_), (i_)})

/* ---- the store ---- */

static int migrate(PGconn *c, int *version, char *err, size_t errcap)
{
    char sql[256];
    const char *steps[] = {
        "SELECT pg_advisory_lock(" MIGRATION_LOCK ")",
        "CREATE TABLE IF NOT EXISTS bso_schema (version INTEGER NOT NULL)",
    };
    for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
        PGresult *r = PQexec(c, steps[i]);
        const ExecStatusType st = PQresultStatus(r);
        PQclear(r);
        if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
            snprintf(err, errcap, "PostgreSQL: migration: %s", conn_error(c));
            return BSO_EIO;
        }
    }
    int rc = 0;
    PGresult *r = PQexec(c, "SELECT version FROM bso_schema");
    int v = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0
                ? (int)strtol(PQgetvalue(r, 0, 0), NULL, 10)
                : 0;
    PQclear(r);
    if (v > N_MIGRATIONS) {
        snprintf(err, errcap,
                 "the database has schema version %d, newer than this bso-server knows (%d): "
                 "upgrade bso-server",
                 v, N_MIGRATIONS);
        rc = BSO_ESTATE;
    }
    for (; rc == 0 && v < N_MIGRATIONS; v++) {
        snprintf(sql, sizeof sql,
                 "DELETE FROM bso_schema; INSERT INTO bso_schema (version) VALUES (%d)", v + 1);
        char *all = malloc(strlen(migrations[v]) + strlen(sql) + 32);
        if (!all) {
            snprintf(err, errcap, "out of memory");
            rc = BSO_ENOMEM;
            break;
        }
        sprintf(all, "BEGIN; %s %s; COMMIT", migrations[v], sql);
        r = PQexec(c, all);
        free(all);
        if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK) {
            snprintf(err, errcap, "PostgreSQL: migration %d: %s", v + 1, conn_error(c));
            rc = BSO_EIO;
            PQclear(r);
            PQclear(PQexec(c, "ROLLBACK"));
            break;
        }
        PQclear(r);
    }
    PQclear(PQexec(c, "SELECT pg_advisory_unlock(" MIGRATION_LOCK ")"));
    *version = v;
    return rc;
}

static int be_open(const char *target, const struct bso_store_options *opt, void **out, char *err,
                   size_t errcap)
{
    struct backend *b = calloc(1, sizeof *b);
    if (!b) {
        snprintf(err, errcap, "out of memory");
        return BSO_ENOMEM;
    }
    b->opt = opt ? *opt : (struct bso_store_options){0};
    if ((size_t)snprintf(b->conninfo, sizeof b->conninfo, "postgresql://%s", target) >=
        sizeof b->conninfo) {
        snprintf(err, errcap, "database URL too long");
        free(b);
        return BSO_EINVAL;
    }
    PGconn *c = connect_db(b, err, errcap);
    if (!c) {
        free(b);
        return BSO_EIO;
    }
    const int rc = migrate(c, &b->schema_version, err, errcap);
    PQfinish(c);
    if (rc < 0) {
        free(b);
        return rc;
    }
    *out = b;
    return 0;
}

static void be_close(void *backend)
{
    free(backend);
}

static int be_schema_version(void *backend)
{
    return ((struct backend *)backend)->schema_version;
}

static int be_session_limit(void *backend)
{
    return ((struct backend *)backend)->opt.connections;
}

static bool be_cacheable(void *backend)
{
    (void)backend;
    return false; /* other replicas write too */
}

static const char *be_migrations_sql(void)
{
    static char all[16384];
    if (all[0] == '\0') {
        size_t o = (size_t)snprintf(all, sizeof all,
                                    "BEGIN;\nCREATE TABLE IF NOT EXISTS bso_schema (version "
                                    "INTEGER NOT NULL);\n");
        for (int i = 0; i < N_MIGRATIONS; i++)
            o += (size_t)snprintf(all + o, sizeof all - o, "-- migration %d\n%s", i + 1,
                                  migrations[i]);
        snprintf(all + o, sizeof all - o,
                 "DELETE FROM bso_schema;\nINSERT INTO bso_schema (version) VALUES (%d);\n"
                 "COMMIT;\n",
                 N_MIGRATIONS);
    }
    return all;
}

static struct bso_session *be_session_new(void *backend, char *err, size_t errcap)
{
    struct pg_session *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errcap, "out of memory");
        return NULL;
    }
    s->b = backend;
    s->conn = connect_db(s->b, err, errcap);
    if (!s->conn) {
        /* Served anyway: its requests fail (503) until the database is back. */
        s->backoff = 0.1;
        s->retry_at = bso_os_monotonic_s() + s->backoff;
    }
    return &s->base;
}

static void be_session_free(struct bso_session *base)
{
    PQfinish(ps(base)->conn);
    free(base);
}

static int begin(struct pg_session *s, const char *sql)
{
    int rc = ensure_connection(s);
    if (rc == 0)
        rc = exec_sql(s, sql, "begin");
    if (rc == 0)
        s->in_tx = true;
    return rc;
}

static int be_begin_write(struct bso_session *base, const char *job_id)
{
    struct pg_session *s = ps(base);
    int rc = begin(s, "BEGIN");
    if (rc < 0)
        return rc;
    /* A new job without an id locks the empty id: registrations of new jobs take turns. */
    struct params p = {.n = 0};
    p_text(&p, job_id ? job_id : "");
    if ((rc = run_done(s, ST_LOCK_JOB, &p, "lock job")) < 0) {
        PQclear(PQexec(s->conn, "ROLLBACK"));
        s->in_tx = false;
    }
    return rc;
}

static int be_begin_read(struct bso_session *base)
{
    return begin(ps(base), "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
}

static int be_commit(struct bso_session *base)
{
    struct pg_session *s = ps(base);
    if (!s->in_tx)
        return 0;
    s->in_tx = false;
    int rc = exec_sql(s, "COMMIT", "commit");
    if (rc < 0 && s->conn && PQtransactionStatus(s->conn) != PQTRANS_IDLE)
        PQclear(PQexec(s->conn, "ROLLBACK"));
    return rc;
}

static void be_rollback(struct bso_session *base)
{
    struct pg_session *s = ps(base);
    if (s->in_tx && s->conn && PQstatus(s->conn) == CONNECTION_OK)
        PQclear(PQexec(s->conn, "ROLLBACK"));
    s->in_tx = false;
}

/* ---- rows ---- */

static int load_trials(struct pg_session *s, const char *job_id, struct bso_job *job)
{
    struct params p = {.n = 0};
    p_text(&p, job_id);
    PGresult *r = run(s, ST_LOAD_TRIALS, &p, "load trials");
    if (!r)
        return BSO_EIO;
    const int n = PQntuples(r);
    if (n > 0) {
        job->trials = malloc((size_t)n * sizeof *job->trials);
        if (!job->trials) {
            PQclear(r);
            return bso_session_fail(&s->base, BSO_ENOMEM, "out of memory");
        }
        job->cap_trials = (size_t)n;
    }
    for (int i = 0; i < n; i++) {
        const struct bso_row row = ROW(r, i);
        bso_column_read_trial(&row, &job->trials[job->n_trials++]);
    }
    PQclear(r);
    return 0;
}

static int load_arms(struct pg_session *s, const char *job_id, struct bso_job *job)
{
    struct params p = {.n = 0};
    p_text(&p, job_id);
    PGresult *r = run(s, ST_LOAD_ARMS, &p, "load arms");
    if (!r)
        return BSO_EIO;
    const int n = PQntuples(r);
    if (n > 0 && !(job->arms = calloc((size_t)n, sizeof *job->arms))) {
        PQclear(r);
        return bso_session_fail(&s->base, BSO_ENOMEM, "out of memory");
    }
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        struct bso_arm *a = &job->arms[job->n_arms++];
        const struct bso_row row = ROW(r, i);
        if ((rc = bso_column_read_arm(&row, a)) < 0)
            rc = bso_session_fail(&s->base, rc, "arm %" PRId64 " of job %s: bad reward window",
                                  a->batch_size, job_id);
    }
    PQclear(r);
    return rc;
}

static int load_stats(struct pg_session *s, const char *job_id, struct bso_job *job)
{
    struct params p = {.n = 0};
    p_text(&p, job_id);
    PGresult *r = run(s, ST_LOAD_STATS, &p, "load stats");
    if (!r)
        return BSO_EIO;
    for (int i = 0; i < PQntuples(r); i++) {
        const struct bso_row row = ROW(r, i);
        bso_column_read_stat(&row, job);
    }
    PQclear(r);
    return 0;
}

static int be_load_job(struct bso_session *base, const char *job_id, unsigned load,
                       struct bso_job *job)
{
    struct pg_session *s = ps(base);
    struct params p = {.n = 0};
    p_text(&p, job_id);
    PGresult *r = run(s, ST_LOAD_JOB, &p, "load job");
    if (!r)
        return BSO_EIO;
    if (PQntuples(r) == 0) {
        PQclear(r);
        return bso_session_fail(base, BSO_ENOTFOUND, "no job %s", job_id);
    }
    bso_job_reset(job);
    const struct bso_row row = ROW(r, 0);
    const int bad = bso_column_read_job(&row, job);
    PQclear(r);
    if (bad < 0)
        return bso_session_fail(base, BSO_EPARSE, "job %s: corrupt row", job_id);
    bso_job_clear_stats(job);
    int rc = 0;
    if ((load & BSO_LOAD_TRIALS) && job->stage == BSO_STAGE_PRUNING)
        rc = load_trials(s, job_id, job);
    if (rc == 0 && (load & BSO_LOAD_ARMS) && job->stage == BSO_STAGE_MAB)
        rc = load_arms(s, job_id, job);
    if (rc == 0 && job->spec.policy == BSO_POLICY_BSO)
        rc = load_stats(s, job_id, job);
    if (rc < 0)
        bso_job_clear(job);
    return rc;
}

static int be_insert_job(struct bso_session *base, const struct bso_job *job)
{
    struct pg_session *s = ps(base);
    const struct bso_job_spec *sp = &job->spec;
    char sizes[BSO_MAX_BATCH_SIZES * 22 + 3], rng[BSO_RNG_JSON_MAX];
    if (bso_pyintlist_repr(sp->batch_sizes, sp->n_batch_sizes, sizes, sizeof sizes) < 0 ||
        bso_rng_to_json(&job->rng, rng, sizeof rng) < 0)
        return bso_session_fail(base, BSO_ERANGE, "job row too large");
    struct params p = {.n = 0};
    p_text(&p, sp->job_id);
    p_text(&p, sp->job_id_prefix);
    p_text(&p, sizes);
    p_int(&p, sp->default_batch_size);
    p_double(&p, sp->eta_knob);
    p_opt_double(&p, sp->has_beta_knob, sp->beta_knob);
    p_double(&p, sp->target_metric);
    p_int(&p, sp->higher_is_better_metric);
    p_int(&p, sp->max_epochs);
    p_int(&p, sp->num_pruning_rounds);
    p_int(&p, sp->window_size);
    p_double(&p, sp->mab_prior_mean);
    p_double(&p, sp->mab_prior_precision);
    p_int(&p, sp->mab_num_explorations);
    if (sp->has_mab_seed)
        p_int(&p, sp->mab_seed);
    else
        p_null(&p);
    p_double(&p, sp->max_power);
    p_int(&p, sp->number_of_gpus);
    p_text(&p, sp->gpu_model);
    p_text(&p, bso_stage_name(job->stage));
    p_opt_double(&p, job->has_min_cost, job->min_cost);
    p_int(&p, job->min_cost_batch_size);
    p_text(&p, rng);
    p_int(&p, job->last_trial_number);
    p_text(&p, bso_policy_name(sp->policy));
    if (sp->tenant[0])
        p_text(&p, sp->tenant);
    else
        p_null(&p);
    PGresult *r = run(s, ST_INSERT_JOB, &p, "insert job");
    if (!r)
        return BSO_EIO;
    const bool inserted = strcmp(PQcmdTuples(r), "1") == 0;
    PQclear(r);
    return inserted ? 0 : bso_session_fail(base, BSO_ECONFLICT, "job %s exists", sp->job_id);
}

static int update_job(struct bso_session *base, const struct bso_job *job)
{
    struct pg_session *s = ps(base);
    char rng[BSO_RNG_JSON_MAX];
    bso_rng_to_json(&job->rng, rng, sizeof rng);
    struct params p = {.n = 0};
    p_text(&p, job->spec.job_id);
    p_text(&p, bso_stage_name(job->stage));
    p_opt_double(&p, job->has_min_cost, job->min_cost);
    p_int(&p, job->min_cost_batch_size);
    p_text(&p, rng);
    p_int(&p, job->last_trial_number);
    p_int(&p, job->refusals);
    return run_done(s, ST_UPDATE_JOB, &p, "update job");
}

static int write_trial(struct bso_session *base, const char *job_id, const struct bso_trial *t,
                       bool is_new)
{
    struct pg_session *s = ps(base);
    struct params p = {.n = 0};
    p_text(&p, job_id);
    p_int(&p, t->number);
    if (is_new) {
        p_int(&p, t->batch_size);
        p_text(&p, bso_trial_type_name(t->type));
        p_text(&p, bso_trial_status_name(t->status));
        return run_done(s, ST_INSERT_TRIAL, &p, "insert trial");
    }
    p_text(&p, bso_trial_status_name(t->status));
    if (t->status == BSO_TRIAL_SUCCEEDED) {
        p_double(&p, t->time);
        p_double(&p, t->energy);
        p_int(&p, t->converged);
        if (t->energy_source[0])
            p_text(&p, t->energy_source);
        else
            p_null(&p);
    } else {
        for (int i = 0; i < 4; i++)
            p_null(&p);
    }
    return run_done(s, ST_UPDATE_TRIAL, &p, "update trial");
}

static int write_arm(struct bso_session *base, const char *job_id, const struct bso_arm *a,
                     bool is_new)
{
    struct pg_session *s = ps(base);
    char *recent = bso_column_format_recent(a);
    if (!recent)
        return bso_session_fail(&s->base, BSO_ENOMEM, "out of memory");
    struct params p = {.n = 0};
    p_text(&p, job_id);
    p_int(&p, a->batch_size);
    p_double(&p, a->param_mean);
    p_double(&p, a->param_precision);
    p_double(&p, a->reward_precision);
    p_int(&p, a->num_observations);
    p_int(&p, a->n_results);
    p_text(&p, recent);
    const int rc = run_done(s, is_new ? ST_INSERT_ARM : ST_UPDATE_ARM, &p,
                            is_new ? "insert arm" : "update arm");
    free(recent);
    return rc;
}

/* Binds STAT_ROW_PARAMS parameters: the job, the size, its status, runs and successes, the
 * sums, crashes and the profile's two rates, the change columns, the window. */
static int save_stat(struct bso_session *base, const struct bso_job *job, size_t i)
{
    struct pg_session *s = ps(base);
    const struct bso_bs_stat *b = &job->stats[i];
    struct params p = {.n = 0};
    p_text(&p, job->spec.job_id);
    p_int(&p, job->spec.batch_sizes[i]);
    p_int(&p, b->status);
    p_int(&p, b->runs);
    p_int(&p, b->successes);
    double sums[BSO_STAT_SUMS];
    bso_column_stat_sums(b, sums);
    for (int k = 0; k < BSO_STAT_SUMS; k++)
        p_double(&p, sums[k]);
    p_int(&p, b->crashes);
    p_double(&p, b->profile_samples_per_s);
    p_double(&p, b->profile_joules_per_sample);
    double change[BSO_STAT_CHANGE];
    bso_column_stat_change(b, change);
    for (int k = 0; k < BSO_STAT_CHANGE; k++)
        p_double(&p, change[k]);
    char window[BSO_STAT_WINDOW_TEXT];
    bso_column_format_window(b, window);
    p_text(&p, window);
    return run_done(s, ST_SAVE_STAT, &p, "save stats");
}

static int be_load_trial(struct bso_session *base, const char *job_id, int64_t number,
                         struct bso_trial *trial)
{
    struct params p = {.n = 0};
    p_text(&p, job_id);
    p_int(&p, number);
    PGresult *r = run(ps(base), ST_LOAD_TRIAL, &p, "load trial");
    if (!r)
        return BSO_EIO;
    const bool found = PQntuples(r) > 0;
    if (found) {
        const struct bso_row row = ROW(r, 0);
        bso_column_read_trial(&row, trial);
    }
    PQclear(r);
    return found ? 0
                 : bso_session_fail(base, BSO_ENOTFOUND, "no trial %" PRId64 " in job %s", number,
                                    job_id);
}

static int be_delete_job(struct bso_session *base, const char *job_id)
{
    struct params p = {.n = 0};
    p_text(&p, job_id);
    PGresult *r = run(ps(base), ST_DELETE_JOB, &p, "delete job");
    if (!r)
        return BSO_EIO;
    const bool deleted = strcmp(PQcmdTuples(r), "0") != 0;
    PQclear(r);
    return deleted ? 0 : bso_session_fail(base, BSO_ENOTFOUND, "no job %s", job_id);
}

static int be_reset_job(struct bso_session *base, const char *job_id)
{
    static const enum stmt_id steps[] = {ST_RESET_TRIALS, ST_RESET_ARMS, ST_RESET_STATS,
                                         ST_RESET_ORIGIN, ST_RESET_JOB};
    struct params p = {.n = 0};
    p_text(&p, job_id);
    for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
        const int rc = run_done(ps(base), steps[i], &p, "reset job");
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int be_job_exists(struct bso_session *base, const char *job_id)
{
    struct params p = {.n = 0};
    p_text(&p, job_id);
    PGresult *r = run(ps(base), ST_JOB_EXISTS, &p, "job exists");
    if (!r)
        return BSO_EIO;
    const int n = PQntuples(r);
    PQclear(r);
    return n > 0;
}

static int be_list_jobs(struct bso_session *base, const char *after, int64_t limit,
                        const char *tenant, int (*fn)(void *ctx, const struct bso_job_summary *row),
                        void *ctx)
{
    struct params p = {.n = 0};
    p_text(&p, after ? after : "");
    p_int(&p, limit);
    p_text(&p, tenant);
    PGresult *r = run(ps(base), ST_LIST_JOBS, &p, "list jobs");
    if (!r)
        return BSO_EIO;
    int cb = 0;
    for (int i = 0; i < PQntuples(r) && cb == 0; i++) {
        const struct bso_row row = ROW(r, i);
        struct bso_job_summary out;
        bso_column_read_summary(&row, &out);
        cb = fn(ctx, &out);
    }
    PQclear(r);
    return cb;
}

static int be_list_trials(struct bso_session *base, const char *job_id, int64_t after,
                          int64_t limit, int (*fn)(void *ctx, const struct bso_trial_row *row),
                          void *ctx)
{
    struct params p = {.n = 0};
    p_text(&p, job_id);
    p_int(&p, after);
    p_int(&p, limit);
    PGresult *r = run(ps(base), ST_LIST_TRIALS, &p, "list trials");
    if (!r)
        return BSO_EIO;
    int cb = 0;
    for (int i = 0; i < PQntuples(r) && cb == 0; i++) {
        const struct bso_row row = ROW(r, i);
        struct bso_trial_row out;
        bso_column_read_trial_row(&row, &out);
        cb = fn(ctx, &out);
    }
    PQclear(r);
    return cb;
}

static int be_count_trials(struct bso_session *base, const char *job_id, int64_t counts[3])
{
    struct params p = {.n = 0};
    p_text(&p, job_id);
    PGresult *r = run(ps(base), ST_COUNT_TRIALS, &p, "count trials");
    if (!r)
        return BSO_EIO;
    counts[0] = counts[1] = counts[2] = 0;
    for (int i = 0; i < PQntuples(r); i++)
        counts[bso_column_trial_status(col(r, i, 0))] = col_int(r, i, 1);
    PQclear(r);
    return 0;
}

/* Rows of (name, count) from statement id, each added where index_of(name) says. */
static int tally_rows(struct bso_session *base, int id, int (*index_of)(const char *), int64_t *out)
{
    struct params p = {.n = 0};
    PGresult *r = run(ps(base), id, &p, "tally");
    if (!r)
        return BSO_EIO;
    for (int i = 0; i < PQntuples(r); i++)
        out[index_of(col(r, i, 0))] += col_int(r, i, 1);
    PQclear(r);
    return 0;
}

static int be_tally(struct bso_session *base, int64_t jobs[2], int64_t trials[3])
{
    jobs[0] = jobs[1] = trials[0] = trials[1] = trials[2] = 0;
    int rc = tally_rows(base, ST_TALLY_JOBS, bso_column_stage, jobs);
    return rc < 0 ? rc : tally_rows(base, ST_TALLY_TRIALS, bso_column_trial_status, trials);
}

static int be_ping(struct bso_session *base)
{
    struct pg_session *s = ps(base);
    int rc = ensure_connection(s);
    if (rc == 0)
        rc = exec_sql(s, "SELECT 1", "ping");
    return rc;
}

static int be_save_profile(struct bso_session *base, const char *job_id,
                           const struct bso_profile_entry *e, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct params p = {.n = 0};
        p_text(&p, job_id);
        p_int(&p, e[i].batch_size);
        p_int(&p, e[i].feasible);
        p_opt_double(&p, !isnan(e[i].samples_per_s), e[i].samples_per_s);
        p_opt_double(&p, !isnan(e[i].joules_per_sample), e[i].joules_per_sample);
        if (e[i].peak_memory_bytes >= 0)
            p_int(&p, e[i].peak_memory_bytes);
        else
            p_null(&p);
        p_text(&p, e[i].device);
        const int rc = run_done(ps(base), ST_SAVE_PROFILE, &p, "save profile");
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int be_list_profile(struct bso_session *base, const char *job_id,
                           int (*fn)(void *ctx, const struct bso_profile_entry *e), void *ctx)
{
    struct params p = {.n = 0};
    p_text(&p, job_id);
    PGresult *r = run(ps(base), ST_LIST_PROFILE, &p, "list profile");
    if (!r)
        return BSO_EIO;
    int cb = 0;
    for (int i = 0; i < PQntuples(r) && cb == 0; i++) {
        const struct bso_row row = ROW(r, i);
        struct bso_profile_entry e;
        bso_column_read_profile(&row, &e);
        cb = fn(ctx, &e);
    }
    PQclear(r);
    return cb;
}

static int be_save_power(struct bso_session *base, const char *job_id,
                         const struct bso_power_profile *pp)
{
    char points[BSO_POWER_MAX_LIMITS * 80 + 4];
    if (bso_column_format_power_points(pp->points, pp->n, points, sizeof points) < 0)
        return bso_session_fail(base, BSO_ERANGE, "save power profile: too many measurements");
    struct params p = {.n = 0};
    p_text(&p, job_id);
    p_int(&p, pp->batch_size);
    p_double(&p, pp->power_limit_w);
    p_text(&p, points);
    p_text(&p, pp->device);
    int rc = run_done(ps(base), ST_SAVE_POWER, &p, "save power profile");
    if (rc == 0) {
        struct params id = {.n = 0};
        p_text(&id, job_id);
        rc = run_done(ps(base), ST_MARK_POWER, &id, "save power profile");
    }
    return rc;
}

static int be_power_limit(struct bso_session *base, const char *job_id, int64_t batch_size,
                          double *limit_w)
{
    struct params p = {.n = 0};
    p_text(&p, job_id);
    p_int(&p, batch_size);
    PGresult *r = run(ps(base), ST_POWER_LIMIT, &p, "power limit");
    if (!r)
        return BSO_EIO;
    const int found = PQntuples(r) > 0;
    if (found)
        *limit_w = strtod(PQgetvalue(r, 0, 0), NULL);
    PQclear(r);
    return found ? 0 : BSO_ENOTFOUND;
}

static int be_save_origin(struct bso_session *base, const char *job_id,
                          const struct bso_job_origin *o)
{
    struct params p = {.n = 0};
    p_text(&p, job_id);
    p_text(&p, o->from_job);
    p_int(&p, o->sizes);
    return run_done(ps(base), ST_SAVE_ORIGIN, &p, "save origin");
}

static int be_save_data_version(struct bso_session *base, const char *job_id, const char *version)
{
    struct params p = {.n = 0};
    p_text(&p, job_id);
    p_text(&p, version);
    return run_done(ps(base), ST_SAVE_DATA_VERSION, &p, "save data version");
}

/* A job's one row of statement `which` (bound to job_id), read by `read` into out; BSO_ENOTFOUND
 * when it has none. */
static int load_job_row(struct bso_session *base, enum stmt_id which, const char *job_id,
                        void (*read)(const struct bso_row *r, void *out), void *out,
                        const char *what)
{
    struct params p = {.n = 0};
    p_text(&p, job_id);
    PGresult *r = run(ps(base), which, &p, what);
    if (!r)
        return BSO_EIO;
    const int found = PQntuples(r) > 0;
    if (found) {
        const struct bso_row row = ROW(r, 0);
        read(&row, out);
    }
    PQclear(r);
    return found ? 0 : BSO_ENOTFOUND;
}

static void read_data_version(const struct bso_row *r, void *out)
{
    bso_column_read_data_version(r, out);
}

static int be_load_data_version(struct bso_session *base, const char *job_id,
                                struct bso_data_version *v)
{
    return load_job_row(base, ST_LOAD_DATA_VERSION, job_id, read_data_version, v,
                        "load data version");
}

static int be_add_progress(struct bso_session *base, const char *job_id, int64_t number,
                           const struct bso_progress_point *pt)
{
    struct params p = {.n = 0};
    p_text(&p, job_id);
    p_int(&p, number);
    p_int(&p, pt->epoch);
    p_double(&p, pt->time);
    p_int(&p, pt->samples);
    p_double(&p, pt->mean_batch_size);
    return run_done(ps(base), ST_ADD_PROGRESS, &p, "add progress");
}

static int be_import_trial(struct bso_session *base, const char *job_id,
                           const struct bso_trial_row *r)
{
    const struct bso_trial *t = &r->trial;
    const bool done = t->status == BSO_TRIAL_SUCCEEDED;
    struct params p = {.n = 0};
    p_text(&p, job_id);
    p_int(&p, t->number);
    p_int(&p, t->batch_size);
    p_text(&p, bso_trial_type_name(t->type));
    p_text(&p, bso_trial_status_name(t->status));
    p_text(&p, r->start_timestamp);
    r->end_timestamp[0] ? p_text(&p, r->end_timestamp) : p_null(&p);
    done ? p_double(&p, t->time) : p_null(&p);
    done ? p_double(&p, t->energy) : p_null(&p);
    done ? p_int(&p, t->converged) : p_null(&p);
    return run_done(ps(base), ST_IMPORT_TRIAL, &p, "import trial");
}

static void read_origin(const struct bso_row *r, void *out)
{
    bso_column_read_origin(r, out);
}

static int be_load_origin(struct bso_session *base, const char *job_id, struct bso_job_origin *o)
{
    return load_job_row(base, ST_LOAD_ORIGIN, job_id, read_origin, o, "load origin");
}

static int be_list_power(struct bso_session *base, const char *job_id,
                         int (*fn)(void *ctx, const struct bso_power_profile *p), void *ctx)
{
    struct params p = {.n = 0};
    p_text(&p, job_id);
    PGresult *r = run(ps(base), ST_LIST_POWER, &p, "list power profiles");
    if (!r)
        return BSO_EIO;
    int cb = 0;
    for (int i = 0; i < PQntuples(r) && cb == 0; i++) {
        const struct bso_row row = ROW(r, i);
        struct bso_power_profile pp;
        cb = bso_column_read_power(&row, &pp) < 0
                 ? bso_session_fail(base, BSO_EPARSE, "power profile of %lld: corrupt measurements",
                                    (long long)pp.batch_size)
                 : fn(ctx, &pp);
    }
    PQclear(r);
    return cb;
}

static int be_save_unfit(struct bso_session *base, const char *job_id, const char *sizes)
{
    struct params p = {.n = 0};
    p_text(&p, job_id);
    p_text(&p, sizes);
    return run_done(ps(base), ST_SAVE_UNFIT, &p, "save unfit sizes");
}

static int be_waiting_trials(struct bso_session *base, const char *before, int64_t limit,
                             int (*fn)(void *ctx, const struct bso_waiting_trial *t), void *ctx)
{
    struct params p = {.n = 0};
    p_text(&p, before);
    p_int(&p, limit);
    PGresult *r = run(ps(base), ST_WAITING_TRIALS, &p, "waiting trials");
    if (!r)
        return BSO_EIO;
    int cb = 0;
    for (int i = 0; i < PQntuples(r) && cb == 0; i++) {
        const struct bso_row row = ROW(r, i);
        struct bso_waiting_trial t;
        bso_column_read_waiting(&row, &t);
        cb = fn(ctx, &t);
    }
    PQclear(r);
    return cb;
}

static int be_longest_run(struct bso_session *base, const char *job_id, double *seconds)
{
    struct params p = {.n = 0};
    p_text(&p, job_id);
    PGresult *r = run(ps(base), ST_LONGEST_RUN, &p, "longest run");
    if (!r)
        return BSO_EIO;
    *seconds = PQntuples(r) == 1 ? col_double(r, 0, 0) : 0;
    PQclear(r);
    return 0;
}

/* ---- API tokens: statements of their own, outside any request's transaction ---- */

static PGresult *run_token(struct bso_session *base, enum stmt_id id, const struct params *p,
                           const char *what)
{
    struct pg_session *s = ps(base);
    return ensure_connection(s) < 0 ? NULL : run(s, id, p, what);
}

static int be_token_insert(struct bso_session *base, const struct bso_token *t, const char *hash,
                           int64_t *id)
{
    struct params p = {.n = 0};
    p_text(&p, t->tenant);
    p_int(&p, t->admin);
    p_text(&p, hash);
    p_text(&p, t->hint);
    PGresult *r = run_token(base, ST_TOKEN_INSERT, &p, "insert token");
    if (!r)
        return BSO_EIO;
    *id = PQntuples(r) == 1 ? col_int(r, 0, 0) : 0;
    PQclear(r);
    return 0;
}

static int be_token_find(struct bso_session *base, const char *hash, struct bso_token *out)
{
    struct params p = {.n = 0};
    p_text(&p, hash);
    PGresult *r = run_token(base, ST_TOKEN_FIND, &p, "find token");
    if (!r)
        return BSO_EIO;
    const bool found = PQntuples(r) == 1;
    if (found) {
        const struct bso_row row = ROW(r, 0);
        bso_column_read_token(&row, out);
    }
    PQclear(r);
    return found ? 0 : bso_session_fail(base, BSO_ENOTFOUND, "no such token");
}

static int be_token_list(struct bso_session *base, const char *tenant,
                         int (*fn)(void *ctx, const struct bso_token *t), void *ctx)
{
    struct params p = {.n = 0};
    p_text(&p, tenant);
    PGresult *r = run_token(base, ST_TOKEN_LIST, &p, "list tokens");
    if (!r)
        return BSO_EIO;
    int cb = 0;
    for (int i = 0; i < PQntuples(r) && cb == 0; i++) {
        const struct bso_row row = ROW(r, i);
        struct bso_token t;
        bso_column_read_token(&row, &t);
        cb = fn(ctx, &t);
    }
    PQclear(r);
    return cb;
}

static int be_token_revoke(struct bso_session *base, int64_t id, const char *tenant,
                           int64_t *revoked)
{
    struct params p = {.n = 0};
    if (id > 0)
        p_int(&p, id);
    else
        p_null(&p);
    p_text(&p, tenant);
    PGresult *r = run_token(base, ST_TOKEN_REVOKE, &p, "revoke tokens");
    if (!r)
        return BSO_EIO;
    *revoked = strtoll(PQcmdTuples(r), NULL, 10);
    PQclear(r);
    return 0;
}

static int be_token_count(struct bso_session *base, int64_t *active)
{
    PGresult *r = run_token(base, ST_TOKEN_COUNT, NULL, "count tokens");
    if (!r)
        return BSO_EIO;
    *active = PQntuples(r) == 1 ? col_int(r, 0, 0) : 0;
    PQclear(r);
    return 0;
}

const struct bso_store_ops bso_postgres_ops = {
    .name = "postgresql",
    .backend.open = be_open,
    .backend.close = be_close,
    .backend.schema_version = be_schema_version,
    .backend.session_limit = be_session_limit,
    .backend.migrations_sql = be_migrations_sql,
    .backend.cacheable = be_cacheable,
    .backend.session_new = be_session_new,
    .backend.session_free = be_session_free,
    .tx.begin_write = be_begin_write,
    .tx.begin_read = be_begin_read,
    .tx.commit = be_commit,
    .tx.rollback = be_rollback,
    .tx.ping = be_ping,
    .jobs.load = be_load_job,
    .jobs.insert = be_insert_job,
    .jobs.update = update_job,
    .jobs.delete = be_delete_job,
    .jobs.reset = be_reset_job,
    .jobs.exists = be_job_exists,
    .jobs.list = be_list_jobs,
    .jobs.tally = be_tally,
    .trials.write = write_trial,
    .trials.load = be_load_trial,
    .trials.list = be_list_trials,
    .trials.count = be_count_trials,
    .trials.waiting = be_waiting_trials,
    .trials.longest_run = be_longest_run,
    .trials.import = be_import_trial,
    .trials.add_progress = be_add_progress,
    .learning.write_arm = write_arm,
    .learning.save_stat = save_stat,
    .hardware.save_profile = be_save_profile,
    .hardware.list_profile = be_list_profile,
    .hardware.save_unfit = be_save_unfit,
    .hardware.save_power = be_save_power,
    .hardware.power_limit = be_power_limit,
    .hardware.list_power = be_list_power,
    .hardware.save_origin = be_save_origin,
    .hardware.load_origin = be_load_origin,
    .hardware.save_data_version = be_save_data_version,
    .hardware.load_data_version = be_load_data_version,
    .tokens.insert = be_token_insert,
    .tokens.find = be_token_find,
    .tokens.list = be_token_list,
    .tokens.revoke = be_token_revoke,
    .tokens.count = be_token_count,
};
