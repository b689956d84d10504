/*
 * Endpoints. Zeus's five keep Zeus's paths, fields, status codes and bodies; the read API,
 * health and version are ours. Adding an endpoint is adding a row to `routes`.
 */
#include "server/routes.h"

#include <errno.h>
#include <math.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bso/error.h"
#include "core/bso_policy.h"
#include "core/cost.h"
#include "core/pyfmt.h"
#include "server/codec.h"
#include "server/log.h"
#include "server/metrics.h"
#include "server/service.h"
#include "server/ui_assets.h"

#define BSO_VERSION "0.1.0"

static void message(struct bso_response *res, unsigned status, const char *msg)
{
    res->status = status;
    jb_obj(&res->body);
    jb_key(&res->body, "message");
    jb_str(&res->body, msg);
    jb_end(&res->body);
}

static void details(struct bso_response *res, const struct bso_details *ds)
{
    res->status = 422;
    bso_encode_details(&res->body, ds);
}

/* The database failed: the client gets a generic 503, the log gets the details. */
static void unavailable(struct bso_response *res, const char *what, const char *detail)
{
    log_error("%s: %s", what, detail);
    bso_metrics_db_error();
    jb_free(&res->body);
    message(res, 503, "The database is unavailable; try again.");
}

/* The end of a read endpoint that failed with rc: 404 for an unknown job, else 503. */
static void read_failed(struct bso_response *res, struct bso_session *s, int rc, const char *job_id,
                        const char *what)
{
    if (rc == BSO_ENOTFOUND) {
        char msg[BSO_SVC_MSG_MAX];
        jb_free(&res->body);
        snprintf(msg, sizeof msg, "Unknown job(%s).", job_id);
        message(res, 404, msg);
    } else {
        unavailable(res, what, bso_session_errmsg(s));
    }
}

/* 422 for one query parameter. */
static void query_error(struct bso_response *res, const char *name, const char *type,
                        const char *msg)
{
    struct bso_details ds = {0};
    bso_details_add(&ds, "query", name, -1, type, msg);
    details(res, &ds);
}

/* The HTTP status for a service failure; `unknown` is what this endpoint answers for an unknown
 * job or trial (Zeus uses 400 on some endpoints and 404 on others). */
static unsigned status_of(int rc, unsigned unknown)
{
    switch (rc) {
    case BSO_ENOTFOUND:
        return unknown;
    case BSO_ECONFLICT:
    case BSO_EPRUNED:
        return 409;
    case BSO_ESTATE:
    case BSO_EINVAL:
        return 400;
    case BSO_EIO:
    case BSO_ENOMEM:
        return 503;
    default:
        return 500;
    }
}

/* A session for this request, seeing only the jobs its sender may see, or a 503 already
 * written. */
static struct bso_session *session(struct bso_request *req, struct bso_response *res)
{
    struct bso_session *s;
    if (bso_store_session(req->store, &s) == 0) {
        bso_session_set_scope(s, req->who.admin ? NULL : req->who.tenant);
        return s;
    }
    unavailable(res, "session", "cannot open a database session");
    return NULL;
}

/* Zeus's client sends JSON with no Content-Type; a JSON type is fine too. So is curl's default
 * form type (`curl -d '{...}'`), which FastAPI would refuse: a convenience, as the body must
 * still be JSON. Anything else (text/plain, ...) is not a dict, as in FastAPI. */
static bool json_body_allowed(struct bso_request *req, struct bso_response *res)
{
    const char *ct =
        MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    if (!ct)
        return true;
    size_t n = strcspn(ct, ";");
    while (n > 0 && (ct[n - 1] == ' ' || ct[n - 1] == '\t'))
        n--;
    if ((n == 16 && strncasecmp(ct, "application/json", 16) == 0) ||
        (n == 33 && strncasecmp(ct, "application/x-www-form-urlencoded", 33) == 0) ||
        (n > 17 && strncasecmp(ct, "application/", 12) == 0 &&
         strncasecmp(ct + n - 5, "+json", 5) == 0))
        return true;
    struct bso_details ds = {0};
    bso_details_add(&ds, "body", NULL, -1, "type_error.dict", "value is not a valid dict");
    details(res, &ds);
    return false;
}

typedef int (*trial_decoder)(const char *body, size_t len, struct bso_report_req *r,
                             struct bso_details *ds);

/* The common start of POST /report and PATCH /trials: an acceptable body, decoded, and a
 * session. NULL when a response (422, 503) is already written. */
static struct bso_session *trial_request(struct bso_request *req, struct bso_response *res,
                                         trial_decoder decode, struct bso_report_req *r)
{
    struct bso_details ds;
    if (!json_body_allowed(req, res))
        return NULL;
    if (decode(req->body, req->body_len, r, &ds) < 0) {
        details(res, &ds);
        return NULL;
    }
    return session(req, res);
}

static const char *query(struct bso_request *req, const char *key)
{
    return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, key);
}

/* ---- Zeus's endpoints ------------------------------------------------------------------- */

