/*
 * What libbso reads out of the server's answers, apart from the HTTP exchange so that every
 * reader can be tested and fuzzed on bytes alone. Each reader takes a NUL-terminated body and
 * returns 0, or BSO_EPARSE with a one-line reason in why (cap bytes).
 */
#ifndef BSO_CLIENT_ANSWER_H
#define BSO_CLIENT_ANSWER_H

#include <stddef.h>
#include <stdint.h>

#include "bso/client.h"

/* {"job_id": ...}: the id is copied into job_id (BSO_CLIENT_ID_MAX bytes). */
int bso_answer_register(const char *body, char *job_id, char *why, size_t cap);
/* {"batch_size": int, "trial_number": int}. */
int bso_answer_next(const char *body, int64_t *batch_size, int64_t *trial_number, char *why,
                    size_t cap);
/* {"stop_train": bool, "converged": bool, "message": str?}. */
int bso_answer_report(const char *body, struct bso_report_answer *out, char *why, size_t cap);
/* The server's explanation of a failed request: {"message"}, {"detail": str} or FastAPI's
 * {"detail": [{"loc": [...], "msg": ...}]}, else the body itself, else "no explanation".
 * Always writes a NUL-terminated text into msg (cap > 0). */
void bso_answer_error(const char *body, char *msg, size_t cap);

#endif
