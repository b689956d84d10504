/* Transactions around the policy core; see service.h. */
#include "server/service.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "bso/error.h"
#include "core/pyfmt.h"
#include "os/os.h"
#include "server/log.h"
#include "server/metrics.h"

__attribute__((format(printf, 3, 4))) static int say(char *msg, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, BSO_SVC_MSG_MAX, fmt, ap);
    va_end(ap);
    return code;
}

/* A database failure: logged in full, reported to the client without internals. */
static int db_error(struct bso_session *s, int rc, const char *what, char *msg)
{
    log_error("%s: %s (%s)", what, bso_session_errmsg(s), bso_strerror(rc));
    bso_metrics_db_error();
    return say(msg, BSO_EIO, "The database is unavailable; try again.");
}

static int finish(struct bso_session *s, int rc, const char *what, char *msg)
{
    if (rc < 0) {
        bso_session_rollback(s);
        return rc;
    }
    rc = bso_session_commit(s);
    return rc < 0 ? db_error(s, rc, what, msg) : 0;
}

int bso_pystr_repr(const char *v, char *buf, size_t cap)
{
    const char quote = strchr(v, '\'') && !strchr(v, '"') ? '"' : '\'';
    size_t o = 0;
    if (cap < 3)
        return BSO_ERANGE;
    buf[o++] = quote;
    for (const char *p = v; *p; p++) {
        char esc[8] = {0};
        if (*p == '\\' || *p == quote)
            snprintf(esc, sizeof esc, "\\%c", *p);
        else if (*p == '\n')
            snprintf(esc, sizeof esc, "\\n");
        else if (*p == '\t')
            snprintf(esc, sizeof esc, "\\t");
        else if ((unsigned char)*p < 0x20)
            snprintf(esc, sizeof esc, "\\x%02x", (unsigned char)*p);
        else
            esc[0] = *p;
        size_t n = strlen(esc);
        if (o + n + 2 > cap)
            return BSO_ERANGE;
        memcpy(buf + o, esc, n);
        o += n;
    }
    buf[o++] = quote;
    buf[o] = '\0';
    return (int)o;
}

/* Entropy for ids and unseeded generators; the kernel never fails us on Linux >= 3.17. */
static int entropy(uint32_t *w, size_t n, char *msg)
{
    if (bso_os_entropy(w, n) < 0) {
        log_error("getrandom failed");
        return say(msg, BSO_EIO, "The server could not gather entropy; try again.");
    }
    return 0;
}

int bso_svc_register(struct bso_session *s, struct bso_job_spec *spec, int default_policy,
                     bool *created, struct bso_job_spec *registered, char *msg)
{
    int rc = bso_session_begin_write(s, spec->has_job_id ? spec->job_id : NULL);
    if (rc < 0)
        return db_error(s, rc, "register", msg);

    if (!spec->has_job_id) {
        /* "<prefix>-<8 hex>", as Zeus names jobs, from the kernel's randomness. */
        for (int attempt = 0;; attempt++) {
            uint32_t r;
            if ((rc = entropy(&r, 1, msg)) < 0)
                return finish(s, rc, "register", msg);
            snprintf(spec->job_id, sizeof spec->job_id, "%s-%08x", spec->job_id_prefix, r);
            rc = bso_session_job_exists(s, spec->job_id);
            if (rc < 0)
                return finish(s, db_error(s, rc, "register", msg), "register", msg);
            if (rc == 0)
                break;
            if (attempt > 100)
                return finish(s, say(msg, BSO_EIO, "Could not find a free job id."), "", msg);
        }
        spec->has_job_id = true;
    } else {
        struct bso_job existing;
        rc = bso_session_load_job(s, spec->job_id, 0, &existing);
        if (rc == 0) {
            if (spec->policy == BSO_POLICY_DEFAULT)
                spec->policy = existing.spec.policy;
            const bool same = bso_job_spec_equal(&existing.spec, spec);
            if (!same && registered)
                *registered = existing.spec;
            bso_job_clear(&existing);
            if (!same)
                return finish(s,
                              say(msg, BSO_ECONFLICT,
                                  "JobSpec doesn't match with existing jobSpec. Use a new job_id "
                                  "for different configuration"),
                              "register", msg);
            *created = false;
            return finish(s, 0, "register", msg);
        }
        if (rc != BSO_ENOTFOUND)
            return finish(s, db_error(s, rc, "register", msg), "register", msg);
    }

    if (spec->policy == BSO_POLICY_DEFAULT)
        spec->policy = default_policy;
    uint32_t words[4];
    struct bso_job job;
    if ((rc = entropy(words, 4, msg)) < 0)
        return finish(s, rc, "register", msg);
    rc = bso_job_init(&job, spec, words, 4);
    if (rc == 0) {
        rc = bso_session_insert_job(s, &job);
        if (rc == BSO_ECONFLICT) /* another tenant's job, which this session cannot see */
            rc = say(msg, BSO_ECONFLICT, "The job id %s is taken; register under another one.",
                     spec->job_id);
        else if (rc < 0)
            rc = db_error(s, rc, "register", msg);
    } else {
        rc = say(msg, rc, "%s", bso_job_errmsg(&job));
    }
    bso_job_clear(&job);
    *created = true;
    return finish(s, rc, "register", msg);
}

