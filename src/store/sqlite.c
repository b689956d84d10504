/*
 * The SQLite backend: WAL journal, one connection per session, BEGIN IMMEDIATE for writers (the
 * database write lock is the per-job lock, across threads and processes), numbered migrations
 * tracked in PRAGMA user_version and applied in one transaction.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bso/error.h"
#include "core/pyfmt.h"
#include "store/columns.h"
#include "store/sql_rows.h"
#include "store/store_impl.h"

/* Schema migrations, in order. Migration i brings user_version from i to i + 1. Never edit one
 * that has shipped; add another. */
static const char *const migrations[] = {
    /* 1: jobs, trials and arms */
    "CREATE TABLE job (\n"
    "  job_id TEXT PRIMARY KEY,\n"
    "  job_id_prefix TEXT NOT NULL,\n"
    "  batch_sizes TEXT NOT NULL,            -- JSON array, ascending\n"
    "  default_batch_size INTEGER NOT NULL,\n"
    "  eta_knob REAL NOT NULL,\n"
    "  beta_knob REAL,                       -- NULL: early stopping off\n"
    "  target_metric REAL NOT NULL,\n"
    "  higher_is_better_metric INTEGER NOT NULL,\n"
    "  max_epochs INTEGER NOT NULL,\n"
    "  num_pruning_rounds INTEGER NOT NULL,\n"
    "  window_size INTEGER NOT NULL,\n"
    "  mab_prior_mean REAL NOT NULL,\n"
    "  mab_prior_precision REAL NOT NULL,\n"
    "  mab_num_explorations INTEGER NOT NULL,\n"
    "  mab_seed INTEGER,\n"
    "  max_power REAL NOT NULL,\n"
    "  number_of_gpus INTEGER NOT NULL,\n"
    "  gpu_model TEXT NOT NULL,\n"
    "  stage TEXT NOT NULL CHECK (stage IN ('Pruning', 'MAB')),\n"
    "  min_cost REAL,\n"
    "  min_cost_batch_size INTEGER NOT NULL,\n"
    "  rng_state TEXT NOT NULL,              -- numpy bit_generator.state as JSON\n"
    "  last_trial_number INTEGER NOT NULL,\n"
    "  created_at TEXT NOT NULL\n"
    ");\n"
    "CREATE TABLE trial (\n"
    "  job_id TEXT NOT NULL REFERENCES job (job_id) ON DELETE CASCADE,\n"
    "  trial_number INTEGER NOT NULL,\n"
    "  batch_size INTEGER NOT NULL,\n"
    "  type TEXT NOT NULL CHECK (type IN ('Exploration', 'Concurrent', 'MAB')),\n"
    "  status TEXT NOT NULL CHECK (status IN ('Dispatched', 'Succeeded', 'Failed')),\n"
    "  start_timestamp TEXT NOT NULL,\n"
    "  end_timestamp TEXT,\n"
    "  time REAL,\n"
    "  energy REAL,\n"
    "  converged INTEGER,\n"
    "  PRIMARY KEY (job_id, trial_number)\n"
    ") WITHOUT ROWID;\n"
    "CREATE TABLE arm (\n"
    "  job_id TEXT NOT NULL REFERENCES job (job_id) ON DELETE CASCADE,\n"
    "  batch_size INTEGER NOT NULL,\n"
    "  param_mean REAL NOT NULL,\n"
    "  param_precision REAL NOT NULL,\n"
    "  reward_precision REAL NOT NULL,\n"
    "  num_observations INTEGER NOT NULL,\n"
    "  n_results INTEGER NOT NULL,\n"
    "  recent TEXT NOT NULL,                 -- JSON [[trial_number, reward], ...]\n"
    "  PRIMARY KEY (job_id, batch_size)\n"
    ") WITHOUT ROWID;\n",
    /* 2: where each trial's energy figure came from, as the client labelled it */
    "ALTER TABLE trial ADD COLUMN energy_source TEXT;\n",
    /* 3: the job's policy, and what the bso policy knows about each batch size */
    "ALTER TABLE job ADD COLUMN policy TEXT NOT NULL DEFAULT 'zeus';\n"
    "CREATE TABLE bs_stat (\n"
    "  job_id TEXT NOT NULL REFERENCES job (job_id) ON DELETE CASCADE,\n"
    "  batch_size INTEGER NOT NULL,\n"
    "  status INTEGER NOT NULL,\n"
    "  runs INTEGER NOT NULL,\n"
    "  successes INTEGER NOT NULL,\n"
    "  sum_epochs REAL NOT NULL,\n"
    "  sum_sq_epochs REAL NOT NULL,\n"
    "  min_epochs REAL NOT NULL,\n"
    "  cost_sum REAL NOT NULL,\n"
    "  epochs_sum REAL NOT NULL,\n"
    "  censored_epochs REAL NOT NULL,\n"
    "  first_epoch_cost REAL NOT NULL,\n"
    "  warm_first_sum REAL NOT NULL,\n"
    "  warm_steady_sum REAL NOT NULL,\n"
    "  PRIMARY KEY (job_id, batch_size)\n"
    ") WITHOUT ROWID;\n",
    /* 4: tenants and their API tokens */
    "ALTER TABLE job ADD COLUMN tenant TEXT;    -- NULL: registered without authentication\n"
    "CREATE INDEX job_by_tenant ON job (tenant, job_id);\n"
    "CREATE TABLE api_token (\n"
    "  id INTEGER PRIMARY KEY,\n"
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
    "  samples_per_s REAL,\n"
    "  joules_per_sample REAL,\n"
    "  peak_memory_bytes BIGINT,\n"
    "  device TEXT NOT NULL,\n"
    "  measured_at TEXT NOT NULL,\n"
    "  PRIMARY KEY (job_id, batch_size)\n"
    ");\n",
    /* 7: the profile's measurements per batch size, for the bso policy's estimates */
    "ALTER TABLE bs_stat ADD COLUMN profile_samples_per_s REAL NOT NULL DEFAULT 0;\n"
    "ALTER TABLE bs_stat ADD COLUMN profile_joules_per_sample REAL NOT NULL DEFAULT 0;\n",
    /* 8: the power limit chosen per batch size, and what each limit measured */
    "CREATE TABLE power_profile (\n"
    "  job_id TEXT NOT NULL REFERENCES job (job_id) ON DELETE CASCADE,\n"
    "  batch_size INTEGER NOT NULL,\n"
    "  power_limit REAL NOT NULL,              -- W per GPU\n"
    "  measurements TEXT NOT NULL,             -- [[limit_w,samples_per_s,power_w],...]\n"
    "  device TEXT NOT NULL,\n"
    "  measured_at TEXT NOT NULL,\n"
    "  PRIMARY KEY (job_id, batch_size)\n"
    ") WITHOUT ROWID;\n",
    /* 9: whether a job has any power profile, so predictions skip the lookup otherwise */
    "ALTER TABLE job ADD COLUMN power_profiled INTEGER NOT NULL DEFAULT 0;\n"
    "UPDATE job SET power_profiled = 1 WHERE job_id IN (SELECT job_id FROM power_profile);\n",
    /* 10: the bso policy's change detector per batch size (see bso_policy.h) */
    "ALTER TABLE bs_stat ADD COLUMN drift_up REAL NOT NULL DEFAULT 0;\n"
    "ALTER TABLE bs_stat ADD COLUMN drift_down REAL NOT NULL DEFAULT 0;\n"
    "ALTER TABLE bs_stat ADD COLUMN success_mark REAL NOT NULL DEFAULT 0;\n"
    "ALTER TABLE bs_stat ADD COLUMN fail_mark REAL NOT NULL DEFAULT 0;\n"
    "ALTER TABLE bs_stat ADD COLUMN change_mark REAL NOT NULL DEFAULT 0;\n"
    "ALTER TABLE bs_stat ADD COLUMN total_runs REAL NOT NULL DEFAULT 0;\n"
    "ALTER TABLE bs_stat ADD COLUMN total_successes REAL NOT NULL DEFAULT 0;\n"
    "ALTER TABLE bs_stat ADD COLUMN drift_fail REAL NOT NULL DEFAULT 0;\n"
    "ALTER TABLE bs_stat ADD COLUMN prior_epochs REAL NOT NULL DEFAULT 0;\n"
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
    "ALTER TABLE bs_stat ADD COLUMN streak_runs REAL NOT NULL DEFAULT 0;\n"
    "ALTER TABLE bs_stat ADD COLUMN streak_sum_epochs REAL NOT NULL DEFAULT 0;\n"
    "ALTER TABLE bs_stat ADD COLUMN streak_sum_sq_epochs REAL NOT NULL DEFAULT 0;\n",
    /* 14: a cost per epoch moved on the guess that a jump elsewhere was the whole job's */
    "ALTER TABLE bs_stat ADD COLUMN cost_shift REAL NOT NULL DEFAULT 0;\n",
    /* 15: each size's mean epochs when the job last changed (how far the change moved it) */
    "ALTER TABLE bs_stat ADD COLUMN pre_change_epochs REAL NOT NULL DEFAULT 0;\n",
    /* 16: runs that ran to max_epochs without reaching (how often a size reaches) */
    "ALTER TABLE bs_stat ADD COLUMN misses REAL NOT NULL DEFAULT 0;\n",
    /* 17: misses as they stood when a size last reached (a size that misses by chance) */
    "ALTER TABLE bs_stat ADD COLUMN misses_before_reaching REAL NOT NULL DEFAULT 0;\n",
    /* 18: each size's first run since its epochs started (a change right after it) */
    "ALTER TABLE bs_stat ADD COLUMN first_epochs REAL NOT NULL DEFAULT 0;\n"
    "ALTER TABLE bs_stat ADD COLUMN first_mark REAL NOT NULL DEFAULT 0;\n",
    /* 19: when the user last said that the job changed (POST /jobs/ID/changed) */
    "ALTER TABLE bs_stat ADD COLUMN declared_mark REAL NOT NULL DEFAULT 0;\n",
    /* 20: the version of the data a job last registered with (data_version) */
    "CREATE TABLE job_data_version (\n"
    "  job_id TEXT PRIMARY KEY REFERENCES job (job_id) ON DELETE CASCADE,\n"
    "  version TEXT NOT NULL,\n"
    "  since TEXT NOT NULL                     -- when it was first registered with it\n"
    ");\n",
    /* 21: the spread of the runs each size forgot at the job's changes */
    "ALTER TABLE bs_stat ADD COLUMN past_spread_ss REAL NOT NULL DEFAULT 0;\n"
    "ALTER TABLE bs_stat ADD COLUMN past_spread_dof REAL NOT NULL DEFAULT 0;\n",
    /* 22: how far jumps in cost per epoch moved each size's (cost_level) */
    "ALTER TABLE bs_stat ADD COLUMN cost_level REAL NOT NULL DEFAULT 0;\n",
    /* 23: how many changes the policy found since each size last ran */
    "ALTER TABLE bs_stat ADD COLUMN changes_since_run REAL NOT NULL DEFAULT 0;\n",
    /* 24: for a job that never trained: the predictions refused since its last run
     * (bso_job.refusals), and how close each size's runs to max_epochs came (shortfall) */
    "ALTER TABLE job ADD COLUMN refusals INTEGER NOT NULL DEFAULT 0;\n"
    "ALTER TABLE bs_stat ADD COLUMN shortfall REAL NOT NULL DEFAULT 0;\n",
    /* 25: how far each size's epochs fell at its last downward alarm, and when */
    "ALTER TABLE bs_stat ADD COLUMN drop_factor REAL NOT NULL DEFAULT 0;\n"
    "ALTER TABLE bs_stat ADD COLUMN drop_mark REAL NOT NULL DEFAULT 0;\n",
    /* 26: PostgreSQL widens two INTEGER columns to 64 bits; SQLite's INTEGER is 64 bits
     * already, and the version keeps in step */
    "-- nothing to change in SQLite\n",
};
#define N_MIGRATIONS ((int)(sizeof migrations / sizeof *migrations))

