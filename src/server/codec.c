/* Request decoding and response encoding; see codec.h. */
#include "server/codec.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bso/error.h"
#include "core/pyfmt.h"

void bso_details_add(struct bso_details *ds, const char *where, const char *field, int64_t index,
                     const char *type, const char *msg)
{
    if (ds->n >= BSO_MAX_DETAILS)
        return;
    struct bso_detail *d = &ds->d[ds->n++];
    memset(d, 0, sizeof(*d));
    d->where = where;
    snprintf(d->field, sizeof d->field, "%s", field ? field : "");
    d->index = index;
    d->type = type;
    snprintf(d->msg, sizeof d->msg, "%s", msg);
}

void bso_encode_details(struct jbuf *b, const struct bso_details *ds)
{
    jb_obj(b);
    jb_key(b, "detail");
    jb_arr(b);
    for (size_t i = 0; i < ds->n; i++) {
        const struct bso_detail *d = &ds->d[i];
        jb_obj(b);
        jb_key(b, "loc");
        jb_arr(b);
        jb_str(b, d->where);
        if (d->field[0])
            jb_str(b, d->field);
        if (d->index >= 0)
            jb_int(b, d->index);
        jb_end(b);
        jb_key(b, "msg");
        jb_str(b, d->msg);
        jb_key(b, "type");
        jb_str(b, d->type);
        if (d->has_limit) {
            jb_key(b, "ctx");
            jb_obj(b);
            jb_key(b, "limit_value");
            jb_int(b, d->limit);
            jb_end(b);
        }
        jb_end(b);
    }
    jb_end(b);
    jb_end(b);
}

/* ---- pydantic v1 coercions ------------------------------------------------------------- */

/* Python's int(str) for plain decimal text with optional sign and surrounding spaces. */
static bool parse_int_text(const char *s, int64_t *out)
{
    while (isspace((unsigned char)*s))
        s++;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || errno == ERANGE)
        return false;
    while (isspace((unsigned char)*end))
        end++;
    if (*end)
        return false;
    *out = v;
    return true;
}

static bool parse_float_text(const char *s, double *out)
{
    while (isspace((unsigned char)*s))
        s++;
    char *end;
    double v = strtod(s, &end);
    if (end == s)
        return false;
    while (isspace((unsigned char)*end))
        end++;
    if (*end)
        return false;
    *out = v;
    return true;
}

/* Each coercion returns true and writes *out, or adds its error and returns false. */
struct field_ctx {
    struct bso_details *ds;
    const char *field;
};

static bool none_error(struct field_ctx *c)
{
    bso_details_add(c->ds, "body", c->field, -1, "type_error.none.not_allowed",
                    "none is not an allowed value");
    return false;
}

static bool to_int(struct field_ctx *c, json_t *v, int64_t *out)
{
    switch (json_typeof(v)) {
    case JSON_INTEGER:
        *out = json_integer_value(v);
        return true;
    case JSON_REAL: {
        double d = json_real_value(v);
        if (isfinite(d) && d > -9.2e18 && d < 9.2e18) {
            *out = (int64_t)d; /* int(1.7) == 1, as pydantic v1 does */
            return true;
        }
        break;
    }
    case JSON_TRUE:
    case JSON_FALSE:
        *out = json_is_true(v);
        return true;
    case JSON_STRING:
        if (parse_int_text(json_string_value(v), out))
            return true;
        break;
    case JSON_NULL:
        return none_error(c);
    default:
        break;
    }
    bso_details_add(c->ds, "body", c->field, -1, "type_error.integer",
                    "value is not a valid integer");
    return false;
}

static bool to_float(struct field_ctx *c, json_t *v, double *out)
{
    switch (json_typeof(v)) {
    case JSON_INTEGER:
        *out = (double)json_integer_value(v);
        return true;
    case JSON_REAL:
        *out = json_real_value(v);
        return true;
    case JSON_TRUE:
    case JSON_FALSE:
        *out = json_is_true(v) ? 1.0 : 0.0;
        return true;
    case JSON_STRING:
        if (parse_float_text(json_string_value(v), out))
            return true;
        break;
    case JSON_NULL:
        return none_error(c);
    default:
        break;
    }
    bso_details_add(c->ds, "body", c->field, -1, "type_error.float", "value is not a valid float");
    return false;
}