int bso_svc_predict(struct bso_session *s, const char *job_id, struct bso_trial *trial,
                    bool *stage_changed, int64_t *arms_out, size_t *n_arms, double *power_limit_w,
                    char *msg)
{
    *power_limit_w = NAN;
    int rc = bso_session_begin_write(s, job_id);
    if (rc < 0)
        return db_error(s, rc, "predict", msg);
    struct bso_job job;
    rc = bso_session_load_job(s, job_id, BSO_LOAD_TRIALS | BSO_LOAD_ARMS, &job);
    if (rc == BSO_ENOTFOUND)
        return finish(s, say(msg, rc, "Unknown job(%s). Please register the job first", job_id),
                      "predict", msg);
    if (rc < 0)
        return finish(s, db_error(s, rc, "predict", msg), "predict", msg);

    unsigned changed;
    rc = bso_job_predict(&job, trial, &changed);
    if (rc == BSO_EPRUNED && (changed & BSO_CHANGED_REFUSALS)) {
        /* The refusal is counted (the job tries its sizes again after enough of them): it
         * commits, and the caller still answers that no size was given. */
        rc = bso_session_save(s, &job, changed, NULL, false, 0);
        rc = finish(s, rc < 0 ? db_error(s, rc, "predict", msg) : 0, "predict", msg);
        if (rc == 0)
            rc = say(msg, BSO_EPRUNED, "%s", bso_job_errmsg(&job));
        bso_job_clear(&job);
        return rc;
    }
    if (rc < 0) {
        rc = say(msg, rc, "%s", bso_job_errmsg(&job));
    } else {
        rc = bso_session_save(s, &job, changed, trial, true, 0);
        if (rc < 0)
            rc = db_error(s, rc, "predict", msg);
    }
    *stage_changed = rc == 0 && (changed & BSO_CHANGED_STAGE);
    if (*stage_changed && arms_out && n_arms) {
        *n_arms = 0;
        if (job.spec.policy == BSO_POLICY_BSO) { /* the sizes Thompson sampling draws among */
            for (size_t i = 0; i < job.spec.n_batch_sizes; i++)
                if (job.stats[i].successes > 0)
                    arms_out[(*n_arms)++] = job.spec.batch_sizes[i];
        } else {
            for (size_t i = 0; i < job.n_arms; i++)
                arms_out[(*n_arms)++] = job.arms[i].batch_size;
        }
    }
    if (rc == 0 && job.spec.power_profiled) {
        const int found = bso_session_power_limit(s, job_id, trial->batch_size, power_limit_w);
        if (found < 0 && found != BSO_ENOTFOUND)
            rc = db_error(s, found, "predict", msg);
    }
    bso_job_clear(&job);
    return finish(s, rc, "predict", msg);
}

/* Loads the job and the trial a client names. BSO_ENOTFOUND with *missing set when either is
 * unknown (the caller words Zeus's message: formatting it costs more than the lookup, so it
 * is done only then). */
