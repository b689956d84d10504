/*
 * libbso's HTTP client for a BSO server (or Zeus's). One bso_client holds one connection that is
 * reused across calls; a handle is used by one thread at a time (make one per thread). Calls
 * return 0 or a negative BSO_E* code; after a failure bso_client_errmsg() says why, with the
 * server's own message when it answered (BSO_EHTTP; bso_client_http_status() gives the status).
 *
 * Retries: a request that never reached the server (connection refused, DNS) is retried for
 * every call; a request that timed out or got a 502/503/504 is retried only for calls that are
 * idempotent on the server (reports, end-trial, delete, reads, registration with an explicit id).
 * Asking for a batch size is never retried once sent, since it creates a trial.
 */
#ifndef BSO_CLIENT_H
#define BSO_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bso/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bso_client bso_client;

/* A client for server_url (e.g. "http://127.0.0.1:8000", or https://). Several replicas without a
 * load balancer: "http://a:8000,http://b:8000"; when one cannot be reached (or answers 502-504)
 * the client moves to the next, at once, and stays there. A request that may have reached a
 * server is sent again only when it is idempotent. Defaults: 10 s timeout, 3 retries, the token
 * in BSO_TOKEN and the CA certificate in BSO_CACERT when those are set. Free with
 * bso_client_free. BSO_EINVAL for an empty URL, BSO_ENOMEM. */
BSO_API int bso_client_new(const char *server_url, bso_client **out);
/* NULL is a no-op. */
BSO_API void bso_client_free(bso_client *c);
/* Per-request timeout in milliseconds (connect and transfer), and how many times a retryable
 * failure is retried (with 0.1 s, 0.2 s, 0.4 s... between tries). */
BSO_API void bso_client_set_timeout_ms(bso_client *c, long ms);
BSO_API void bso_client_set_retries(bso_client *c, int retries);
/* The API token sent with every request (Authorization: Bearer); NULL or "" sends none. */
BSO_API int bso_client_set_token(bso_client *c, const char *token);
/* A PEM file of CA certificates to verify an https:// server by, instead of the system's (for
 * a private CA or a self-signed server); NULL: the system's. Certificates are always
 * verified. */
BSO_API int bso_client_set_cacert(bso_client *c, const char *path);

/* Why the last failing call failed; valid until the next call on c. */
BSO_API const char *bso_client_errmsg(const bso_client *c);
/* The HTTP status of the last answer, or 0 if none came. */
BSO_API int bso_client_http_status(const bso_client *c);

#define BSO_CLIENT_ID_MAX 256
#define BSO_CLIENT_MSG_MAX 512

/* Registers a job from its JSON specification (Zeus's JobSpecFromClient fields). On success
 * job_id (at least BSO_CLIENT_ID_MAX bytes) holds the job's id and *created whether it is new.
 * The server's full answer is in bso_client_body() until the next call. */
BSO_API int bso_client_register(bso_client *c, const char *spec_json, char *job_id, bool *created);

/* A batch size for a new trial of job_id. */
BSO_API int bso_client_next(bso_client *c, const char *job_id, int64_t *batch_size,
                            int64_t *trial_number);

struct bso_report_answer {
    bool stop_train;
    bool converged;
    char message[BSO_CLIENT_MSG_MAX];
};

/* Reports cumulative time (s) and energy (J) and the metric after `epoch` evaluations.
 * energy_source labels the energy figure ("nvml-counter", "rapl", "estimate"...; NULL: none). */
BSO_API int bso_client_report(bso_client *c, const char *job_id, int64_t batch_size,
                              int64_t trial_number, double time_s, double energy_j, double metric,
                              int64_t epoch, const char *energy_source,
                              struct bso_report_answer *out);

/* What a run whose batch size changes while it trains has done so far. */
struct bso_run_progress {
    int64_t samples;        /* samples processed in the run, all ranks together (>= 0) */
    double mean_batch_size; /* their mean per optimizer step (> 0) */
};

/* bso_client_report that also sends the run's progress (NULL: none, as bso_client_report). The
 * server keeps one point per epoch with the trial and shows them (GET /jobs/ID/trials); the
 * policy still counts the run for the batch size it chose. */
BSO_API int bso_client_report_progress(bso_client *c, const char *job_id, int64_t batch_size,
                                       int64_t trial_number, double time_s, double energy_j,
                                       double metric, int64_t epoch, const char *energy_source,
                                       const struct bso_run_progress *progress,
                                       struct bso_report_answer *out);

/* Ends a trial that will not report (its run failed). */
BSO_API int bso_client_end_trial(bso_client *c, const char *job_id, int64_t batch_size,
                                 int64_t trial_number);

/* Deletes a job and its history. */
BSO_API int bso_client_delete(bso_client *c, const char *job_id);

/* The read API, as JSON text in bso_client_body(): GET path (e.g. "/jobs/ID"). */
/* POST to a path with a JSON body, or none (NULL), e.g. "/jobs/ID/reset" or "/jobs/ID/profile";
 * the answer is in bso_client_body. Not retried once sent. */
BSO_API int bso_client_post(bso_client *c, const char *path, const char *json_body);
BSO_API int bso_client_get(bso_client *c, const char *path);

/* The body of the last answer (NUL-terminated); valid until the next call on c. */
BSO_API const char *bso_client_body(const bso_client *c);

#ifdef __cplusplus
}
#endif
#endif
