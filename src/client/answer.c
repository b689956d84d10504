/* Readers of the server's answers; see answer.h. */
#include "client/answer.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bso/error.h"

/* The body as a JSON object, or NULL with why written. */
static json_t *object(const char *body, const char *what, char *why, size_t cap)
{
    json_error_t err;
    json_t *root = json_loads(body ? body : "", 0, &err);
    if (!json_is_object(root)) {
        json_decref(root);
        snprintf(why, cap, "%s: the server's answer is not a JSON object: %s", what, err.text);
        return NULL;
    }
    return root;
}

int bso_answer_register(const char *body, char *job_id, char *why, size_t cap)
{
    json_t *root = object(body, "register", why, cap);
    if (!root)
        return BSO_EPARSE;
    const char *id = json_string_value(json_object_get(root, "job_id"));
    int rc = 0;
    if (!id || !*id || strlen(id) >= BSO_CLIENT_ID_MAX) {
        snprintf(why, cap, "register: the answer has no usable job_id");
        rc = BSO_EPARSE;
    } else {
        snprintf(job_id, BSO_CLIENT_ID_MAX, "%s", id);
    }
    json_decref(root);
    return rc;
}

int bso_answer_next(const char *body, int64_t *batch_size, int64_t *trial_number, char *why,
                    size_t cap)
{
    json_t *root = object(body, "next", why, cap);
    if (!root)
        return BSO_EPARSE;
    json_t *bs = json_object_get(root, "batch_size"), *tn = json_object_get(root, "trial_number");
    int rc = 0;
    if (!json_is_integer(bs) || !json_is_integer(tn) || json_integer_value(bs) <= 0 ||
        json_integer_value(tn) <= 0) {
        snprintf(why, cap, "next: the answer has no positive batch_size/trial_number");
        rc = BSO_EPARSE;
    } else {
        *batch_size = json_integer_value(bs);
        *trial_number = json_integer_value(tn);
    }
    json_decref(root);
    return rc;
}

int bso_answer_report(const char *body, struct bso_report_answer *out, char *why, size_t cap)
{
    json_t *root = object(body, "report", why, cap);
    if (!root)
        return BSO_EPARSE;
    json_t *stop = json_object_get(root, "stop_train"), *conv = json_object_get(root, "converged");
    int rc = 0;
    if (!json_is_boolean(stop) || !json_is_boolean(conv)) {
        snprintf(why, cap, "report: the answer has no stop_train/converged");
        rc = BSO_EPARSE;
    } else {
        out->stop_train = json_is_true(stop);
        out->converged = json_is_true(conv);
        const char *msg = json_string_value(json_object_get(root, "message"));
        snprintf(out->message, sizeof out->message, "%s", msg ? msg : "");
    }
    json_decref(root);
    return rc;
}

/* FastAPI's validation errors, "where: what; where: what", into out. */
static void validation_errors(json_t *list, char *out, size_t cap)
{
    size_t o = 0, i;
    json_t *e;
    out[0] = '\0';
    json_array_foreach(list, i, e)
    {
        json_t *loc = json_object_get(e, "loc");
        json_t *last = json_array_get(loc, json_array_size(loc) - 1);
        char where[64] = "body";
        if (json_is_string(last))
            snprintf(where, sizeof where, "%s", json_string_value(last));
        else if (json_is_integer(last))
            snprintf(where, sizeof where, "%" PRId64, (int64_t)json_integer_value(last));
        const char *what = json_string_value(json_object_get(e, "msg"));
        int w =
            snprintf(out + o, cap - o, "%s%s: %s", i ? "; " : "", where, what ? what : "invalid");
        if (w < 0 || (size_t)w >= cap - o)
            break;
        o += (size_t)w;
    }
}

void bso_answer_error(const char *body, char *msg, size_t cap)
{
    json_t *root = body && *body ? json_loads(body, 0, NULL) : NULL;
    json_t *m = json_object_get(root, "message"), *d = json_object_get(root, "detail");
    if (json_is_string(m))
        snprintf(msg, cap, "%s", json_string_value(m));
    else if (json_is_string(d))
        snprintf(msg, cap, "%s", json_string_value(d));
    else if (json_is_array(d) && json_array_size(d) > 0)
        validation_errors(d, msg, cap);
    else
        msg[0] = '\0';
    if (!msg[0]) /* nothing usable, or an empty text: the body itself says more */
        snprintf(msg, cap, "%s", body && *body ? body : "no explanation");
    /* A 409 on registration names the fields that differ from the registered spec. */
    json_t *diff = json_object_get(root, "differences"), *d1;
    size_t i, n = strlen(msg);
    json_array_foreach(diff, i, d1)
    {
        const char *field = json_string_value(json_object_get(d1, "field"));
        char *was = json_dumps(json_object_get(d1, "registered"), JSON_ENCODE_ANY | JSON_COMPACT);
        char *now = json_dumps(json_object_get(d1, "sent"), JSON_ENCODE_ANY | JSON_COMPACT);
        if (n < cap)
            n += (size_t)snprintf(msg + n, cap - n, "%s%s: registered %s, sent %s",
                                  i == 0 ? " (" : "; ", field ? field : "?", was ? was : "?",
                                  now ? now : "?");
        free(was);
        free(now);
    }
    if (json_array_size(diff) > 0 && n < cap)
        snprintf(msg + n, cap - n, ")");
    json_decref(root);
}