static bool to_bool(struct field_ctx *c, json_t *v, bool *out)
{
    static const char *const yes[] = {"1", "on", "t", "true", "y", "yes"};
    static const char *const no[] = {"0", "off", "f", "false", "n", "no"};
    switch (json_typeof(v)) {
    case JSON_TRUE:
    case JSON_FALSE:
        *out = json_is_true(v);
        return true;
    case JSON_INTEGER:
    case JSON_REAL: {
        double d = json_number_value(v);
        if (d == 0 || d == 1) {
            *out = d == 1;
            return true;
        }
        break;
    }
    case JSON_STRING:
        for (size_t i = 0; i < 6; i++) {
            if (strcasecmp(json_string_value(v), yes[i]) == 0 ||
                strcasecmp(json_string_value(v), no[i]) == 0) {
                *out = strcasecmp(json_string_value(v), yes[i]) == 0;
                return true;
            }
        }
        break;
    case JSON_NULL:
        return none_error(c);
    default:
        break;
    }
    bso_details_add(c->ds, "body", c->field, -1, "type_error.bool",
                    "value could not be parsed to a boolean");
    return false;
}

/* A string, without copying (numbers are turned into their text in num, as pydantic v1 does).
 * *out stays valid while v and num live. */
static bool to_str(struct field_ctx *c, json_t *v, char num[32], const char **out, size_t *len)
{
    switch (json_typeof(v)) {
    case JSON_STRING:
        *out = json_string_value(v);
        *len = json_string_length(v);
        return true;
    case JSON_INTEGER:
        *len = (size_t)snprintf(num, 32, "%" PRId64, (int64_t)json_integer_value(v));
        *out = num;
        return true;
    case JSON_REAL:
        *len = (size_t)bso_pyfloat_repr(json_real_value(v), num, 32);
        *out = num;
        return true;
    case JSON_NULL:
        return none_error(c);
    default:
        bso_details_add(c->ds, "body", c->field, -1, "type_error.str", "str type expected");
        return false;
    }
}

/* Looks a field up; a missing required field is an error, a missing optional one is not. */
static json_t *field(struct field_ctx *c, json_t *obj, const char *name, bool required)
{
    c->field = name;
    json_t *v = json_object_get(obj, name);
    if (!v && required)
        bso_details_add(c->ds, "body", name, -1, "value_error.missing", "field required");
    return v;
}

/* The offset at which body nests arrays and objects deeper than max, or -1. Strings are
 * skipped, escapes included; the parser judges everything else. */
static long too_deep(const char *body, size_t len, int max)
{
    int depth = 0;
    bool in_string = false;
    for (size_t i = 0; i < len; i++) {
        const char ch = body[i];
        if (in_string) {
            if (ch == '\\')
                i++;
            else if (ch == '"')
                in_string = false;
        } else if (ch == '"') {
            in_string = true;
        } else if (ch == '[' || ch == '{') {
            if (++depth > max)
                return (long)i;
        } else if (ch == ']' || ch == '}') {
            depth--;
        }
    }
    return -1;
}

/* Parses the body as a JSON object, or explains why not. */
static json_t *parse_object(const char *body, size_t len, struct bso_details *ds)
{
    if (len == 0) {
        bso_details_add(ds, "body", NULL, -1, "value_error.missing", "field required");
        return NULL;
    }
    /* No request nests deeper than 2; refusing deep bodies up front keeps the recursive
     * parser's work and stack bounded. */
    const long deep = too_deep(body, len, BSO_MAX_JSON_DEPTH);
    if (deep >= 0) {
        char msg[80];
        snprintf(msg, sizeof msg, "JSON nested deeper than %d levels", BSO_MAX_JSON_DEPTH);
        bso_details_add(ds, "body", NULL, (int64_t)deep, "value_error.jsondecode", msg);
        return NULL;
    }
    json_error_t err;
    json_t *root = json_loadb(body, len, 0, &err);
    if (!root) {
        char msg[300];
        snprintf(msg, sizeof msg, "%s: line %d column %d (char %d)", err.text, err.line, err.column,
                 err.position);
        bso_details_add(ds, "body", NULL, err.position, "value_error.jsondecode", msg);
        return NULL;
    }
    if (!json_is_object(root)) {
        bso_details_add(ds, "body", NULL, -1, "type_error.dict", "value is not a valid dict");
        json_decref(root);
        return NULL;
    }
    return root;
}

