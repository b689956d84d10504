/* Job specification defaults and every validation error, with Zeus's texts where Zeus has one. */
#include "helpers.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bso/error.h"
#include "core/spec.h"

/* Validates spec and asserts exactly one error with this field, type and message. */
static void expect_error(struct bso_job_spec *spec, const char *field, const char *type,
                         const char *msg)
{
    struct bso_spec_errors errs = {0};
    assert_int_equal(bso_job_spec_validate(spec, &errs), BSO_EINVAL);
    for (size_t i = 0; i < errs.n; i++)
        print_message("  %s: %s (%s)\n", errs.e[i].field, errs.e[i].msg, errs.e[i].type);
    assert_int_equal(errs.n, 1);
    assert_string_equal(errs.e[0].field, field);
    assert_string_equal(errs.e[0].type, type);
    assert_string_equal(errs.e[0].msg, msg);
}

static void test_defaults_are_zeus_defaults(void **state)
{
    (void)state;
    struct bso_job_spec s;
    bso_job_spec_defaults(&s);
    assert_true(s.eta_knob == 0.5);
    assert_true(s.has_beta_knob && s.beta_knob == 2.0);
    assert_true(s.target_metric == 0.5);
    assert_true(s.higher_is_better_metric);
    assert_int_equal(s.max_epochs, 100);
    assert_int_equal(s.num_pruning_rounds, 2);
    assert_int_equal(s.window_size, 0);
    assert_true(s.mab_prior_mean == 0.0 && s.mab_prior_precision == 0.0);
    assert_int_equal(s.mab_num_explorations, 2);
    assert_false(s.has_mab_seed);
    assert_false(s.has_job_id);
}

static void test_valid_spec_is_sorted(void **state)
{
    (void)state;
    struct bso_job_spec s;
    struct bso_spec_errors errs = {0};
    fake_job_spec(&s);
    assert_int_equal(bso_job_spec_validate(&s, &errs), 0);
    assert_int_equal(errs.n, 0);
    const int64_t sorted[] = {32, 64, 256, 512, 1024, 2048, 4096};
    assert_memory_equal(s.batch_sizes, sorted, sizeof sorted);
    assert_int_equal(bso_job_spec_index(&s, 2048), 5);
    assert_int_equal(bso_job_spec_index(&s, 100), -1);
}

static void test_zeus_field_errors(void **state)
{
    (void)state;
    struct bso_job_spec s;

    fake_job_spec(&s);
    s.default_batch_size = 0;
    expect_error(&s, "default_batch_size", "value_error.number.not_gt",
                 "ensure this value is greater than 0");
    fake_job_spec(&s);
    s.max_epochs = 0;
    expect_error(&s, "max_epochs", "value_error.number.not_gt",
                 "ensure this value is greater than 0");
    fake_job_spec(&s);
    s.n_batch_sizes = 0;
    expect_error(&s, "batch_sizes", "value_error", "Batch Sizes = [] is empty");
    fake_job_spec(&s);
    s.eta_knob = 1.1;
    expect_error(&s, "eta_knob", "value_error", "eta_knob should be in range [0,1]");
    fake_job_spec(&s);
    s.eta_knob = -0.1;
    expect_error(&s, "eta_knob", "value_error", "eta_knob should be in range [0,1]");
    fake_job_spec(&s);
    s.beta_knob = 0;
    expect_error(&s, "beta_knob", "value_error",
                 "Invalid beta_knob(0.0). To disable early stop, set beta_knob = None to disable "
                 "or positive value.");
    fake_job_spec(&s);
    s.max_power = 0;
    expect_error(&s, "max_power", "value_error.number.not_gt",
                 "ensure this value is greater than 0");
    fake_job_spec(&s);
    s.number_of_gpus = -1;
    expect_error(&s, "number_of_gpus", "value_error.number.not_gt",
                 "ensure this value is greater than 0");
    fake_job_spec(&s);
    s.gpu_model[0] = '\0';
    expect_error(&s, "gpu_model", "value_error", "Invalid gpu_model(). Shouldn't be empty.");
    fake_job_spec(&s);
    s.mab_num_explorations = -1;
    expect_error(&s, "mab_num_explorations", "value_error.number.not_ge",
                 "ensure this value is greater than or equal to 0");
}

static void test_zeus_root_errors(void **state)
{
    (void)state;
    struct bso_job_spec s;
    fake_job_spec(&s);
    s.default_batch_size = 128;
    expect_error(&s, "__root__", "value_error",
                 "Default BS(128) not in batch_sizes([32, 64, 256, 512, 1024, 2048, 4096]).");
    fake_job_spec(&s);
    s.has_job_id = true;
    snprintf(s.job_id, sizeof s.job_id, "other-1234");
    expect_error(&s, "__root__", "value_error",
                 "Job_id(other-1234) does not start with prefix(test).");
    /* A matching id passes. */
    snprintf(s.job_id, sizeof s.job_id, "test-1234");
    struct bso_spec_errors errs = {0};
    assert_int_equal(bso_job_spec_validate(&s, &errs), 0);
}

