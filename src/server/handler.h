/*
 * What the handlers (api_*.c) share, and the handlers themselves for the route table
 * (routes.c). Each handler fills a response from a request; none fails: errors are answers.
 */
#ifndef BSO_SERVER_HANDLER_H
#define BSO_SERVER_HANDLER_H

#include <stdbool.h>
#include <stdint.h>

#include "core/spec.h"
#include "server/codec.h"
#include "server/routes.h"
#include "store/store.h"

void bso_h_message(struct bso_response *res, unsigned status, const char *msg);

void bso_h_details(struct bso_response *res, const struct bso_details *ds);

/* The database failed: the client gets a generic 503, the log gets the details. */
void bso_h_unavailable(struct bso_response *res, const char *what, const char *detail);

/* The end of a read endpoint that failed with rc: 404 for an unknown job, else 503. */
void bso_h_read_failed(struct bso_response *res, struct bso_session *s, int rc, const char *job_id,
                       const char *what);

/* 422 for one query parameter. */
void bso_h_query_error(struct bso_response *res, const char *name, const char *type,
                       const char *msg);

/* The HTTP status for a service failure; `unknown` is what this endpoint answers for an unknown
 * job or trial (Zeus uses 400 on some endpoints and 404 on others). */
unsigned bso_h_status_of(int rc, unsigned unknown);

/* A session for this request, seeing only the jobs its sender may see, or a 503 already
 * written. */
struct bso_session *bso_h_session(struct bso_request *req, struct bso_response *res);

/* Zeus's client sends JSON with no Content-Type; a JSON type is fine too. So is curl's default
 * form type (`curl -d '{...}'`), which FastAPI would refuse: a convenience, as the body must
 * still be JSON. Anything else (text/plain, ...) is not a dict, as in FastAPI. */
bool bso_h_json_body_allowed(struct bso_request *req, struct bso_response *res);

/* Decodes a POST /report or PATCH /trials body (codec.h). */
typedef int (*bso_h_trial_decoder)(const char *body, size_t len, struct bso_report_req *r,
                                   struct bso_details *ds);

/* The common start of POST /report and PATCH /trials: an acceptable body, decoded, and a
 * session. NULL when a response (422, 503) is already written. */
struct bso_session *bso_h_trial_request(struct bso_request *req, struct bso_response *res,
                                        bso_h_trial_decoder decode, struct bso_report_req *r);

const char *bso_h_query(struct bso_request *req, const char *key);

/* The required job_id query parameter, or a 422 written. */
const char *bso_h_job_id_param(struct bso_request *req, struct bso_response *res);

/* An integer query parameter in [min, max], or def when absent; false with a 422 written. */
bool bso_h_int_param(struct bso_request *req, struct bso_response *res, const char *name,
                     int64_t min, int64_t max, int64_t def, int64_t *out);

struct list_ctx {
    struct jbuf *b;
    int64_t rows;
    int64_t last_number;
    const struct bso_job_spec *spec;
};

/* Number or null (unknown). */
void bso_h_jb_maybe(struct jbuf *b, double v);

void bso_h_register(struct bso_request *req, struct bso_response *res);

void bso_h_predict(struct bso_request *req, struct bso_response *res);

void bso_h_delete_job(struct bso_request *req, struct bso_response *res);

void bso_h_list_jobs(struct bso_request *req, struct bso_response *res);

void bso_h_get_job(struct bso_request *req, struct bso_response *res);

/* POST /jobs/ID/reset: the job forgets what it learned; answers the job as GET /jobs/ID. */
void bso_h_reset_job(struct bso_request *req, struct bso_response *res);

/* POST /jobs/ID/transfer {"from": OLD}: the job starts from OLD's per-size epochs (the same
 * workload on other hardware); answers the job as GET /jobs/ID. */
void bso_h_transfer(struct bso_request *req, struct bso_response *res);

/* POST /jobs/ID/changed: the user says the job changed (bso_svc_declare_change); answers the
 * job as GET /jobs/ID. */
void bso_h_declare_change(struct bso_request *req, struct bso_response *res);

void bso_h_report(struct bso_request *req, struct bso_response *res);

void bso_h_end_trial(struct bso_request *req, struct bso_response *res);

void bso_h_list_trials(struct bso_request *req, struct bso_response *res);

/* "profile": [...] and "unfit_batch_sizes": [...], inside an open object (a read
 * transaction is open on s). */
int bso_h_encode_profile(struct jbuf *b, struct bso_session *s, const struct bso_job_spec *sp);

/* "power_profiles": [...], inside an open object (a read transaction is open on s). */
int bso_h_encode_power(struct jbuf *b, struct bso_session *s, const struct bso_job_spec *sp);

/* POST /jobs/ID/profile: a probe's measurements; answers the stored profile and the sizes
 * that do not fit. */
void bso_h_profile(struct bso_request *req, struct bso_response *res);

/* POST /jobs/ID/power: a run's power-limit profile of one batch size; answers the job's
 * profiles. */
void bso_h_power(struct bso_request *req, struct bso_response *res);

void bso_h_healthz(struct bso_request *req, struct bso_response *res);

void bso_h_readyz(struct bso_request *req, struct bso_response *res);

void bso_h_version(struct bso_request *req, struct bso_response *res);

/* GET /metrics: Prometheus text (metrics.h); the database part is left out, with a 200 still,
 * when the database does not answer, so a scrape shows the errors. */
void bso_h_metrics(struct bso_request *req, struct bso_response *res);

/* GET /ui and /ui/FILE: the dashboard's files, embedded in the binary (ui_assets.h). They hold
 * no data: the page reads the API with the browser's token, so they are served to anyone. */
void bso_h_ui(struct bso_request *req, struct bso_response *res);

#endif
