/* Shared test fixtures: cmocka's includes in the order it needs, and job specs used by several
 * suites. */
#ifndef BSO_TESTS_HELPERS_H
#define BSO_TESTS_HELPERS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/job.h"
#include "core/spec.h"

/* A fresh directory "/tmp/<prefix>-XXXXXX" written into dir (cap >= 64); 0, or -1. */
int make_temp_dir(char *dir, size_t cap, const char *prefix);
/* Writes text to path (replacing it), or fails the test. */
void write_file(const char *path, const char *text);
/* Removes dir and everything in it; 0, or -1. */
int remove_temp_dir(const char *dir);

/* Sets the spec's batch sizes. */
void set_batch_sizes(struct bso_job_spec *spec, const int64_t *sizes, size_t n);

/* Zeus's own test job (helpers.get_fake_job + get_fake_job_config): prefix "test", default 1024,
 * batch sizes [32,64,256,512,1024,4096,2048], window 5, seed 123456, max_power 3000, 4 A100s. */
void fake_job_spec(struct bso_job_spec *spec);

/* The explorer tests' job: batch sizes [8..256], beta disabled, 2 rounds. */
void explorer_job_spec(struct bso_job_spec *spec, int64_t default_bs);

/* cmocka fixtures: *state becomes a started job on Zeus's fake job spec, or on the explorer
 * spec with default batch size 64 (and 2 or 1 pruning rounds); teardown_job frees it. */
int setup_fake_job(void **state);
int setup_explorer_job(void **state);
int setup_one_round_job(void **state);
int teardown_job(void **state);

/* A valid, validated job from spec (asserts). */
void start_job(struct bso_job *job, struct bso_job_spec *spec);

/* Predicts and asserts success; returns the trial. */
struct bso_trial predict_ok(struct bso_job *job);

/* Reports one final result with the given cost (time = cost / ((1 - eta) * max_power), energy 0)
 * and metric; asserts success and returns the decision. */
struct bso_decision report_cost(struct bso_job *job, struct bso_trial *t, double cost,
                                double metric, int64_t epoch);

#endif