static void test_root_checks_skip_when_a_field_failed(void **state)
{
    (void)state;
    struct bso_job_spec s;
    struct bso_spec_errors errs = {0};
    fake_job_spec(&s);
    s.default_batch_size = 128; /* a root error... */
    s.eta_knob = 2;             /* ...hidden behind a field error */
    s.max_epochs = 0;
    assert_int_equal(bso_job_spec_validate(&s, &errs), BSO_EINVAL);
    assert_int_equal(errs.n, 2);
    assert_string_equal(errs.e[0].field, "eta_knob");
    assert_string_equal(errs.e[1].field, "max_epochs");
    assert_true(errs.e[1].has_limit && errs.e[1].limit == 0);
}

static void test_checks_zeus_lacks(void **state)
{
    (void)state;
    struct bso_job_spec s;

    fake_job_spec(&s);
    s.batch_sizes[1] = 32;
    expect_error(&s, "batch_sizes", "value_error",
                 "Batch sizes must be unique, but 32 appears more than once.");
    fake_job_spec(&s);
    s.batch_sizes[6] = -8;
    expect_error(&s, "batch_sizes", "value_error",
                 "Every batch size must be greater than 0, got -8.");
    fake_job_spec(&s);
    s.num_pruning_rounds = 0;
    expect_error(&s, "num_pruning_rounds", "value_error.number.not_ge",
                 "ensure this value is greater than or equal to 1");
    fake_job_spec(&s);
    s.num_pruning_rounds = BSO_MAX_PRUNING_ROUNDS + 1;
    expect_error(&s, "num_pruning_rounds", "value_error.number.not_le",
                 "ensure this value is less than or equal to 64");
    fake_job_spec(&s);
    s.window_size = -1;
    expect_error(&s, "window_size", "value_error.number.not_ge",
                 "ensure this value is greater than or equal to 0");
    fake_job_spec(&s);
    s.mab_prior_precision = -0.5;
    expect_error(&s, "mab_prior_precision", "value_error.number.not_ge",
                 "ensure this value is greater than or equal to 0");
    fake_job_spec(&s);
    s.mab_seed = -3;
    expect_error(&s, "mab_seed", "value_error.number.not_ge",
                 "ensure this value is greater than or equal to 0");
    fake_job_spec(&s);
    s.target_metric = NAN;
    expect_error(&s, "target_metric", "value_error.number.not_finite",
                 "ensure this value is a finite number");
    fake_job_spec(&s);
    s.max_power = INFINITY;
    expect_error(&s, "max_power", "value_error.number.not_finite",
                 "ensure this value is a finite number");
    fake_job_spec(&s);
    s.beta_knob = INFINITY;
    expect_error(&s, "beta_knob", "value_error",
                 "Invalid beta_knob(inf). To disable early stop, set beta_knob = None to disable "
                 "or positive value.");
    fake_job_spec(&s);
    s.has_job_id = true;
    s.job_id[0] = '\0';
    expect_error(&s, "job_id", "value_error",
                 "job_id must not be empty; send null to have the server generate one.");
    fake_job_spec(&s);
    s.window_size = 1; /* below the 2 explorations */
    expect_error(&s, "__root__", "value_error",
                 "window_size(1) must be 0 (no window) or at least mab_num_explorations(2), or "
                 "the bandit never leaves exploration.");
}

