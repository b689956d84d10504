/* Trials: progress reports (POST /report), ending a trial (PATCH /trials) and the trial
 * list (GET /jobs/ID/trials). */

#include "server/handler.h"

#include "core/cost.h"
#include "server/service.h"

void bso_h_report(struct bso_request *req, struct bso_response *res)
{
    struct bso_report_req r;
    struct bso_session *s = bso_h_trial_request(req, res, bso_decode_report, &r);
    if (!s)
        return;
    char msg[BSO_SVC_MSG_MAX];
    struct bso_decision d;
    struct bso_trial_key key = {r.job_id, r.batch_size, r.trial_number};
    int rc = bso_svc_report(s, &key, &r.report, &d, msg);
    bso_session_release(s);
    if (rc < 0) {
        bso_h_message(res, bso_h_status_of(rc, 400), msg);
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

void bso_h_end_trial(struct bso_request *req, struct bso_response *res)
{
    struct bso_report_req r;
    struct bso_session *s = bso_h_trial_request(req, res, bso_decode_trial_id, &r);
    if (!s)
        return;
    char msg[BSO_SVC_MSG_MAX];
    struct bso_trial_key key = {r.job_id, r.batch_size, r.trial_number};
    int rc = bso_svc_end_trial(s, &key, msg);
    bso_session_release(s);
    if (rc < 0)
        bso_h_message(res, bso_h_status_of(rc, 404), msg);
    else
        jb_null(&res->body);
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

void bso_h_list_trials(struct bso_request *req, struct bso_response *res)
{
    int64_t limit, after;
    if (!bso_h_int_param(req, res, "limit", 1, 1000, 100, &limit) ||
        !bso_h_int_param(req, res, "after", 0, INT64_MAX, 0, &after))
        return;
    struct bso_session *s = bso_h_session(req, res);
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
        bso_h_read_failed(res, s, rc, req->segment, "list trials");
    bso_session_release(s);
}