static int load_pair(struct bso_session *s, const struct bso_trial_key *key, unsigned load,
                     struct bso_job *job, struct bso_trial *trial, enum bso_missing *missing,
                     char *msg)
{
    int rc = bso_session_load_pair(s, key->job_id, load, job, key->trial_number, trial, missing);
    if (rc == 0 && trial->batch_size != key->batch_size) {
        bso_job_clear(job);
        *missing = BSO_MISSING_TRIAL;
        return BSO_ENOTFOUND;
    }
    if (rc < 0 && *missing == BSO_MISSING_NONE)
        return db_error(s, rc, "load", msg);
    return rc;
}

/* Runs attempt() first in a read transaction, which other requests do not wait for. A request
 * that changes nothing (most progress reports, ending a trial that already reported) is done
 * then. One that would change something runs again from the start under the write lock, on
 * the state as it is by then; its first pass only cost time outside the lock. attempt() saves
 * what it changed only when `write` is true, and sets *changed either way. */
static int read_then_write(struct bso_session *s, const char *job_id, const char *what,
                           int (*attempt)(struct bso_session *s, void *ctx, bool write,
                                          unsigned *changed, char *msg),
                           void *ctx, char *msg)
{
    int rc = bso_session_begin_read(s);
    if (rc < 0)
        return db_error(s, rc, what, msg);
    unsigned changed = 0;
    rc = attempt(s, ctx, false, &changed, msg);
    bso_session_rollback(s);
    if (rc < 0 || !changed)
        return rc;
    if ((rc = bso_session_begin_write(s, job_id)) < 0)
        return db_error(s, rc, what, msg);
    return finish(s, attempt(s, ctx, true, &changed, msg), what, msg);
}

/* Not a policy change (above the BSO_CHANGED_* bits): a progress point to append. */
#define CHANGED_PROGRESS (1u << 30)

struct report_ctx {
    const struct bso_trial_key *key;
    const struct bso_report *rep;
    struct bso_decision *out;
};

static int report_attempt(struct bso_session *s, void *ctx, bool write, unsigned *changed,
                          char *msg)
{
    const struct report_ctx *c = ctx;
    const struct bso_trial_key *key = c->key;
    const struct bso_report *rep = c->rep;
    struct bso_job job;
    struct bso_trial trial;
    enum bso_missing missing;
    int rc = load_pair(s, key, BSO_LOAD_ARMS, &job, &trial, &missing, msg);
    if (missing == BSO_MISSING_JOB)
        return say(msg, rc, "Unknown job %s", key->job_id);
    if (missing == BSO_MISSING_TRIAL) {
        /* Zeus's message prints the whole TrainingResult as pydantic does. */
        char id[600], t[BSO_PYFLOAT_MAX], e[BSO_PYFLOAT_MAX], m[BSO_PYFLOAT_MAX];
        bso_pystr_repr(key->job_id, id, sizeof id);
        bso_pyfloat_repr(rep->time, t, sizeof t);
        bso_pyfloat_repr(rep->energy, e, sizeof e);
        bso_pyfloat_repr(rep->metric, m, sizeof m);
        return say(msg, rc,
                   "Unknown trial job_id=%s batch_size=%" PRId64 " trial_number=%" PRId64
                   " time=%s energy=%s metric=%s current_epoch=%" PRId64,
                   id, key->batch_size, key->trial_number, t, e, m, rep->current_epoch);
    }
    if (rc < 0)
        return rc;
    /* A progress point is written before the report can end the trial (only a Dispatched one
     * takes points); the read pass cannot tell whether it is stored already, so it asks for the
     * write pass. */
    const bool point =
        rep->has_progress && trial.status == BSO_TRIAL_DISPATCHED && rep->current_epoch > 0;
    if (point && write) {
        const struct bso_progress_point pt = {rep->current_epoch, rep->time, rep->samples,
                                              rep->mean_batch_size};
        if ((rc = bso_session_add_progress(s, key->job_id, trial.number, &pt)) < 0) {
            bso_job_clear(&job);
            return db_error(s, rc, "report", msg);
        }
    }
    size_t arm = 0;
    rc = bso_job_report(&job, &trial, rep, c->out, changed, &arm);
    if (rc < 0)
        rc = say(msg, rc, "%s", bso_job_errmsg(&job));
    else if (write && *changed &&
             (rc = bso_session_save(s, &job, *changed, &trial, false, arm)) < 0)
        rc = db_error(s, rc, "report", msg);
    if (rc == 0 && point)
        *changed |= CHANGED_PROGRESS;
    bso_job_clear(&job);
    return rc;
}