enum stmt_id {
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
    ST_BEGIN_WRITE,
    ST_BEGIN_READ,
    ST_COMMIT,
    ST_ROLLBACK,
    ST_SAVEPOINT,
    ST_RELEASE,
    ST_ROLLBACK_TO,
    ST_COUNT
};

static const char *const stmt_sql[ST_COUNT] = {
    [ST_LOAD_JOB] =
        "SELECT job_id, job_id_prefix, batch_sizes, default_batch_size, eta_knob, beta_knob,"
        " target_metric, higher_is_better_metric, max_epochs, num_pruning_rounds, window_size,"
        " mab_prior_mean, mab_prior_precision, mab_num_explorations, mab_seed, max_power,"
        " number_of_gpus, gpu_model, stage, min_cost, min_cost_batch_size, rng_state,"
        " last_trial_number, policy, tenant, unfit, power_profiled, refusals FROM job"
        " WHERE job_id = ?1",
    [ST_LOAD_TRIALS] = "SELECT trial_number, batch_size, type, status, time, energy, converged"
                       " FROM trial WHERE job_id = ?1 ORDER BY trial_number",
    [ST_LOAD_ARMS] = "SELECT batch_size, param_mean, param_precision, reward_precision,"
                     " num_observations, n_results, recent FROM arm WHERE job_id = ?1"
                     " ORDER BY batch_size",
    [ST_INSERT_JOB] =
        "INSERT INTO job (job_id, job_id_prefix, batch_sizes, default_batch_size, eta_knob,"
        " beta_knob, target_metric, higher_is_better_metric, max_epochs, num_pruning_rounds,"
        " window_size, mab_prior_mean, mab_prior_precision, mab_num_explorations, mab_seed,"
        " max_power, number_of_gpus, gpu_model, stage, min_cost, min_cost_batch_size, rng_state,"
        " last_trial_number, policy, tenant, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8,"
        " ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25,"
        " strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
    [ST_UPDATE_JOB] = "UPDATE job SET stage = ?2, min_cost = ?3, min_cost_batch_size = ?4,"
                      " rng_state = ?5, last_trial_number = ?6, refusals = ?7 WHERE job_id = ?1",
    [ST_INSERT_TRIAL] =
        "INSERT INTO trial (job_id, trial_number, batch_size, type, status, start_timestamp)"
        " VALUES (?1, ?2, ?3, ?4, ?5, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
    [ST_UPDATE_TRIAL] =
        "UPDATE trial SET status = ?3, time = ?4, energy = ?5, converged = ?6, energy_source = ?7,"
        " end_timestamp = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"
        " WHERE job_id = ?1 AND trial_number = ?2",
    [ST_INSERT_ARM] = "INSERT INTO arm (job_id, batch_size, param_mean, param_precision,"
                      " reward_precision, num_observations, n_results, recent)"
                      " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    [ST_UPDATE_ARM] = "UPDATE arm SET param_mean = ?3, param_precision = ?4,"
                      " reward_precision = ?5, num_observations = ?6, n_results = ?7,"
                      " recent = ?8 WHERE job_id = ?1 AND batch_size = ?2",
    [ST_LOAD_TRIAL] = "SELECT trial_number, batch_size, type, status, time, energy, converged"
                      " FROM trial WHERE job_id = ?1 AND trial_number = ?2",
    [ST_DELETE_JOB] = "DELETE FROM job WHERE job_id = ?1",
    [ST_RESET_TRIALS] = "DELETE FROM trial WHERE job_id = ?1",
    [ST_RESET_ARMS] = "DELETE FROM arm WHERE job_id = ?1",
    [ST_RESET_STATS] = "DELETE FROM bs_stat WHERE job_id = ?1",
    [ST_RESET_ORIGIN] = "DELETE FROM job_origin WHERE job_id = ?1",
    [ST_RESET_JOB] = "UPDATE job SET stage = 'Pruning', min_cost = NULL,"
                     " min_cost_batch_size = default_batch_size, refusals = 0 WHERE job_id = ?1",
    [ST_JOB_EXISTS] = "SELECT 1 FROM job WHERE job_id = ?1",
    [ST_LIST_JOBS] = "SELECT job_id, gpu_model, stage, last_trial_number, min_cost,"
                     " min_cost_batch_size, created_at, tenant, policy FROM job WHERE job_id > ?1"
                     " AND (?3 IS NULL OR coalesce(tenant, '') = ?3) ORDER BY job_id LIMIT ?2",
    [ST_LIST_TRIALS] =
        "SELECT trial_number, batch_size, type, status, time, energy, converged,"
        " start_timestamp, end_timestamp, energy_source, progress FROM trial WHERE job_id = ?1"
        " AND trial_number > ?2 ORDER BY trial_number LIMIT ?3",
    [ST_TALLY_JOBS] = "SELECT stage, count(*) FROM job GROUP BY stage",
    [ST_TALLY_TRIALS] = "SELECT status, count(*) FROM trial GROUP BY status",
    [ST_COUNT_TRIALS] = "SELECT status, count(*) FROM trial WHERE job_id = ?1 GROUP BY status",
    [ST_LOAD_STATS] =
        "SELECT batch_size, status, runs, successes, sum_epochs, sum_sq_epochs,"
        " min_epochs, cost_sum, epochs_sum, censored_epochs, first_epoch_cost, warm_first_sum,"
        " warm_steady_sum, crashes, profile_samples_per_s, profile_joules_per_sample,"
        " drift_up, drift_down, success_mark, fail_mark, change_mark, total_runs, total_successes,"
        " drift_fail, prior_epochs, streak_runs, streak_sum_epochs, streak_sum_sq_epochs,"
        " cost_shift, pre_change_epochs, misses, misses_before_reaching, first_epochs,"
        " first_mark, declared_mark, past_spread_ss, past_spread_dof, cost_level,"
        " changes_since_run, shortfall, drop_factor, drop_mark, recent_epochs FROM bs_stat"
        " WHERE job_id = ?1",
    [ST_SAVE_STAT] =
        "INSERT OR REPLACE INTO bs_stat (job_id, batch_size, status, runs, successes,"
        " sum_epochs, sum_sq_epochs, min_epochs, cost_sum, epochs_sum, censored_epochs,"
        " first_epoch_cost, warm_first_sum, warm_steady_sum, crashes, profile_samples_per_s,"
        " profile_joules_per_sample, drift_up, drift_down, success_mark, fail_mark, change_mark,"
        " total_runs, total_successes, drift_fail, prior_epochs, streak_runs, streak_sum_epochs,"
        " streak_sum_sq_epochs, cost_shift, pre_change_epochs, misses, misses_before_reaching,"
        " first_epochs, first_mark, declared_mark, past_spread_ss, past_spread_dof, cost_level,"
        " changes_since_run, shortfall, drop_factor, drop_mark, recent_epochs)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,"
        " ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32, ?33, ?34,"
        " ?35, ?36, ?37, ?38, ?39, ?40, ?41, ?42, ?43, ?44)",
    [ST_SAVE_PROFILE] =
        "INSERT OR REPLACE INTO profile (job_id, batch_size, feasible, samples_per_s,"
        " joules_per_sample, peak_memory_bytes, device, measured_at) VALUES (?1, ?2, ?3, ?4, ?5,"
        " ?6, ?7, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
    [ST_LIST_PROFILE] = "SELECT batch_size, feasible, samples_per_s, joules_per_sample,"
                        " peak_memory_bytes, device, measured_at FROM profile WHERE job_id = ?1"
                        " ORDER BY batch_size",
    [ST_SAVE_UNFIT] = "UPDATE job SET unfit = ?2 WHERE job_id = ?1",
    [ST_SAVE_POWER] = "INSERT OR REPLACE INTO power_profile (job_id, batch_size, power_limit,"
                      " measurements, device, measured_at) VALUES (?1, ?2, ?3, ?4, ?5,"
                      " strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
    [ST_MARK_POWER] = "UPDATE job SET power_profiled = 1 WHERE job_id = ?1",
    [ST_POWER_LIMIT] =
        "SELECT power_limit FROM power_profile WHERE job_id = ?1 AND batch_size = ?2",
    [ST_SAVE_ORIGIN] = "INSERT OR REPLACE INTO job_origin (job_id, from_job, sizes, transferred_at)"
                       " VALUES (?1, ?2, ?3, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
    /* Appends a point while the run is Dispatched, once per epoch (a repeated report adds
     * nothing), and keeps at most BSO_PROGRESS_MAX points. */
    [ST_ADD_PROGRESS] =
        "UPDATE trial SET progress = json_insert(coalesce(progress, '[]'), '$[#]',"
        " json_array(?3, ?4, ?5, ?6)) WHERE job_id = ?1 AND trial_number = ?2"
        " AND status = 'Dispatched' AND coalesce(json_extract(progress, '$[#-1][0]'), 0) < ?3"
        " AND coalesce(json_array_length(progress), 0) < " BSO_PROGRESS_MAX_TEXT,
    [ST_IMPORT_TRIAL] =
        "INSERT INTO trial (job_id, trial_number, batch_size, type, status, start_timestamp,"
        " end_timestamp, time, energy, converged) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    [ST_LOAD_ORIGIN] = "SELECT from_job, sizes, transferred_at FROM job_origin WHERE job_id = ?1",
    [ST_SAVE_DATA_VERSION] = "INSERT OR REPLACE INTO job_data_version (job_id, version, since)"
                             " VALUES (?1, ?2, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
    [ST_LOAD_DATA_VERSION] = "SELECT version, since FROM job_data_version WHERE job_id = ?1",
    [ST_LIST_POWER] = "SELECT batch_size, power_limit, measurements, device, measured_at"
                      " FROM power_profile WHERE job_id = ?1 ORDER BY batch_size",
    [ST_WAITING_TRIALS] = "SELECT job_id, trial_number, batch_size, start_timestamp FROM trial"
                          " WHERE status = 'Dispatched' AND start_timestamp < ?1"
                          " ORDER BY start_timestamp LIMIT ?2",
    [ST_LONGEST_RUN] = "SELECT coalesce(max(time), 0) FROM trial WHERE job_id = ?1"
                       " AND status = 'Succeeded'",
    [ST_TOKEN_INSERT] = "INSERT INTO api_token (tenant, admin, hash, hint, created_at)"
                        " VALUES (?1, ?2, ?3, ?4, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
    [ST_TOKEN_FIND] = "SELECT id, tenant, admin, hint, created_at, revoked_at FROM api_token"
                      " WHERE hash = ?1 AND revoked_at IS NULL",
    [ST_TOKEN_LIST] = "SELECT id, tenant, admin, hint, created_at, revoked_at FROM api_token"
                      " WHERE ?1 IS NULL OR tenant = ?1 ORDER BY id",
    [ST_TOKEN_REVOKE] = "UPDATE api_token SET revoked_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"
                        " WHERE revoked_at IS NULL AND (id = ?1 OR (?1 IS NULL AND tenant = ?2))",
    [ST_TOKEN_COUNT] = "SELECT count(*) FROM api_token WHERE revoked_at IS NULL",
    [ST_BEGIN_WRITE] = "BEGIN IMMEDIATE",
    [ST_BEGIN_READ] = "BEGIN",
    [ST_COMMIT] = "COMMIT",
    [ST_ROLLBACK] = "ROLLBACK",
    [ST_SAVEPOINT] = "SAVEPOINT request",
    [ST_RELEASE] = "RELEASE request",
    [ST_ROLLBACK_TO] = "ROLLBACK TO request",
};