static void h_register(struct bso_request *req, struct bso_response *res)
{
    if (!json_body_allowed(req, res))
        return;
    struct bso_job_spec spec;
    struct bso_details ds;
    if (bso_decode_spec(req->body, req->body_len, &spec, &ds) < 0) {
        details(res, &ds);
        return;
    }
    snprintf(spec.tenant, sizeof spec.tenant, "%s", req->who.tenant);
    struct bso_session *s = session(req, res);
    if (!s)
        return;
    char msg[BSO_SVC_MSG_MAX];
    bool created = false;
    /* transfer_from: the source is checked first, so that a bad one creates nothing. */
    int rc = spec.transfer_from[0] ? bso_svc_check_transfer_source(s, spec.transfer_from, msg) : 0;
    if (rc == 0)
        rc = bso_svc_register(s, &spec, req->cfg->default_policy, &created, msg);
    int64_t sizes = 0;
    if (rc == 0 && created && spec.transfer_from[0])
        rc = bso_svc_transfer(s, spec.job_id, spec.transfer_from, &sizes, msg);
    struct bso_job_spec registered;
    const bool differs = rc == BSO_ECONFLICT && spec.has_job_id &&
                         bso_svc_load_spec(s, spec.job_id, &registered) == 0;
    bso_session_release(s);
    if (differs) { /* Zeus's message, and which fields differ with both values */
        res->status = 409;
        jb_obj(&res->body);
        jb_key(&res->body, "message");
        jb_str(&res->body, msg);
        jb_key(&res->body, "differences");
        bso_encode_spec_diff(&res->body, &registered, &spec);
        jb_end(&res->body);
        return;
    }
    if (rc < 0) {
        message(res, status_of(rc, 400), msg);
        return;
    }
    if (created)
        log_info("Registered job %s", spec.job_id);
    if (created && spec.transfer_from[0])
        log_info("Job %s starts from job %s's epochs at %lld batch sizes", spec.job_id,
                 spec.transfer_from, (long long)sizes);
    res->status = created ? 201 : 200;
    bso_encode_spec(&res->body, &spec);
}

/* The required job_id query parameter, or a 422 written. */
static const char *job_id_param(struct bso_request *req, struct bso_response *res)
{
    const char *id = query(req, "job_id");
    if (!id)
        query_error(res, "job_id", "value_error.missing", "field required");
    return id;
}

static void h_predict(struct bso_request *req, struct bso_response *res)
{
    const char *id = job_id_param(req, res);
    struct bso_session *s = id ? session(req, res) : NULL;
    if (!s)
        return;
    char msg[BSO_SVC_MSG_MAX];
    struct bso_trial t;
    bool switched = false;
    int64_t arms[BSO_MAX_BATCH_SIZES];
    size_t n_arms = 0;
    double power_limit_w;
    int rc = bso_svc_predict(s, id, &t, &switched, arms, &n_arms, &power_limit_w, msg);
    bso_session_release(s);
    if (rc == BSO_EPRUNED) { /* Zeus's message, and the way out Zeus lacks */
        res->status = 409;
        jb_obj(&res->body);
        jb_key(&res->body, "message");
        jb_str(&res->body, msg);
        jb_key(&res->body, "hint");
        jb_str(&res->body, "Reset the job to learn afresh: POST /jobs/{job_id}/reset, or "
                           "`bso reset JOB`; or register it again under a new job_id.");
        jb_end(&res->body);
        return;
    }
    if (rc < 0) {
        message(res, status_of(rc, 400), msg);
        return;
    }
    if (switched) {
        char list[2048];
        if (bso_pyintlist_repr(arms, n_arms, list, sizeof list) < 0)
            snprintf(list, sizeof list, "[%zu arms]", n_arms);
        log_info("Construct MAB for %s with arms %s", id, list);
    }
    jb_obj(&res->body);
    jb_key(&res->body, "job_id");
    jb_str(&res->body, id);
    jb_key(&res->body, "batch_size");
    jb_int(&res->body, t.batch_size);
    jb_key(&res->body, "trial_number");
    jb_int(&res->body, t.number);
    if (!isnan(power_limit_w)) { /* only for sizes a run profiled: Zeus's answer otherwise */
        jb_key(&res->body, "power_limit");
        jb_float(&res->body, power_limit_w);
    }
    jb_end(&res->body);
}

static void h_report(struct bso_request *req, struct bso_response *res)
{
    struct bso_report_req r;
    struct bso_session *s = trial_request(req, res, bso_decode_report, &r);
    if (!s)
        return;
    char msg[BSO_SVC_MSG_MAX];
    struct bso_decision d;
    struct bso_trial_key key = {r.job_id, r.batch_size, r.trial_number};
    int rc = bso_svc_report(s, &key, &r.report, &d, msg);
    bso_session_release(s);
    if (rc < 0) {
        message(res, status_of(rc, 400), msg);
        return;
    }
    jb_obj(&res->body);
    jb_key(&res->body, "stop_train");
    jb_bool(&res->body, d.stop_train);
    jb_key(&res->body, "converged");
    jb_bool(&res->body, d.converged);
    jb_key(&res->body, "message");
    jb_str(&res->body, d.message);
    jb_end(&res->body);
}

