/* The policy drivers of the replay: the core in-process, or a live server over HTTP. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "bso/client.h"
#include "bso/error.h"
#include "core/bso_policy.h"
#include "core/job.h"
#include "sim/sim.h"

/* The job specification the replay registers. */
static int make_spec(const struct sim_job *job, const struct sim_options *opt,
                     struct bso_job_spec *spec, char *err, size_t errcap)
{
    bso_job_spec_defaults(spec);
    struct bso_spec_errors errs = {0};
    int64_t sizes[2 * SIM_MAX_BS];
    size_t n = 0;
    for (size_t i = 0; i < job->n_bs; i++)
        sizes[n++] = job->bs[i].bs;
    for (size_t u = 0; opt->unfit_sizes && u < job->n_unfit; u++)
        sizes[n++] = job->unfit[u]; /* all larger than the fitting ones: still ascending */
    bso_job_spec_set_batch_sizes(spec, sizes, n, &errs);
    bso_job_spec_set_text(spec, BSO_SPEC_JOB_ID_PREFIX, "sim", 3, &errs);
    bso_job_spec_set_text(spec, BSO_SPEC_GPU_MODEL, job->gpu, strlen(job->gpu), &errs);
    spec->default_batch_size = job->default_bs;
    spec->eta_knob = opt->eta;
    spec->has_beta_knob = opt->beta > 0;
    spec->beta_knob = opt->beta;
    spec->target_metric = job->w.target;
    spec->higher_is_better_metric = job->w.higher_is_better;
    spec->max_epochs = job->w.max_epochs;
    spec->max_power = job->max_power;
    spec->number_of_gpus = 1;
    spec->has_mab_seed = true;
    spec->mab_seed = opt->seed;
    spec->policy = opt->policy;
    spec->window_size = opt->window;
    if (bso_job_spec_validate(spec, &errs) < 0) {
        snprintf(err, errcap, "invalid job: %s: %.400s", errs.e[0].field, errs.e[0].msg);
        return -1;
    }
    return 0;
}

/* ---- in-process ---- */

/* Both drivers' contexts begin with the driver's error buffer (sim_driver_rebind). */
struct local {
    char *err;
    struct bso_job job;
    struct bso_trial trial; /* the run in flight (the replay runs one at a time) */
};

static int local_predict(void *ctx, int64_t *bs, int64_t *trial)
{
    struct local *l = ctx;
    unsigned changed;
    const int rc = bso_job_predict(&l->job, &l->trial, &changed);
    if (rc < 0) {
        snprintf(l->err, 512, "%s", bso_job_errmsg(&l->job));
        return rc == BSO_EPRUNED ? SIM_REFUSED : -1;
    }
    *bs = l->trial.batch_size;
    *trial = l->trial.number;
    return 0;
}

static int local_report(void *ctx, int64_t bs, int64_t trial, double time, double energy,
                        double metric, int64_t epoch, bool *stop, bool *converged)
{
    (void)bs;
    (void)trial;
    struct local *l = ctx;
    struct bso_report r = {
        .time = time, .energy = energy, .metric = metric, .current_epoch = epoch};
    struct bso_decision d;
    unsigned changed;
    size_t arm;
    if (bso_job_report(&l->job, &l->trial, &r, &d, &changed, &arm) < 0) {
        snprintf(l->err, 512, "%s", bso_job_errmsg(&l->job));
        return -1;
    }
    *stop = d.stop_train;
    *converged = d.converged;
    return 0;
}

static int local_transfer(void *ctx, void *from_ctx)
{
    struct local *l = ctx;
    const struct local *from = from_ctx;
    bso_policy_transfer(&l->job, &from->job);
    return 0;
}

static int local_declare_change(void *ctx)
{
    struct local *l = ctx;
    bso_policy_declare_change(&l->job);
    return 0;
}