struct backend {
    char path[4096];
    bool memory;
    struct bso_store_options opt;
    sqlite3 *keeper; /* holds an in-memory database alive between sessions */
    /* Writers of this process queue here before they take SQLite's write lock, so they wait
     * on a futex and are woken the moment it is free, instead of polling in SQLite's busy
     * handler (which sleeps in steps of milliseconds). Other processes still meet the busy
     * handler. */
    pthread_mutex_t write_lock;
    struct group *group; /* with --durability full: group commit */
    /* Otherwise every writer of this process writes through this one connection (under
     * write_lock): its page cache stays warm, where a connection per thread would find its
     * pages stale after each other thread's write and read them again. */
    sqlite3 *writer_db;
    sqlite3_stmt *writer_st[ST_COUNT];
    atomic_bool catch_up; /* a checkpoint ran: the next writer copies what it left */
    /* Checkpoints (copying the WAL back into the database) run on a thread of their own, not
     * inside some request's commit, where they would stall it for milliseconds. */
    pthread_t checkpointer;
    bool has_checkpointer;
    pthread_mutex_t stop_lock;
    pthread_cond_t stop_cv;
    bool stopping;
    /* An exclusive flock on the database file: one server process per database, so that it
     * may keep jobs in memory. -1 for a memory database (or a path we cannot open plainly). */
    int owner_fd;
};

/*
 * Group commit, for --durability full, where every commit waits for the disk (fsync). The
 * writers of this process share one connection and one open transaction: each request runs
 * its writes inside a savepoint, under the group's lock, and then waits until the transaction
 * that holds them is committed. The request that finds no other writer queued behind it
 * commits, for everyone in the batch: one fsync for many requests. An answer is sent only
 * once its writes are durable; if the batch's commit fails, every request in it fails and
 * none of their writes remain.
 */
struct group {
    pthread_mutex_t lock; /* the writer connection and everything below */
    pthread_cond_t settled;
    sqlite3 *db;
    sqlite3_stmt *st[ST_COUNT];
    atomic_int queued; /* writers waiting for the lock */
    bool open;         /* a batch transaction is open */
    /* The requests whose writes the open batch holds; its commit tells each how it went
     * (a request may wake only after later batches settled too, so the outcome is its own). */
    struct sqlite_session *members;
};

struct sqlite_session {
    struct bso_session base;
    struct backend *backend;
    sqlite3 *db;       /* the connection statements run on: own_db, or the group's */
    sqlite3_stmt **st; /* its statement cache */
    sqlite3 *own_db;
    bool owns_db; /* false for the shared connection of an in-memory database */
    sqlite3_stmt *own_st[ST_COUNT];
    bool in_tx;
    bool holds_write_lock;
    bool in_group;                      /* writing through the group's connection */
    struct sqlite_session *next_member; /* in the group's open batch */
    bool settled;                       /* its batch is committed, or failed */
    bool batch_failed;
};

static struct sqlite_session *ss(struct bso_session *s)
{
    return (struct sqlite_session *)s;
}

/* Reports a SQLite failure. The detail goes to the session (for logs), never to clients. */
static int db_fail(struct bso_session *s, const char *what)
{
    return bso_session_fail(s, BSO_EIO, "sqlite: %s: %s", what, sqlite3_errmsg(ss(s)->db));
}

static int exec(sqlite3 *db, const char *sql, char *err, size_t errcap)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK)
        return 0;
    snprintf(err, errcap, "sqlite: %s", msg ? msg : sqlite3_errmsg(db));
    sqlite3_free(msg);
    return BSO_EIO;
}