/* Field order of JobSpecFromClient, for ordering errors as pydantic does. */
static const char *const spec_fields[] = {
    "max_power",
    "number_of_gpus",
    "gpu_model",
    "job_id",
    "job_id_prefix",
    "batch_sizes",
    "default_batch_size",
    "eta_knob",
    "beta_knob",
    "target_metric",
    "higher_is_better_metric",
    "max_epochs",
    "num_pruning_rounds",
    "window_size",
    "mab_prior_mean",
    "mab_prior_precision",
    "mab_num_explorations",
    "mab_seed",
    "policy",
    "transfer_from",
    "data_version",
};

static int field_rank(const char *f)
{
    for (size_t i = 0; i < sizeof spec_fields / sizeof *spec_fields; i++)
        if (strcmp(f, spec_fields[i]) == 0)
            return (int)i;
    return 100; /* __root__ and anything else last */
}

static void sort_details(struct bso_details *ds)
{
    for (size_t i = 1; i < ds->n; i++) { /* insertion sort: stable, and n is tiny */
        struct bso_detail d = ds->d[i];
        size_t j = i;
        while (j > 0 && field_rank(ds->d[j - 1].field) > field_rank(d.field)) {
            ds->d[j] = ds->d[j - 1];
            j--;
        }
        ds->d[j] = d;
    }
}

static void decode_text(struct field_ctx *c, json_t *root, const char *name, bool required,
                        struct bso_job_spec *spec, enum bso_spec_text which,
                        struct bso_spec_errors *errs)
{
    json_t *v = field(c, root, name, required);
    if (!v || (!required && json_is_null(v)))
        return;
    char num[32];
    const char *text;
    size_t n;
    if (to_str(c, v, num, &text, &n))
        bso_job_spec_set_text(spec, which, text, n, errs);
}

/* A text field of BSO's own: a non-empty string that fits out (cap bytes with its NUL) and has
 * no NUL inside, into out; else the error `what` ("must be ..."). */
static void text_field(struct field_ctx *c, json_t *v, const char *name, char *out, size_t cap,
                       const char *what)
{
    const char *text = json_is_string(v) ? json_string_value(v) : NULL;
    const size_t len = text ? json_string_length(v) : 0;
    if (!text || len == 0 || len >= cap || strlen(text) != len) {
        bso_details_add(c->ds, "body", name, -1, "value_error", what);
        return;
    }
    memcpy(out, text, len + 1);
}

/* A job id in a field of BSO's own (transfer_from, from): at most BSO_JOB_ID_MAX bytes. */
static void job_id_field(struct field_ctx *c, json_t *v, const char *name, char *out, size_t cap)
{
    text_field(c, v, name, out, cap, "must be the id of a registered job (1 to 255 characters)");
}

