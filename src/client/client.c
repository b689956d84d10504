/* libbso's HTTP client over libcurl; see include/bso/client.h. */
#include "bso/client.h"

#include "client/answer.h"

#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct bso_client {
    CURL *curl;
    /* The servers (replicas) to talk to, each without a trailing slash, and as messages show
     * them (credentials, http://TOKEN@host, hidden); `current` is the one in use. */
    char **bases, **shown;
    size_t n_bases, current;
    long timeout_ms;
    int retries;
    int status;
    char *auth_header; /* "Authorization: Bearer ...", or NULL */
    char *cacert;      /* CA file for https, or NULL for the system's */
    char *body;        /* last answer */
    size_t len, cap;
    bool oom;
    char errmsg[BSO_CLIENT_MSG_MAX + 128];
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_init_once(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

__attribute__((format(printf, 3, 4))) static int fail(bso_client *c, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->errmsg, sizeof c->errmsg, fmt, ap);
    va_end(ap);
    return code;
}

/* url with its userinfo (a token, or user:password) replaced by "***"; the caller frees it. */
static char *without_userinfo(const char *url)
{
    const char *host = strstr(url, "//");
    host = host ? host + 2 : url;
    const char *end = host + strcspn(host, "/?#");
    const char *at = NULL;
    for (const char *p = host; p < end; p++)
        if (*p == '@')
            at = p;
    const size_t n = strlen(url) + 4;
    char *out = malloc(n);
    if (out && at)
        snprintf(out, n, "%.*s***%s", (int)(host - url), url, at);
    else if (out)
        snprintf(out, n, "%s", url);
    return out;
}

/* server_url as a comma-separated list of servers: "http://a:8000,http://b:8000". */
static int split_servers(bso_client *c, const char *server_url)
{
    size_t most = 1;
    for (const char *p = server_url; *p; p++)
        most += *p == ',';
    c->bases = calloc(most, sizeof *c->bases);
    c->shown = calloc(most, sizeof *c->shown);
    if (!c->bases || !c->shown)
        return BSO_ENOMEM;
    for (const char *p = server_url; *p;) {
        const size_t len = strcspn(p, ",");
        const char *s = p, *e = p + len;
        p = *e ? e + 1 : e;
        while (s < e && (*s == ' ' || *s == '\t'))
            s++;
        while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '/'))
            e--;
        if (s == e)
            continue; /* an empty entry ("a,,b", a trailing comma) */
        char *base = strndup(s, (size_t)(e - s));
        char *shown = base ? without_userinfo(base) : NULL;
        if (!shown) {
            free(base);
            return BSO_ENOMEM;
        }
        c->bases[c->n_bases] = base;
        c->shown[c->n_bases++] = shown;
    }
    return c->n_bases > 0 ? 0 : BSO_EINVAL;
}

int bso_client_new(const char *server_url, bso_client **out)
{
    if (!server_url || !*server_url)
        return BSO_EINVAL;
    pthread_once(&curl_once, curl_init_once);
    bso_client *c = calloc(1, sizeof(*c));
    if (!c)
        return BSO_ENOMEM;
    c->curl = curl_easy_init();
    int rc = c->curl ? split_servers(c, server_url) : BSO_ENOMEM;
    if (rc < 0) {
        bso_client_free(c);
        return rc;
    }
    c->timeout_ms = 10000;
    c->retries = 3;
    if (bso_client_set_token(c, getenv("BSO_TOKEN")) < 0 ||
        bso_client_set_cacert(c, getenv("BSO_CACERT")) < 0) {
        bso_client_free(c);
        return BSO_ENOMEM;
    }
    *out = c;
    return 0;
}

/* Replaces *slot with a copy of v (NULL for NULL or ""). */
static int set_text(char **slot, const char *prefix, const char *v)
{
    char *copy = NULL;
    if (v && *v) {
        const size_t n = strlen(prefix) + strlen(v) + 1;
        if (!(copy = malloc(n)))
            return BSO_ENOMEM;
        snprintf(copy, n, "%s%s", prefix, v);
    }
    free(*slot);
    *slot = copy;
    return 0;
}

int bso_client_set_token(bso_client *c, const char *token)
{
    if (token && strpbrk(token, "\r\n"))
        return BSO_EINVAL; /* it goes into a header line */
    return set_text(&c->auth_header, "Authorization: Bearer ", token);
}

int bso_client_set_cacert(bso_client *c, const char *path)
{
    return set_text(&c->cacert, "", path);
}

void bso_client_free(bso_client *c)
{
    if (!c)
        return;
    if (c->curl)
        curl_easy_cleanup(c->curl);
    for (size_t i = 0; i < c->n_bases; i++) {
        free(c->bases[i]);
        free(c->shown[i]);
    }
    free(c->bases);
    free(c->shown);
    free(c->auth_header);
    free(c->cacert);
    free(c->body);
    free(c);
}

void bso_client_set_timeout_ms(bso_client *c, long ms)
{
    c->timeout_ms = ms > 0 ? ms : 10000;
}