static int connect(struct backend *b, sqlite3 **out, char *err, size_t errcap)
{
    sqlite3 *db = NULL;
    const int flags =
        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX;
    if (sqlite3_open_v2(b->path, &db, flags, NULL) != SQLITE_OK) {
        snprintf(err, errcap, "cannot open database '%s': %s", b->path,
                 db ? sqlite3_errmsg(db) : "out of memory");
        sqlite3_close(db);
        return BSO_EIO;
    }
    sqlite3_busy_timeout(db, b->opt.busy_timeout_ms > 0 ? b->opt.busy_timeout_ms : 10000);
    char pragmas[256];
    snprintf(
        pragmas, sizeof pragmas,
        "PRAGMA foreign_keys = ON; %s PRAGMA synchronous = %s; PRAGMA wal_autocheckpoint = 20000;",
        b->memory ? "" : "PRAGMA journal_mode = WAL;",
        b->opt.durability == BSO_DURABILITY_FULL ? "FULL" : "NORMAL");
    int rc = exec(db, pragmas, err, errcap);
    if (rc < 0) {
        sqlite3_close(db);
        return rc;
    }
    *out = db;
    return 0;
}

static int user_version(sqlite3 *db)
{
    sqlite3_stmt *st;
    int v = -1;
    if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* Applies every pending migration in one transaction. */
static int migrate(sqlite3 *db, char *err, size_t errcap)
{
    int rc = exec(db, "BEGIN IMMEDIATE", err, errcap);
    if (rc < 0)
        return rc;
    int v = user_version(db);
    if (v < 0 || v > N_MIGRATIONS) {
        if (v > N_MIGRATIONS)
            snprintf(err, errcap,
                     "the database schema (version %d) is newer than this bso-server "
                     "understands (%d): upgrade bso-server",
                     v, N_MIGRATIONS);
        else
            snprintf(err, errcap, "cannot read the schema version: %s", sqlite3_errmsg(db));
        exec(db, "ROLLBACK", err + strlen(err), 0);
        return BSO_ESTATE;
    }
    for (; v < N_MIGRATIONS && rc == 0; v++)
        rc = exec(db, migrations[v], err, errcap);
    if (rc == 0) {
        char sql[64];
        snprintf(sql, sizeof sql, "PRAGMA user_version = %d", v);
        rc = exec(db, sql, err, errcap);
    }
    if (rc == 0)
        rc = exec(db, "COMMIT", err, errcap);
    if (rc < 0)
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

static int group_open(struct backend *b, char *err, size_t errcap);
static void group_close(struct group *g);

#define CHECKPOINT_EVERY_MS 100

/* Copies the WAL back into the database, beside the writers (PASSIVE never waits for or
 * blocks one). The frames they add meanwhile are copied by the next writer, on its own
 * connection right after its commit, while it still holds off the others (catch_up): then
 * the whole WAL is in the database and the writer after it starts the WAL again from the
 * beginning. Without that a steady writer keeps the WAL growing until SQLite's automatic
 * checkpoint stops some request's commit for tens of milliseconds to copy all of it. Under
 * group commit the batches' writers are held off here instead. */
static void checkpoint(struct backend *b, sqlite3 *db)
{
    sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    if (!b->group) {
        atomic_store(&b->catch_up, true);
        return;
    }
    pthread_mutex_lock(&b->group->lock);
    sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    pthread_mutex_unlock(&b->group->lock);
}

static void *checkpoint_loop(void *arg)
{
    struct backend *b = arg;
    sqlite3 *db;
    char err[256];
    if (connect(b, &db, err, sizeof err) < 0)
        return NULL;
    /* Requests come first: checkpoints only need a little time, regularly. */
    setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10);
    pthread_mutex_lock(&b->stop_lock);
    while (!b->stopping) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += CHECKPOINT_EVERY_MS * 1000000L;
        until.tv_sec += until.tv_nsec / 1000000000L;
        until.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&b->stop_cv, &b->stop_lock, &until);
        if (b->stopping)
            break;
        pthread_mutex_unlock(&b->stop_lock);
        checkpoint(b, db);
        pthread_mutex_lock(&b->stop_lock);
    }
    pthread_mutex_unlock(&b->stop_lock);
    sqlite3_close(db);
    return NULL;
}

/* Locks the database file for this process (connect() has created it). A second server on
 * the same file would not see the first one's changes in its memory: it is refused. */
static int take_ownership(struct backend *b, char *err, size_t errcap)
{
    b->owner_fd = open(b->path, O_RDONLY | O_CLOEXEC);
    if (b->owner_fd < 0)
        return 0; /* e.g. a file: URI: served without keeping jobs in memory */
    if (flock(b->owner_fd, LOCK_EX | LOCK_NB) == 0)
        return 0;
    const int e = errno;
    close(b->owner_fd);
    b->owner_fd = -1;
    if (e == EWOULDBLOCK) {
        snprintf(err, errcap,
                 "database '%s' is in use by another bso-server (or bso-bench-fill): a SQLite "
                 "database serves one server process",
                 b->path);
        return BSO_ESTATE;
    }
    snprintf(err, errcap, "cannot lock database '%s': %s", b->path, strerror(e));
    return BSO_EIO;
}

static int be_open(const char *target, const struct bso_store_options *opt, void **out, char *err,
                   size_t errcap)
{
    struct backend *b = calloc(1, sizeof(*b));
    if (!b) {
        snprintf(err, errcap, "out of memory");
        return BSO_ENOMEM;
    }
    b->opt = opt ? *opt : (struct bso_store_options){0};
    pthread_mutex_init(&b->write_lock, NULL);
    if (strcmp(target, ":memory:") == 0 || target[0] == '\0') {
        /* A named shared in-memory database, so every session sees the same data. */
        static int counter;
        b->memory = true;
        snprintf(b->path, sizeof b->path, "file:bso-mem-%p-%d?mode=memory&cache=shared", (void *)b,
                 __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED));
    } else if (strlen(target) >= sizeof b->path) {
        snprintf(err, errcap, "database path too long");
        free(b);
        return BSO_EINVAL;
    } else {
        snprintf(b->path, sizeof b->path, "%s", target);
    }
    sqlite3 *db = NULL; /* connect() leaves it NULL when it fails */
    b->owner_fd = -1;
    int rc = connect(b, &db, err, errcap);
    if (rc == 0 && !b->memory && !b->opt.tool)
        rc = take_ownership(b, err, errcap);
    if (rc == 0)
        rc = migrate(db, err, errcap);
    if (rc < 0) {
        sqlite3_close(db);
        if (b->owner_fd >= 0)
            close(b->owner_fd);
        free(b);
        return rc;
    }
    b->keeper = db;
    if (!b->memory && b->opt.durability != BSO_DURABILITY_FULL)
        rc = connect(b, &b->writer_db, err, errcap);
    else if (!b->memory)
        rc = group_open(b, err, errcap);
    if (rc < 0) {
        sqlite3_close(db);
        if (b->owner_fd >= 0)
            close(b->owner_fd);
        free(b);
        return rc;
    }
    pthread_mutex_init(&b->stop_lock, NULL);
    pthread_cond_init(&b->stop_cv, NULL);
    if (!b->memory)
        b->has_checkpointer = pthread_create(&b->checkpointer, NULL, checkpoint_loop, b) == 0;
    *out = b;
    return 0;
}

static void be_close(void *backend)
{
    struct backend *b = backend;
    if (!b)
        return;
    if (b->has_checkpointer) {
        pthread_mutex_lock(&b->stop_lock);
        b->stopping = true;
        pthread_cond_signal(&b->stop_cv);
        pthread_mutex_unlock(&b->stop_lock);
        pthread_join(b->checkpointer, NULL);
    }
    pthread_cond_destroy(&b->stop_cv);
    pthread_mutex_destroy(&b->stop_lock);
    group_close(b->group);
    for (int i = 0; i < ST_COUNT; i++)
        sqlite3_finalize(b->writer_st[i]);
    sqlite3_close(b->writer_db);
    sqlite3_close(b->keeper);
    if (b->owner_fd >= 0)
        close(b->owner_fd);
    pthread_mutex_destroy(&b->write_lock);
    free(b);
}

static int be_schema_version(void *backend)
{
    return user_version(((struct backend *)backend)->keeper);
}

static bool be_cacheable(void *backend)
{
    /* Under group commit a request's writes are final only when its batch commits, after
     * other writers of the batch have read the job: they must read the database. */
    const struct backend *b = backend;
    return !b->group && (b->memory || b->owner_fd >= 0);
}

static int be_session_limit(void *backend)
{
    /* Shared-cache memory databases lock per table and would need unlock notification to
     * share; one connection is plenty for tests and demos. */
    const struct backend *b = backend;
    return b->memory ? 1 : b->opt.connections;
}

static const char *be_migrations_sql(void)
{
    static char all[8192];
    if (all[0] == '\0') {
        size_t o = 0;
        o += (size_t)snprintf(all + o, sizeof all - o, "BEGIN;\n");
        for (int i = 0; i < N_MIGRATIONS; i++)
            o += (size_t)snprintf(all + o, sizeof all - o, "-- migration %d\n%s", i + 1,
                                  migrations[i]);
        snprintf(all + o, sizeof all - o, "PRAGMA user_version = %d;\nCOMMIT;\n", N_MIGRATIONS);
    }
    return all;
}

