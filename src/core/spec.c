/* Job specification defaults and validation; see spec.h. */
#include "core/spec.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bso/error.h"
#include "core/pyfmt.h"

void bso_job_spec_defaults(struct bso_job_spec *spec)
{
    memset(spec, 0, sizeof(*spec));
    spec->eta_knob = 0.5;
    spec->has_beta_knob = true;
    spec->beta_knob = 2.0;
    spec->target_metric = 0.50;
    spec->higher_is_better_metric = true;
    spec->max_epochs = 100;
    spec->num_pruning_rounds = 2;
    spec->window_size = 0;
    spec->mab_prior_mean = 0.0;
    spec->mab_prior_precision = 0.0;
    spec->mab_num_explorations = 2;
}

__attribute__((format(printf, 5, 6))) static void add(struct bso_spec_errors *errs,
                                                      const char *field, const char *type,
                                                      const int64_t *limit, const char *fmt, ...)
{
    if (errs->n >= BSO_SPEC_MAX_ERRORS)
        return;
    /* One error per field, as pydantic reports: the first failure explains the field. */
    for (size_t i = 0; i < errs->n; i++)
        if (strcmp(errs->e[i].field, field) == 0)
            return;
    struct bso_spec_error *e = &errs->e[errs->n++];
    e->field = field;
    e->type = type;
    e->has_limit = limit != NULL;
    e->limit = limit ? *limit : 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
}

/* pydantic's ConstrainedInt/Float messages. */
static void need_gt(struct bso_spec_errors *errs, const char *field, double v, int64_t limit)
{
    if (!(v > (double)limit))
        add(errs, field, "value_error.number.not_gt", &limit,
            "ensure this value is greater than %" PRId64, limit);
}

static void need_ge(struct bso_spec_errors *errs, const char *field, double v, int64_t limit)
{
    if (!(v >= (double)limit))
        add(errs, field, "value_error.number.not_ge", &limit,
            "ensure this value is greater than or equal to %" PRId64, limit);
}