static void h_end_trial(struct bso_request *req, struct bso_response *res)
{
    struct bso_report_req r;
    struct bso_session *s = trial_request(req, res, bso_decode_trial_id, &r);
    if (!s)
        return;
    char msg[BSO_SVC_MSG_MAX];
    struct bso_trial_key key = {r.job_id, r.batch_size, r.trial_number};
    int rc = bso_svc_end_trial(s, &key, msg);
    bso_session_release(s);
    if (rc < 0)
        message(res, status_of(rc, 404), msg);
    else
        jb_null(&res->body);
}

static void h_delete_job(struct bso_request *req, struct bso_response *res)
{
    const char *id = job_id_param(req, res);
    struct bso_session *s = id ? session(req, res) : NULL;
    if (!s)
        return;
    char msg[BSO_SVC_MSG_MAX];
    int rc = bso_svc_delete(s, id, msg);
    bso_session_release(s);
    if (rc < 0) {
        message(res, status_of(rc, 404), msg);
        return;
    }
    log_info("Deleted job %s", id);
    jb_null(&res->body);
}

/* ---- the read API ----------------------------------------------------------------------- */

/* An integer query parameter in [min, max], or def when absent; false with a 422 written. */
static bool int_param(struct bso_request *req, struct bso_response *res, const char *name,
                      int64_t min, int64_t max, int64_t def, int64_t *out)
{
    const char *v = query(req, name);
    *out = def;
    if (!v)
        return true;
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (*v == '\0' || *end != '\0' || errno) {
        query_error(res, name, "type_error.integer", "value is not a valid integer");
        return false;
    }
    if (n < min || n > max) {
        char msg[96];
        snprintf(msg, sizeof msg, "ensure this value is between %" PRId64 " and %" PRId64, min,
                 max);
        query_error(res, name, "value_error.number.not_in_range", msg);
        return false;
    }
    *out = n;
    return true;
}

struct list_ctx {
    struct jbuf *b;
    int64_t rows;
    char last_id[BSO_JOB_ID_MAX + 1];
    int64_t last_number;
    const struct bso_job_spec *spec;
};

static int job_row(void *ctx, const struct bso_job_summary *r)
{
    struct list_ctx *c = ctx;
    jb_obj(c->b);
    jb_key(c->b, "job_id");
    jb_str(c->b, r->job_id);
    jb_key(c->b, "gpu_model");
    jb_str(c->b, r->gpu_model);
    jb_key(c->b, "stage");
    jb_str(c->b, bso_stage_name(r->stage));
    jb_key(c->b, "trials");
    jb_int(c->b, r->n_trials);
    jb_key(c->b, "min_cost");
    if (r->has_min_cost)
        jb_float(c->b, r->min_cost);
    else
        jb_null(c->b);
    jb_key(c->b, "min_cost_batch_size");
    jb_int(c->b, r->min_cost_batch_size);
    jb_key(c->b, "created_at");
    jb_str(c->b, r->created_at);
    jb_key(c->b, "tenant");
    if (r->tenant[0])
        jb_str(c->b, r->tenant);
    else
        jb_null(c->b);
    jb_end(c->b);
    c->rows++;
    snprintf(c->last_id, sizeof c->last_id, "%s", r->job_id);
    return 0;
}

static void h_list_jobs(struct bso_request *req, struct bso_response *res)
{
    int64_t limit;
    if (!int_param(req, res, "limit", 1, 1000, 100, &limit))
        return;
    struct bso_session *s = session(req, res);
    if (!s)
        return;
    struct list_ctx c = {.b = &res->body};
    jb_obj(&res->body);
    jb_key(&res->body, "jobs");
    jb_arr(&res->body);
    int rc = bso_session_begin_read(s);
    if (rc == 0)
        rc = bso_session_list_jobs(s, query(req, "after"), limit, job_row, &c);
    bso_session_rollback(s);
    if (rc < 0) {
        unavailable(res, "list jobs", bso_session_errmsg(s));
        bso_session_release(s);
        return;
    }
    bso_session_release(s);
    jb_end(&res->body);
    jb_key(&res->body, "next_after");
    if (c.rows == limit)
        jb_str(&res->body, c.last_id);
    else
        jb_null(&res->body);
    jb_end(&res->body);
}

/* Number or null (unknown). */
static void jb_maybe(struct jbuf *b, double v)
{
    if (isfinite(v))
        jb_float(b, v);
    else
        jb_null(b);
}