static struct bso_session *be_session_new(void *backend, char *err, size_t errcap)
{
    struct backend *b = backend;
    struct sqlite_session *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(err, errcap, "out of memory");
        return NULL;
    }
    s->backend = b;
    if (b->memory) {
        s->own_db = b->keeper; /* the single connection; the pool hands it to one thread */
    } else if (connect(b, &s->own_db, err, errcap) < 0) {
        free(s);
        return NULL;
    } else {
        s->owns_db = true;
    }
    s->db = s->own_db;
    s->st = s->own_st;
    return &s->base;
}

static void be_session_free(struct bso_session *base)
{
    struct sqlite_session *s = ss(base);
    for (int i = 0; i < ST_COUNT; i++)
        sqlite3_finalize(s->own_st[i]);
    if (s->owns_db)
        sqlite3_close(s->own_db);
    free(s);
}

/* The cached statement, reset and unbound, or NULL with the error recorded. */
static sqlite3_stmt *stmt(struct bso_session *base, enum stmt_id id)
{
    struct sqlite_session *s = ss(base);
    if (!s->st[id] && sqlite3_prepare_v3(s->db, stmt_sql[id], -1, SQLITE_PREPARE_PERSISTENT,
                                         &s->st[id], NULL) != SQLITE_OK) {
        db_fail(base, "prepare");
        return NULL;
    }
    sqlite3_reset(s->st[id]);
    sqlite3_clear_bindings(s->st[id]);
    return s->st[id];
}

/* Runs one of the transaction statements (prepared once per session). */
static int tx_step(struct bso_session *s, enum stmt_id id)
{
    sqlite3_stmt *st = stmt(s, id);
    if (!st)
        return BSO_EIO;
    const int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : BSO_EIO;
}

static void release_write_lock(struct sqlite_session *s)
{
    if (s->holds_write_lock) {
        s->db = s->own_db;
        s->st = s->own_st;
        pthread_mutex_unlock(&s->backend->write_lock);
    }
    s->holds_write_lock = false;
}

/* ---- group commit (see struct group) ---- */

static int group_open(struct backend *b, char *err, size_t errcap)
{
    struct group *g = calloc(1, sizeof *g);
    if (!g) {
        snprintf(err, errcap, "out of memory");
        return BSO_ENOMEM;
    }
    int rc = connect(b, &g->db, err, errcap);
    if (rc < 0) {
        free(g);
        return rc;
    }
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->settled, NULL);
    b->group = g;
    return 0;
}

static void group_close(struct group *g)
{
    if (!g)
        return;
    for (int i = 0; i < ST_COUNT; i++)
        sqlite3_finalize(g->st[i]);
    sqlite3_close(g->db);
    pthread_cond_destroy(&g->settled);
    pthread_mutex_destroy(&g->lock);
    free(g);
}

/* Commits the open batch (the caller holds the lock) and wakes its requests. */
static void group_commit_batch(struct bso_session *s, struct group *g)
{
    bool failed = false;
    if (g->open && tx_step(s, ST_COMMIT) < 0) {
        db_fail(s, "commit");
        tx_step(s, ST_ROLLBACK);
        failed = true;
    }
    for (struct sqlite_session *m = g->members; m; m = m->next_member) {
        m->settled = true;
        m->batch_failed = failed;
    }
    g->members = NULL;
    g->open = false;
    pthread_cond_broadcast(&g->settled);
}

static int group_begin(struct bso_session *s)
{
    struct sqlite_session *q = ss(s);
    struct group *g = q->backend->group;
    atomic_fetch_add(&g->queued, 1);
    pthread_mutex_lock(&g->lock);
    atomic_fetch_sub(&g->queued, 1);
    q->db = g->db;
    q->st = g->st;
    q->in_group = true;
    int rc = 0;
    if (!g->open && (rc = tx_step(s, ST_BEGIN_WRITE)) == 0)
        g->open = true;
    if (rc == 0)
        rc = tx_step(s, ST_SAVEPOINT);
    if (rc < 0) {
        rc = db_fail(s, "begin");
        q->db = q->own_db;
        q->st = q->own_st;
        q->in_group = false;
        pthread_mutex_unlock(&g->lock);
        return rc;
    }
    q->in_tx = true;
    return 0;
}

/* Ends the request's part of the batch: kept (its savepoint released) or undone. The last
 * writer of a batch commits it; a request that kept writes waits until they are settled. */
static int group_end(struct bso_session *s, bool keep)
{
    struct sqlite_session *q = ss(s);
    struct group *g = q->backend->group;
    int rc = 0;
    if (keep && tx_step(s, ST_RELEASE) < 0) {
        rc = db_fail(s, "commit");
        keep = false;
    }
    if (!keep) {
        tx_step(s, ST_ROLLBACK_TO);
        tx_step(s, ST_RELEASE);
    }
    if (keep) {
        q->settled = q->batch_failed = false;
        q->next_member = g->members;
        g->members = q;
    }
    if (atomic_load(&g->queued) == 0)
        group_commit_batch(s, g);
    else
        while (keep && !q->settled)
            pthread_cond_wait(&g->settled, &g->lock);
    if (keep && q->batch_failed)
        rc = bso_session_fail(s, BSO_EIO, "sqlite: the group commit failed");
    q->db = q->own_db;
    q->st = q->own_st;
    q->in_group = false;
    q->in_tx = false;
    pthread_mutex_unlock(&g->lock);
    return rc;
}

static int be_begin_write(struct bso_session *s, const char *job_id)
{
    (void)job_id; /* SQLite has one write lock for the whole database */
    if (ss(s)->backend->group)
        return group_begin(s);
    struct backend *b = ss(s)->backend;
    pthread_mutex_lock(&b->write_lock);
    ss(s)->holds_write_lock = true;
    if (b->writer_db) {
        ss(s)->db = b->writer_db;
        ss(s)->st = b->writer_st;
    }
    if (tx_step(s, ST_BEGIN_WRITE) < 0) {
        int rc = db_fail(s, "begin");
        release_write_lock(ss(s));
        return rc;
    }
    ss(s)->in_tx = true;
    return 0;
}

static int be_begin_read(struct bso_session *s)
{
    if (tx_step(s, ST_BEGIN_READ) < 0)
        return db_fail(s, "begin");
    ss(s)->in_tx = true;
    return 0;
}

static int be_commit(struct bso_session *s)
{
    if (ss(s)->in_group)
        return group_end(s, true);
    int rc = 0;
    if (tx_step(s, ST_COMMIT) < 0) {
        rc = db_fail(s, "commit");
        tx_step(s, ST_ROLLBACK);
    }
    ss(s)->in_tx = false;
    if (ss(s)->holds_write_lock && atomic_exchange(&ss(s)->backend->catch_up, false))
        sqlite3_wal_checkpoint_v2(ss(s)->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    release_write_lock(ss(s));
    return rc;
}

static void be_rollback(struct bso_session *s)
{
    if (ss(s)->in_group) {
        group_end(s, false);
        return;
    }
    if (ss(s)->in_tx)
        tx_step(s, ST_ROLLBACK);
    ss(s)->in_tx = false;
    release_write_lock(ss(s));
}

static void bind_text(sqlite3_stmt *st, int i, const char *v)
{
    sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT);
}

static const char *col_text(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? (const char *)t : "";
}

static int step_done(struct bso_session *s, sqlite3_stmt *st, const char *what)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : db_fail(s, what);
}

/* Name lookups for the enum columns. */
/* A statement's current row for the shared column readers (columns.h). */
static const char *row_text(const void *st, int i)
{
    return col_text((sqlite3_stmt *)st, i);
}

static int64_t row_i64(const void *st, int i)
{
    return sqlite3_column_int64((sqlite3_stmt *)st, i);
}

static double row_f64(const void *st, int i)
{
    return sqlite3_column_double((sqlite3_stmt *)st, i);
}

static bool row_null(const void *st, int i)
{
    return sqlite3_column_type((sqlite3_stmt *)st, i) == SQLITE_NULL;
}

struct bso_row bso_sqlite_row(sqlite3_stmt *st)
{
    return (struct bso_row){st, row_text, row_i64, row_f64, row_null};
}

static int load_trials(struct bso_session *s, const char *job_id, struct bso_job *job)
{
    sqlite3_stmt *st = stmt(s, ST_LOAD_TRIALS);
    if (!st)
        return BSO_EIO;
    bind_text(st, 1, job_id);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (job->n_trials == job->cap_trials) {
            size_t cap = job->cap_trials ? job->cap_trials * 2 : 16;
            struct bso_trial *g = realloc(job->trials, cap * sizeof(*g));
            if (!g) {
                sqlite3_reset(st);
                return bso_session_fail(s, BSO_ENOMEM, "out of memory");
            }
            job->trials = g;
            job->cap_trials = cap;
        }
        const struct bso_row r = bso_sqlite_row(st);
        bso_column_read_trial(&r, &job->trials[job->n_trials++]);
    }
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : db_fail(s, "load trials");
}