int bso_decode_spec(const char *body, size_t len, struct bso_job_spec *spec, struct bso_details *ds)
{
    ds->n = 0;
    bso_job_spec_defaults(spec);
    json_t *root = parse_object(body, len, ds);
    if (!root)
        return BSO_EINVAL;
    struct field_ctx c = {ds, NULL};
    struct bso_spec_errors errs = {0};
    json_t *v;

    if ((v = field(&c, root, "max_power", true)))
        to_float(&c, v, &spec->max_power);
    if ((v = field(&c, root, "number_of_gpus", true)))
        to_int(&c, v, &spec->number_of_gpus);
    decode_text(&c, root, "gpu_model", true, spec, BSO_SPEC_GPU_MODEL, &errs);
    decode_text(&c, root, "job_id", false, spec, BSO_SPEC_JOB_ID, &errs);
    decode_text(&c, root, "job_id_prefix", true, spec, BSO_SPEC_JOB_ID_PREFIX, &errs);
    if ((v = field(&c, root, "batch_sizes", true))) {
        if (!json_is_array(v)) {
            bso_details_add(ds, "body", "batch_sizes", -1, "type_error.list",
                            "value is not a valid list");
        } else {
            size_t n = json_array_size(v);
            int64_t sizes[BSO_MAX_BATCH_SIZES];
            bool ok = true;
            for (size_t i = 0; i < n && i < BSO_MAX_BATCH_SIZES; i++) {
                size_t before = ds->n;
                if (!to_int(&c, json_array_get(v, i), &sizes[i])) {
                    if (ds->n > before)                   /* added: a full list takes no more */
                        ds->d[before].index = (int64_t)i; /* loc: body.batch_sizes.i */
                    ok = false;
                }
            }
            if (ok)
                bso_job_spec_set_batch_sizes(spec, sizes, n, &errs);
        }
    }
    if ((v = field(&c, root, "default_batch_size", true)))
        to_int(&c, v, &spec->default_batch_size);
    if ((v = field(&c, root, "eta_knob", false)))
        to_float(&c, v, &spec->eta_knob);
    if ((v = field(&c, root, "beta_knob", false))) {
        spec->has_beta_knob = !json_is_null(v);
        if (spec->has_beta_knob)
            to_float(&c, v, &spec->beta_knob);
    }
    if ((v = field(&c, root, "target_metric", false)))
        to_float(&c, v, &spec->target_metric);
    if ((v = field(&c, root, "higher_is_better_metric", false)))
        to_bool(&c, v, &spec->higher_is_better_metric);
    static const struct {
        const char *name;
        size_t offset;
    } ints[] = {
        {"max_epochs", offsetof(struct bso_job_spec, max_epochs)},
        {"num_pruning_rounds", offsetof(struct bso_job_spec, num_pruning_rounds)},
        {"window_size", offsetof(struct bso_job_spec, window_size)},
        {"mab_num_explorations", offsetof(struct bso_job_spec, mab_num_explorations)},
    };
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++)
        if ((v = field(&c, root, ints[i].name, false)))
            to_int(&c, v, (int64_t *)((char *)spec + ints[i].offset));
    if ((v = field(&c, root, "mab_prior_mean", false)))
        to_float(&c, v, &spec->mab_prior_mean);
    if ((v = field(&c, root, "mab_prior_precision", false)))
        to_float(&c, v, &spec->mab_prior_precision);
    if ((v = field(&c, root, "mab_seed", false))) {
        spec->has_mab_seed = !json_is_null(v);
        if (spec->has_mab_seed)
            to_int(&c, v, &spec->mab_seed);
    }
    /* BSO's own field: which policy the job runs (Zeus clients do not send it). */
    spec->policy = BSO_POLICY_DEFAULT;
    if ((v = field(&c, root, "policy", false)) && !json_is_null(v)) {
        if (!json_is_string(v) || (spec->policy = bso_policy_parse(json_string_value(v))) < 0) {
            spec->policy = BSO_POLICY_ZEUS;
            bso_details_add(ds, "body", "policy", -1, "value_error",
                            "policy must be \"zeus\" or \"bso\"");
        }
    }
    if ((v = field(&c, root, "transfer_from", false)) && !json_is_null(v))
        job_id_field(&c, v, "transfer_from", spec->transfer_from, sizeof spec->transfer_from);
    /* And the version of the data this run trains on: another than last time is a change. */
    if ((v = field(&c, root, "data_version", false)) && !json_is_null(v))
        text_field(&c, v, "data_version", spec->data_version, sizeof spec->data_version,
                   "must be a string of 1 to 255 characters (the version of the data this run "
                   "trains on)");
    json_decref(root);

    /* Fields that failed to decode keep their decode error: a placeholder (no type) in the
     * spec's list stops validation from adding another for the same field. */
    for (size_t i = 0; i < ds->n; i++)
        if (errs.n < BSO_SPEC_MAX_ERRORS)
            errs.e[errs.n++] = (struct bso_spec_error){.field = ds->d[i].field, .type = NULL};
    bso_job_spec_validate(spec, &errs);
    for (size_t i = 0; i < errs.n; i++) {
        const struct bso_spec_error *e = &errs.e[i];
        if (!e->type)
            continue;
        bso_details_add(ds, "body", e->field, -1, e->type, e->msg);
        ds->d[ds->n - 1].has_limit = e->has_limit;
        ds->d[ds->n - 1].limit = e->limit;
    }
    sort_details(ds);
    return ds->n == 0 ? 0 : BSO_EINVAL;
}

