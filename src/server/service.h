/*
 * The BSO operations as transactions: each call opens one transaction on the session, loads what
 * the policy needs, runs the core, writes back what changed and commits, or rolls back and
 * changes nothing. Failures carry Zeus's message texts in msg; the caller maps codes to HTTP.
 *
 *   BSO_EINVAL     bad input (400, or 422 for spec validation)
 *   BSO_ENOTFOUND  unknown job or trial (Zeus answers 400 or 404 depending on the endpoint)
 *   BSO_ESTATE     the operation does not fit the trial's state (400)
 *   BSO_ECONFLICT  a different spec under the same job id (409)
 *   BSO_EPRUNED    no batch size to give (every one pruned, or none until the next pass)
 *   BSO_EIO        the database failed (details logged, never sent)
 */
#ifndef BSO_SERVER_SERVICE_H
#define BSO_SERVER_SERVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/job.h"
#include "store/store.h"

#define BSO_SVC_MSG_MAX 1024

/* Registers a validated spec. Without a job id one is generated ("<prefix>-<8 hex>"). With an
 * existing id the stored spec must be the same (then *created is false and nothing is written),
 * else BSO_ECONFLICT. A spec whose policy is BSO_POLICY_DEFAULT takes the existing job's, or
 * default_policy for a new job. spec->job_id and spec->policy hold the final values on
 * success. When the stored spec differs, it is copied to *registered (unless NULL), so that the
 * answer can name what differs. */
int bso_svc_register(struct bso_session *s, struct bso_job_spec *spec, int default_policy,
                     bool *created, struct bso_job_spec *registered, char *msg);

/* Creates the job's next trial. *stage_changed tells that pruning just ended and the bandit was
 * built (arms listed in *arms_out, n in *n_arms, when those are not NULL). *power_limit_w gets
 * the power limit chosen for the trial's batch size by an earlier run's profile, or NAN. */
int bso_svc_predict(struct bso_session *s, const char *job_id, struct bso_trial *trial,
                    bool *stage_changed, int64_t *arms_out, size_t *n_arms, double *power_limit_w,
                    char *msg);

/* The identity of a trial as clients send it. */
struct bso_trial_key {
    const char *job_id;
    int64_t batch_size;
    int64_t trial_number;
};

/* A progress report on a trial. */
int bso_svc_report(struct bso_session *s, const struct bso_trial_key *key,
                   const struct bso_report *rep, struct bso_decision *out, char *msg);

/* Ends a trial that will not report: Dispatched becomes Failed; otherwise nothing happens. */
int bso_svc_end_trial(struct bso_session *s, const struct bso_trial_key *key, char *msg);

/* Forgets what a job learned (bso_session_reset_job): it explores again from its spec. */
int bso_svc_reset(struct bso_session *s, const char *job_id, char *msg);

/* The user says job_id changed (bso_policy_declare_change): the next run at each size it knows
 * decides whether the change matters there. *sizes gets how many sizes are watched (0: it has
 * learnt nothing yet). BSO_ENOTFOUND for an unknown job, BSO_EINVAL for one under the zeus
 * policy; msg says which. */
int bso_svc_declare_change(struct bso_session *s, const char *job_id, int64_t *sizes, char *msg);

/* A job registered with data_version `version`: recorded, and where the job gave another one
 * before, it changed (bso_svc_declare_change; *declared says so; under the zeus policy the
 * version is only recorded). */
int bso_svc_follow_data_version(struct bso_session *s, const char *job_id, const char *version,
                                bool *declared, char *msg);

/* Stores a probe's measurements of the job's batch sizes (every size must be the job's, else
 * BSO_EINVAL) and marks the sizes that do not fit, which are then never dispatched; sizes a
 * later profile finds feasible are dispatched again. spec_out gets the job's spec with its
 * unfit sizes. */
int bso_svc_profile(struct bso_session *s, const char *job_id, const struct bso_profile_entry *e,
                    size_t n, struct bso_job_spec *spec_out, char *msg);

/* Stores a power-limit profile of one of job_id's batch sizes. A profile without a chosen limit
 * (NAN) gets the one of least cost by the job's eta and max_power (bso_power_choose).
 * BSO_ENOTFOUND for an unknown job; BSO_EINVAL for a batch size the job lacks, or a chosen
 * limit that was not measured. *p gets the limit stored, and spec_out (unless NULL) the job's
 * spec. */
int bso_svc_power(struct bso_session *s, const char *job_id, struct bso_power_profile *p,
                  struct bso_job_spec *spec_out, char *msg);

/* Starts job `to` from the per-size epochs job `from` learnt (bso_policy_transfer): the same
 * workload on other hardware. Records where it came from. *sizes gets how many sizes got a
 * prior. BSO_ENOTFOUND when either job is unknown (to this tenant), BSO_EINVAL when they are
 * the same job or either does not run the bso policy; msg says which. */
int bso_svc_transfer(struct bso_session *s, const char *to, const char *from, int64_t *sizes,
                     char *msg);
/* Whether job `from` can be transferred from (it exists for this tenant and runs the bso
 * policy): 0, or an error with msg, as bso_svc_transfer. */
int bso_svc_check_transfer_source(struct bso_session *s, const char *from, char *msg);

/* Deletes a job with its trials and arms. */
int bso_svc_delete(struct bso_session *s, const char *job_id, char *msg);

/* Python's repr of a str, as pydantic prints it in messages: 'abc', or "it's". */
int bso_pystr_repr(const char *v, char *buf, size_t cap);

#endif