/* What the bso policy knows about each batch size. */
static void encode_bs_stats(struct jbuf *b, const struct bso_job *job)
{
    jb_key(b, "batch_size_stats");
    jb_arr(b);
    for (size_t i = 0; i < job->spec.n_batch_sizes; i++) {
        const struct bso_bs_stat *s = &job->stats[i];
        jb_obj(b);
        jb_key(b, "batch_size");
        jb_int(b, job->spec.batch_sizes[i]);
        jb_key(b, "status");
        jb_str(b, bso_bs_status_name(s->status));
        jb_key(b, "runs");
        jb_int(b, (int64_t)s->total_runs);
        jb_key(b, "successes");
        jb_int(b, (int64_t)s->total_successes);
        jb_key(b, "mean_epochs");
        jb_maybe(b, s->successes > 0 ? s->sum_epochs / (double)s->successes : NAN);
        jb_key(b, "cost_per_epoch");
        jb_maybe(b, bso_bs_cost_per_epoch(s));
        jb_key(b, "expected_cost");
        jb_maybe(b, bso_bs_expected_cost(s));
        jb_key(b, "estimated_cost_per_epoch"); /* what the policy assumes before measuring */
        jb_maybe(b, bso_policy_epoch_cost(job, i));
        jb_key(b, "prior_epochs"); /* transferred from another job, until a run here reaches */
        jb_maybe(b, s->prior_epochs > 0 ? s->prior_epochs : NAN);
        jb_end(b);
    }
    jb_end(b);
}

/* The sizes a profile found not to fit, as a JSON list. */
static void encode_unfit(struct jbuf *b, const struct bso_job_spec *sp)
{
    jb_arr(b);
    for (size_t i = 0; i < sp->n_batch_sizes; i++)
        if (bso_spec_unfit(sp, i))
            jb_int(b, sp->batch_sizes[i]);
    jb_end(b);
}

static int profile_row(void *ctx, const struct bso_profile_entry *e)
{
    struct jbuf *b = ctx;
    jb_obj(b);
    jb_key(b, "batch_size");
    jb_int(b, e->batch_size);
    jb_key(b, "feasible");
    jb_bool(b, e->feasible);
    jb_key(b, "samples_per_s");
    jb_maybe(b, e->samples_per_s);
    jb_key(b, "joules_per_sample");
    jb_maybe(b, e->joules_per_sample);
    jb_key(b, "peak_memory_bytes");
    if (e->peak_memory_bytes >= 0)
        jb_int(b, e->peak_memory_bytes);
    else
        jb_null(b);
    jb_key(b, "device");
    jb_str(b, e->device);
    jb_key(b, "measured_at");
    jb_str(b, e->measured_at);
    jb_end(b);
    return 0;
}

/* "profile": [...] and "unfit_batch_sizes": [...], inside an open object (a read
 * transaction is open on s). */
static int encode_profile(struct jbuf *b, struct bso_session *s, const struct bso_job_spec *sp)
{
    jb_key(b, "unfit_batch_sizes");
    encode_unfit(b, sp);
    jb_key(b, "profile");
    jb_arr(b);
    const int rc = bso_session_list_profile(s, sp->job_id, profile_row, b);
    jb_end(b);
    return rc;
}

/* Context of power_row: the job's cost weights, for each limit's cost per sample. */
struct power_ctx {
    struct jbuf *b;
    double eta, max_power;
};

static int power_row(void *ctx, const struct bso_power_profile *p)
{
    const struct power_ctx *c = ctx;
    struct jbuf *b = c->b;
    jb_obj(b);
    jb_key(b, "batch_size");
    jb_int(b, p->batch_size);
    jb_key(b, "power_limit");
    jb_float(b, p->power_limit_w);
    jb_key(b, "device");
    jb_str(b, p->device);
    jb_key(b, "measured_at");
    jb_str(b, p->measured_at);
    jb_key(b, "measurements");
    jb_arr(b);
    for (size_t i = 0; i < p->n; i++) {
        jb_obj(b);
        jb_key(b, "power_limit");
        jb_float(b, p->points[i].limit_w);
        jb_key(b, "samples_per_s");
        jb_float(b, p->points[i].samples_per_s);
        jb_key(b, "power");
        jb_float(b, p->points[i].power_w);
        jb_key(b, "cost_per_sample"); /* what the choice compared */
        jb_maybe(b, bso_power_cost_per_sample(&p->points[i], c->eta, c->max_power));
        jb_end(b);
    }
    jb_end(b);
    jb_end(b);
    return 0;
}

/* "power_profiles": [...], inside an open object (a read transaction is open on s). */
static int encode_power(struct jbuf *b, struct bso_session *s, const struct bso_job_spec *sp)
{
    struct power_ctx c = {b, sp->eta_knob, sp->max_power};
    jb_key(b, "power_profiles");
    jb_arr(b);
    const int rc = bso_session_list_power(s, sp->job_id, power_row, &c);
    jb_end(b);
    return rc;
}

/* Where the job came from (bso transfer) and when the bso policy last found that it changed:
 * "transferred_from" {job_id, batch_sizes, at} or null, "change_detected_at_trial" or null. */