void bso_client_set_retries(bso_client *c, int retries)
{
    c->retries = retries >= 0 ? retries : 0;
}

const char *bso_client_errmsg(const bso_client *c)
{
    return c->errmsg;
}

int bso_client_http_status(const bso_client *c)
{
    return c->status;
}

const char *bso_client_body(const bso_client *c)
{
    return c->body ? c->body : "";
}

static size_t on_data(char *data, size_t size, size_t n, void *userp)
{
    bso_client *c = userp;
    size_t got = size * n;
    if (c->len + got + 1 > c->cap) {
        size_t cap = c->cap ? c->cap : 4096;
        while (cap < c->len + got + 1)
            cap *= 2;
        char *g = realloc(c->body, cap);
        if (!g) {
            c->oom = true;
            return 0;
        }
        c->body = g;
        c->cap = cap;
    }
    memcpy(c->body + c->len, data, got);
    c->len += got;
    c->body[c->len] = '\0';
    return got;
}

/* A failure that says nothing of the request but that this server could not be reached or
 * did not answer: the next server of the list is tried. */
static bool unreachable(CURLcode cc, int status)
{
    return cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST ||
           cc == CURLE_OPERATION_TIMEDOUT || cc == CURLE_SEND_ERROR || cc == CURLE_RECV_ERROR ||
           cc == CURLE_GOT_NOTHING || status == 502 || status == 503 || status == 504;
}

/* Whether a failure may be retried: never-sent requests always, others when idempotent. */
static bool retryable(CURLcode cc, int status, bool idempotent)
{
    if (cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST)
        return true;
    return idempotent && unreachable(cc, status);
}

/* The failed exchange's error, with the server's explanation when it gave one. */
static void server_error(bso_client *c, const char *method, const char *path)
{
    char msg[BSO_CLIENT_MSG_MAX];
    bso_answer_error(c->body, msg, sizeof msg);
    fail(c, BSO_EHTTP, "%s %s: HTTP %d: %s", method, path, c->status, msg);
}

/* One HTTP exchange with retries. body may be NULL. 0 on a 2xx answer. */
static int call(bso_client *c, const char *method, const char *path, const char *body,
                bool idempotent)
{
    char url[4096];
    struct curl_slist *headers = NULL;
    headers = curl_slist_append(headers, "Content-Type: application/json");
    headers = curl_slist_append(headers, "Expect:"); /* no 100-continue round trip */
    if (c->auth_header)
        headers = curl_slist_append(headers, c->auth_header);
    int rc = 0;
    /* Each server once more than the retries: with several, a connection that fails moves to
     * the next at once. A request that may have reached a server is resent only when it is
     * idempotent (reports are, per trial: a replica that gets one twice stores it once). */
    const int attempts = c->retries + (int)c->n_bases - 1;
    for (int attempt = 0;; attempt++) {
        const size_t server = c->current;
        snprintf(url, sizeof url, "%s%s", c->bases[server], path);
        c->len = 0;
        c->status = 0;
        c->oom = false;
        if (c->body)
            c->body[0] = '\0';
        CURL *h = c->curl;
        curl_easy_reset(h);
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->timeout_ms);
        curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->timeout_ms);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, c);
        if (c->cacert)
            curl_easy_setopt(h, CURLOPT_CAINFO, c->cacert);
        if (body) {
            curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
            curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
        }
        CURLcode cc = curl_easy_perform(h);
        long status = 0;
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
        c->status = (int)status;
        if (c->oom) {
            rc = fail(c, BSO_ENOMEM, "out of memory reading the answer");
            break;
        }
        if (cc == CURLE_OK && status >= 200 && status < 300) {
            rc = 0;
            break;
        }
        const bool moved = c->n_bases > 1 && unreachable(cc, c->status);
        if (moved)
            c->current = (server + 1) % c->n_bases;
        if (attempt < attempts && retryable(cc, c->status, idempotent)) {
            if (!moved || c->current == 0) { /* the same server again: pause first */
                struct timespec pause = {0, 100000000L << (attempt < 4 ? attempt : 4)};
                if (pause.tv_nsec >= 1000000000L) {
                    pause.tv_sec = pause.tv_nsec / 1000000000L;
                    pause.tv_nsec %= 1000000000L;
                }
                nanosleep(&pause, NULL);
            }
            continue;
        }
        if (cc != CURLE_OK) {
            rc = fail(c, BSO_ENET, "%s %s%s: %s", method, c->shown[server], path,
                      curl_easy_strerror(cc));
        } else {
            server_error(c, method, path);
            rc = BSO_EHTTP;
        }
        break;
    }
    curl_slist_free_all(headers);
    return rc;
}

/* Escapes a job id for a query string. */
static int query_id(bso_client *c, const char *prefix, const char *job_id, char *path, size_t cap)
{
    char *esc = curl_easy_escape(c->curl, job_id, 0);
    if (!esc)
        return fail(c, BSO_ENOMEM, "out of memory");
    int n = snprintf(path, cap, "%s%s", prefix, esc);
    curl_free(esc);
    if (n < 0 || (size_t)n >= cap)
        return fail(c, BSO_EINVAL, "job id too long");
    return 0;
}

