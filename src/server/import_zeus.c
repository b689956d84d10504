/* `bso-server import-zeus`; see import_zeus.h. */
#include "server/import_zeus.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bso/error.h"
#include "core/cost.h"
#include "core/job.h"
#include "core/rng.h"
#include "os/os.h"
#include "store/store.h"
#include "store/zeus_db.h"

/* The columns of Zeus's schema (srv/database/schema.py), table by table. A table without one of
 * them is not Zeus's; one with a column not listed is a newer schema than this import knows. */
static const char *const job_columns[] = {"job_id",
                                          "job_id_prefix",
                                          "default_batch_size",
                                          "higher_is_better_metric",
                                          "eta_knob",
                                          "beta_knob",
                                          "target_metric",
                                          "max_epochs",
                                          "num_pruning_rounds",
                                          "window_size",
                                          "max_power",
                                          "number_of_gpus",
                                          "gpu_model",
                                          "mab_prior_mean",
                                          "mab_prior_precision",
                                          "mab_num_explorations",
                                          "mab_seed",
                                          "mab_random_generator_state",
                                          "exp_default_batch_size",
                                          "stage",
                                          "min_cost",
                                          "min_cost_batch_size",
                                          NULL};
static const char *const batch_size_columns[] = {"job_id", "batch_size", NULL};
static const char *const trial_columns[] = {
    "job_id",        "batch_size", "trial_number", "start_timestamp", "type", "status",
    "end_timestamp", "time",       "energy",       "converged",       NULL};
static const char *const arm_columns[] = {
    "job_id",           "batch_size",       "param_mean", "param_precision",
    "reward_precision", "num_observations", NULL};

static const struct {
    const char *name;
    const char *const *columns;
} tables[] = {{"Job", job_columns},
              {"BatchSize", batch_size_columns},
              {"Trial", trial_columns},
              {"GaussianTsArmState", arm_columns}};
#define N_TABLES (sizeof tables / sizeof *tables)

/* One job as read, converted and checked, ready to write. */
struct imported {
    struct bso_job job; /* spec and derived fields; arms; no trials (they are in rows) */
    struct bso_trial_row *rows;
    size_t n_rows, cap_rows;
    int64_t sizes[BSO_MAX_BATCH_SIZES];
    size_t n_sizes;
    char rng_json[BSO_RNG_JSON_MAX * 2]; /* "" when Zeus stored no generator state */
    enum { PLAN_NEW, PLAN_SAME, PLAN_REPLACE, PLAN_CONFLICT } plan;
};

struct import {
    struct bso_zeus_db *db;
    struct imported *jobs;
    size_t n_jobs, cap_jobs;
    const char *prefix;
    size_t n_arms, n_batch_sizes, n_trials;
    char err[1024];
};

__attribute__((format(printf, 2, 3))) static int bad(struct import *im, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(im->err, sizeof im->err, fmt, ap);
    va_end(ap);
    return BSO_EINVAL;
}

/* ---- the schema ---- */

struct seen_columns {
    const char *const *known;
    unsigned found; /* bit i: known[i] is there */
    char unknown[128];
};

static int note_column(void *ctx, const char *column)
{
    struct seen_columns *c = ctx;
    for (int i = 0; c->known[i]; i++)
        if (strcmp(c->known[i], column) == 0) {
            c->found |= 1u << i;
            return 0;
        }
    if (!c->unknown[0])
        snprintf(c->unknown, sizeof c->unknown, "%s", column);
    return 0;
}

static int check_schema(struct import *im)
{
    for (size_t t = 0; t < N_TABLES; t++) {
        struct seen_columns c = {.known = tables[t].columns};
        const int rc = bso_zeus_db_columns(im->db, tables[t].name, note_column, &c);
        if (rc < 0)
            return bad(im, "cannot read the Zeus database: %s", bso_zeus_db_errmsg(im->db));
        if (c.found == 0 && !c.unknown[0])
            return bad(im, "not a Zeus BSO database: it has no table \"%s\"", tables[t].name);
        for (int i = 0; tables[t].columns[i]; i++)
            if (!(c.found & (1u << i)))
                return bad(im, "not a Zeus BSO database: table \"%s\" has no column %s",
                           tables[t].name, tables[t].columns[i]);
        if (c.unknown[0])
            return bad(im,
                       "a newer Zeus schema than this import knows: table \"%s\" has a column "
                       "%s; nothing was imported",
                       tables[t].name, c.unknown);
    }
    return 0;
}