void bso_encode_spec(struct jbuf *b, const struct bso_job_spec *s)
{
    jb_obj(b);
    jb_key(b, "max_power");
    jb_float(b, s->max_power);
    jb_key(b, "number_of_gpus");
    jb_int(b, s->number_of_gpus);
    jb_key(b, "gpu_model");
    jb_str(b, s->gpu_model);
    jb_key(b, "job_id");
    if (s->has_job_id)
        jb_str(b, s->job_id);
    else
        jb_null(b);
    jb_key(b, "job_id_prefix");
    jb_str(b, s->job_id_prefix);
    jb_key(b, "batch_sizes");
    jb_arr(b);
    for (size_t i = 0; i < s->n_batch_sizes; i++)
        jb_int(b, s->batch_sizes[i]);
    jb_end(b);
    jb_key(b, "default_batch_size");
    jb_int(b, s->default_batch_size);
    jb_key(b, "eta_knob");
    jb_float(b, s->eta_knob);
    jb_key(b, "beta_knob");
    if (s->has_beta_knob)
        jb_float(b, s->beta_knob);
    else
        jb_null(b);
    jb_key(b, "target_metric");
    jb_float(b, s->target_metric);
    jb_key(b, "higher_is_better_metric");
    jb_bool(b, s->higher_is_better_metric);
    jb_key(b, "max_epochs");
    jb_int(b, s->max_epochs);
    jb_key(b, "num_pruning_rounds");
    jb_int(b, s->num_pruning_rounds);
    jb_key(b, "window_size");
    jb_int(b, s->window_size);
    jb_key(b, "mab_prior_mean");
    jb_float(b, s->mab_prior_mean);
    jb_key(b, "mab_prior_precision");
    jb_float(b, s->mab_prior_precision);
    jb_key(b, "mab_num_explorations");
    jb_int(b, s->mab_num_explorations);
    jb_key(b, "mab_seed");
    if (s->has_mab_seed)
        jb_int(b, s->mab_seed);
    else
        jb_null(b);
    jb_key(b, "policy");
    jb_str(b, bso_policy_name(s->policy));
    jb_end(b);
}

/* A spec as bso_encode_spec writes it, parsed back (NULL when out of memory). */
static json_t *spec_json(const struct bso_job_spec *s)
{
    struct jbuf b;
    jb_init(&b);
    bso_encode_spec(&b, s);
    char *text = jb_take(&b, NULL);
    json_t *o = text ? json_loads(text, JSON_PRESERVE_ORDER, NULL) : NULL;
    free(text);
    return o;
}

static void emit_json(struct jbuf *b, json_t *v)
{
    size_t i;
    json_t *item;
    switch (json_typeof(v)) {
    case JSON_INTEGER:
        jb_int(b, json_integer_value(v));
        break;
    case JSON_REAL:
        jb_float(b, json_real_value(v));
        break;
    case JSON_STRING:
        jb_str(b, json_string_value(v));
        break;
    case JSON_TRUE:
    case JSON_FALSE:
        jb_bool(b, json_is_true(v));
        break;
    case JSON_ARRAY:
        jb_arr(b);
        json_array_foreach(v, i, item) emit_json(b, item);
        jb_end(b);
        break;
    default: /* null; a spec has no objects inside */
        jb_null(b);
        break;
    }
}

void bso_encode_spec_diff(struct jbuf *b, const struct bso_job_spec *registered,
                          const struct bso_job_spec *sent)
{
    /* Through the encoder, so that the fields and their forms are the API's, listed once. */
    json_t *was = spec_json(registered), *now = spec_json(sent);
    const char *key;
    json_t *v;
    jb_arr(b);
    json_object_foreach(was, key, v)
    {
        json_t *w = json_object_get(now, key);
        if (w && json_equal(v, w))
            continue;
        jb_obj(b);
        jb_key(b, "field");
        jb_str(b, key);
        jb_key(b, "registered");
        emit_json(b, v);
        jb_key(b, "sent");
        w ? emit_json(b, w) : jb_null(b);
        jb_end(b);
    }
    jb_end(b);
    json_decref(was);
    json_decref(now);
}

/* Adds a pydantic constraint error for an out-of-range report field. */
static void constraint(struct bso_details *ds, const char *name, const char *type, int64_t limit,
                       const char *msg)
{
    bso_details_add(ds, "body", name, -1, type, msg);
    ds->d[ds->n - 1].has_limit = true;
    ds->d[ds->n - 1].limit = limit;
}

static int decode_key(json_t *root, struct bso_report_req *req, struct bso_details *ds)
{
    struct field_ctx c = {ds, NULL};
    json_t *v;
    char num[32];
    const char *text;
    size_t n;
    if ((v = field(&c, root, "job_id", true)) && to_str(&c, v, num, &text, &n)) {
        if (n > BSO_JOB_ID_MAX) /* no such job can exist; say why rather than "unknown" */
            constraint(ds, "job_id", "value_error.any_str.max_length", BSO_JOB_ID_MAX,
                       "ensure this value has at most 255 characters");
        else
            memcpy(req->job_id, text, n + 1);
    }
    if ((v = field(&c, root, "batch_size", true)) && to_int(&c, v, &req->batch_size) &&
        req->batch_size <= 0)
        constraint(ds, "batch_size", "value_error.number.not_gt", 0,
                   "ensure this value is greater than 0");
    if ((v = field(&c, root, "trial_number", true)) && to_int(&c, v, &req->trial_number) &&
        req->trial_number <= 0)
        constraint(ds, "trial_number", "value_error.number.not_gt", 0,
                   "ensure this value is greater than 0");
    return 0;
}

