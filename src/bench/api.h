/* The requests of Zeus's BSO API that bso-bench sends, over its lean HTTP client. Each returns
 * 0 on a 2xx answer, else a negative BSO_E* code (BSO_EHTTP: an error status) with the reason
 * in bso_http_errmsg or the answer's body. */
#ifndef BSO_BENCH_API_H
#define BSO_BENCH_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/http.h"

int bso_api_register(struct bso_http *h, const char *spec_json);
int bso_api_predict(struct bso_http *h, const char *job_id, int64_t *batch_size,
                    int64_t *trial_number);
/* Reports cumulative time (s) and energy (J) and the metric after `epoch` epochs. */
int bso_api_report(struct bso_http *h, const char *job_id, int64_t batch_size, int64_t trial_number,
                   double time, double energy, double metric, int64_t epoch, bool *stop_train);
int bso_api_end_trial(struct bso_http *h, const char *job_id, int64_t batch_size,
                      int64_t trial_number);
/* The pieces of those calls, for clients that do their own I/O: a request's path or body
 * (its length, or BSO_ERANGE when cap is short) and what an answer says (0, or BSO_EPARSE). */
int bso_api_predict_path(char *buf, size_t cap, const char *job_id);
int bso_api_report_body(char *buf, size_t cap, const char *job_id, int64_t batch_size,
                        int64_t trial_number, double time, double energy, double metric,
                        int64_t epoch);
int bso_api_end_trial_body(char *buf, size_t cap, const char *job_id, int64_t batch_size,
                           int64_t trial_number);
int bso_api_read_predict(const char *body, int64_t *batch_size, int64_t *trial_number);
int bso_api_read_report(const char *body, bool *stop_train);

/* GET path; the answer's body in bso_http_body. */
int bso_api_get(struct bso_http *h, const char *path);

/* The last answer's body parsed as JSON (the caller frees it), or NULL. */
struct json_t *bso_api_json(struct bso_http *h);

/* Why the last call failed: the transport's reason, or the status and the server's answer. */
const char *bso_api_errmsg(struct bso_http *h, int rc, char *buf, size_t cap);

#endif
