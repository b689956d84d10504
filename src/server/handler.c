/* What every endpoint's handler uses: JSON answers and errors, the request's session, query
 * parameters and body checks (handler.h). */
#include "server/handler.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bso/error.h"
#include "server/metrics.h"
#include "server/service.h"

void bso_h_message(struct bso_response *res, unsigned status, const char *msg)
{
    res->status = status;
    jb_obj(&res->body);
    jb_key(&res->body, "message");
    jb_str(&res->body, msg);
    jb_end(&res->body);
}

void bso_h_details(struct bso_response *res, const struct bso_details *ds)
{
    res->status = 422;
    bso_encode_details(&res->body, ds);
}

/* The database failed: the client gets a generic 503, the log gets the details. */
void bso_h_unavailable(struct bso_response *res, const char *what, const char *detail)
{
    log_error("%s: %s", what, detail);
    bso_metrics_db_error();
    jb_free(&res->body);
    bso_h_message(res, 503, "The database is unavailable; try again.");
}

/* The end of a read endpoint that failed with rc: 404 for an unknown job, else 503. */
void bso_h_read_failed(struct bso_response *res, struct bso_session *s, int rc, const char *job_id,
                       const char *what)
{
    if (rc == BSO_ENOTFOUND) {
        char msg[BSO_SVC_MSG_MAX];
        jb_free(&res->body);
        snprintf(msg, sizeof msg, "Unknown job(%s).", job_id);
        bso_h_message(res, 404, msg);
    } else {
        bso_h_unavailable(res, what, bso_session_errmsg(s));
    }
}

/* 422 for one query parameter. */
void bso_h_query_error(struct bso_response *res, const char *name, const char *type,
                       const char *msg)
{
    struct bso_details ds = {0};
    bso_details_add(&ds, "query", name, -1, type, msg);
    bso_h_details(res, &ds);
}

/* The HTTP status for a service failure; `unknown` is what this endpoint answers for an unknown
 * job or trial (Zeus uses 400 on some endpoints and 404 on others). */
unsigned bso_h_status_of(int rc, unsigned unknown)
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
struct bso_session *bso_h_session(struct bso_request *req, struct bso_response *res)
{
    struct bso_session *s;
    if (bso_store_session(req->store, &s) == 0) {
        bso_session_set_scope(s, req->who.admin ? NULL : req->who.tenant);
        return s;
    }
    bso_h_unavailable(res, "session", "cannot open a database session");
    return NULL;
}

/* Zeus's client sends JSON with no Content-Type; a JSON type is fine too. So is curl's default
 * form type (`curl -d '{...}'`), which FastAPI would refuse: a convenience, as the body must
 * still be JSON. Anything else (text/plain, ...) is not a dict, as in FastAPI. */
bool bso_h_json_body_allowed(struct bso_request *req, struct bso_response *res)
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
    bso_h_details(res, &ds);
    return false;
}

/* The common start of POST /report and PATCH /trials: an acceptable body, decoded, and a
 * session. NULL when a response (422, 503) is already written. */
struct bso_session *bso_h_trial_request(struct bso_request *req, struct bso_response *res,
                                        bso_h_trial_decoder decode, struct bso_report_req *r)
{
    struct bso_details ds;
    if (!bso_h_json_body_allowed(req, res))
        return NULL;
    if (decode(req->body, req->body_len, r, &ds) < 0) {
        bso_h_details(res, &ds);
        return NULL;
    }
    return bso_h_session(req, res);
}

const char *bso_h_query(struct bso_request *req, const char *key)
{
    return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, key);
}

/* The required job_id query parameter, or a 422 written. */
const char *bso_h_job_id_param(struct bso_request *req, struct bso_response *res)
{
    const char *id = bso_h_query(req, "job_id");
    if (!id)
        bso_h_query_error(res, "job_id", "value_error.missing", "field required");
    return id;
}

/* An integer query parameter in [min, max], or def when absent; false with a 422 written. */
bool bso_h_int_param(struct bso_request *req, struct bso_response *res, const char *name,
                     int64_t min, int64_t max, int64_t def, int64_t *out)
{
    const char *v = bso_h_query(req, name);
    *out = def;
    if (!v)
        return true;
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (*v == '\0' || *end != '\0' || errno) {
        bso_h_query_error(res, name, "type_error.integer", "value is not a valid integer");
        return false;
    }
    if (n < min || n > max) {
        char msg[96];
        snprintf(msg, sizeof msg, "ensure this value is between %" PRId64 " and %" PRId64, min,
                 max);
        bso_h_query_error(res, name, "value_error.number.not_in_range", msg);
        return false;
    }
    *out = n;
    return true;
}

/* Number or null (unknown). */
void bso_h_jb_maybe(struct jbuf *b, double v)
{
    if (isfinite(v))
        jb_float(b, v);
    else
        jb_null(b);
}