static int local_end_trial(void *ctx, int64_t bs, int64_t trial)
{
    (void)bs;
    (void)trial;
    struct local *l = ctx;
    unsigned changed;
    size_t stat;
    bso_job_end_trial(&l->job, &l->trial, &changed, &stat);
    return 0;
}

/* What the server does with a posted profile (service.c): rates for the policy, and the
 * sizes that do not fit marked in the spec. */
static int local_profile(void *ctx, const struct sim_profile_entry *e, size_t n)
{
    struct local *l = ctx;
    for (size_t k = 0; k < n; k++) {
        const int i = bso_job_spec_index(&l->job.spec, e[k].bs);
        if (i < 0)
            continue;
        bso_spec_set_unfit(&l->job.spec, (size_t)i, !e[k].feasible);
        if (l->job.spec.policy == BSO_POLICY_BSO)
            bso_policy_set_profile(&l->job, (size_t)i, e[k].samples_per_s, e[k].joules_per_sample);
    }
    return 0;
}

/* The policy learns a size's cost at its limit from the reports; the profile is for people. */
static int local_power(void *ctx, int64_t bs, const struct bso_power_point *points, size_t n,
                       size_t chosen)
{
    (void)ctx, (void)bs, (void)points, (void)n, (void)chosen;
    return 0;
}

static int local_change_trial(void *ctx, int64_t *trial)
{
    const struct local *l = ctx;
    *trial = bso_policy_change_trial(&l->job);
    return 0;
}

static void local_close(void *ctx)
{
    struct local *l = ctx;
    bso_job_clear(&l->job);
    free(l);
}

/* ---- over HTTP ---- */

struct remote {
    char *err;
    bso_client *c;
    bool keep; /* leave the job on the server */
    char job_id[BSO_CLIENT_ID_MAX];
};

static int remote_predict(void *ctx, int64_t *bs, int64_t *trial)
{
    struct remote *r = ctx;
    if (bso_client_next(r->c, r->job_id, bs, trial) < 0) {
        snprintf(r->err, 512, "%s", bso_client_errmsg(r->c));
        return bso_client_http_status(r->c) == 409 ? SIM_REFUSED : -1; /* the server's EPRUNED */
    }
    return 0;
}

static int remote_report(void *ctx, int64_t bs, int64_t trial, double time, double energy,
                         double metric, int64_t epoch, bool *stop, bool *converged)
{
    struct remote *r = ctx;
    struct bso_report_answer a;
    if (bso_client_report(r->c, r->job_id, bs, trial, time, energy, metric, epoch, "trace", &a) <
        0) {
        snprintf(r->err, 512, "%s", bso_client_errmsg(r->c));
        return -1;
    }
    *stop = a.stop_train;
    *converged = a.converged;
    return 0;
}

/* POST /jobs/ID/profile, as bso.probe's report would. */
static int remote_profile(void *ctx, const struct sim_profile_entry *e, size_t n)
{
    struct remote *r = ctx;
    char path[BSO_CLIENT_ID_MAX + 32], body[2 * SIM_MAX_BS * 128 + 64];
    size_t o = (size_t)snprintf(body, sizeof body, "{\"device\":\"trace\",\"batch_sizes\":[");
    for (size_t k = 0; k < n; k++) {
        if (!e[k].feasible) {
            o += (size_t)snprintf(body + o, sizeof body - o,
                                  "%s{\"batch_size\":%" PRId64 ",\"feasible\":false}", k ? "," : "",
                                  e[k].bs);
            continue;
        }
        o += (size_t)snprintf(body + o, sizeof body - o,
                              "%s{\"batch_size\":%" PRId64 ",\"feasible\":true,"
                              "\"samples_per_s\":%.17g,\"joules_per_sample\":%.17g}",
                              k ? "," : "", e[k].bs, e[k].samples_per_s, e[k].joules_per_sample);
    }
    snprintf(body + o, sizeof body - o, "]}");
    snprintf(path, sizeof path, "/jobs/%s/profile", r->job_id);
    if (bso_client_post(r->c, path, body) < 0) {
        snprintf(r->err, 512, "%s", bso_client_errmsg(r->c));
        return -1;
    }
    return 0;
}

