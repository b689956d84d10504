/*
 * How the backends write a job's structured fields into text columns and read them back, the
 * same way in every database: batch sizes as "[8, 16, 32]", an arm's recent rewards as
 * "[[trial_number,reward],...]" with every bit of each double, trial types and statuses by name.
 */
#ifndef BSO_STORE_COLUMNS_H
#define BSO_STORE_COLUMNS_H

#include "core/arm.h"
#include "core/spec.h"
#include "core/trial.h"

/* A trial type or status from its stored name (an unknown one reads as the first). */
int bso_column_trial_type(const char *name);
int bso_column_trial_status(const char *name);

/* Batch sizes "[8, 16, 32]" (as bso_pyintlist_repr writes them) into spec. 0, or BSO_EPARSE. */
int bso_column_parse_sizes(const char *text, struct bso_job_spec *spec);

/* An arm's recent rewards as text; the caller frees it. NULL when out of memory. */
char *bso_column_format_recent(const struct bso_arm *a);
/* Reads them back into a (whose recent list is allocated here). 0, BSO_EPARSE or BSO_ENOMEM. */
int bso_column_parse_recent(const char *text, struct bso_arm *a);

#endif
