/*
 * The job specification: every field of Zeus's JobSpecFromClient (JobParams + JobSpec +
 * GpuConfig) with the same defaults, the same validation and the same error texts, plus checks
 * Zeus lacks (positive, unique batch sizes; bounded counts and lengths; finite numbers; settings
 * that would break the policy later). Plain value type: no heap, copy with '='. Strings and the
 * batch-size list have fixed capacities; fill them with the bso_job_spec_set_* functions, which
 * turn over-long input into validation errors instead of truncating it.
 */
#ifndef BSO_CORE_SPEC_H
#define BSO_CORE_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BSO_MAX_BATCH_SIZES 256
#define BSO_JOB_ID_MAX 255
/* A generated id is "<prefix>-<8 hex>", so the prefix leaves room for 9 characters. */
#define BSO_JOB_ID_PREFIX_MAX (BSO_JOB_ID_MAX - 9)
#define BSO_GPU_MODEL_MAX 128
#define BSO_TENANT_MAX 64
/* Longest data_version (registration field), in bytes. */
#define BSO_DATA_VERSION_MAX 255
#define BSO_MAX_PRUNING_ROUNDS 64

/* Which policy a job runs. Zeus's exactly, or BSO's own (see docs/policy.md). A request that
 * names none gets BSO_POLICY_DEFAULT: the server's default for a new job, and for an existing
 * job whatever it runs, so a client that never sends the field keeps re-registering its job
 * after the server's default changes. */
enum bso_policy { BSO_POLICY_DEFAULT = -2, BSO_POLICY_ZEUS = 0, BSO_POLICY_BSO = 1 };

/* "zeus" or "bso". */
const char *bso_policy_name(int policy);
/* Parses a policy name; -1 when unknown. */
int bso_policy_parse(const char *name);

struct bso_job_spec {
    /* GpuConfig */
    double max_power; /* W, summed over the job's GPUs */
    int64_t number_of_gpus;
    char gpu_model[BSO_GPU_MODEL_MAX + 1];
    /* JobSpec / JobParams */
    bool has_job_id;
    char job_id[BSO_JOB_ID_MAX + 1];
    char job_id_prefix[BSO_JOB_ID_PREFIX_MAX + 1];
    int64_t batch_sizes[BSO_MAX_BATCH_SIZES]; /* ascending once validated */
    size_t n_batch_sizes;
    int64_t default_batch_size;
    double eta_knob;
    bool has_beta_knob; /* false: early stopping disabled (beta_knob null) */
    double beta_knob;
    double target_metric;
    bool higher_is_better_metric;
    int64_t max_epochs;
    int64_t num_pruning_rounds;
    int64_t window_size; /* 0: no window */
    double mab_prior_mean;
    double mab_prior_precision;
    int64_t mab_num_explorations;
    bool has_mab_seed;
    int64_t mab_seed;
    /* BSO's own field (Zeus clients do not send it). */
    int policy; /* enum bso_policy */
    /* The tenant whose token registered the job; "" when registered without authentication.
     * Set by the server, never read from a client's spec, and not part of spec equality. */
    char tenant[BSO_TENANT_MAX + 1];
    /* Batch sizes (by index) a probe found not to fit the device (POST /jobs/ID/profile): never
     * dispatched. Set by the server, not part of spec equality. */
    uint64_t unfit[BSO_MAX_BATCH_SIZES / 64];
    /* Some batch size has a power profile (POST /jobs/ID/power): only then does a prediction
     * look up the chosen limit, so other jobs pay nothing for the feature. */
    bool power_profiled;
    /* BSO's own registration field, not stored with the spec and not part of spec equality:
     * the job (same workload, other hardware) whose per-size epochs a new job starts from.
     * "": none. */
    char transfer_from[BSO_JOB_ID_MAX + 1];
    /* BSO's own registration field, stored apart from the spec and not part of spec equality:
     * the version of the data the run about to start trains on (a snapshot id, a date). A job
     * registered again with another version has changed (bso_policy_declare_change). "": none
     * given. */
    char data_version[BSO_DATA_VERSION_MAX + 1];
};

/* Whether batch size index i is marked unfit; and marking it. */
static inline bool bso_spec_unfit(const struct bso_job_spec *s, size_t i)
{
    return (s->unfit[i / 64] >> (i % 64)) & 1u;
}
static inline void bso_spec_set_unfit(struct bso_job_spec *s, size_t i, bool unfit)
{
    if (unfit)
        s->unfit[i / 64] |= UINT64_C(1) << (i % 64);
    else
        s->unfit[i / 64] &= ~(UINT64_C(1) << (i % 64));
}

/* Whether name is a valid tenant name: 1 to BSO_TENANT_MAX of A-Z a-z 0-9 . _ - */
bool bso_tenant_name_valid(const char *name);

/* One validation failure, shaped like a pydantic v1 error so the server can answer as Zeus. */
struct bso_spec_error {
    const char *field; /* "batch_sizes", ... or "__root__" for cross-field checks */
    const char *type;  /* "value_error", "value_error.number.not_gt", ... */
    bool has_limit;    /* ctx.limit_value is present */
    int64_t limit;
    char msg[1024];
};

#define BSO_SPEC_MAX_ERRORS 24

struct bso_spec_errors {
    size_t n;
    struct bso_spec_error e[BSO_SPEC_MAX_ERRORS];
};

/* Zeroes the spec and applies Zeus's defaults to every optional field. The required fields
 * (job_id_prefix, batch_sizes, default_batch_size, max_power, number_of_gpus, gpu_model) are
 * left empty. */
void bso_job_spec_defaults(struct bso_job_spec *spec);

/* The text fields a client sets. */
enum bso_spec_text { BSO_SPEC_JOB_ID, BSO_SPEC_JOB_ID_PREFIX, BSO_SPEC_GPU_MODEL };

/* Sets a text field from len bytes at value (NUL not required). Too long, or holding a NUL
 * character: the field is left empty, an error is added to *errs and BSO_EINVAL returned.
 * Setting BSO_SPEC_JOB_ID also sets has_job_id. */
int bso_job_spec_set_text(struct bso_job_spec *spec, enum bso_spec_text field, const char *value,
                          size_t len, struct bso_spec_errors *errs);

/* Sets the batch-size list. More than BSO_MAX_BATCH_SIZES: the list is left empty, an error is
 * added to *errs and BSO_EINVAL returned. */
int bso_job_spec_set_batch_sizes(struct bso_job_spec *spec, const int64_t *sizes, size_t n,
                                 struct bso_spec_errors *errs);

/* Validates the spec and sorts its batch sizes, adding failures to *errs, which the caller
 * zeroes before the first setter or this call. Field checks run first, in field order; the
 * cross-field checks run only when no field failed (setters included), and stop at the first
 * failure (pydantic's skip_on_failure). Returns 0 when *errs holds no failure, else BSO_EINVAL. */
int bso_job_spec_validate(struct bso_job_spec *spec, struct bso_spec_errors *errs);

/* Whether two validated specs are the same configuration (Zeus's re-registration test):
 * all 18 fields, floats by value, batch sizes as sorted lists. */
bool bso_job_spec_equal(const struct bso_job_spec *a, const struct bso_job_spec *b);

/* Index of bs in the spec's sorted batch sizes, or -1. */
int bso_job_spec_index(const struct bso_job_spec *spec, int64_t bs);

#endif