/* POST /jobs/ID/power, as a client with optimize_power does after its first epoch. */
static int remote_power(void *ctx, int64_t bs, const struct bso_power_point *points, size_t n,
                        size_t chosen)
{
    struct remote *r = ctx;
    char path[BSO_CLIENT_ID_MAX + 32], body[BSO_POWER_MAX_LIMITS * 160 + 128];
    size_t o = (size_t)snprintf(body, sizeof body,
                                "{\"device\":\"trace\",\"batch_size\":%" PRId64
                                ",\"power_limit\":%.17g,\"measurements\":[",
                                bs, points[chosen].limit_w);
    for (size_t k = 0; k < n && o < sizeof body; k++)
        o += (size_t)snprintf(body + o, sizeof body - o,
                              "%s{\"power_limit\":%.17g,\"samples_per_s\":%.17g,\"power\":%.17g}",
                              k ? "," : "", points[k].limit_w, points[k].samples_per_s,
                              points[k].power_w);
    if (o < sizeof body)
        snprintf(body + o, sizeof body - o, "]}");
    snprintf(path, sizeof path, "/jobs/%s/power", r->job_id);
    if (bso_client_post(r->c, path, body) < 0) {
        snprintf(r->err, 512, "%s", bso_client_errmsg(r->c));
        return -1;
    }
    return 0;
}

static int remote_end_trial(void *ctx, int64_t bs, int64_t trial)
{
    struct remote *r = ctx;
    if (bso_client_end_trial(r->c, r->job_id, bs, trial) < 0) {
        snprintf(r->err, 512, "%s", bso_client_errmsg(r->c));
        return -1;
    }
    return 0;
}

static int remote_transfer(void *ctx, void *from_ctx)
{
    struct remote *r = ctx;
    const struct remote *from = from_ctx;
    char path[BSO_CLIENT_ID_MAX + 32], body[BSO_CLIENT_ID_MAX + 32];
    snprintf(path, sizeof path, "/jobs/%s/transfer", r->job_id);
    snprintf(body, sizeof body, "{\"from\":\"%s\"}", from->job_id);
    if (bso_client_post(r->c, path, body) < 0) {
        snprintf(r->err, 512, "%s", bso_client_errmsg(r->c));
        return -1;
    }
    return 0;
}

static int remote_declare_change(void *ctx)
{
    struct remote *r = ctx;
    char path[BSO_CLIENT_ID_MAX + 32];
    snprintf(path, sizeof path, "/jobs/%s/changed", r->job_id);
    if (bso_client_post(r->c, path, NULL) < 0) {
        snprintf(r->err, 512, "%s", bso_client_errmsg(r->c));
        return -1;
    }
    return 0;
}

static int remote_change_trial(void *ctx, int64_t *trial)
{
    struct remote *r = ctx;
    char path[BSO_CLIENT_ID_MAX + 16];
    snprintf(path, sizeof path, "/jobs/%s", r->job_id);
    if (bso_client_get(r->c, path) < 0) {
        snprintf(r->err, 512, "%s", bso_client_errmsg(r->c));
        return -1;
    }
    json_error_t jerr;
    json_t *job = json_loads(bso_client_body(r->c), 0, &jerr);
    const json_t *at = json_object_get(job, "change_detected_at_trial");
    *trial = json_is_integer(at) ? (int64_t)json_integer_value(at) : 0;
    const int rc = job ? 0 : -1;
    if (!job)
        snprintf(r->err, 512, "GET %s: not JSON (%s)", path, jerr.text);
    json_decref(job);
    return rc;
}

static void remote_close(void *ctx)
{
    struct remote *r = ctx;
    if (!r->keep)
        bso_client_delete(r->c, r->job_id);
    bso_client_free(r->c);
    free(r);
}