int bso_svc_report(struct bso_session *s, const struct bso_trial_key *key,
                   const struct bso_report *rep, struct bso_decision *out, char *msg)
{
    struct report_ctx c = {key, rep, out};
    return read_then_write(s, key->job_id, "report", report_attempt, &c, msg);
}

static int end_trial_attempt(struct bso_session *s, void *ctx, bool write, unsigned *changed,
                             char *msg)
{
    const struct bso_trial_key *key = ctx;
    struct bso_job job;
    struct bso_trial trial;
    enum bso_missing missing;
    int rc = load_pair(s, key, 0, &job, &trial, &missing, msg);
    if (missing != BSO_MISSING_NONE) {
        /* Zeus answers an unknown job here with the unknown-trial message too. */
        char id[600];
        bso_pystr_repr(key->job_id, id, sizeof id);
        return say(msg, rc,
                   "Could not find the trial: job_id=%s batch_size=%" PRId64
                   " trial_number=%" PRId64,
                   id, key->batch_size, key->trial_number);
    }
    if (rc < 0)
        return rc;
    size_t stat = 0;
    bso_job_end_trial(&job, &trial, changed, &stat);
    if (write && *changed && (rc = bso_session_save(s, &job, *changed, &trial, false, stat)) < 0)
        rc = db_error(s, rc, "end trial", msg);
    bso_job_clear(&job);
    return rc;
}

int bso_svc_end_trial(struct bso_session *s, const struct bso_trial_key *key, char *msg)
{
    return read_then_write(s, key->job_id, "end trial", end_trial_attempt, (void *)key, msg);
}

int bso_svc_delete(struct bso_session *s, const char *job_id, char *msg)
{
    int rc = bso_session_begin_write(s, job_id);
    if (rc < 0)
        return db_error(s, rc, "delete", msg);
    rc = bso_session_delete_job(s, job_id);
    if (rc == BSO_ENOTFOUND)
        rc = say(msg, rc, "No job was deleted.");
    else if (rc < 0)
        rc = db_error(s, rc, "delete", msg);
    return finish(s, rc, "delete", msg);
}

/* Loads the job to transfer from, checking that it can be. */
static int load_source(struct bso_session *s, const char *from, struct bso_job *job, char *msg)
{
    int rc = bso_session_load_job(s, from, 0, job);
    if (rc == BSO_ENOTFOUND)
        return say(msg, rc, "Unknown job(%s) to transfer from.", from);
    if (rc < 0)
        return db_error(s, rc, "transfer", msg);
    if (job->spec.policy != BSO_POLICY_BSO) {
        bso_job_clear(job);
        return say(msg, BSO_EINVAL,
                   "Job %s runs the zeus policy, which keeps no per-size epochs to transfer.",
                   from);
    }
    return 0;
}

int bso_svc_check_transfer_source(struct bso_session *s, const char *from, char *msg)
{
    int rc = bso_session_begin_read(s);
    if (rc < 0)
        return db_error(s, rc, "transfer", msg);
    struct bso_job job;
    rc = load_source(s, from, &job, msg);
    if (rc == 0)
        bso_job_clear(&job);
    bso_session_rollback(s);
    return rc;
}