/* ---- reading ---- */

static bool as_bool(const char *text, bool *out)
{
    if (strcmp(text, "1") == 0 || strcmp(text, "t") == 0 || strcmp(text, "true") == 0)
        *out = true;
    else if (strcmp(text, "0") == 0 || strcmp(text, "f") == 0 || strcmp(text, "false") == 0)
        *out = false;
    else
        return false;
    return true;
}

/* Zeus's naive "2026-11-24 15:02:01.064445" (SQLAlchemy's DATETIME) as BSO writes times,
 * "2026-11-24T15:02:01.064Z". false when it is not such a time. */
static bool as_timestamp(const char *text, char out[32])
{
    int y, mo, d, h, mi, s, n = 0;
    if (sscanf(text, "%4d-%2d-%2d%*1[ T]%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &s, &n) != 6)
        return false;
    int ms = 0;
    if (text[n] == '.') {
        char digits[4] = "000";
        for (int k = 0; k < 3 && text[n + 1 + k] >= '0' && text[n + 1 + k] <= '9'; k++)
            digits[k] = text[n + 1 + k];
        ms = atoi(digits);
    }
    snprintf(out, 32, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", y, mo, d, h, mi, s, ms);
    return true;
}

static int by_id(const void *key, const void *elem)
{
    return strcmp(key, ((const struct imported *)elem)->job.spec.job_id);
}

static int by_job_id(const void *a, const void *b)
{
    return strcmp(((const struct imported *)a)->job.spec.job_id,
                  ((const struct imported *)b)->job.spec.job_id);
}

/* The job read from "Job" with this id (rows of the other tables name it), or NULL. */
static struct imported *job_of(struct import *im, const char *id)
{
    return bsearch(id, im->jobs, im->n_jobs, sizeof *im->jobs, by_id);
}

/* Room for one more item of `size` bytes in the array *items of n items (capacity *cap). */
static int room_for_one(void **items, size_t n, size_t *cap, size_t size)
{
    if (n < *cap)
        return 0;
    const size_t more = *cap ? 2 * *cap : 16;
    void *g = realloc(*items, more * size);
    if (!g)
        return BSO_ENOMEM;
    *items = g;
    *cap = more;
    return 0;
}

static int read_job(void *ctx, const struct bso_row *r)
{
    struct import *im = ctx;
    const char *id = r->text(r->ctx, 0);
    if (im->prefix && strncmp(id, im->prefix, strlen(im->prefix)) != 0)
        return 0;
    if (room_for_one((void **)&im->jobs, im->n_jobs, &im->cap_jobs, sizeof *im->jobs) < 0)
        return BSO_ENOMEM;
    struct imported *j = &im->jobs[im->n_jobs++];
    memset(j, 0, sizeof *j);
    struct bso_job_spec *sp = &j->job.spec;
    struct bso_spec_errors errs = {0};
    bso_job_spec_defaults(sp);
    bso_job_spec_set_text(sp, BSO_SPEC_JOB_ID, id, strlen(id), &errs);
    bso_job_spec_set_text(sp, BSO_SPEC_JOB_ID_PREFIX, r->text(r->ctx, 1),
                          strlen(r->text(r->ctx, 1)), &errs);
    sp->default_batch_size = r->i64(r->ctx, 2);
    if (!as_bool(r->text(r->ctx, 3), &sp->higher_is_better_metric))
        return bad(im, "job %s: higher_is_better_metric is '%s'", id, r->text(r->ctx, 3));
    sp->eta_knob = r->f64(r->ctx, 4);
    sp->has_beta_knob = !r->null(r->ctx, 5);
    sp->beta_knob = r->f64(r->ctx, 5);
    sp->target_metric = r->f64(r->ctx, 6);
    sp->max_epochs = r->i64(r->ctx, 7);
    sp->num_pruning_rounds = r->i64(r->ctx, 8);
    sp->window_size = r->i64(r->ctx, 9);
    sp->max_power = r->f64(r->ctx, 10);
    sp->number_of_gpus = r->i64(r->ctx, 11);
    bso_job_spec_set_text(sp, BSO_SPEC_GPU_MODEL, r->text(r->ctx, 12), strlen(r->text(r->ctx, 12)),
                          &errs);
    sp->mab_prior_mean = r->f64(r->ctx, 13);
    sp->mab_prior_precision = r->f64(r->ctx, 14);
    sp->mab_num_explorations = r->i64(r->ctx, 15);
    sp->has_mab_seed = !r->null(r->ctx, 16);
    sp->mab_seed = r->i64(r->ctx, 16);
    sp->policy = BSO_POLICY_ZEUS;
    if (errs.n > 0)
        return bad(im, "job %s: %s: %s", id, errs.e[0].field, errs.e[0].msg);
    snprintf(j->rng_json, sizeof j->rng_json, "%s", r->text(r->ctx, 17));
    const char *stage = r->text(r->ctx, 19);
    if (strcmp(stage, "Pruning") != 0 && strcmp(stage, "MAB") != 0)
        return bad(im, "job %s: stage is '%s', neither Pruning nor MAB", id, stage);
    j->job.stage = strcmp(stage, "MAB") == 0 ? BSO_STAGE_MAB : BSO_STAGE_PRUNING;
    j->job.has_min_cost = !r->null(r->ctx, 20);
    j->job.min_cost = r->f64(r->ctx, 20);
    j->job.min_cost_batch_size = r->i64(r->ctx, 21);
    return 0;
}

static int read_batch_size(void *ctx, const struct bso_row *r)
{
    struct import *im = ctx;
    struct imported *j = job_of(im, r->text(r->ctx, 0));
    if (!j)
        return 0; /* another prefix's, or a row without its job (the foreign key forbids it) */
    if (j->n_sizes == BSO_MAX_BATCH_SIZES)
        return bad(im, "job %s: more than %d batch sizes", j->job.spec.job_id, BSO_MAX_BATCH_SIZES);
    j->sizes[j->n_sizes++] = r->i64(r->ctx, 1);
    im->n_batch_sizes++;
    return 0;
}

/* The enum value whose name(i) is text, or -1. */
static int named(const char *text, const char *(*name)(int), int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(text, name(i)) == 0)
            return i;
    return -1;
}

static const char *type_name(int i)
{
    return bso_trial_type_name((enum bso_trial_type)i);
}

static const char *status_name(int i)
{
    return bso_trial_status_name((enum bso_trial_status)i);
}

static int read_trial(void *ctx, const struct bso_row *r)
{
    struct import *im = ctx;
    struct imported *j = job_of(im, r->text(r->ctx, 0));
    if (!j)
        return 0;
    const char *id = j->job.spec.job_id;
    if (room_for_one((void **)&j->rows, j->n_rows, &j->cap_rows, sizeof *j->rows) < 0)
        return BSO_ENOMEM;
    struct bso_trial_row *row = &j->rows[j->n_rows];
    memset(row, 0, sizeof *row);
    struct bso_trial *t = &row->trial;
    t->batch_size = r->i64(r->ctx, 1);
    t->number = r->i64(r->ctx, 2);
    const int type = named(r->text(r->ctx, 4), type_name, 3);
    const int status = named(r->text(r->ctx, 5), status_name, 3);
    if (t->number < 1 || (j->n_rows > 0 && t->number <= j->rows[j->n_rows - 1].trial.number))
        return bad(im, "job %s: trial number %" PRId64 " is not 1 or more and unique", id,
                   t->number);
    if (type < 0 || status < 0)
        return bad(im, "job %s: trial %" PRId64 " has type '%s' and status '%s'", id, t->number,
                   r->text(r->ctx, 4), r->text(r->ctx, 5));
    t->type = (enum bso_trial_type)type;
    t->status = (enum bso_trial_status)status;
    if (!as_timestamp(r->text(r->ctx, 3), row->start_timestamp) ||
        (!r->null(r->ctx, 6) && !as_timestamp(r->text(r->ctx, 6), row->end_timestamp)))
        return bad(im, "job %s: trial %" PRId64 " has a timestamp that is not one", id, t->number);
    /* Zeus's invariants (models.py): results exactly when Succeeded, an end once final. */
    const bool results = !r->null(r->ctx, 7) && !r->null(r->ctx, 8) && !r->null(r->ctx, 9);
    const bool no_results = r->null(r->ctx, 7) && r->null(r->ctx, 8) && r->null(r->ctx, 9);
    const bool done = t->status == BSO_TRIAL_SUCCEEDED;
    if ((done && !results) || (!done && !no_results) ||
        (t->status != BSO_TRIAL_DISPATCHED && !row->end_timestamp[0]))
        return bad(im,
                   "job %s: trial %" PRId64 " is %s but its time, energy, converged and "
                   "end_timestamp say otherwise",
                   id, t->number, status_name(status));
    if (done) {
        t->time = r->f64(r->ctx, 7);
        t->energy = r->f64(r->ctx, 8);
        if (!as_bool(r->text(r->ctx, 9), &t->converged) || !(t->time >= 0) || !(t->energy >= 0) ||
            !isfinite(t->time) || !isfinite(t->energy))
            return bad(im, "job %s: trial %" PRId64 " has results out of range", id, t->number);
    }
    j->n_rows++;
    im->n_trials++;
    return 0;
}

static int read_arm(void *ctx, const struct bso_row *r)
{
    struct import *im = ctx;
    struct imported *j = job_of(im, r->text(r->ctx, 0));
    if (!j)
        return 0;
    struct bso_job *job = &j->job;
    if (job->n_arms == j->n_sizes)
        return bad(im, "job %s: more arms than batch sizes", job->spec.job_id);
    struct bso_arm *a = &job->arms[job->n_arms];
    bso_arm_init(a, r->i64(r->ctx, 1));
    job->n_arms++;
    a->param_mean = r->f64(r->ctx, 2);
    a->param_precision = r->f64(r->ctx, 3);
    a->reward_precision = r->f64(r->ctx, 4);
    a->num_observations = r->i64(r->ctx, 5);
    bool known = false;
    for (size_t k = 0; k < j->n_sizes; k++)
        known |= j->sizes[k] == a->batch_size;
    if (!known || a->num_observations < 1 || !isfinite(a->param_mean) ||
        !(a->param_precision >= 0) || !(a->reward_precision >= 0))
        return bad(im, "job %s: the arm of batch size %" PRId64 " is not a fitted arm of it",
                   job->spec.job_id, a->batch_size);
    im->n_arms++;
    return 0;
}

/* ---- checking what was read, and completing it ---- */

static int complete_job(struct import *im, struct imported *j)
{
    struct bso_job *job = &j->job;
    struct bso_job_spec *sp = &job->spec;
    const char *id = sp->job_id;
    struct bso_spec_errors errs = {0};
    if (bso_job_spec_set_batch_sizes(sp, j->sizes, j->n_sizes, &errs) < 0 ||
        bso_job_spec_validate(sp, &errs) < 0)
        return bad(im, "job %s: %s: %s", id, errs.e[0].field, errs.e[0].msg);
    if (bso_job_spec_index(sp, job->min_cost_batch_size) < 0)
        return bad(im, "job %s: min_cost_batch_size %" PRId64 " is not one of its batch sizes", id,
                   job->min_cost_batch_size);
    /* The generator: Zeus's stored state, else its seed's, else a fresh one (unseeded), as
     * bso_job_init seeds a new job. */
    if (j->rng_json[0]) {
        if (bso_rng_from_json(&job->rng, j->rng_json) < 0)
            return bad(im, "job %s: mab_random_generator_state is not a PCG64 state", id);
    } else if (sp->has_mab_seed) {
        bso_rng_seed(&job->rng, (uint64_t)sp->mab_seed);
    } else {
        uint32_t words[4];
        if (bso_os_entropy(words, 4) < 0 || bso_rng_seed_words(&job->rng, words, 4) < 0)
            return bad(im, "could not gather entropy");
    }
    /* Trials: batch sizes of the job; the next number follows the last. */
    for (size_t i = 0; i < j->n_rows; i++) {
        const struct bso_trial *t = &j->rows[i].trial;
        if (bso_job_spec_index(sp, t->batch_size) < 0)
            return bad(im,
                       "job %s: trial %" PRId64 " has batch size %" PRId64 ", not one of the job's",
                       id, t->number, t->batch_size);
        job->last_trial_number = t->number;
    }
    /* Arms exactly in the MAB stage; each remembers its batch size's results for the window
     * of later refits, as Zeus would read them from its trials. */
    if ((job->stage == BSO_STAGE_MAB) != (job->n_arms > 0))
        return bad(im, "job %s: stage %s with %zu arms", id, bso_stage_name(job->stage),
                   job->n_arms);
    for (size_t a = 0; a < job->n_arms; a++)
        for (size_t i = 0; i < j->n_rows; i++) {
            const struct bso_trial *t = &j->rows[i].trial;
            if (t->batch_size != job->arms[a].batch_size || t->status != BSO_TRIAL_SUCCEEDED)
                continue;
            const double reward = -bso_cost(t->energy, t->time, sp->eta_knob, sp->max_power);
            if (bso_arm_remember(&job->arms[a], t->number, reward, sp->window_size) < 0)
                return BSO_ENOMEM;
        }
    return 0;
}

static int read_all(struct import *im)
{
    int rc = check_schema(im);
    if (rc < 0)
        return rc;
    static const char *const sql[] = {
        "SELECT job_id, job_id_prefix, default_batch_size, higher_is_better_metric, eta_knob,"
        " beta_knob, target_metric, max_epochs, num_pruning_rounds, window_size, max_power,"
        " number_of_gpus, gpu_model, mab_prior_mean, mab_prior_precision, mab_num_explorations,"
        " mab_seed, mab_random_generator_state, exp_default_batch_size, stage, min_cost,"
        " min_cost_batch_size FROM \"Job\" ORDER BY job_id",
        "SELECT job_id, batch_size FROM \"BatchSize\" ORDER BY job_id, batch_size",
        "SELECT job_id, batch_size, trial_number, start_timestamp, type, status, end_timestamp,"
        " time, energy, converged FROM \"Trial\" ORDER BY job_id, trial_number",
        "SELECT job_id, batch_size, param_mean, param_precision, reward_precision,"
        " num_observations FROM \"GaussianTsArmState\" ORDER BY job_id, batch_size",
    };
    int (*const readers[])(void *, const struct bso_row *) = {read_job, read_batch_size, read_trial,
                                                              read_arm};
    for (size_t q = 0; q < 4; q++) {
        if (q == 3) /* arms go into each job's array, sized once its batch sizes are known */
            for (size_t k = 0; k < im->n_jobs; k++) {
                im->jobs[k].job.arms = calloc(im->jobs[k].n_sizes + 1, sizeof(struct bso_arm));
                if (!im->jobs[k].job.arms)
                    return BSO_ENOMEM;
            }
        rc = bso_zeus_db_query(im->db, sql[q], readers[q], im);
        if (rc == BSO_EIO)
            return bad(im, "cannot read the Zeus database: %s", bso_zeus_db_errmsg(im->db));
        if (rc < 0)
            return rc == BSO_ENOMEM ? bad(im, "out of memory") : rc;
        /* Job ids come sorted by the database's collation; bsearch needs strcmp's order. */
        if (q == 0)
            qsort(im->jobs, im->n_jobs, sizeof *im->jobs, by_job_id);
    }
    for (size_t k = 0; k < im->n_jobs; k++)
        if ((rc = complete_job(im, &im->jobs[k])) < 0)
            return rc == BSO_ENOMEM ? bad(im, "out of memory") : rc;
    return 0;
}

/* ---- writing ---- */

/* Whether the job stored here is the one this import would write: same spec, stage and
 * trials so far (an earlier import of the same database, or of an earlier copy of it). */
static bool same_as_stored(const struct imported *j, const struct bso_job *stored)
{
    return bso_job_spec_equal(&stored->spec, &j->job.spec) &&
           stored->spec.policy == BSO_POLICY_ZEUS && stored->stage == j->job.stage &&
           stored->last_trial_number == j->job.last_trial_number;
}

static int plan(struct import *im, struct bso_session *s, bool replace, size_t *conflicts)
{
    int rc = bso_session_begin_read(s);
    for (size_t k = 0; rc == 0 && k < im->n_jobs; k++) {
        struct imported *j = &im->jobs[k];
        struct bso_job stored;
        rc = bso_session_load_job(s, j->job.spec.job_id, 0, &stored);
        if (rc == BSO_ENOTFOUND) {
            j->plan = PLAN_NEW;
            rc = 0;
            continue;
        }
        if (rc < 0)
            break;
        j->plan = same_as_stored(j, &stored) ? PLAN_SAME : replace ? PLAN_REPLACE : PLAN_CONFLICT;
        *conflicts += j->plan == PLAN_CONFLICT;
        bso_job_clear(&stored);
    }
    bso_session_rollback(s);
    return rc;
}

static int write_job(struct bso_session *s, const struct imported *j)
{
    const char *id = j->job.spec.job_id;
    int rc = bso_session_begin_write(s, id);
    if (rc == 0 && j->plan == PLAN_REPLACE)
        rc = bso_session_delete_job(s, id);
    if (rc == 0)
        rc = bso_session_insert_job(s, &j->job);
    for (size_t i = 0; rc == 0 && i < j->n_rows; i++)
        rc = bso_session_import_trial(s, id, &j->rows[i]);
    for (size_t a = 0; rc == 0 && a < j->job.n_arms; a++)
        rc = bso_session_import_arm(s, id, &j->job.arms[a]);
    if (rc < 0) {
        bso_session_rollback(s);
        return rc;
    }
    return bso_session_commit(s);
}

static const char *const plan_words[] = {"import", "already here, the same: skip", "replace",
                                         "exists here and differs (--replace to overwrite)"};

static int run(struct import *im, const struct bso_config *cfg, struct bso_session *s)
{
    size_t conflicts = 0;
    int rc = plan(im, s, cfg->import_replace, &conflicts);
    if (rc < 0) {
        fprintf(stderr, "bso-server: import-zeus: %s\n", bso_session_errmsg(s));
        return 1;
    }
    size_t counts[4] = {0};
    for (size_t k = 0; k < im->n_jobs; k++) {
        const struct imported *j = &im->jobs[k];
        counts[j->plan]++;
        if (cfg->import_dry_run || j->plan == PLAN_CONFLICT)
            printf("%-40s %s, %zu trials, %s, %zu arms: would %s\n", j->job.spec.job_id,
                   bso_stage_name(j->job.stage), j->n_rows,
                   j->job.has_min_cost ? "a minimum cost" : "no result yet", j->job.n_arms,
                   plan_words[j->plan]);
    }
    if (conflicts > 0) {
        fprintf(stderr,
                "bso-server: import-zeus: %zu job%s already exist%s here and differ%s; nothing "
                "was imported (--replace overwrites them)\n",
                conflicts, conflicts == 1 ? "" : "s", conflicts == 1 ? "s" : "",
                conflicts == 1 ? "s" : "");
        return 1;
    }
    if (!cfg->import_dry_run)
        for (size_t k = 0; k < im->n_jobs; k++) {
            const struct imported *j = &im->jobs[k];
            if (j->plan == PLAN_SAME)
                continue;
            if ((rc = write_job(s, j)) < 0) {
                fprintf(stderr,
                        "bso-server: import-zeus: job %s: %s (jobs before it were "
                        "imported; running the import again goes on from there)\n",
                        j->job.spec.job_id, bso_session_errmsg(s));
                return 1;
            }
        }
    printf("%s: Job %zu read: %zu new, %zu replaced, %zu already here; BatchSize %zu, Trial %zu, "
           "GaussianTsArmState %zu read\n",
           cfg->import_dry_run ? "dry run, nothing written" : "imported", im->n_jobs,
           counts[PLAN_NEW], counts[PLAN_REPLACE], counts[PLAN_SAME], im->n_batch_sizes,
           im->n_trials, im->n_arms);
    return 0;
}

int bso_import_zeus_command(const struct bso_config *cfg)
{
    struct import im = {.prefix = cfg->import_prefix[0] ? cfg->import_prefix : NULL};
    char err[1024];
    int status = 1;
    if (bso_zeus_db_open(cfg->import_from, &im.db, err, sizeof err) < 0) {
        fprintf(stderr, "bso-server: import-zeus: %s\n", err);
        return 1;
    }
    if (read_all(&im) < 0) {
        fprintf(stderr, "bso-server: import-zeus: %s\n", im.err);
        goto out;
    }
    /* Not a tool beside a server: a server running on a SQLite file keeps its jobs in memory
     * and would not see a replaced one, so the import claims the file as a server does. */
    struct bso_store_options opt = {.durability = cfg->durability};
    struct bso_store *store;
    if (bso_store_open(cfg->database, &opt, &store, err, sizeof err) < 0) {
        fprintf(stderr, "bso-server: import-zeus: %s\n", err);
        goto out;
    }
    struct bso_session *s;
    if (bso_store_session(store, &s) == 0) {
        status = run(&im, cfg, s);
        bso_session_release(s);
    } else {
        fprintf(stderr, "bso-server: import-zeus: cannot open a database session\n");
    }
    bso_store_close(store);
out:
    for (size_t k = 0; k < im.n_jobs; k++) {
        free(im.jobs[k].rows);
        bso_job_clear(&im.jobs[k].job);
    }
    free(im.jobs);
    bso_zeus_db_close(im.db);
    return status;
}
