/*
 * The route table: which handler answers which method and path (the handlers live in api_*.c,
 * one file per resource). Adding an endpoint is writing its handler and adding a row here.
 * Zeus's five keep Zeus's paths, fields, status codes and bodies; the rest is ours.
 */
#include "server/routes.h"

#include <string.h>

#include "bso/error.h"
#include "server/handler.h"
#include "server/metrics.h"

struct route {
    const char *method;
    const char *pattern; /* "{}" matches one path segment */
    void (*handler)(struct bso_request *req, struct bso_response *res);
    bool open;         /* served without a token (probes, the dashboard's static files) */
    const char *label; /* the metrics' route label */
};

static const struct route routes[] = {
    {"POST", "/jobs", bso_h_register, false, "/jobs"},
    {"DELETE", "/jobs", bso_h_delete_job, false, "/jobs"},
    {"GET", "/jobs", bso_h_list_jobs, false, "/jobs"},
    {"GET", "/jobs/batch_size", bso_h_predict, false, "/jobs/batch_size"},
    {"POST", "/report", bso_h_report, false, "/report"},
    {"PATCH", "/trials", bso_h_end_trial, false, "/trials"},
    /* /jobs/{}/trials and /reset before /jobs/{}, which matches them too (job ids may contain '/').
     */
    {"GET", "/jobs/{}/trials", bso_h_list_trials, false, "/jobs/{job_id}/trials"},
    {"POST", "/jobs/{}/reset", bso_h_reset_job, false, "/jobs/{job_id}/reset"},
    {"POST", "/jobs/{}/profile", bso_h_profile, false, "/jobs/{job_id}/profile"},
    {"POST", "/jobs/{}/power", bso_h_power, false, "/jobs/{job_id}/power"},
    {"POST", "/jobs/{}/transfer", bso_h_transfer, false, "/jobs/{job_id}/transfer"},
    {"POST", "/jobs/{}/changed", bso_h_declare_change, false, "/jobs/{job_id}/changed"},
    {"GET", "/jobs/{}", bso_h_get_job, false, "/jobs/{job_id}"},
    {"GET", "/healthz", bso_h_healthz, true, "/healthz"},
    {"GET", "/readyz", bso_h_readyz, true, "/readyz"},
    {"GET", "/version", bso_h_version, true, "/version"},
    {"GET", "/metrics", bso_h_metrics, false, "/metrics"},
    {"GET", "/ui", bso_h_ui, true, "/ui"},
    {"GET", "/ui/", bso_h_ui, true, "/ui"},
    {"GET", "/ui/{}", bso_h_ui, true, "/ui/{file}"},
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
        bso_h_message(res, 503, msg);
    } else {
        bso_h_message(res, 401, msg);
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