static int load_arms(struct bso_session *s, const char *job_id, struct bso_job *job)
{
    sqlite3_stmt *st = stmt(s, ST_LOAD_ARMS);
    if (!st)
        return BSO_EIO;
    bind_text(st, 1, job_id);
    int rc;
    size_t cap = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (job->n_arms == cap) {
            cap = cap ? cap * 2 : 8;
            struct bso_arm *g = realloc(job->arms, cap * sizeof(*g));
            if (!g) {
                sqlite3_reset(st);
                return bso_session_fail(s, BSO_ENOMEM, "out of memory");
            }
            job->arms = g;
        }
        struct bso_arm *a = &job->arms[job->n_arms++];
        const struct bso_row r = bso_sqlite_row(st);
        int prc = bso_column_read_arm(&r, a);
        if (prc < 0) {
            sqlite3_reset(st);
            return bso_session_fail(s, prc, "arm %" PRId64 " of job %s: bad reward window",
                                    a->batch_size, job_id);
        }
    }
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : db_fail(s, "load arms");
}

/* The bso policy's statistics of each batch size that has any. */
static int load_stats(struct bso_session *s, const char *job_id, struct bso_job *job)
{
    sqlite3_stmt *st = stmt(s, ST_LOAD_STATS);
    if (!st)
        return BSO_EIO;
    bind_text(st, 1, job_id);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const struct bso_row r = bso_sqlite_row(st);
        bso_column_read_stat(&r, job);
    }
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : db_fail(s, "load stats");
}

static int save_stat(struct bso_session *s, const struct bso_job *job, size_t i)
{
    const struct bso_bs_stat *b = &job->stats[i];
    sqlite3_stmt *st = stmt(s, ST_SAVE_STAT);
    if (!st)
        return BSO_EIO;
    bind_text(st, 1, job->spec.job_id);
    sqlite3_bind_int64(st, 2, job->spec.batch_sizes[i]);
    sqlite3_bind_int(st, 3, b->status);
    sqlite3_bind_int64(st, 4, b->runs);
    sqlite3_bind_int64(st, 5, b->successes);
    double sums[BSO_STAT_SUMS];
    bso_column_stat_sums(b, sums);
    for (int k = 0; k < BSO_STAT_SUMS; k++)
        sqlite3_bind_double(st, 6 + k, sums[k]);
    sqlite3_bind_int64(st, 6 + BSO_STAT_SUMS, b->crashes);
    sqlite3_bind_double(st, 7 + BSO_STAT_SUMS, b->profile_samples_per_s);
    sqlite3_bind_double(st, 8 + BSO_STAT_SUMS, b->profile_joules_per_sample);
    double change[BSO_STAT_CHANGE];
    bso_column_stat_change(b, change);
    for (int k = 0; k < BSO_STAT_CHANGE; k++)
        sqlite3_bind_double(st, 9 + BSO_STAT_SUMS + k, change[k]);
    char window[BSO_STAT_WINDOW_TEXT];
    bso_column_format_window(b, window);
    bind_text(st, 9 + BSO_STAT_SUMS + BSO_STAT_CHANGE, window);
    return step_done(s, st, "save stats");
}

static int be_load_job(struct bso_session *s, const char *job_id, unsigned load,
                       struct bso_job *job)
{
    sqlite3_stmt *st = stmt(s, ST_LOAD_JOB);
    if (!st)
        return BSO_EIO;
    bind_text(st, 1, job_id);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) {
        sqlite3_reset(st);
        return bso_session_fail(s, BSO_ENOTFOUND, "no job %s", job_id);
    }
    if (rc != SQLITE_ROW)
        return db_fail(s, "load job");
    bso_job_reset(job);
    const struct bso_row r = bso_sqlite_row(st);
    const int bad = bso_column_read_job(&r, job);
    sqlite3_reset(st);
    if (bad < 0)
        return bso_session_fail(s, BSO_EPARSE, "job %s: corrupt row", job_id);
    bso_job_clear_stats(job);

    rc = 0;
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

static int be_insert_job(struct bso_session *s, const struct bso_job *job)
{
    sqlite3_stmt *st = stmt(s, ST_INSERT_JOB);
    if (!st)
        return BSO_EIO;
    const struct bso_job_spec *sp = &job->spec;
    char sizes[BSO_MAX_BATCH_SIZES * 22 + 3], rng[BSO_RNG_JSON_MAX];
    if (bso_pyintlist_repr(sp->batch_sizes, sp->n_batch_sizes, sizes, sizeof sizes) < 0 ||
        bso_rng_to_json(&job->rng, rng, sizeof rng) < 0)
        return bso_session_fail(s, BSO_ERANGE, "job row too large");
    bind_text(st, 1, sp->job_id);
    bind_text(st, 2, sp->job_id_prefix);
    bind_text(st, 3, sizes);
    sqlite3_bind_int64(st, 4, sp->default_batch_size);
    sqlite3_bind_double(st, 5, sp->eta_knob);
    if (sp->has_beta_knob)
        sqlite3_bind_double(st, 6, sp->beta_knob);
    sqlite3_bind_double(st, 7, sp->target_metric);
    sqlite3_bind_int(st, 8, sp->higher_is_better_metric);
    sqlite3_bind_int64(st, 9, sp->max_epochs);
    sqlite3_bind_int64(st, 10, sp->num_pruning_rounds);
    sqlite3_bind_int64(st, 11, sp->window_size);
    sqlite3_bind_double(st, 12, sp->mab_prior_mean);
    sqlite3_bind_double(st, 13, sp->mab_prior_precision);
    sqlite3_bind_int64(st, 14, sp->mab_num_explorations);
    if (sp->has_mab_seed)
        sqlite3_bind_int64(st, 15, sp->mab_seed);
    sqlite3_bind_double(st, 16, sp->max_power);
    sqlite3_bind_int64(st, 17, sp->number_of_gpus);
    bind_text(st, 18, sp->gpu_model);
    bind_text(st, 19, bso_stage_name(job->stage));
    if (job->has_min_cost)
        sqlite3_bind_double(st, 20, job->min_cost);
    sqlite3_bind_int64(st, 21, job->min_cost_batch_size);
    bind_text(st, 22, rng);
    sqlite3_bind_int64(st, 23, job->last_trial_number);
    bind_text(st, 24, bso_policy_name(sp->policy));
    if (sp->tenant[0])
        bind_text(st, 25, sp->tenant);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc == SQLITE_CONSTRAINT)
        return bso_session_fail(s, BSO_ECONFLICT, "job %s exists", sp->job_id);
    return rc == SQLITE_DONE ? 0 : db_fail(s, "insert job");
}

static int update_job(struct bso_session *s, const struct bso_job *job)
{
    sqlite3_stmt *st = stmt(s, ST_UPDATE_JOB);
    if (!st)
        return BSO_EIO;
    char rng[BSO_RNG_JSON_MAX];
    bso_rng_to_json(&job->rng, rng, sizeof rng);
    bind_text(st, 1, job->spec.job_id);
    bind_text(st, 2, bso_stage_name(job->stage));
    if (job->has_min_cost)
        sqlite3_bind_double(st, 3, job->min_cost);
    sqlite3_bind_int64(st, 4, job->min_cost_batch_size);
    bind_text(st, 5, rng);
    sqlite3_bind_int64(st, 6, job->last_trial_number);
    sqlite3_bind_int64(st, 7, job->refusals);
    return step_done(s, st, "update job");
}

static int write_trial(struct bso_session *s, const char *job_id, const struct bso_trial *t,
                       bool is_new)
{
    sqlite3_stmt *st = stmt(s, is_new ? ST_INSERT_TRIAL : ST_UPDATE_TRIAL);
    if (!st)
        return BSO_EIO;
    bind_text(st, 1, job_id);
    sqlite3_bind_int64(st, 2, t->number);
    if (is_new) {
        sqlite3_bind_int64(st, 3, t->batch_size);
        bind_text(st, 4, bso_trial_type_name(t->type));
        bind_text(st, 5, bso_trial_status_name(t->status));
    } else {
        bind_text(st, 3, bso_trial_status_name(t->status));
        if (t->status == BSO_TRIAL_SUCCEEDED) {
            sqlite3_bind_double(st, 4, t->time);
            sqlite3_bind_double(st, 5, t->energy);
            sqlite3_bind_int(st, 6, t->converged);
            if (t->energy_source[0])
                bind_text(st, 7, t->energy_source);
        }
    }
    return step_done(s, st, is_new ? "insert trial" : "update trial");
}

static int write_arm(struct bso_session *s, const char *job_id, const struct bso_arm *a,
                     bool is_new)
{
    sqlite3_stmt *st = stmt(s, is_new ? ST_INSERT_ARM : ST_UPDATE_ARM);
    if (!st)
        return BSO_EIO;
    char *recent = bso_column_format_recent(a);
    if (!recent)
        return bso_session_fail(s, BSO_ENOMEM, "out of memory");
    bind_text(st, 1, job_id);
    sqlite3_bind_int64(st, 2, a->batch_size);
    sqlite3_bind_double(st, 3, a->param_mean);
    sqlite3_bind_double(st, 4, a->param_precision);
    sqlite3_bind_double(st, 5, a->reward_precision);
    sqlite3_bind_int64(st, 6, a->num_observations);
    sqlite3_bind_int64(st, 7, a->n_results);
    bind_text(st, 8, recent);
    free(recent);
    return step_done(s, st, is_new ? "insert arm" : "update arm");
}