int bso_decode_trial_id(const char *body, size_t len, struct bso_report_req *req,
                        struct bso_details *ds)
{
    ds->n = 0;
    memset(req, 0, sizeof(*req));
    json_t *root = parse_object(body, len, ds);
    if (!root)
        return BSO_EINVAL;
    decode_key(root, req, ds);
    json_decref(root);
    return ds->n == 0 ? 0 : BSO_EINVAL;
}

/* BSO's optional progress of a run whose batch size changes: samples (a whole number >= 0) and
 * mean_batch_size (> 0), both or neither. */
static void decode_progress(struct field_ctx *c, json_t *root, struct bso_report *r)
{
    json_t *samples = field(c, root, "samples", false);
    json_t *mean = field(c, root, "mean_batch_size", false);
    if (samples && json_is_null(samples))
        samples = NULL;
    if (mean && json_is_null(mean))
        mean = NULL;
    if (!samples && !mean)
        return;
    if (!samples || !mean) {
        bso_details_add(c->ds, "body", samples ? "mean_batch_size" : "samples", -1,
                        "value_error.missing",
                        "samples and mean_batch_size are sent together (or neither)");
        return;
    }
    const size_t errors = c->ds->n;
    c->field = "samples"; /* where a type error is reported */
    if (to_int(c, samples, &r->samples) && r->samples < 0)
        constraint(c->ds, "samples", "value_error.number.not_ge", 0,
                   "ensure this value is greater than or equal to 0");
    c->field = "mean_batch_size";
    if (to_float(c, mean, &r->mean_batch_size) &&
        !(r->mean_batch_size > 0 && isfinite(r->mean_batch_size)))
        bso_details_add(c->ds, "body", "mean_batch_size", -1, "value_error.number.not_gt",
                        "ensure this value is a finite number greater than 0");
    r->has_progress = c->ds->n == errors;
}

int bso_decode_report(const char *body, size_t len, struct bso_report_req *req,
                      struct bso_details *ds)
{
    ds->n = 0;
    memset(req, 0, sizeof(*req));
    json_t *root = parse_object(body, len, ds);
    if (!root)
        return BSO_EINVAL;
    decode_key(root, req, ds);
    struct field_ctx c = {ds, NULL};
    struct bso_report *r = &req->report;
    json_t *v;
    /* Cumulative time and energy are never negative; JSON has no NaN, but "nan" strings do. */
    if ((v = field(&c, root, "time", true)) && to_float(&c, v, &r->time) &&
        !(r->time >= 0 && isfinite(r->time)))
        constraint(ds, "time", "value_error.number.not_ge", 0,
                   "ensure this value is a finite number greater than or equal to 0");
    if ((v = field(&c, root, "energy", true)) && to_float(&c, v, &r->energy) &&
        !(r->energy >= 0 && isfinite(r->energy)))
        constraint(ds, "energy", "value_error.number.not_ge", 0,
                   "ensure this value is a finite number greater than or equal to 0");
    if ((v = field(&c, root, "metric", true)) && to_float(&c, v, &r->metric) &&
        !isfinite(r->metric))
        bso_details_add(ds, "body", "metric", -1, "value_error.number.not_finite",
                        "ensure this value is a finite number");
    if ((v = field(&c, root, "current_epoch", true)) && to_int(&c, v, &r->current_epoch) &&
        r->current_epoch < 0)
        constraint(ds, "current_epoch", "value_error.number.not_ge", 0,
                   "ensure this value is greater than or equal to 0");
    /* BSO's optional label of the energy figure (Zeus's client sends none). */
    char num[32];
    const char *text;
    size_t n;
    if ((v = field(&c, root, "energy_source", false)) && !json_is_null(v) &&
        to_str(&c, v, num, &text, &n)) {
        if (n == 0 || n >= sizeof req->energy_source ||
            strspn(text, "abcdefghijklmnopqrstuvwxyz0123456789-") != n)
            bso_details_add(ds, "body", "energy_source", -1, "value_error",
                            "energy_source must be 1 to 15 characters of a-z, 0-9 and '-'");
        else {
            memcpy(req->energy_source, text, n + 1);
            r->energy_source = req->energy_source;
        }
    }
    decode_progress(&c, root, r);
    json_decref(root);
    return ds->n == 0 ? 0 : BSO_EINVAL;
}