static int encode_origin(struct jbuf *b, struct bso_session *s, const struct bso_job *job)
{
    struct bso_job_origin o;
    const int rc = bso_session_load_origin(s, job->spec.job_id, &o);
    if (rc < 0 && rc != BSO_ENOTFOUND)
        return rc;
    jb_key(b, "transferred_from");
    if (rc == 0) {
        jb_obj(b);
        jb_key(b, "job_id");
        jb_str(b, o.from_job);
        jb_key(b, "batch_sizes");
        jb_int(b, o.sizes);
        jb_key(b, "at");
        jb_str(b, o.at);
        jb_end(b);
    } else {
        jb_null(b);
    }
    double changed = 0;
    for (size_t i = 0; job->spec.policy == BSO_POLICY_BSO && i < job->spec.n_batch_sizes; i++)
        changed = job->stats[i].change_mark > changed ? job->stats[i].change_mark : changed;
    jb_key(b, "change_detected_at_trial");
    if (changed > 0)
        jb_int(b, (int64_t)changed);
    else
        jb_null(b);
    return 0;
}

static int encode_job(struct jbuf *b, struct bso_session *s, const struct bso_job *job,
                      const int64_t counts[3])
{
    jb_obj(b);
    jb_key(b, "job_id");
    jb_str(b, job->spec.job_id);
    jb_key(b, "tenant");
    if (job->spec.tenant[0])
        jb_str(b, job->spec.tenant);
    else
        jb_null(b);
    jb_key(b, "spec");
    bso_encode_spec(b, &job->spec);
    jb_key(b, "stage");
    jb_str(b, bso_stage_name(job->stage));
    jb_key(b, "min_cost");
    if (job->has_min_cost)
        jb_float(b, job->min_cost);
    else
        jb_null(b);
    jb_key(b, "min_cost_batch_size");
    jb_int(b, job->min_cost_batch_size);
    jb_key(b, "trials");
    jb_obj(b);
    jb_key(b, "total");
    jb_int(b, job->last_trial_number);
    for (int st = 0; st < 3; st++) {
        char key[16];
        snprintf(key, sizeof key, "%s", bso_trial_status_name((enum bso_trial_status)st));
        key[0] = (char)(key[0] - 'A' + 'a');
        jb_key(b, key);
        jb_int(b, counts[st]);
    }
    jb_end(b);
    /* Infinite precisions (an arm whose rewards have no spread) are written as null. */
    jb_key(b, "arms");
    jb_arr(b);
    for (size_t i = 0; i < job->n_arms; i++) {
        const struct bso_arm *a = &job->arms[i];
        jb_obj(b);
        jb_key(b, "batch_size");
        jb_int(b, a->batch_size);
        jb_key(b, "mean_cost");
        jb_float(b, -a->param_mean);
        jb_key(b, "param_mean");
        jb_float(b, a->param_mean);
        jb_key(b, "param_precision");
        jb_float(b, a->param_precision);
        jb_key(b, "reward_precision");
        jb_float(b, a->reward_precision);
        jb_key(b, "num_observations");
        jb_int(b, a->num_observations);
        jb_key(b, "num_results");
        jb_int(b, a->n_results);
        jb_end(b);
    }
    jb_end(b);
    int64_t infeasible[BSO_MAX_BATCH_SIZES];
    const size_t n_infeasible = bso_job_infeasible_sizes(job, infeasible);
    jb_key(b, "infeasible_batch_sizes");
    jb_arr(b);
    for (size_t i = 0; i < n_infeasible; i++)
        jb_int(b, infeasible[i]);
    jb_end(b);
    if (job->spec.policy == BSO_POLICY_BSO)
        encode_bs_stats(b, job);
    int rc = encode_profile(b, s, &job->spec);
    if (rc == 0)
        rc = encode_power(b, s, &job->spec);
    if (rc == 0)
        rc = encode_origin(b, s, job);
    jb_end(b);
    return rc;
}

static void h_get_job(struct bso_request *req, struct bso_response *res)
{
    struct bso_session *s = session(req, res);
    if (!s)
        return;
    struct bso_job job;
    int64_t counts[3] = {0};
    int rc = bso_session_begin_read(s);
    if (rc == 0)
        rc = bso_session_load_job(s, req->segment, BSO_LOAD_ARMS | BSO_LOAD_TRIALS, &job);
    if (rc == 0) {
        rc = bso_session_count_trials(s, req->segment, counts);
        if (rc == 0)
            rc = encode_job(&res->body, s, &job, counts);
        bso_job_clear(&job);
    }
    bso_session_rollback(s);
    if (rc < 0)
        read_failed(res, s, rc, req->segment, "get job");
    bso_session_release(s);
}

