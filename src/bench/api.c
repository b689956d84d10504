/* Zeus's BSO API for bso-bench; see api.h. */
#include "bench/api.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "bso/error.h"

static int check(int status)
{
    if (status < 0)
        return status;
    return status >= 200 && status < 300 ? 0 : BSO_EHTTP;
}

json_t *bso_api_json(struct bso_http *h)
{
    size_t len;
    const char *body = bso_http_body(h, &len);
    return json_loadb(body, len, 0, NULL);
}

int bso_api_register(struct bso_http *h, const char *spec_json)
{
    return check(bso_http_request(h, "POST", "/jobs", spec_json, strlen(spec_json)));
}

int bso_api_predict(struct bso_http *h, const char *job_id, int64_t *batch_size,
                    int64_t *trial_number)
{
    char path[320];
    snprintf(path, sizeof path, "/jobs/batch_size?job_id=%s", job_id);
    int rc = check(bso_http_request(h, "GET", path, NULL, 0));
    if (rc < 0)
        return rc;
    json_t *root = bso_api_json(h);
    json_t *bs = json_object_get(root, "batch_size"), *tn = json_object_get(root, "trial_number");
    rc = json_is_integer(bs) && json_is_integer(tn) ? 0 : BSO_EPARSE;
    if (rc == 0) {
        *batch_size = json_integer_value(bs);
        *trial_number = json_integer_value(tn);
    }
    json_decref(root);
    return rc;
}

int bso_api_report(struct bso_http *h, const char *job_id, int64_t batch_size, int64_t trial_number,
                   double time, double energy, double metric, int64_t epoch, bool *stop_train)
{
    char body[512];
    /* %.17g: the server stores exactly the doubles sent, so --verify can compare them. */
    const int n = snprintf(body, sizeof body,
                           "{\"job_id\": \"%s\", \"batch_size\": %" PRId64
                           ", \"trial_number\": %" PRId64 ", \"time\": %.17g, \"energy\": %.17g, "
                           "\"metric\": %.17g, \"current_epoch\": %" PRId64 "}",
                           job_id, batch_size, trial_number, time, energy, metric, epoch);
    int rc = check(bso_http_request(h, "POST", "/report", body, (size_t)n));
    if (rc < 0)
        return rc;
    json_t *root = bso_api_json(h);
    json_t *stop = json_object_get(root, "stop_train");
    rc = json_is_boolean(stop) ? 0 : BSO_EPARSE;
    if (rc == 0)
        *stop_train = json_is_true(stop);
    json_decref(root);
    return rc;
}

int bso_api_end_trial(struct bso_http *h, const char *job_id, int64_t batch_size,
                      int64_t trial_number)
{
    char body[384];
    const int n =
        snprintf(body, sizeof body,
                 "{\"job_id\": \"%s\", \"batch_size\": %" PRId64 ", \"trial_number\": %" PRId64 "}",
                 job_id, batch_size, trial_number);
    return check(bso_http_request(h, "PATCH", "/trials", body, (size_t)n));
}

int bso_api_get(struct bso_http *h, const char *path)
{
    return check(bso_http_request(h, "GET", path, NULL, 0));
}

const char *bso_api_errmsg(struct bso_http *h, int rc, char *buf, size_t cap)
{
    if (rc == BSO_EHTTP)
        snprintf(buf, cap, "HTTP %d: %.200s", bso_http_status(h), bso_http_body(h, NULL));
    else if (rc == BSO_EPARSE)
        snprintf(buf, cap, "an answer that is not what the API says: %.200s",
                 bso_http_body(h, NULL));
    else
        snprintf(buf, cap, "%s", bso_http_errmsg(h));
    return buf;
}
