/* Device profiles (POST /jobs/ID/profile) and power-limit profiles (POST /jobs/ID/power),
 * and their part of GET /jobs/ID. */
#include "server/handler.h"

#include <stdlib.h>

#include "server/service.h"

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
    bso_h_jb_maybe(b, e->samples_per_s);
    jb_key(b, "joules_per_sample");
    bso_h_jb_maybe(b, e->joules_per_sample);
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
int bso_h_encode_profile(struct jbuf *b, struct bso_session *s, const struct bso_job_spec *sp)
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
        bso_h_jb_maybe(b, bso_power_cost_per_sample(&p->points[i], c->eta, c->max_power));
        jb_end(b);
    }
    jb_end(b);
    jb_end(b);
    return 0;
}

/* "power_profiles": [...], inside an open object (a read transaction is open on s). */
int bso_h_encode_power(struct jbuf *b, struct bso_session *s, const struct bso_job_spec *sp)
{
    struct power_ctx c = {b, sp->eta_knob, sp->max_power};
    jb_key(b, "power_profiles");
    jb_arr(b);
    const int rc = bso_session_list_power(s, sp->job_id, power_row, &c);
    jb_end(b);
    return rc;
}

/* POST /jobs/ID/profile: a probe's measurements; answers the stored profile and the sizes
 * that do not fit. */
void bso_h_profile(struct bso_request *req, struct bso_response *res)
{
    if (!bso_h_json_body_allowed(req, res))
        return;
    struct bso_profile_entry *e = calloc(BSO_MAX_BATCH_SIZES, sizeof *e);
    struct bso_details ds;
    size_t n = 0;
    if (!e) {
        bso_h_message(res, 503, "The server is out of memory.");
        return;
    }
    if (bso_decode_profile(req->body, req->body_len, e, &n, &ds) < 0) {
        bso_h_details(res, &ds);
        free(e);
        return;
    }
    struct bso_session *s = bso_h_session(req, res);
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
        bso_h_message(res, bso_h_status_of(rc, 404), msg);
        return;
    }
    jb_obj(&res->body);
    jb_key(&res->body, "job_id");
    jb_str(&res->body, spec.job_id);
    if ((rc = bso_session_begin_read(s)) == 0)
        rc = bso_h_encode_profile(&res->body, s, &spec);
    bso_session_rollback(s);
    jb_end(&res->body);
    if (rc < 0)
        bso_h_unavailable(res, "profile", bso_session_errmsg(s));
    bso_session_release(s);
}

/* POST /jobs/ID/power: a run's power-limit profile of one batch size; answers the job's
 * profiles. */
void bso_h_power(struct bso_request *req, struct bso_response *res)
{
    if (!bso_h_json_body_allowed(req, res))
        return;
    struct bso_power_profile p;
    struct bso_details ds;
    if (bso_decode_power(req->body, req->body_len, &p, &ds) < 0) {
        bso_h_details(res, &ds);
        return;
    }
    struct bso_session *s = bso_h_session(req, res);
    if (!s)
        return;
    char msg[BSO_SVC_MSG_MAX];
    struct bso_job_spec spec;
    int rc = bso_svc_power(s, req->segment, &p, &spec, msg);
    if (rc < 0) {
        bso_session_release(s);
        bso_h_message(res, bso_h_status_of(rc, 404), msg);
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
        rc = bso_h_encode_power(&res->body, s, &spec);
    bso_session_rollback(s);
    jb_end(&res->body);
    if (rc < 0)
        bso_h_unavailable(res, "power", bso_session_errmsg(s));
    bso_session_release(s);
}
