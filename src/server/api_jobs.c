/* Jobs: registration (POST /jobs), a batch size for a new trial (GET /jobs/batch_size),
 * deletion, the job list and one job, reset and transfer. */
#include "server/handler.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "bso/error.h"
#include "core/pyfmt.h"
#include "server/metrics.h"
#include "server/service.h"

void bso_h_register(struct bso_request *req, struct bso_response *res)
{
    if (!bso_h_json_body_allowed(req, res))
        return;
    struct bso_job_spec spec;
    struct bso_details ds;
    if (bso_decode_spec(req->body, req->body_len, &spec, &ds) < 0) {
        bso_h_details(res, &ds);
        return;
    }
    snprintf(spec.tenant, sizeof spec.tenant, "%s", req->who.tenant);
    struct bso_session *s = bso_h_session(req, res);
    if (!s)
        return;
    char msg[BSO_SVC_MSG_MAX];
    bool created = false;
    struct bso_job_spec registered = {0}; /* the stored spec, when it differs from this one */
    /* transfer_from: the source is checked first, so that a bad one creates nothing. */
    int rc = spec.transfer_from[0] ? bso_svc_check_transfer_source(s, spec.transfer_from, msg) : 0;
    if (rc == 0)
        rc = bso_svc_register(s, &spec, req->cfg->default_policy, &created, &registered, msg);
    int64_t sizes = 0;
    if (rc == 0 && created && spec.transfer_from[0])
        rc = bso_svc_transfer(s, spec.job_id, spec.transfer_from, &sizes, msg);
    bool declared = false;
    if (rc == 0 && spec.data_version[0])
        rc = bso_svc_follow_data_version(s, spec.job_id, spec.data_version, &declared, msg);
    bso_session_release(s);
    if (rc == BSO_ECONFLICT &&
        registered.n_batch_sizes >
            0) { /* Zeus's message, and which fields differ with both values */
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
        bso_h_message(res, bso_h_status_of(rc, 400), msg);
        return;
    }
    if (created)
        log_info("Registered job %s", spec.job_id);
    if (created && spec.transfer_from[0])
        log_info("Job %s starts from job %s's epochs at %lld batch sizes", spec.job_id,
                 spec.transfer_from, (long long)sizes);
    if (declared)
        log_info("Job %s registered with data version %s, another than before: it changed",
                 spec.job_id, spec.data_version);
    res->status = created ? 201 : 200;
    bso_encode_spec(&res->body, &spec);
}