static int trial_row(void *ctx, const struct bso_trial_row *r)
{
    struct list_ctx *c = ctx;
    const struct bso_trial *t = &r->trial;
    const bool done = t->status == BSO_TRIAL_SUCCEEDED;
    jb_obj(c->b);
    jb_key(c->b, "trial_number");
    jb_int(c->b, t->number);
    jb_key(c->b, "batch_size");
    jb_int(c->b, t->batch_size);
    jb_key(c->b, "type");
    jb_str(c->b, bso_trial_type_name(t->type));
    jb_key(c->b, "status");
    jb_str(c->b, bso_trial_status_name(t->status));
    jb_key(c->b, "start_timestamp");
    jb_str(c->b, r->start_timestamp);
    jb_key(c->b, "end_timestamp");
    if (r->end_timestamp[0])
        jb_str(c->b, r->end_timestamp);
    else
        jb_null(c->b);
    jb_key(c->b, "time");
    done ? jb_float(c->b, t->time) : jb_null(c->b);
    jb_key(c->b, "energy");
    done ? jb_float(c->b, t->energy) : jb_null(c->b);
    jb_key(c->b, "cost");
    if (done)
        jb_float(c->b, bso_cost(t->energy, t->time, c->spec->eta_knob, c->spec->max_power));
    else
        jb_null(c->b);
    jb_key(c->b, "converged");
    done ? jb_bool(c->b, t->converged) : jb_null(c->b);
    jb_key(c->b, "energy_source");
    if (t->energy_source[0])
        jb_str(c->b, t->energy_source);
    else
        jb_null(c->b);
    bso_encode_progress(c->b, r->progress);
    jb_end(c->b);
    c->rows++;
    c->last_number = t->number;
    return 0;
}

static void h_list_trials(struct bso_request *req, struct bso_response *res)
{
    int64_t limit, after;
    if (!int_param(req, res, "limit", 1, 1000, 100, &limit) ||
        !int_param(req, res, "after", 0, INT64_MAX, 0, &after))
        return;
    struct bso_session *s = session(req, res);
    if (!s)
        return;
    struct bso_job job;
    int rc = bso_session_begin_read(s);
    if (rc == 0)
        rc = bso_session_load_job(s, req->segment, 0, &job);
    if (rc == 0) {
        struct list_ctx c = {.b = &res->body, .spec = &job.spec};
        jb_obj(&res->body);
        jb_key(&res->body, "job_id");
        jb_str(&res->body, req->segment);
        jb_key(&res->body, "trials");
        jb_arr(&res->body);
        rc = bso_session_list_trials(s, req->segment, after, limit, trial_row, &c);
        jb_end(&res->body);
        jb_key(&res->body, "next_after");
        if (c.rows == limit)
            jb_int(&res->body, c.last_number);
        else
            jb_null(&res->body);
        jb_end(&res->body);
        bso_job_clear(&job);
    }
    bso_session_rollback(s);
    if (rc < 0)
        read_failed(res, s, rc, req->segment, "list trials");
    bso_session_release(s);
}

static void status_body(struct bso_response *res, unsigned status, const char *text)
{
    res->status = status;
    jb_obj(&res->body);
    jb_key(&res->body, "status");
    jb_str(&res->body, text);
    jb_end(&res->body);
}

static void h_healthz(struct bso_request *req, struct bso_response *res)
{
    (void)req;
    status_body(res, 200, "ok");
}

static void h_readyz(struct bso_request *req, struct bso_response *res)
{
    struct bso_session *s = session(req, res);
    if (!s)
        return;
    int rc = bso_session_ping(s);
    if (rc < 0)
        log_error("readiness: %s", bso_session_errmsg(s));
    bso_session_release(s);
    status_body(res, rc == 0 ? 200 : 503, rc == 0 ? "ready" : "database unavailable");
}

static void h_version(struct bso_request *req, struct bso_response *res)
{
    jb_obj(&res->body);
    jb_key(&res->body, "version");
    jb_str(&res->body, BSO_VERSION);
    jb_key(&res->body, "database");
    jb_str(&res->body, bso_store_backend(req->store));
    jb_key(&res->body, "schema_version");
    jb_int(&res->body, bso_store_schema_version(req->store));
    jb_end(&res->body);
}

/* POST /jobs/ID/reset: the job forgets what it learned; answers the job as GET /jobs/ID. */
static void h_reset_job(struct bso_request *req, struct bso_response *res)
{
    struct bso_session *s = session(req, res);
    if (!s)
        return;
    char msg[BSO_SVC_MSG_MAX];
    const int rc = bso_svc_reset(s, req->segment, msg);
    bso_session_release(s);
    if (rc < 0) {
        message(res, status_of(rc, 404), msg);
        return;
    }
    log_info("Reset job %s: it explores again from its spec", req->segment);
    h_get_job(req, res);
}

/* POST /jobs/ID/transfer {"from": OLD}: the job starts from OLD's per-size epochs (the same
 * workload on other hardware); answers the job as GET /jobs/ID. */