static bool need_finite(struct bso_spec_errors *errs, const char *field, double v)
{
    if (isfinite(v))
        return true;
    add(errs, field, "value_error.number.not_finite", NULL, "ensure this value is a finite number");
    return false;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void check_batch_sizes(struct bso_job_spec *s, struct bso_spec_errors *errs)
{
    if (s->n_batch_sizes == 0) {
        add(errs, "batch_sizes", "value_error", NULL, "Batch Sizes = [] is empty");
        return;
    }
    qsort(s->batch_sizes, s->n_batch_sizes, sizeof(int64_t), cmp_i64);
    if (s->batch_sizes[0] <= 0) {
        add(errs, "batch_sizes", "value_error", NULL,
            "Every batch size must be greater than 0, got %" PRId64 ".", s->batch_sizes[0]);
        return;
    }
    for (size_t i = 1; i < s->n_batch_sizes; i++) {
        if (s->batch_sizes[i] == s->batch_sizes[i - 1]) {
            add(errs, "batch_sizes", "value_error", NULL,
                "Batch sizes must be unique, but %" PRId64 " appears more than once.",
                s->batch_sizes[i]);
            return;
        }
    }
}

static void check_fields(struct bso_job_spec *s, struct bso_spec_errors *errs)
{
    char num[BSO_PYFLOAT_MAX];

    if (need_finite(errs, "max_power", s->max_power))
        need_gt(errs, "max_power", s->max_power, 0);
    need_gt(errs, "number_of_gpus", (double)s->number_of_gpus, 0);
    if (s->gpu_model[0] == '\0')
        add(errs, "gpu_model", "value_error", NULL, "Invalid gpu_model(). Shouldn't be empty.");
    if (s->has_job_id) {
        if (s->job_id[0] == '\0')
            add(errs, "job_id", "value_error", NULL,
                "job_id must not be empty; send null to "
                "have the server generate one.");
    }
    check_batch_sizes(s, errs);
    need_gt(errs, "default_batch_size", (double)s->default_batch_size, 0);
    if (need_finite(errs, "eta_knob", s->eta_knob) && (s->eta_knob < 0 || s->eta_knob > 1))
        add(errs, "eta_knob", "value_error", NULL, "eta_knob should be in range [0,1]");
    if (s->has_beta_knob && !(s->beta_knob > 0 && isfinite(s->beta_knob))) {
        bso_pyfloat_repr(s->beta_knob, num, sizeof num);
        add(errs, "beta_knob", "value_error", NULL,
            "Invalid beta_knob(%s). To disable early stop, set beta_knob = None to disable or "
            "positive value.",
            num);
    }
    need_finite(errs, "target_metric", s->target_metric);
    need_gt(errs, "max_epochs", (double)s->max_epochs, 0);
    /* Zeus accepts 0 rounds and then fails every prediction; we refuse it up front. */
    need_ge(errs, "num_pruning_rounds", (double)s->num_pruning_rounds, 1);
    if (s->num_pruning_rounds > BSO_MAX_PRUNING_ROUNDS) {
        int64_t lim = BSO_MAX_PRUNING_ROUNDS;
        add(errs, "num_pruning_rounds", "value_error.number.not_le", &lim,
            "ensure this value is less than or equal to %d", BSO_MAX_PRUNING_ROUNDS);
    }
    /* Zeus treats a negative window as 0; we ask for 0 explicitly. */
    need_ge(errs, "window_size", (double)s->window_size, 0);
    need_finite(errs, "mab_prior_mean", s->mab_prior_mean);
    /* A negative precision gives NaN samples in Zeus. */
    if (need_finite(errs, "mab_prior_precision", s->mab_prior_precision) &&
        s->mab_prior_precision < 0)
        add(errs, "mab_prior_precision", "value_error.number.not_ge", &(int64_t){0},
            "ensure this value is greater than or equal to 0");
    need_ge(errs, "mab_num_explorations", (double)s->mab_num_explorations, 0);
    /* numpy's SeedSequence refuses negative seeds. */
    if (s->has_mab_seed)
        need_ge(errs, "mab_seed", (double)s->mab_seed, 0);
}

static bool check_roots(const struct bso_job_spec *s, struct bso_spec_errors *errs)
{
    if (bso_job_spec_index(s, s->default_batch_size) < 0) {
        char list[900];
        if (bso_pyintlist_repr(s->batch_sizes, s->n_batch_sizes, list, sizeof list) < 0)
            snprintf(list, sizeof list, "[%zu batch sizes]", s->n_batch_sizes);
        add(errs, "__root__", "value_error", NULL,
            "Default BS(%" PRId64 ") not in batch_sizes(%s).", s->default_batch_size, list);
        return false;
    }
    if (s->has_job_id && strncmp(s->job_id, s->job_id_prefix, strlen(s->job_id_prefix)) != 0) {
        add(errs, "__root__", "value_error", NULL, "Job_id(%s) does not start with prefix(%s).",
            s->job_id, s->job_id_prefix);
        return false;
    }
    /* With a window smaller than the exploration count an arm's observation count can never
     * reach it, and Zeus's bandit then explores that arm forever. */
    if (s->window_size > 0 && s->window_size < s->mab_num_explorations) {
        add(errs, "__root__", "value_error", NULL,
            "window_size(%" PRId64 ") must be 0 (no window) or at least "
            "mab_num_explorations(%" PRId64 "), or the bandit never leaves exploration.",
            s->window_size, s->mab_num_explorations);
        return false;
    }
    return true;
}

int bso_job_spec_set_text(struct bso_job_spec *spec, enum bso_spec_text field, const char *value,
                          size_t len, struct bso_spec_errors *errs)
{
    char *dst = spec->gpu_model;
    size_t max = BSO_GPU_MODEL_MAX;
    const char *name = "gpu_model";
    if (field == BSO_SPEC_JOB_ID) {
        dst = spec->job_id;
        max = BSO_JOB_ID_MAX;
        name = "job_id";
        spec->has_job_id = true;
    } else if (field == BSO_SPEC_JOB_ID_PREFIX) {
        dst = spec->job_id_prefix;
        max = BSO_JOB_ID_PREFIX_MAX;
        name = "job_id_prefix";
    }
    dst[0] = '\0';
    if (len > max) {
        int64_t lim = (int64_t)max;
        add(errs, name, "value_error.any_str.max_length", &lim,
            "ensure this value has at most %zu characters", max);
        return BSO_EINVAL;
    }
    if (memchr(value, '\0', len)) {
        add(errs, name, "value_error", NULL, "%s must not contain NUL characters", name);
        return BSO_EINVAL;
    }
    memcpy(dst, value, len);
    dst[len] = '\0';
    return 0;
}

int bso_job_spec_set_batch_sizes(struct bso_job_spec *spec, const int64_t *sizes, size_t n,
                                 struct bso_spec_errors *errs)
{
    spec->n_batch_sizes = 0;
    if (n > BSO_MAX_BATCH_SIZES) {
        int64_t lim = BSO_MAX_BATCH_SIZES;
        add(errs, "batch_sizes", "value_error.list.max_items", &lim,
            "ensure this value has at most %d items", BSO_MAX_BATCH_SIZES);
        return BSO_EINVAL;
    }
    memcpy(spec->batch_sizes, sizes, n * sizeof(*sizes));
    spec->n_batch_sizes = n;
    return 0;
}

int bso_job_spec_validate(struct bso_job_spec *spec, struct bso_spec_errors *errs)
{
    check_fields(spec, errs);
    if (errs->n == 0)
        check_roots(spec, errs);
    return errs->n == 0 ? 0 : BSO_EINVAL;
}

const char *bso_policy_name(int policy)
{
    return policy == BSO_POLICY_BSO ? "bso" : "zeus";
}

int bso_policy_parse(const char *name)
{
    if (strcmp(name, "zeus") == 0)
        return BSO_POLICY_ZEUS;
    if (strcmp(name, "bso") == 0)
        return BSO_POLICY_BSO;
    return -1;
}

int bso_job_spec_index(const struct bso_job_spec *spec, int64_t bs)
{
    size_t lo = 0, hi = spec->n_batch_sizes;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (spec->batch_sizes[mid] < bs)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < spec->n_batch_sizes && spec->batch_sizes[lo] == bs ? (int)lo : -1;
}

bool bso_job_spec_equal(const struct bso_job_spec *a, const struct bso_job_spec *b)
{
    if (a->has_job_id != b->has_job_id || (a->has_job_id && strcmp(a->job_id, b->job_id) != 0))
        return false;
    if (a->has_beta_knob != b->has_beta_knob || (a->has_beta_knob && a->beta_knob != b->beta_knob))
        return false;
    if (a->has_mab_seed != b->has_mab_seed || (a->has_mab_seed && a->mab_seed != b->mab_seed))
        return false;
    if (a->n_batch_sizes != b->n_batch_sizes ||
        memcmp(a->batch_sizes, b->batch_sizes, a->n_batch_sizes * sizeof(int64_t)) != 0)
        return false;
    return strcmp(a->job_id_prefix, b->job_id_prefix) == 0 &&
           strcmp(a->gpu_model, b->gpu_model) == 0 && a->max_power == b->max_power &&
           a->number_of_gpus == b->number_of_gpus &&
           a->default_batch_size == b->default_batch_size && a->eta_knob == b->eta_knob &&
           a->target_metric == b->target_metric &&
           a->higher_is_better_metric == b->higher_is_better_metric &&
           a->max_epochs == b->max_epochs && a->num_pruning_rounds == b->num_pruning_rounds &&
           a->window_size == b->window_size && a->mab_prior_mean == b->mab_prior_mean &&
           a->mab_prior_precision == b->mab_prior_precision &&
           a->mab_num_explorations == b->mab_num_explorations && a->policy == b->policy;
}

bool bso_tenant_name_valid(const char *name)
{
    size_t n = 0;
    for (; name[n]; n++) {
        const char c = name[n];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return false;
    }
    return n > 0 && n <= BSO_TENANT_MAX;
}