void bso_h_predict(struct bso_request *req, struct bso_response *res)
{
    const char *id = bso_h_job_id_param(req, res);
    struct bso_session *s = id ? bso_h_session(req, res) : NULL;
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
        bso_h_message(res, bso_h_status_of(rc, 400), msg);
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

void bso_h_delete_job(struct bso_request *req, struct bso_response *res)
{
    const char *id = bso_h_job_id_param(req, res);
    struct bso_session *s = id ? bso_h_session(req, res) : NULL;
    if (!s)
        return;
    char msg[BSO_SVC_MSG_MAX];
    int rc = bso_svc_delete(s, id, msg);
    bso_session_release(s);
    if (rc < 0) {
        bso_h_message(res, bso_h_status_of(rc, 404), msg);
        return;
    }
    log_info("Deleted job %s", id);
    jb_null(&res->body);
}

/* Whether the target is out of reach for now (bso_policy_out_of_reach): "target_out_of_reach"
 * {since_trial (the last success; null: none ever), trials (since then), refused (predictions
 * answered 409 since the last run), next_pass_after (for a job that never trained: how many
 * more 409s before its sizes run again; null otherwise)} or null; null too for a job not
 * loaded (NULL: a zeus-policy job, which that never judges). */
static void encode_reach(struct jbuf *b, const struct bso_job *job)
{
    int64_t since = 0;
    const int64_t trials = job ? bso_policy_out_of_reach(job, &since) : 0;
    jb_key(b, "target_out_of_reach");
    if (trials <= 0) {
        jb_null(b);
        return;
    }
    jb_obj(b);
    jb_key(b, "since_trial");
    if (since > 0)
        jb_int(b, since);
    else
        jb_null(b);
    jb_key(b, "trials");
    jb_int(b, trials);
    jb_key(b, "refused");
    jb_int(b, job->refusals);
    int64_t passes;
    const int64_t wanted = bso_policy_refusals_to_next_pass(job, &passes);
    jb_key(b, "next_pass_after");
    if (wanted >= 0)
        jb_int(b, wanted);
    else
        jb_null(b);
    jb_end(b);
}

/* The page of jobs GET /jobs lists, kept until each is loaded for what its summary lacks. */
struct job_page {
    struct bso_job_summary *rows;
    int64_t n, cap;
};

static int collect_job(void *ctx, const struct bso_job_summary *r)
{
    struct job_page *p = ctx;
    if (p->n == p->cap)
        return BSO_ERANGE; /* the store returned more than the limit */
    p->rows[p->n++] = *r;
    return 0;
}

/* One row of GET /jobs: the summary, and whether the job's target is out of reach (its
 * statistics, loaded with the job: the summary does not carry them). Only the bso policy
 * tells (bso_policy_out_of_reach): a zeus-policy job is not loaded for it. */
static int encode_job_row(struct jbuf *b, struct bso_session *s, const struct bso_job_summary *r)
{
    jb_obj(b);
    jb_key(b, "job_id");
    jb_str(b, r->job_id);
    jb_key(b, "gpu_model");
    jb_str(b, r->gpu_model);
    jb_key(b, "stage");
    jb_str(b, bso_stage_name(r->stage));
    jb_key(b, "trials");
    jb_int(b, r->n_trials);
    jb_key(b, "min_cost");
    if (r->has_min_cost)
        jb_float(b, r->min_cost);
    else
        jb_null(b);
    jb_key(b, "min_cost_batch_size");
    jb_int(b, r->min_cost_batch_size);
    jb_key(b, "created_at");
    jb_str(b, r->created_at);
    jb_key(b, "tenant");
    if (r->tenant[0])
        jb_str(b, r->tenant);
    else
        jb_null(b);
    jb_key(b, "policy");
    jb_str(b, bso_policy_name(r->policy));
    if (r->policy == BSO_POLICY_BSO) {
        struct bso_job job;
        const int rc = bso_session_load_job(s, r->job_id, 0, &job);
        if (rc < 0)
            return rc;
        encode_reach(b, &job);
        bso_job_clear(&job);
    } else {
        encode_reach(b, NULL);
    }
    jb_end(b);
    return 0;
}

void bso_h_list_jobs(struct bso_request *req, struct bso_response *res)
{
    int64_t limit;
    if (!bso_h_int_param(req, res, "limit", 1, 1000, 100, &limit))
        return;
    struct job_page page = {.rows = calloc((size_t)limit, sizeof *page.rows), .cap = limit};
    if (!page.rows) {
        bso_h_message(res, 500, "out of memory");
        return;
    }
    struct bso_session *s = bso_h_session(req, res);
    if (!s) {
        free(page.rows);
        return;
    }
    jb_obj(&res->body);
    jb_key(&res->body, "jobs");
    jb_arr(&res->body);
    int rc = bso_session_begin_read(s);
    if (rc == 0)
        rc = bso_session_list_jobs(s, bso_h_query(req, "after"), limit, collect_job, &page);
    for (int64_t k = 0; rc == 0 && k < page.n; k++)
        rc = encode_job_row(&res->body, s, &page.rows[k]);
    bso_session_rollback(s);
    if (rc < 0) {
        bso_h_unavailable(res, "list jobs", bso_session_errmsg(s));
        bso_session_release(s);
        free(page.rows);
        return;
    }
    bso_session_release(s);
    jb_end(&res->body);
    jb_key(&res->body, "next_after");
    if (page.n == limit)
        jb_str(&res->body, page.rows[page.n - 1].job_id);
    else
        jb_null(&res->body);
    jb_end(&res->body);
    free(page.rows);
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
        jb_key(b, "misses"); /* runs to max_epochs without reaching, since it last started over */
        jb_int(b, (int64_t)s->misses);
        jb_key(b, "mean_epochs");
        bso_h_jb_maybe(b, s->successes > 0 ? s->sum_epochs / (double)s->successes : NAN);
        jb_key(b, "cost_per_epoch");
        bso_h_jb_maybe(b, bso_bs_cost_per_epoch(s));
        jb_key(b, "expected_cost");
        bso_h_jb_maybe(b, bso_bs_expected_cost(s));
        jb_key(b, "estimated_cost_per_epoch"); /* what the policy assumes before measuring */
        bso_h_jb_maybe(b, bso_policy_epoch_cost(job, i));
        jb_key(b, "prior_epochs"); /* transferred from another job, until a run here reaches */
        bso_h_jb_maybe(b, s->prior_epochs > 0 ? s->prior_epochs : NAN);
        jb_key(b, "diverged"); /* its runs stopped past what the scaling laws allow */
        jb_bool(b, job->spec.policy == BSO_POLICY_BSO && bso_policy_diverged(job, i));
        jb_key(b, "change_evidence"); /* share of what says the job changed, from its runs */
        jb_float(b, bso_policy_change_evidence(job, i));
        jb_end(b);
    }
    jb_end(b);
}

