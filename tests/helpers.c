/* Shared test fixtures; see helpers.h. */
#include "helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int make_temp_dir(char *dir, size_t cap, const char *prefix)
{
    snprintf(dir, cap, "/tmp/%s-XXXXXX", prefix);
    return mkdtemp(dir) ? 0 : -1;
}

int remove_temp_dir(const char *dir)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

void set_batch_sizes(struct bso_job_spec *spec, const int64_t *sizes, size_t n)
{
    memcpy(spec->batch_sizes, sizes, n * sizeof(*sizes));
    spec->n_batch_sizes = n;
}

void fake_job_spec(struct bso_job_spec *spec)
{
    static const int64_t sizes[] = {32, 64, 256, 512, 1024, 4096, 2048};
    bso_job_spec_defaults(spec);
    snprintf(spec->job_id_prefix, sizeof spec->job_id_prefix, "test");
    snprintf(spec->gpu_model, sizeof spec->gpu_model, "A100");
    set_batch_sizes(spec, sizes, 7);
    spec->default_batch_size = 1024;
    spec->window_size = 5;
    spec->has_mab_seed = true;
    spec->mab_seed = 123456;
    spec->max_power = 3000;
    spec->number_of_gpus = 4;
}

void explorer_job_spec(struct bso_job_spec *spec, int64_t default_bs)
{
    static const int64_t sizes[] = {8, 16, 32, 64, 128, 256};
    bso_job_spec_defaults(spec);
    snprintf(spec->job_id_prefix, sizeof spec->job_id_prefix, "test");
    snprintf(spec->gpu_model, sizeof spec->gpu_model, "A100");
    set_batch_sizes(spec, sizes, 6);
    spec->default_batch_size = default_bs;
    spec->has_beta_knob = false;
    spec->max_power = 3000;
    spec->number_of_gpus = 4;
    spec->has_mab_seed = true;
    spec->mab_seed = 1;
}

void start_job(struct bso_job *job, struct bso_job_spec *spec)
{
    struct bso_spec_errors errs = {0};
    assert_int_equal(bso_job_spec_validate(spec, &errs), 0);
    const uint32_t entropy[4] = {1, 2, 3, 4};
    assert_int_equal(bso_job_init(job, spec, entropy, 4), 0);
}

struct bso_trial predict_ok(struct bso_job *job)
{
    struct bso_trial t;
    unsigned changed;
    int rc = bso_job_predict(job, &t, &changed);
    if (rc != 0)
        fail_msg("predict failed: %s", bso_job_errmsg(job));
    assert_true(changed & BSO_CHANGED_TRIAL);
    assert_int_equal(t.status, BSO_TRIAL_DISPATCHED);
    return t;
}

struct bso_decision report_cost(struct bso_job *job, struct bso_trial *t, double cost,
                                double metric, int64_t epoch)
{
    struct bso_report rep = {
        .time = cost / ((1 - job->spec.eta_knob) * job->spec.max_power),
        .energy = 0,
        .metric = metric,
        .current_epoch = epoch,
    };
    struct bso_decision d;
    unsigned changed;
    size_t arm;
    int rc = bso_job_report(job, t, &rep, &d, &changed, &arm);
    if (rc != 0)
        fail_msg("report failed: %s", bso_job_errmsg(job));
    return d;
}

static int setup_with(void **state, struct bso_job_spec *spec)
{
    struct bso_job *job = malloc(sizeof(*job));
    if (!job)
        return -1;
    start_job(job, spec);
    *state = job;
    return 0;
}

int setup_fake_job(void **state)
{
    struct bso_job_spec spec;
    fake_job_spec(&spec);
    return setup_with(state, &spec);
}

int setup_explorer_job(void **state)
{
    struct bso_job_spec spec;
    explorer_job_spec(&spec, 64);
    return setup_with(state, &spec);
}

int setup_one_round_job(void **state)
{
    struct bso_job_spec spec;
    explorer_job_spec(&spec, 64);
    spec.num_pruning_rounds = 1;
    return setup_with(state, &spec);
}

int teardown_job(void **state)
{
    bso_job_clear(*state);
    free(*state);
    return 0;
}

void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}
