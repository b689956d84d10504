/* The route table and the handlers behind each endpoint. */
#ifndef BSO_SERVER_ROUTES_H
#define BSO_SERVER_ROUTES_H

#include <microhttpd.h>
#include <stddef.h>

#include "server/auth.h"
#include "server/config.h"
#include "server/jbuf.h"
#include "store/store.h"

struct bso_request {
    struct MHD_Connection *conn;
    const char *method;
    const char *path;
    const char *body;
    size_t body_len;
    const char *segment; /* the {job_id} part of the path, when the route has one */
    struct bso_store *store;
    const struct bso_config *cfg;
    struct bso_auth *auth;
    struct bso_principal who; /* set by bso_route before a handler runs */
};

struct bso_response {
    unsigned status;
    struct jbuf body;
    bool bearer_challenge; /* a 401 that asks for a Bearer token (WWW-Authenticate) */
    int route;             /* the route table slot that answered (metrics.h), set by bso_route */
    /* A body other than JSON: `raw` (raw_len bytes) of content_type. raw_owned: malloc'd,
     * freed with the response; else static (embedded files). */
    const char *content_type;
    char *raw;
    size_t raw_len;
    bool raw_owned;
};

/* A route slot's route and method for the metrics' labels; 0 for an unused slot. */
int bso_route_label(int slot, const char **route, const char **method);

/* Routes req and fills *res (status and JSON body). Never fails: every outcome is a response. */
void bso_route(struct bso_request *req, struct bso_response *res);

#endif