static int be_load_trial(struct bso_session *s, const char *job_id, int64_t number,
                         struct bso_trial *trial)
{
    sqlite3_stmt *st = stmt(s, ST_LOAD_TRIAL);
    if (!st)
        return BSO_EIO;
    bind_text(st, 1, job_id);
    sqlite3_bind_int64(st, 2, number);
    int rc = sqlite3_step(st);
    const struct bso_row r = bso_sqlite_row(st);
    if (rc == SQLITE_ROW)
        bso_column_read_trial(&r, trial);
    sqlite3_reset(st);
    if (rc == SQLITE_DONE)
        return bso_session_fail(s, BSO_ENOTFOUND, "no trial %" PRId64 " in job %s", number, job_id);
    return rc == SQLITE_ROW ? 0 : db_fail(s, "load trial");
}

static int be_delete_job(struct bso_session *s, const char *job_id)
{
    sqlite3_stmt *st = stmt(s, ST_DELETE_JOB);
    if (!st)
        return BSO_EIO;
    bind_text(st, 1, job_id);
    int rc = step_done(s, st, "delete job");
    if (rc == 0 && sqlite3_changes(ss(s)->db) == 0)
        return bso_session_fail(s, BSO_ENOTFOUND, "no job %s", job_id);
    return rc;
}

static int be_reset_job(struct bso_session *s, const char *job_id)
{
    static const enum stmt_id steps[] = {ST_RESET_TRIALS, ST_RESET_ARMS, ST_RESET_STATS,
                                         ST_RESET_ORIGIN, ST_RESET_JOB};
    for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
        sqlite3_stmt *st = stmt(s, steps[i]);
        if (!st)
            return BSO_EIO;
        bind_text(st, 1, job_id);
        const int rc = step_done(s, st, "reset job");
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int be_job_exists(struct bso_session *s, const char *job_id)
{
    sqlite3_stmt *st = stmt(s, ST_JOB_EXISTS);
    if (!st)
        return BSO_EIO;
    bind_text(st, 1, job_id);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc == SQLITE_ROW)
        return 1;
    return rc == SQLITE_DONE ? 0 : db_fail(s, "job exists");
}

static int be_list_jobs(struct bso_session *s, const char *after, int64_t limit, const char *tenant,
                        int (*fn)(void *ctx, const struct bso_job_summary *row), void *ctx)
{
    sqlite3_stmt *st = stmt(s, ST_LIST_JOBS);
    if (!st)
        return BSO_EIO;
    bind_text(st, 1, after ? after : "");
    sqlite3_bind_int64(st, 2, limit);
    if (tenant)
        bind_text(st, 3, tenant);
    int rc, cb = 0;
    while (cb == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const struct bso_row r = bso_sqlite_row(st);
        struct bso_job_summary out;
        bso_column_read_summary(&r, &out);
        cb = fn(ctx, &out);
    }
    sqlite3_reset(st);
    if (cb != 0)
        return cb;
    return rc == SQLITE_DONE ? 0 : db_fail(s, "list jobs");
}

static int be_list_trials(struct bso_session *s, const char *job_id, int64_t after, int64_t limit,
                          int (*fn)(void *ctx, const struct bso_trial_row *row), void *ctx)
{
    sqlite3_stmt *st = stmt(s, ST_LIST_TRIALS);
    if (!st)
        return BSO_EIO;
    bind_text(st, 1, job_id);
    sqlite3_bind_int64(st, 2, after);
    sqlite3_bind_int64(st, 3, limit);
    int rc, cb = 0;
    while (cb == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const struct bso_row r = bso_sqlite_row(st);
        struct bso_trial_row out;
        bso_column_read_trial_row(&r, &out);
        cb = fn(ctx, &out);
    }
    sqlite3_reset(st);
    if (cb != 0)
        return cb;
    return rc == SQLITE_DONE ? 0 : db_fail(s, "list trials");
}

static int be_count_trials(struct bso_session *s, const char *job_id, int64_t counts[3])
{
    sqlite3_stmt *st = stmt(s, ST_COUNT_TRIALS);
    if (!st)
        return BSO_EIO;
    bind_text(st, 1, job_id);
    counts[0] = counts[1] = counts[2] = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        counts[bso_column_trial_status(col_text(st, 0))] = sqlite3_column_int64(st, 1);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : db_fail(s, "count trials");
}

/* Rows of (name, count) from statement id, each added where index_of(name) says. */
static int tally_rows(struct bso_session *s, int id, int (*index_of)(const char *), int64_t *out)
{
    sqlite3_stmt *st = stmt(s, id);
    if (!st)
        return BSO_EIO;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        out[index_of(col_text(st, 0))] += sqlite3_column_int64(st, 1);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : db_fail(s, "tally");
}

static int be_tally(struct bso_session *s, int64_t jobs[2], int64_t trials[3])
{
    jobs[0] = jobs[1] = trials[0] = trials[1] = trials[2] = 0;
    int rc = tally_rows(s, ST_TALLY_JOBS, bso_column_stage, jobs);
    return rc < 0 ? rc : tally_rows(s, ST_TALLY_TRIALS, bso_column_trial_status, trials);
}

static int be_ping(struct bso_session *s)
{
    if (sqlite3_exec(ss(s)->db, "SELECT 1 FROM job LIMIT 1", NULL, NULL, NULL) != SQLITE_OK)
        return db_fail(s, "ping");
    return 0;
}

static int be_save_profile(struct bso_session *s, const char *job_id,
                           const struct bso_profile_entry *e, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        sqlite3_stmt *st = stmt(s, ST_SAVE_PROFILE);
        if (!st)
            return BSO_EIO;
        bind_text(st, 1, job_id);
        sqlite3_bind_int64(st, 2, e[i].batch_size);
        sqlite3_bind_int(st, 3, e[i].feasible);
        if (!isnan(e[i].samples_per_s))
            sqlite3_bind_double(st, 4, e[i].samples_per_s);
        if (!isnan(e[i].joules_per_sample))
            sqlite3_bind_double(st, 5, e[i].joules_per_sample);
        if (e[i].peak_memory_bytes >= 0)
            sqlite3_bind_int64(st, 6, e[i].peak_memory_bytes);
        bind_text(st, 7, e[i].device);
        const int rc = step_done(s, st, "save profile");
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int be_list_profile(struct bso_session *s, const char *job_id,
                           int (*fn)(void *ctx, const struct bso_profile_entry *e), void *ctx)
{
    sqlite3_stmt *st = stmt(s, ST_LIST_PROFILE);
    if (!st)
        return BSO_EIO;
    bind_text(st, 1, job_id);
    int rc, cb = 0;
    while (cb == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const struct bso_row r = bso_sqlite_row(st);
        struct bso_profile_entry e;
        bso_column_read_profile(&r, &e);
        cb = fn(ctx, &e);
    }
    sqlite3_reset(st);
    if (cb != 0)
        return cb;
    return rc == SQLITE_DONE ? 0 : db_fail(s, "list profile");
}

static int be_save_unfit(struct bso_session *s, const char *job_id, const char *sizes)
{
    sqlite3_stmt *st = stmt(s, ST_SAVE_UNFIT);
    if (!st)
        return BSO_EIO;
    bind_text(st, 1, job_id);
    if (sizes)
        bind_text(st, 2, sizes);
    return step_done(s, st, "save unfit sizes");
}

static int be_save_power(struct bso_session *s, const char *job_id,
                         const struct bso_power_profile *p)
{
    char points[BSO_POWER_MAX_LIMITS * 80 + 4];
    if (bso_column_format_power_points(p->points, p->n, points, sizeof points) < 0)
        return bso_session_fail(s, BSO_ERANGE, "save power profile: too many measurements");
    sqlite3_stmt *st = stmt(s, ST_SAVE_POWER);
    if (!st)
        return BSO_EIO;
    bind_text(st, 1, job_id);
    sqlite3_bind_int64(st, 2, p->batch_size);
    sqlite3_bind_double(st, 3, p->power_limit_w);
    bind_text(st, 4, points);
    bind_text(st, 5, p->device);
    const int rc = step_done(s, st, "save power profile");
    if (rc < 0)
        return rc;
    if (!(st = stmt(s, ST_MARK_POWER)))
        return BSO_EIO;
    bind_text(st, 1, job_id);
    return step_done(s, st, "mark the job power-profiled");
}

static int be_power_limit(struct bso_session *s, const char *job_id, int64_t batch_size,
                          double *limit_w)
{
    sqlite3_stmt *st = stmt(s, ST_POWER_LIMIT);
    if (!st)
        return BSO_EIO;
    bind_text(st, 1, job_id);
    sqlite3_bind_int64(st, 2, batch_size);
    const int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *limit_w = sqlite3_column_double(st, 0);
    sqlite3_reset(st);
    if (rc == SQLITE_ROW)
        return 0;
    return rc == SQLITE_DONE ? BSO_ENOTFOUND : db_fail(s, "power limit");
}

static int be_save_origin(struct bso_session *s, const char *job_id, const struct bso_job_origin *o)
{
    sqlite3_stmt *st = stmt(s, ST_SAVE_ORIGIN);
    if (!st)
        return BSO_EIO;
    bind_text(st, 1, job_id);
    bind_text(st, 2, o->from_job);
    sqlite3_bind_int64(st, 3, o->sizes);
    return step_done(s, st, "save origin");
}

static int be_save_data_version(struct bso_session *s, const char *job_id, const char *version)
{
    sqlite3_stmt *st = stmt(s, ST_SAVE_DATA_VERSION);
    if (!st)
        return BSO_EIO;
    bind_text(st, 1, job_id);
    bind_text(st, 2, version);
    return step_done(s, st, "save data version");
}

/* A job's one row of statement `which` (bound to job_id), read by `read` into out; BSO_ENOTFOUND
 * when it has none. */
static int load_job_row(struct bso_session *s, enum stmt_id which, const char *job_id,
                        void (*read)(const struct bso_row *r, void *out), void *out,
                        const char *what)
{
    sqlite3_stmt *st = stmt(s, which);
    if (!st)
        return BSO_EIO;
    bind_text(st, 1, job_id);
    const int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        const struct bso_row r = bso_sqlite_row(st);
        read(&r, out);
    }
    sqlite3_reset(st);
    if (rc == SQLITE_ROW)
        return 0;
    return rc == SQLITE_DONE ? BSO_ENOTFOUND : db_fail(s, what);
}

