/* Zeus's BSO API for bso-bench; see api.h. */
#include "bench/api.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
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

/* snprintf's length, or BSO_ERANGE when it did not fit. */
static int fitted(int n, size_t cap)
{
    return n < 0 || (size_t)n >= cap ? BSO_ERANGE : n;
}

int bso_api_predict_path(char *buf, size_t cap, const char *job_id)
{
    return fitted(snprintf(buf, cap, "/jobs/batch_size?job_id=%s", job_id), cap);
}

int bso_api_report_body(char *buf, size_t cap, const char *job_id, int64_t batch_size,
                        int64_t trial_number, double time, double energy, double metric,
                        int64_t epoch)
{
    /* %.17g: the server stores exactly the doubles sent, so --verify can compare them. */
    return fitted(snprintf(buf, cap,
                           "{\"job_id\": \"%s\", \"batch_size\": %" PRId64
                           ", \"trial_number\": %" PRId64 ", \"time\": %.17g, \"energy\": %.17g, "
                           "\"metric\": %.17g, \"current_epoch\": %" PRId64 "}",
                           job_id, batch_size, trial_number, time, energy, metric, epoch),
                  cap);
}

int bso_api_end_trial_body(char *buf, size_t cap, const char *job_id, int64_t batch_size,
                           int64_t trial_number)
{
    return fitted(snprintf(buf, cap,
                           "{\"job_id\": \"%s\", \"batch_size\": %" PRId64
                           ", \"trial_number\": %" PRId64 "}",
                           job_id, batch_size, trial_number),
                  cap);
}

/* The value after "key": in a flat JSON object (the first such key), or NULL. The answers read
 * here are small flat objects whose keys come before any free text. */
static const char *value_of(const char *body, const char *key)
{
    const size_t n = strlen(key);
    for (const char *p = strchr(body, '"'); p; p = strchr(p + 1, '"')) {
        if (strncmp(p + 1, key, n) != 0 || p[n + 1] != '"')
            continue;
        const char *v = p + n + 2;
        while (*v == ' ' || *v == '\t' || *v == '\n' || *v == '\r')
            v++;
        if (*v++ != ':')
            return NULL;
        while (*v == ' ' || *v == '\t' || *v == '\n' || *v == '\r')
            v++;
        return v;
    }
    return NULL;
}

static bool integer_of(const char *body, const char *key, int64_t *out)
{
    const char *v = value_of(body, key);
    char *end;
    if (!v || !(*v == '-' || (*v >= '0' && *v <= '9')))
        return false;
    errno = 0;
    const long long x = strtoll(v, &end, 10);
    if (errno || (*end != ',' && *end != '}' && *end != ' ' && *end != '\n'))
        return false;
    *out = x;
    return true;
}

int bso_api_read_predict(const char *body, int64_t *batch_size, int64_t *trial_number)
{
    return integer_of(body, "batch_size", batch_size) &&
                   integer_of(body, "trial_number", trial_number)
               ? 0
               : BSO_EPARSE;
}

int bso_api_read_report(const char *body, bool *stop_train)
{
    const char *v = value_of(body, "stop_train");
    if (v && strncmp(v, "true", 4) == 0)
        *stop_train = true;
    else if (v && strncmp(v, "false", 5) == 0)
        *stop_train = false;
    else
        return BSO_EPARSE;
    return 0;
}

int bso_api_predict(struct bso_http *h, const char *job_id, int64_t *batch_size,
                    int64_t *trial_number)
{
    char path[320];
    if (bso_api_predict_path(path, sizeof path, job_id) < 0)
        return BSO_ERANGE;
    const int rc = check(bso_http_request(h, "GET", path, NULL, 0));
    return rc < 0 ? rc : bso_api_read_predict(bso_http_body(h, NULL), batch_size, trial_number);
}

int bso_api_report(struct bso_http *h, const char *job_id, int64_t batch_size, int64_t trial_number,
                   double time, double energy, double metric, int64_t epoch, bool *stop_train)
{
    char body[512];
    const int n = bso_api_report_body(body, sizeof body, job_id, batch_size, trial_number, time,
                                      energy, metric, epoch);
    if (n < 0)
        return n;
    const int rc = check(bso_http_request(h, "POST", "/report", body, (size_t)n));
    return rc < 0 ? rc : bso_api_read_report(bso_http_body(h, NULL), stop_train);
}

int bso_api_end_trial(struct bso_http *h, const char *job_id, int64_t batch_size,
                      int64_t trial_number)
{
    char body[384];
    const int n = bso_api_end_trial_body(body, sizeof body, job_id, batch_size, trial_number);
    if (n < 0)
        return n;
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