/* One optional non-negative measurement; NAN (or -1 for integers) when absent or null. */
static void measurement(struct field_ctx *c, json_t *obj, const char *name, double *out)
{
    json_t *v = field(c, obj, name, false);
    *out = NAN;
    if (!v || json_is_null(v) || !to_float(c, v, out))
        return;
    if (!isfinite(*out) || *out < 0) {
        bso_details_add(c->ds, "body", name, -1, "value_error.number.not_ge",
                        "ensure this value is a finite number >= 0");
        *out = NAN;
    }
}

/* The required list `name` of 1 to max entries, or NULL (with a detail when it is there but
 * is not such a list). */
static json_t *entry_list(struct field_ctx *c, json_t *obj, const char *name, size_t max)
{
    json_t *list = field(c, obj, name, true);
    if (list &&
        (!json_is_array(list) || json_array_size(list) == 0 || json_array_size(list) > max)) {
        char msg[96];
        snprintf(msg, sizeof msg, "%s must be a list of 1 to %zu entries", name, max);
        bso_details_add(c->ds, "body", name, -1, "type_error.list", msg);
        return NULL;
    }
    return list;
}

/* The optional "device" name (at most 63 characters), or "". */
static const char *device_name(struct field_ctx *c, json_t *obj)
{
    json_t *d = field(c, obj, "device", false);
    if (!d || json_is_null(d))
        return "";
    if (json_is_string(d) && strlen(json_string_value(d)) < 64)
        return json_string_value(d);
    bso_details_add(c->ds, "body", "device", -1, "type_error.str",
                    "device must be a string of at most 63 characters");
    return "";
}

int bso_decode_profile(const char *body, size_t len, struct bso_profile_entry *e, size_t *n,
                       struct bso_details *ds)
{
    memset(ds, 0, sizeof *ds);
    *n = 0;
    json_t *root = parse_object(body, len, ds);
    if (!root)
        return BSO_EINVAL;
    struct field_ctx c = {.ds = ds};
    const char *device = device_name(&c, root);
    json_t *list = entry_list(&c, root, "batch_sizes", BSO_MAX_BATCH_SIZES);
    size_t i;
    json_t *item;
    json_array_foreach(list, i, item)
    {
        struct bso_profile_entry *x = &e[i];
        memset(x, 0, sizeof *x);
        if (!json_is_object(item)) {
            bso_details_add(ds, "body", "batch_sizes", (int64_t)i, "type_error.dict",
                            "value is not a valid dict");
            continue;
        }
        json_t *v;
        if ((v = field(&c, item, "batch_size", true)) && to_int(&c, v, &x->batch_size) &&
            x->batch_size <= 0)
            bso_details_add(ds, "body", "batch_size", (int64_t)i, "value_error.number.not_gt",
                            "ensure this value is greater than 0");
        if ((v = field(&c, item, "feasible", true)))
            to_bool(&c, v, &x->feasible);
        measurement(&c, item, "samples_per_s", &x->samples_per_s);
        measurement(&c, item, "joules_per_sample", &x->joules_per_sample);
        double peak;
        measurement(&c, item, "peak_memory_bytes", &peak);
        x->peak_memory_bytes = isnan(peak) || peak > 9e18 ? -1 : (int64_t)peak;
        json_t *dev = field(&c, item, "device", false);
        const char *name = json_is_string(dev) && strlen(json_string_value(dev)) < sizeof x->device
                               ? json_string_value(dev)
                               : device;
        snprintf(x->device, sizeof x->device, "%s", name);
    }
    *n = list ? json_array_size(list) : 0;
    json_decref(root);
    return ds->n > 0 ? BSO_EINVAL : 0;
}

/* A power in watts above 0 (a limit, or a chosen limit when required). */
static void watts(struct field_ctx *c, json_t *obj, const char *name, int64_t i, double *out)
{
    json_t *v = field(c, obj, name, true);
    *out = NAN;
    if (!v || !to_float(c, v, out))
        return;
    if (!isfinite(*out) || *out <= 0 || *out > 1e6) {
        bso_details_add(c->ds, "body", name, i, "value_error.number.not_gt",
                        "ensure this value is a power in watts above 0");
        *out = NAN;
    }
}