static void h_transfer(struct bso_request *req, struct bso_response *res)
{
    if (!json_body_allowed(req, res))
        return;
    char from[BSO_JOB_ID_MAX + 1];
    struct bso_details ds;
    if (bso_decode_transfer(req->body, req->body_len, from, sizeof from, &ds) < 0) {
        details(res, &ds);
        return;
    }
    struct bso_session *s = session(req, res);
    if (!s)
        return;
    char msg[BSO_SVC_MSG_MAX];
    int64_t sizes;
    const int rc = bso_svc_transfer(s, req->segment, from, &sizes, msg);
    bso_session_release(s);
    if (rc < 0) {
        message(res, status_of(rc, 404), msg);
        return;
    }
    log_info("Job %s starts from job %s's epochs at %lld batch sizes", req->segment, from,
             (long long)sizes);
    h_get_job(req, res);
}

/* POST /jobs/ID/profile: a probe's measurements; answers the stored profile and the sizes
 * that do not fit. */
static void h_profile(struct bso_request *req, struct bso_response *res)
{
    if (!json_body_allowed(req, res))
        return;
    struct bso_profile_entry *e = calloc(BSO_MAX_BATCH_SIZES, sizeof *e);
    struct bso_details ds;
    size_t n = 0;
    if (!e) {
        message(res, 503, "The server is out of memory.");
        return;
    }
    if (bso_decode_profile(req->body, req->body_len, e, &n, &ds) < 0) {
        details(res, &ds);
        free(e);
        return;
    }
    struct bso_session *s = session(req, res);
    if (!s) {
        free(e);
        return;
    }
    char msg[BSO_SVC_MSG_MAX];
    struct bso_job_spec spec;
    int rc = bso_svc_profile(s, req->segment, e, n, &spec, msg);
    free(e);
    if (rc < 0) {
        bso_session_release(s);
        message(res, status_of(rc, 404), msg);
        return;
    }
    jb_obj(&res->body);
    jb_key(&res->body, "job_id");
    jb_str(&res->body, spec.job_id);
    if ((rc = bso_session_begin_read(s)) == 0)
        rc = encode_profile(&res->body, s, &spec);
    bso_session_rollback(s);
    jb_end(&res->body);
    if (rc < 0)
        unavailable(res, "profile", bso_session_errmsg(s));
    bso_session_release(s);
}

/* POST /jobs/ID/power: a run's power-limit profile of one batch size; answers the job's
 * profiles. */
static void h_power(struct bso_request *req, struct bso_response *res)
{
    if (!json_body_allowed(req, res))
        return;
    struct bso_power_profile p;
    struct bso_details ds;
    if (bso_decode_power(req->body, req->body_len, &p, &ds) < 0) {
        details(res, &ds);
        return;
    }
    struct bso_session *s = session(req, res);
    if (!s)
        return;
    char msg[BSO_SVC_MSG_MAX];
    struct bso_job_spec spec;
    int rc = bso_svc_power(s, req->segment, &p, &spec, msg);
    if (rc < 0) {
        bso_session_release(s);
        message(res, status_of(rc, 404), msg);
        return;
    }
    log_info("Power profile of %s at batch size %lld: %g W chosen of %zu limits", req->segment,
             (long long)p.batch_size, p.power_limit_w, p.n);
    jb_obj(&res->body);
    jb_key(&res->body, "job_id");
    jb_str(&res->body, spec.job_id);
    jb_key(&res->body, "batch_size");
    jb_int(&res->body, p.batch_size);
    jb_key(&res->body, "power_limit");
    jb_float(&res->body, p.power_limit_w);
    if ((rc = bso_session_begin_read(s)) == 0)
        rc = encode_power(&res->body, s, &spec);
    bso_session_rollback(s);
    jb_end(&res->body);
    if (rc < 0)
        unavailable(res, "power", bso_session_errmsg(s));
    bso_session_release(s);
}

/* GET /metrics: Prometheus text (metrics.h); the database part is left out, with a 200 still,
 * when the database does not answer, so a scrape shows the errors. */
static void h_metrics(struct bso_request *req, struct bso_response *res)
{
    struct bso_metrics_db db = {0};
    struct bso_session *s;
    if (bso_store_session(req->store, &s) == 0) {
        db.has_counts =
            bso_session_begin_read(s) == 0 && bso_session_tally(s, db.jobs, db.trials) == 0;
        bso_session_rollback(s);
        bso_session_release(s);
    }
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) {
        message(res, 503, "The server is out of memory.");
        return;
    }
    bso_metrics_write(f, bso_route_label, &db, BSO_VERSION, bso_store_backend(req->store));
    fclose(f);
    res->content_type = "text/plain; version=0.0.4; charset=utf-8";
    res->raw = text;
    res->raw_len = len;
    res->raw_owned = true;
}

/* GET /ui and /ui/FILE: the dashboard's files, embedded in the binary (ui_assets.h). They hold
 * no data: the page reads the API with the browser's token, so they are served to anyone. */
static void h_ui(struct bso_request *req, struct bso_response *res)
{
    const char *name = req->segment ? req->segment : "index.html";
    const struct bso_ui_asset *a = bso_ui_asset_find(name);
    if (!a) {
        message(res, 404, "No such dashboard file.");
        return;
    }
    res->content_type = a->content_type;
    res->raw = (char *)a->data;
    res->raw_len = a->len;
    res->raw_owned = false;
}