/* The spec as the JSON a client registers. */
static void spec_json(const struct bso_job_spec *s, const char *job_id, char *buf, size_t cap)
{
    size_t o = (size_t)snprintf(buf, cap,
                                "{\"job_id\":\"%s\",\"job_id_prefix\":\"sim\","
                                "\"batch_sizes\":[",
                                job_id);
    for (size_t i = 0; i < s->n_batch_sizes; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%" PRId64, i ? "," : "", s->batch_sizes[i]);
    char beta[32] = "null";
    if (s->has_beta_knob)
        snprintf(beta, sizeof beta, "%.17g", s->beta_knob);
    snprintf(buf + o, cap - o,
             "],\"default_batch_size\":%" PRId64 ",\"eta_knob\":%.17g,\"beta_knob\":%s,"
             "\"target_metric\":%.17g,\"higher_is_better_metric\":%s,\"max_epochs\":%" PRId64
             ",\"mab_seed\":%" PRId64 ",\"max_power\":%.17g,\"number_of_gpus\":1,"
             "\"gpu_model\":\"%s\",\"policy\":\"%s\",\"window_size\":%" PRId64 "}",
             s->default_batch_size, s->eta_knob, beta, s->target_metric,
             s->higher_is_better_metric ? "true" : "false", s->max_epochs, s->mab_seed,
             s->max_power, s->gpu_model, bso_policy_name(s->policy), s->window_size);
}

int sim_driver_rebind(struct sim_driver *drv)
{
    *(char **)drv->ctx = drv->err;
    return 0;
}

int sim_driver_open(struct sim_driver *drv, const struct sim_job *job,
                    const struct sim_options *opt)
{
    memset(drv, 0, sizeof(*drv));
    struct bso_job_spec spec;
    if (make_spec(job, opt, &spec, drv->err, sizeof drv->err) < 0)
        return -1;
    if (!opt->server) {
        struct local *l = calloc(1, sizeof(*l));
        const uint32_t unused[1] = {0}; /* seeded specs need no entropy */
        if (!l || bso_job_init(&l->job, &spec, unused, 1) < 0) {
            snprintf(drv->err, sizeof drv->err, "cannot start the job");
            free(l);
            return -1;
        }
        l->err = drv->err;
        *drv = (struct sim_driver){.ctx = l,
                                   .predict = local_predict,
                                   .report = local_report,
                                   .profile = local_profile,
                                   .end_trial = local_end_trial,
                                   .transfer = local_transfer,
                                   .power = local_power,
                                   .change_trial = local_change_trial,
                                   .declare_change = local_declare_change,
                                   .close = local_close};
        l->err = drv->err;
        return 0;
    }
    struct remote *r = calloc(1, sizeof(*r));
    if (!r || bso_client_new(opt->server, &r->c) < 0) {
        snprintf(drv->err, sizeof drv->err, "cannot create a client for %s", opt->server);
        free(r);
        return -1;
    }
    char id[160], body[8192];
    snprintf(id, sizeof id, "sim-%s-%s-%s-%s-%" PRId64 "-%lld", job->w.dataset, job->gpu,
             bso_policy_name(opt->policy), opt->jit ? "jit" : "max", opt->seed,
             (long long)getpid());
    spec_json(&spec, id, body, sizeof body);
    bool created;
    bso_client_delete(r->c, id); /* a leftover from an interrupted replay */
    if (bso_client_register(r->c, body, r->job_id, &created) < 0) {
        snprintf(drv->err, sizeof drv->err, "%s", bso_client_errmsg(r->c));
        bso_client_free(r->c);
        free(r);
        return -1;
    }
    *drv = (struct sim_driver){.ctx = r,
                               .predict = remote_predict,
                               .report = remote_report,
                               .profile = remote_profile,
                               .end_trial = remote_end_trial,
                               .transfer = remote_transfer,
                               .power = remote_power,
                               .change_trial = remote_change_trial,
                               .declare_change = remote_declare_change,
                               .close = remote_close};
    r->err = drv->err;
    r->keep = opt->keep_jobs;
    return 0;
}
