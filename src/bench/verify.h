/* --verify: reads every job back from the server (BSO's read API) and checks it against what
 * the server acknowledged during the run. */
#ifndef BSO_BENCH_VERIFY_H
#define BSO_BENCH_VERIFY_H

#include <stddef.h>
#include <stdio.h>

#include "bench/ledger.h"
#include "bench/workload.h"
#include "bench/http.h"

/* Checks, for each job: its trial numbers are 1..N with no gap or repeat; every trial handed
 * out is stored, and none after the first one of this run was stored without being handed out
 * (unless a predict failed; earlier ones are the job's history); every acknowledged report is
 * stored (the trial's time is the last acknowledged one) and every trial told to stop is
 * Succeeded.
 * Describes the first problems on err; returns the number found, or a negative BSO_E* code
 * when the server could not be read. */
long bso_verify(struct bso_http *cl, const struct bso_bench_job *jobs,
                struct bso_ledger_job *ledgers, size_t n_jobs, FILE *err);

#endif