int bso_svc_transfer(struct bso_session *s, const char *to, const char *from, int64_t *sizes,
                     char *msg)
{
    *sizes = 0;
    if (strcmp(to, from) == 0)
        return say(msg, BSO_EINVAL, "A job cannot be transferred from itself (%s).", to);
    int rc = bso_session_begin_write(s, to);
    if (rc < 0)
        return db_error(s, rc, "transfer", msg);
    struct bso_job job, source;
    rc = bso_session_load_job(s, to, 0, &job);
    if (rc == BSO_ENOTFOUND)
        return finish(s, say(msg, rc, "Unknown job(%s).", to), "transfer", msg);
    if (rc < 0)
        return finish(s, db_error(s, rc, "transfer", msg), "transfer", msg);
    if (job.spec.policy != BSO_POLICY_BSO) {
        bso_job_clear(&job);
        return finish(s,
                      say(msg, BSO_EINVAL,
                          "Job %s runs the zeus policy, which cannot use transferred epochs.", to),
                      "transfer", msg);
    }
    if ((rc = load_source(s, from, &source, msg)) < 0) {
        bso_job_clear(&job);
        return finish(s, rc, "transfer", msg);
    }
    *sizes = (int64_t)bso_policy_transfer(&job, &source);
    struct bso_job_origin o = {.sizes = *sizes};
    snprintf(o.from_job, sizeof o.from_job, "%s", from);
    rc = bso_session_save(s, &job, BSO_CHANGED_ALL_STATS, NULL, false, 0);
    if (rc == 0)
        rc = bso_session_save_origin(s, to, &o);
    if (rc < 0)
        rc = db_error(s, rc, "transfer", msg);
    bso_job_clear(&source);
    bso_job_clear(&job);
    return finish(s, rc, "transfer", msg);
}

int bso_svc_reset(struct bso_session *s, const char *job_id, char *msg)
{
    int rc = bso_session_begin_write(s, job_id);
    if (rc < 0)
        return db_error(s, rc, "reset", msg);
    rc = bso_session_reset_job(s, job_id);
    if (rc == BSO_ENOTFOUND)
        rc = say(msg, rc, "Unknown job(%s).", job_id);
    else if (rc < 0)
        rc = db_error(s, rc, "reset", msg);
    return finish(s, rc, "reset", msg);
}

struct unfit_ctx {
    struct bso_job_spec *spec;
};

static int mark_unfit(void *ctx, const struct bso_profile_entry *e)
{
    struct unfit_ctx *c = ctx;
    const int i = bso_job_spec_index(c->spec, e->batch_size);
    if (i >= 0)
        bso_spec_set_unfit(c->spec, (size_t)i, !e->feasible);
    return 0;
}

/* Begins a write transaction on job_id and loads its row into *job (release with
 * bso_job_clear). On failure the transaction is over and msg says why ("Unknown job(ID)."). */
static int load_for_write(struct bso_session *s, const char *job_id, struct bso_job *job,
                          const char *what, char *msg)
{
    int rc = bso_session_begin_write(s, job_id);
    if (rc < 0)
        return db_error(s, rc, what, msg);
    rc = bso_session_load_job(s, job_id, 0, job);
    if (rc == BSO_ENOTFOUND)
        return finish(s, say(msg, rc, "Unknown job(%s).", job_id), what, msg);
    if (rc < 0)
        return finish(s, db_error(s, rc, what, msg), what, msg);
    return 0;
}

int bso_svc_declare_change(struct bso_session *s, const char *job_id, int64_t *sizes, char *msg)
{
    *sizes = 0;
    struct bso_job job;
    int rc = load_for_write(s, job_id, &job, "changed", msg);
    if (rc < 0)
        return rc;
    if (job.spec.policy != BSO_POLICY_BSO) {
        bso_job_clear(&job);
        return finish(s,
                      say(msg, BSO_EINVAL,
                          "Job %s runs the zeus policy, which does not look for changes: its "
                          "window_size forgets old runs, and POST /jobs/%s/reset starts it afresh.",
                          job_id, job_id),
                      "changed", msg);
    }
    *sizes = (int64_t)bso_policy_declare_change(&job);
    rc = bso_session_save(s, &job, BSO_CHANGED_ALL_STATS, NULL, false, 0);
    if (rc < 0)
        rc = db_error(s, rc, "changed", msg);
    bso_job_clear(&job);
    return finish(s, rc, "changed", msg);
}