/* ---- the table ---------------------------------------------------------------------------- */

struct route {
    const char *method;
    const char *pattern; /* "{}" matches one path segment */
    void (*handler)(struct bso_request *req, struct bso_response *res);
    bool open;         /* served without a token (probes, the dashboard's static files) */
    const char *label; /* the metrics' route label */
};

static const struct route routes[] = {
    {"POST", "/jobs", h_register, false, "/jobs"},
    {"DELETE", "/jobs", h_delete_job, false, "/jobs"},
    {"GET", "/jobs", h_list_jobs, false, "/jobs"},
    {"GET", "/jobs/batch_size", h_predict, false, "/jobs/batch_size"},
    {"POST", "/report", h_report, false, "/report"},
    {"PATCH", "/trials", h_end_trial, false, "/trials"},
    /* /jobs/{}/trials and /reset before /jobs/{}, which matches them too (job ids may contain '/').
     */
    {"GET", "/jobs/{}/trials", h_list_trials, false, "/jobs/{job_id}/trials"},
    {"POST", "/jobs/{}/reset", h_reset_job, false, "/jobs/{job_id}/reset"},
    {"POST", "/jobs/{}/profile", h_profile, false, "/jobs/{job_id}/profile"},
    {"POST", "/jobs/{}/power", h_power, false, "/jobs/{job_id}/power"},
    {"POST", "/jobs/{}/transfer", h_transfer, false, "/jobs/{job_id}/transfer"},
    {"GET", "/jobs/{}", h_get_job, false, "/jobs/{job_id}"},
    {"GET", "/healthz", h_healthz, true, "/healthz"},
    {"GET", "/readyz", h_readyz, true, "/readyz"},
    {"GET", "/version", h_version, true, "/version"},
    {"GET", "/metrics", h_metrics, false, "/metrics"},
    {"GET", "/ui", h_ui, true, "/ui"},
    {"GET", "/ui/", h_ui, true, "/ui"},
    {"GET", "/ui/{}", h_ui, true, "/ui/{file}"},
};

_Static_assert(sizeof routes / sizeof routes[0] < BSO_METRICS_ROUTES, "a metrics slot each");

int bso_route_label(int slot, const char **route, const char **method)
{
    if (slot < 0 || (size_t)slot >= sizeof routes / sizeof routes[0])
        return 0;
    *route = routes[slot].label;
    *method = routes[slot].method;
    return 1;
}

/* Who sent the request (req->who), or false with a 401 (or 503) written. */
static bool authenticate(struct bso_request *req, struct bso_response *res)
{
    if (!req->auth) {
        req->who.admin = true;
        return true;
    }
    const char *header =
        MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    char msg[256];
    const int rc = bso_auth_check(req->auth, header, &req->who, msg, sizeof msg);
    if (rc == 0)
        return true;
    if (rc == BSO_EIO) {
        message(res, 503, msg);
    } else {
        message(res, 401, msg);
        res->bearer_challenge = true;
    }
    return false;
}

/* Matches path against pattern. "{}" stands for a job id, copied into seg: the id may contain
 * '/' (Zeus allows any string, and the path arrives unescaped), so it is whatever lies between
 * the pattern's prefix and suffix. */
static bool match(const char *pattern, const char *path, char *seg, size_t cap)
{
    const char *hole = strstr(pattern, "{}");
    if (!hole)
        return strcmp(pattern, path) == 0;
    const size_t pre = (size_t)(hole - pattern), post = strlen(hole + 2), len = strlen(path);
    if (len <= pre + post || strncmp(path, pattern, pre) != 0 ||
        strcmp(path + len - post, hole + 2) != 0)
        return false;
    const size_t n = len - pre - post;
    if (n >= cap)
        return false;
    memcpy(seg, path + pre, n);
    seg[n] = '\0';
    return true;
}

void bso_route(struct bso_request *req, struct bso_response *res)
{
    res->route = BSO_METRICS_UNROUTED;
    char seg[BSO_JOB_ID_MAX + 2];
    bool path_known = false;
    /* Exact paths first, so /jobs/batch_size is never taken for a job id. */
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < sizeof routes / sizeof *routes; i++) {
            const struct route *r = &routes[i];
            if ((strstr(r->pattern, "{}") != NULL) != (pass == 1))
                continue;
            if (!match(r->pattern, req->path, seg, sizeof seg))
                continue;
            path_known = true;
            if (strcmp(r->method, req->method) != 0)
                continue;
            req->segment = strstr(r->pattern, "{}") ? seg : NULL;
            res->route = (int)i;
            if (!r->open && !authenticate(req, res))
                return;
            r->handler(req, res);
            return;
        }
        if (path_known)
            break;
    }
    res->status = path_known ? 405 : 404;
    jb_obj(&res->body);
    jb_key(&res->body, "detail");
    jb_str(&res->body, path_known ? "Method Not Allowed" : "Not Found");
    jb_end(&res->body);
}