static void read_data_version(const struct bso_row *r, void *out)
{
    bso_column_read_data_version(r, out);
}

static int be_load_data_version(struct bso_session *s, const char *job_id,
                                struct bso_data_version *v)
{
    return load_job_row(s, ST_LOAD_DATA_VERSION, job_id, read_data_version, v, "load data version");
}

static int be_add_progress(struct bso_session *s, const char *job_id, int64_t number,
                           const struct bso_progress_point *pt)
{
    sqlite3_stmt *st = stmt(s, ST_ADD_PROGRESS);
    if (!st)
        return BSO_EIO;
    bind_text(st, 1, job_id);
    sqlite3_bind_int64(st, 2, number);
    sqlite3_bind_int64(st, 3, pt->epoch);
    sqlite3_bind_double(st, 4, pt->time);
    sqlite3_bind_int64(st, 5, pt->samples);
    sqlite3_bind_double(st, 6, pt->mean_batch_size);
    return step_done(s, st, "add progress");
}

static int be_import_trial(struct bso_session *s, const char *job_id, const struct bso_trial_row *r)
{
    sqlite3_stmt *st = stmt(s, ST_IMPORT_TRIAL);
    if (!st)
        return BSO_EIO;
    const struct bso_trial *t = &r->trial;
    bind_text(st, 1, job_id);
    sqlite3_bind_int64(st, 2, t->number);
    sqlite3_bind_int64(st, 3, t->batch_size);
    bind_text(st, 4, bso_trial_type_name(t->type));
    bind_text(st, 5, bso_trial_status_name(t->status));
    bind_text(st, 6, r->start_timestamp);
    if (r->end_timestamp[0])
        bind_text(st, 7, r->end_timestamp);
    if (t->status == BSO_TRIAL_SUCCEEDED) {
        sqlite3_bind_double(st, 8, t->time);
        sqlite3_bind_double(st, 9, t->energy);
        sqlite3_bind_int(st, 10, t->converged);
    }
    return step_done(s, st, "import trial");
}

static void read_origin(const struct bso_row *r, void *out)
{
    bso_column_read_origin(r, out);
}

static int be_load_origin(struct bso_session *s, const char *job_id, struct bso_job_origin *o)
{
    return load_job_row(s, ST_LOAD_ORIGIN, job_id, read_origin, o, "load origin");
}

static int be_list_power(struct bso_session *s, const char *job_id,
                         int (*fn)(void *ctx, const struct bso_power_profile *p), void *ctx)
{
    sqlite3_stmt *st = stmt(s, ST_LIST_POWER);
    if (!st)
        return BSO_EIO;
    bind_text(st, 1, job_id);
    int rc, cb = 0;
    while (cb == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const struct bso_row r = bso_sqlite_row(st);
        struct bso_power_profile p;
        cb = bso_column_read_power(&r, &p) < 0
                 ? bso_session_fail(s, BSO_EPARSE, "power profile of %lld: corrupt measurements",
                                    (long long)p.batch_size)
                 : fn(ctx, &p);
    }
    sqlite3_reset(st);
    if (cb != 0)
        return cb;
    return rc == SQLITE_DONE ? 0 : db_fail(s, "list power profiles");
}

static int be_waiting_trials(struct bso_session *s, const char *before, int64_t limit,
                             int (*fn)(void *ctx, const struct bso_waiting_trial *t), void *ctx)
{
    sqlite3_stmt *st = stmt(s, ST_WAITING_TRIALS);
    if (!st)
        return BSO_EIO;
    bind_text(st, 1, before);
    sqlite3_bind_int64(st, 2, limit);
    int rc, cb = 0;
    while (cb == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const struct bso_row r = bso_sqlite_row(st);
        struct bso_waiting_trial t;
        bso_column_read_waiting(&r, &t);
        cb = fn(ctx, &t);
    }
    sqlite3_reset(st);
    if (cb != 0)
        return cb;
    return rc == SQLITE_DONE ? 0 : db_fail(s, "waiting trials");
}

static int be_longest_run(struct bso_session *s, const char *job_id, double *seconds)
{
    sqlite3_stmt *st = stmt(s, ST_LONGEST_RUN);
    if (!st)
        return BSO_EIO;
    bind_text(st, 1, job_id);
    const int rc = sqlite3_step(st);
    *seconds = rc == SQLITE_ROW ? sqlite3_column_double(st, 0) : 0;
    sqlite3_reset(st);
    return rc == SQLITE_ROW ? 0 : db_fail(s, "longest run");
}

static int be_token_insert(struct bso_session *s, const struct bso_token *t, const char *hash,
                           int64_t *id)
{
    sqlite3_stmt *st = stmt(s, ST_TOKEN_INSERT);
    if (!st)
        return BSO_EIO;
    bind_text(st, 1, t->tenant);
    sqlite3_bind_int(st, 2, t->admin);
    bind_text(st, 3, hash);
    bind_text(st, 4, t->hint);
    const int rc = step_done(s, st, "insert token");
    *id = sqlite3_last_insert_rowid(ss(s)->db);
    return rc;
}

static int be_token_find(struct bso_session *s, const char *hash, struct bso_token *out)
{
    sqlite3_stmt *st = stmt(s, ST_TOKEN_FIND);
    if (!st)
        return BSO_EIO;
    bind_text(st, 1, hash);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        const struct bso_row r = bso_sqlite_row(st);
        bso_column_read_token(&r, out);
    }
    sqlite3_reset(st);
    if (rc == SQLITE_DONE)
        return bso_session_fail(s, BSO_ENOTFOUND, "no such token");
    return rc == SQLITE_ROW ? 0 : db_fail(s, "find token");
}

static int be_token_list(struct bso_session *s, const char *tenant,
                         int (*fn)(void *ctx, const struct bso_token *t), void *ctx)
{
    sqlite3_stmt *st = stmt(s, ST_TOKEN_LIST);
    if (!st)
        return BSO_EIO;
    if (tenant)
        bind_text(st, 1, tenant);
    int rc, cb = 0;
    while (cb == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const struct bso_row r = bso_sqlite_row(st);
        struct bso_token t;
        bso_column_read_token(&r, &t);
        cb = fn(ctx, &t);
    }
    sqlite3_reset(st);
    if (cb != 0)
        return cb;
    return rc == SQLITE_DONE ? 0 : db_fail(s, "list tokens");
}

static int be_token_revoke(struct bso_session *s, int64_t id, const char *tenant, int64_t *revoked)
{
    sqlite3_stmt *st = stmt(s, ST_TOKEN_REVOKE);
    if (!st)
        return BSO_EIO;
    if (id > 0)
        sqlite3_bind_int64(st, 1, id);
    if (tenant)
        bind_text(st, 2, tenant);
    const int rc = step_done(s, st, "revoke tokens");
    *revoked = rc == 0 ? sqlite3_changes(ss(s)->db) : 0;
    return rc;
}

static int be_token_count(struct bso_session *s, int64_t *active)
{
    sqlite3_stmt *st = stmt(s, ST_TOKEN_COUNT);
    if (!st)
        return BSO_EIO;
    const int rc = sqlite3_step(st);
    *active = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_reset(st);
    return rc == SQLITE_ROW ? 0 : db_fail(s, "count tokens");
}

const struct bso_store_ops bso_sqlite_ops = {
    .name = "sqlite",
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