int bso_client_register(bso_client *c, const char *spec_json, char *job_id, bool *created)
{
    json_t *spec = json_loads(spec_json ? spec_json : "", 0, NULL);
    if (!json_is_object(spec)) {
        json_decref(spec);
        return fail(c, BSO_EINVAL, "the job specification is not a JSON object");
    }
    /* With an explicit id, registering again is harmless: safe to retry. */
    const bool has_id = json_is_string(json_object_get(spec, "job_id"));
    json_decref(spec);
    int rc = call(c, "POST", "/jobs", spec_json, has_id);
    if (rc < 0)
        return rc;
    if ((rc = bso_answer_register(bso_client_body(c), job_id, c->errmsg, sizeof c->errmsg)) < 0)
        return rc;
    *created = c->status == 201;
    return 0;
}

int bso_client_next(bso_client *c, const char *job_id, int64_t *batch_size, int64_t *trial_number)
{
    char path[1024];
    int rc = query_id(c, "/jobs/batch_size?job_id=", job_id, path, sizeof path);
    if (rc < 0 || (rc = call(c, "GET", path, NULL, false)) < 0)
        return rc;
    return bso_answer_next(bso_client_body(c), batch_size, trial_number, c->errmsg,
                           sizeof c->errmsg);
}

/* The JSON body naming a trial, plus the report fields when rep is given. */
static char *trial_body(const char *job_id, int64_t bs, int64_t number, const double *rep,
                        int64_t epoch, const char *energy_source,
                        const struct bso_run_progress *progress)
{
    json_t *o =
        rep ? json_pack("{s:s, s:I, s:I, s:f, s:f, s:f, s:I}", "job_id", job_id, "batch_size",
                        (json_int_t)bs, "trial_number", (json_int_t)number, "time", rep[0],
                        "energy", rep[1], "metric", rep[2], "current_epoch", (json_int_t)epoch)
            : json_pack("{s:s, s:I, s:I}", "job_id", job_id, "batch_size", (json_int_t)bs,
                        "trial_number", (json_int_t)number);
    if (o && energy_source)
        json_object_set_new(o, "energy_source", json_string(energy_source));
    if (o && progress) {
        json_object_set_new(o, "samples", json_integer((json_int_t)progress->samples));
        json_object_set_new(o, "mean_batch_size", json_real(progress->mean_batch_size));
    }
    char *text = o ? json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
    json_decref(o);
    return text;
}

int bso_client_report(bso_client *c, const char *job_id, int64_t batch_size, int64_t trial_number,
                      double time_s, double energy_j, double metric, int64_t epoch,
                      const char *energy_source, struct bso_report_answer *out)
{
    return bso_client_report_progress(c, job_id, batch_size, trial_number, time_s, energy_j, metric,
                                      epoch, energy_source, NULL, out);
}

int bso_client_report_progress(bso_client *c, const char *job_id, int64_t batch_size,
                               int64_t trial_number, double time_s, double energy_j, double metric,
                               int64_t epoch, const char *energy_source,
                               const struct bso_run_progress *progress,
                               struct bso_report_answer *out)
{
    if (progress && !(progress->samples >= 0 && progress->mean_batch_size > 0 &&
                      isfinite(progress->mean_batch_size)))
        return fail(c, BSO_EINVAL, "report: progress needs samples >= 0 and a mean batch size > 0");
    const double rep[3] = {time_s, energy_j, metric};
    char *body = trial_body(job_id, batch_size, trial_number, rep, epoch, energy_source, progress);
    if (!body)
        return fail(c, BSO_EINVAL, "report: numbers JSON cannot carry (NaN or infinity?)");
    /* The server ignores repeats of a final report and stores nothing for others. */
    int rc = call(c, "POST", "/report", body, true);
    free(body);
    if (rc < 0)
        return rc;
    return bso_answer_report(bso_client_body(c), out, c->errmsg, sizeof c->errmsg);
}

int bso_client_end_trial(bso_client *c, const char *job_id, int64_t batch_size,
                         int64_t trial_number)
{
    char *body = trial_body(job_id, batch_size, trial_number, NULL, 0, NULL, NULL);
    if (!body)
        return fail(c, BSO_ENOMEM, "out of memory");
    int rc = call(c, "PATCH", "/trials", body, true);
    free(body);
    return rc;
}

int bso_client_delete(bso_client *c, const char *job_id)
{
    char path[1024];
    int rc = query_id(c, "/jobs?job_id=", job_id, path, sizeof path);
    return rc < 0 ? rc : call(c, "DELETE", path, NULL, true);
}

int bso_client_get(bso_client *c, const char *path)
{
    if (!path || path[0] != '/')
        return fail(c, BSO_EINVAL, "the path must start with '/'");
    return call(c, "GET", path, NULL, true);
}

int bso_client_post(bso_client *c, const char *path, const char *json_body)
{
    if (!path || path[0] != '/')
        return fail(c, BSO_EINVAL, "the path must start with '/'");
    return call(c, "POST", path, json_body, false); /* a repeat could undo what came between */
}
