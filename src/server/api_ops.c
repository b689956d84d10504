/* Operations: health and readiness probes, the version, Prometheus metrics and the
 * dashboard's files. */

#include "server/handler.h"

#include <stdio.h>

#include "server/metrics.h"
#include "server/ui_assets.h"

static void status_body(struct bso_response *res, unsigned status, const char *text)
{
    res->status = status;
    jb_obj(&res->body);
    jb_key(&res->body, "status");
    jb_str(&res->body, text);
    jb_end(&res->body);
}

void bso_h_healthz(struct bso_request *req, struct bso_response *res)
{
    (void)req;
    status_body(res, 200, "ok");
}

void bso_h_readyz(struct bso_request *req, struct bso_response *res)
{
    struct bso_session *s = bso_h_session(req, res);
    if (!s)
        return;
    int rc = bso_session_ping(s);
    if (rc < 0)
        log_error("readiness: %s", bso_session_errmsg(s));
    bso_session_release(s);
    status_body(res, rc == 0 ? 200 : 503, rc == 0 ? "ready" : "database unavailable");
}

void bso_h_version(struct bso_request *req, struct bso_response *res)
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

/* GET /metrics: Prometheus text (metrics.h); the database part is left out, with a 200 still,
 * when the database does not answer, so a scrape shows the errors. */
void bso_h_metrics(struct bso_request *req, struct bso_response *res)
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
        bso_h_message(res, 503, "The server is out of memory.");
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
void bso_h_ui(struct bso_request *req, struct bso_response *res)
{
    const char *name = req->segment ? req->segment : "index.html";
    const struct bso_ui_asset *a = bso_ui_asset_find(name);
    if (!a) {
        bso_h_message(res, 404, "No such dashboard file.");
        return;
    }
    res->content_type = a->content_type;
    res->raw = (char *)a->data;
    res->raw_len = a->len;
    res->raw_owned = false;
}