/* "key": trial, or null where trial is 0 (none). */
static void trial_or_null(struct jbuf *b, const char *key, int64_t trial)
{
    jb_key(b, key);
    if (trial > 0)
        jb_int(b, trial);
    else
        jb_null(b);
}

/* Where the job came from (bso transfer) and when the bso policy last found that it changed:
 * "transferred_from" {job_id, batch_sizes, at} or null, "change_detected_at_trial" or null,
 * "change_declared_at_trial" (POST /jobs/ID/changed, until a run shows the change) or null,
 * "data_version" {version, since} (the last one registered) or null. */
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
    trial_or_null(b, "change_detected_at_trial", bso_policy_change_trial(job));
    trial_or_null(b, "change_declared_at_trial", bso_policy_declared_trial(job));
    struct bso_data_version v;
    const int vrc = bso_session_load_data_version(s, job->spec.job_id, &v);
    if (vrc < 0 && vrc != BSO_ENOTFOUND)
        return vrc;
    jb_key(b, "data_version");
    if (vrc == 0) {
        jb_obj(b);
        jb_key(b, "version");
        jb_str(b, v.version);
        jb_key(b, "since");
        jb_str(b, v.since);
        jb_end(b);
    } else {
        jb_null(b);
    }
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
    encode_reach(b, job);
    int rc = bso_h_encode_profile(b, s, &job->spec);
    if (rc == 0)
        rc = bso_h_encode_power(b, s, &job->spec);
    if (rc == 0)
        rc = encode_origin(b, s, job);
    jb_end(b);
    return rc;
}

void bso_h_get_job(struct bso_request *req, struct bso_response *res)
{
    struct bso_session *s = bso_h_session(req, res);
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
        bso_h_read_failed(res, s, rc, req->segment, "get job");
    bso_session_release(s);
}

/* POST /jobs/ID/reset: the job forgets what it learned; answers the job as GET /jobs/ID. */
void bso_h_reset_job(struct bso_request *req, struct bso_response *res)
{
    struct bso_session *s = bso_h_session(req, res);
    if (!s)
        return;
    char msg[BSO_SVC_MSG_MAX];
    const int rc = bso_svc_reset(s, req->segment, msg);
    bso_session_release(s);
    if (rc < 0) {
        bso_h_message(res, bso_h_status_of(rc, 404), msg);
        return;
    }
    log_info("Reset job %s: it explores again from its spec", req->segment);
    bso_h_get_job(req, res);
}

/* POST /jobs/ID/changed: the user says the job changed; answers the job as GET /jobs/ID. */
void bso_h_declare_change(struct bso_request *req, struct bso_response *res)
{
    struct bso_session *s = bso_h_session(req, res);
    if (!s)
        return;
    char msg[BSO_SVC_MSG_MAX];
    int64_t sizes;
    const int rc = bso_svc_declare_change(s, req->segment, &sizes, msg);
    bso_session_release(s);
    if (rc < 0) {
        bso_h_message(res, bso_h_status_of(rc, 404), msg);
        return;
    }
    log_info("Job %s changed, its user says: the next run at each of %lld batch sizes decides "
             "whether it matters there",
             req->segment, (long long)sizes);
    bso_h_get_job(req, res);
}

/* POST /jobs/ID/transfer {"from": OLD}: the job starts from OLD's per-size epochs (the same
 * workload on other hardware); answers the job as GET /jobs/ID. */
void bso_h_transfer(struct bso_request *req, struct bso_response *res)
{
    if (!bso_h_json_body_allowed(req, res))
        return;
    char from[BSO_JOB_ID_MAX + 1];
    struct bso_details ds;
    if (bso_decode_transfer(req->body, req->body_len, from, sizeof from, &ds) < 0) {
        bso_h_details(res, &ds);
        return;
    }
    struct bso_session *s = bso_h_session(req, res);
    if (!s)
        return;
    char msg[BSO_SVC_MSG_MAX];
    int64_t sizes;
    const int rc = bso_svc_transfer(s, req->segment, from, &sizes, msg);
    bso_session_release(s);
    if (rc < 0) {
        bso_h_message(res, bso_h_status_of(rc, 404), msg);
        return;
    }
    log_info("Job %s starts from job %s's epochs at %lld batch sizes", req->segment, from,
             (long long)sizes);
    bso_h_get_job(req, res);
}