int bso_decode_power(const char *body, size_t len, struct bso_power_profile *p,
                     struct bso_details *ds)
{
    memset(ds, 0, sizeof *ds);
    memset(p, 0, sizeof *p);
    json_t *root = parse_object(body, len, ds);
    if (!root)
        return BSO_EINVAL;
    struct field_ctx c = {.ds = ds};
    json_t *v;
    if ((v = field(&c, root, "batch_size", true)) && to_int(&c, v, &p->batch_size) &&
        p->batch_size <= 0)
        bso_details_add(ds, "body", "batch_size", -1, "value_error.number.not_gt",
                        "ensure this value is greater than 0");
    p->power_limit_w = NAN; /* absent or null: the server chooses */
    if ((v = field(&c, root, "power_limit", false)) && !json_is_null(v))
        watts(&c, root, "power_limit", -1, &p->power_limit_w);
    snprintf(p->device, sizeof p->device, "%s", device_name(&c, root));
    json_t *list = entry_list(&c, root, "measurements", BSO_POWER_MAX_LIMITS);
    size_t i;
    json_t *item;
    json_array_foreach(list, i, item)
    {
        struct bso_power_point *x = &p->points[i];
        if (!json_is_object(item)) {
            bso_details_add(ds, "body", "measurements", (int64_t)i, "type_error.dict",
                            "value is not a valid dict");
            continue;
        }
        watts(&c, item, "power_limit", (int64_t)i, &x->limit_w);
        measurement(&c, item, "samples_per_s", &x->samples_per_s);
        measurement(&c, item, "power", &x->power_w);
        if (isnan(x->samples_per_s) || isnan(x->power_w))
            bso_details_add(ds, "body", "measurements", (int64_t)i, "value_error.missing",
                            "each measurement needs samples_per_s and power");
        for (size_t k = 0; k < i; k++)
            if (p->points[k].limit_w == x->limit_w)
                bso_details_add(ds, "body", "measurements", (int64_t)i, "value_error.duplicate",
                                "each power limit is measured once");
    }
    p->n = list ? json_array_size(list) : 0;
    json_decref(root);
    return ds->n > 0 ? BSO_EINVAL : 0;
}

int bso_decode_transfer(const char *body, size_t len, char *from, size_t cap,
                        struct bso_details *ds)
{
    memset(ds, 0, sizeof *ds);
    from[0] = '\0';
    json_t *root = parse_object(body, len, ds);
    if (!root)
        return BSO_EINVAL;
    struct field_ctx c = {.ds = ds};
    json_t *v = field(&c, root, "from", true);
    if (v)
        job_id_field(&c, v, "from", from, cap);
    json_decref(root);
    return ds->n > 0 ? BSO_EINVAL : 0;
}

void bso_encode_progress(struct jbuf *b, const char *stored)
{
    json_t *points = stored ? json_loads(stored, 0, NULL) : NULL;
    const size_t n = json_is_array(points) ? json_array_size(points) : 0;
    json_t *last = n ? json_array_get(points, n - 1) : NULL;
    jb_key(b, "samples");
    last ? jb_int(b, json_integer_value(json_array_get(last, 2))) : jb_null(b);
    jb_key(b, "mean_batch_size");
    last ? jb_float(b, json_number_value(json_array_get(last, 3))) : jb_null(b);
    jb_key(b, "progress");
    jb_arr(b);
    double samples_before = 0, steps_before = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *p = json_array_get(points, i);
        const double samples = (double)json_integer_value(json_array_get(p, 2));
        const double mean = json_number_value(json_array_get(p, 3));
        const double steps = mean > 0 ? samples / mean : 0;
        /* The steps since the point before; none (a report without new steps): the mean. */
        const double recent =
            steps - steps_before > 0.5 ? (samples - samples_before) / (steps - steps_before) : mean;
        jb_obj(b);
        jb_key(b, "epoch");
        jb_int(b, json_integer_value(json_array_get(p, 0)));
        jb_key(b, "time");
        jb_float(b, json_number_value(json_array_get(p, 1)));
        jb_key(b, "samples");
        jb_int(b, (int64_t)samples);
        jb_key(b, "mean_batch_size");
        jb_float(b, mean);
        jb_key(b, "batch_size");
        jb_float(b, recent);
        jb_end(b);
        samples_before = samples;
        steps_before = steps;
    }
    jb_end(b);
    json_decref(points);
}