int bso_svc_follow_data_version(struct bso_session *s, const char *job_id, const char *version,
                                bool *declared, char *msg)
{
    *declared = false;
    int rc = bso_session_begin_write(s, job_id);
    if (rc < 0)
        return db_error(s, rc, "register", msg);
    struct bso_data_version last;
    rc = bso_session_load_data_version(s, job_id, &last);
    if (rc == 0 && strcmp(last.version, version) == 0)
        return finish(s, 0, "register", msg); /* the same data: nothing to do */
    if (rc < 0 && rc != BSO_ENOTFOUND)
        return finish(s, db_error(s, rc, "register", msg), "register", msg);
    /* The first version a job gives is only recorded: nothing says what came before it. */
    if (rc == 0) {
        struct bso_job job;
        if ((rc = bso_session_load_job(s, job_id, 0, &job)) == 0) {
            if (job.spec.policy == BSO_POLICY_BSO) {
                bso_policy_declare_change(&job);
                *declared = true;
                rc = bso_session_save(s, &job, BSO_CHANGED_ALL_STATS, NULL, false, 0);
            }
            bso_job_clear(&job);
        }
        if (rc < 0)
            return finish(s, db_error(s, rc, "register", msg), "register", msg);
    }
    if ((rc = bso_session_save_data_version(s, job_id, version)) < 0)
        rc = db_error(s, rc, "register", msg);
    return finish(s, rc, "register", msg);
}

int bso_svc_profile(struct bso_session *s, const char *job_id, const struct bso_profile_entry *e,
                    size_t n, struct bso_job_spec *spec_out, char *msg)
{
    struct bso_job job;
    int rc = load_for_write(s, job_id, &job, "profile", msg);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < n && rc == 0; i++)
        if (bso_job_spec_index(&job.spec, e[i].batch_size) < 0)
            rc = say(msg, BSO_EINVAL, "Batch size %lld is not one of job %s's batch sizes.",
                     (long long)e[i].batch_size, job_id);
    if (rc == 0 && (rc = bso_session_save_profile(s, job_id, e, n)) < 0)
        rc = db_error(s, rc, "profile", msg);
    /* The bso policy scales its cost estimates by the profile's cost per sample. */
    for (size_t i = 0; i < n && rc == 0 && job.spec.policy == BSO_POLICY_BSO; i++) {
        const size_t k = (size_t)bso_job_spec_index(&job.spec, e[i].batch_size);
        bso_policy_set_profile(&job, k, e[i].samples_per_s, e[i].joules_per_sample);
        if ((rc = bso_session_save(s, &job, BSO_CHANGED_STATS, NULL, false, k)) < 0)
            rc = db_error(s, rc, "profile", msg);
    }
    struct unfit_ctx c = {&job.spec};
    if (rc == 0 && (rc = bso_session_list_profile(s, job_id, mark_unfit, &c)) < 0)
        rc = db_error(s, rc, "profile", msg);
    if (rc == 0 && (rc = bso_session_save_unfit(s, &job)) < 0)
        rc = db_error(s, rc, "profile", msg);
    if (rc == 0)
        *spec_out = job.spec;
    bso_job_clear(&job);
    return finish(s, rc, "profile", msg);
}

int bso_svc_power(struct bso_session *s, const char *job_id, struct bso_power_profile *p,
                  struct bso_job_spec *spec_out, char *msg)
{
    struct bso_job job;
    int rc = load_for_write(s, job_id, &job, "power", msg);
    if (rc < 0)
        return rc;
    size_t chosen = p->n;
    if (bso_job_spec_index(&job.spec, p->batch_size) < 0) {
        rc = say(msg, BSO_EINVAL, "Batch size %lld is not one of job %s's batch sizes.",
                 (long long)p->batch_size, job_id);
    } else if (isnan(p->power_limit_w)) {
        if (bso_power_choose(p->points, p->n, job.spec.eta_knob, job.spec.max_power, &chosen) < 0)
            rc = say(msg, BSO_EINVAL, "No measurement has a throughput to choose a limit by.");
        else
            p->power_limit_w = p->points[chosen].limit_w;
    } else {
        for (size_t i = 0; i < p->n; i++)
            if (p->points[i].limit_w == p->power_limit_w)
                chosen = i;
        if (chosen == p->n)
            rc = say(msg, BSO_EINVAL, "The chosen power limit %g W is not one of the measured.",
                     p->power_limit_w);
    }
    if (rc == 0 && (rc = bso_session_save_power(s, job_id, p)) < 0)
        rc = db_error(s, rc, "power", msg);
    if (rc == 0 && spec_out)
        *spec_out = job.spec;
    bso_job_clear(&job);
    return finish(s, rc, "power", msg);
}