static void test_setters_bound_lengths_and_counts(void **state)
{
    (void)state;
    struct bso_job_spec s;
    struct bso_spec_errors errs = {0};
    fake_job_spec(&s);
    char long_text[BSO_JOB_ID_MAX + 2];
    memset(long_text, 'a', sizeof long_text);
    assert_int_equal(bso_job_spec_set_text(&s, BSO_SPEC_JOB_ID_PREFIX, "tst", 3, &errs), 0);
    assert_string_equal(s.job_id_prefix, "tst");
    /* The longest allowed id is accepted here; whether it fits the prefix is validation's job. */
    assert_int_equal(bso_job_spec_set_text(&s, BSO_SPEC_JOB_ID, long_text, BSO_JOB_ID_MAX, &errs),
                     0);
    assert_int_equal(errs.n, 0);
    assert_int_equal(
        bso_job_spec_set_text(&s, BSO_SPEC_JOB_ID, long_text, BSO_JOB_ID_MAX + 1, &errs),
        BSO_EINVAL);
    assert_int_equal(bso_job_spec_set_text(&s, BSO_SPEC_GPU_MODEL, "A1\0", 3, &errs), BSO_EINVAL);
    const char name[] = "NVIDIA RTX PRO 6000 Blackwell Server Edition"; /* too long for Zeus */
    assert_int_equal(bso_job_spec_set_text(&s, BSO_SPEC_GPU_MODEL, name, sizeof name - 1, &errs),
                     0);
    int64_t many[BSO_MAX_BATCH_SIZES + 1];
    for (size_t i = 0; i < BSO_MAX_BATCH_SIZES + 1; i++)
        many[i] = (int64_t)i + 1;
    assert_int_equal(bso_job_spec_set_batch_sizes(&s, many, BSO_MAX_BATCH_SIZES + 1, &errs),
                     BSO_EINVAL);
    assert_int_equal(s.n_batch_sizes, 0);
    for (size_t i = 0; i < errs.n; i++)
        print_message("  %s: %s (%s)\n", errs.e[i].field, errs.e[i].msg, errs.e[i].type);
    assert_int_equal(errs.n, 3);
    assert_string_equal(errs.e[0].field, "job_id");
    assert_string_equal(errs.e[0].msg, "ensure this value has at most 255 characters");
    assert_string_equal(errs.e[0].type, "value_error.any_str.max_length");
    assert_int_equal(errs.e[0].limit, 255);
    assert_string_equal(errs.e[1].msg, "gpu_model must not contain NUL characters");
    assert_string_equal(errs.e[2].field, "batch_sizes");
    assert_string_equal(errs.e[2].msg, "ensure this value has at most 256 items");
    /* Validation keeps the setters' errors, adds nothing more for those fields (the emptied
     * job_id and batch_sizes), and appends its own errors for other fields. */
    s.max_epochs = 0;
    assert_int_equal(bso_job_spec_validate(&s, &errs), BSO_EINVAL);
    assert_int_equal(errs.n, 4);
    assert_string_equal(errs.e[3].field, "max_epochs");
    /* At exactly the limits everything passes. */
    struct bso_spec_errors ok = {0};
    fake_job_spec(&s);
    assert_int_equal(bso_job_spec_set_batch_sizes(&s, many, BSO_MAX_BATCH_SIZES, &ok), 0);
    s.default_batch_size = BSO_MAX_BATCH_SIZES;
    assert_int_equal(
        bso_job_spec_set_text(&s, BSO_SPEC_JOB_ID_PREFIX, long_text, BSO_JOB_ID_PREFIX_MAX, &ok),
        0);
    assert_int_equal(bso_job_spec_set_text(&s, BSO_SPEC_JOB_ID, long_text, BSO_JOB_ID_MAX, &ok), 0);
    assert_int_equal(bso_job_spec_validate(&s, &ok), 0);
    assert_true(s.has_job_id);
}

static void test_beta_null_is_valid(void **state)
{
    (void)state;
    struct bso_job_spec s;
    struct bso_spec_errors errs = {0};
    fake_job_spec(&s);
    s.has_beta_knob = false;
    s.beta_knob = -1; /* ignored when null */
    assert_int_equal(bso_job_spec_validate(&s, &errs), 0);
    /* Zeus allows an empty prefix and eta at both ends. */
    s.job_id_prefix[0] = '\0';
    s.eta_knob = 0;
    assert_int_equal(bso_job_spec_validate(&s, &errs), 0);
    s.eta_knob = 1;
    assert_int_equal(bso_job_spec_validate(&s, &errs), 0);
}

static void test_equality_for_reregistration(void **state)
{
    (void)state;
    struct bso_job_spec a, b;
    struct bso_spec_errors errs = {0};
    fake_job_spec(&a);
    fake_job_spec(&b);
    /* Order of batch sizes does not matter once validated. */
    b.batch_sizes[0] = 4096;
    b.batch_sizes[5] = 32;
    assert_int_equal(bso_job_spec_validate(&a, &errs), 0);
    assert_int_equal(bso_job_spec_validate(&b, &errs), 0);
    assert_true(bso_job_spec_equal(&a, &b));
    b.default_batch_size = 512;
    assert_false(bso_job_spec_equal(&a, &b));
    b = a;
    b.mab_seed = 1;
    assert_false(bso_job_spec_equal(&a, &b));
    b = a;
    b.has_beta_knob = false;
    assert_false(bso_job_spec_equal(&a, &b));
    b = a;
    snprintf(b.gpu_model, sizeof b.gpu_model, "H100");
    assert_false(bso_job_spec_equal(&a, &b));
    b = a;
    b.max_power = 3000.5;
    assert_false(bso_job_spec_equal(&a, &b));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_are_zeus_defaults),
        cmocka_unit_test(test_valid_spec_is_sorted),
        cmocka_unit_test(test_zeus_field_errors),
        cmocka_unit_test(test_zeus_root_errors),
        cmocka_unit_test(test_root_checks_skip_when_a_field_failed),
        cmocka_unit_test(test_checks_zeus_lacks),
        cmocka_unit_test(test_setters_bound_lengths_and_counts),
        cmocka_unit_test(test_beta_null_is_valid),
        cmocka_unit_test(test_equality_for_reregistration),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
