/* The invariants bso-bench checks after a run; see verify.h. */
#include "bench/verify.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "bench/api.h"
#include "bso/error.h"

#define SHOWN 10 /* problems described in full */

static long problem(long found, FILE *err, const char *job, const char *what, int64_t trial)
{
    if (found < SHOWN)
        fprintf(err, "verify: %s: trial %" PRId64 ": %s\n", job, trial, what);
    return found + 1;
}

static int by_number(const void *a, const void *b)
{
    const int64_t x = ((const struct bso_ledger_trial *)a)->number;
    const int64_t y = ((const struct bso_ledger_trial *)b)->number;
    return (x > y) - (x < y);
}

/* Checks one job; returns the problems found so far, or a negative code. */
static long verify_job(struct bso_http *cl, const char *id, struct bso_ledger_job *lg, long found,
                       FILE *err)
{
    qsort(lg->trials, lg->n, sizeof *lg->trials, by_number);
    size_t next = 0; /* the ledger's next trial, in number order */
    int64_t expect = 1, after = 0;
    for (;;) {
        char path[256];
        snprintf(path, sizeof path, "/jobs/%s/trials?limit=1000&after=%" PRId64, id, after);
        int rc = bso_api_get(cl, path);
        if (rc < 0)
            return rc;
        json_t *page = bso_api_json(cl);
        json_t *rows = json_object_get(page, "trials");
        if (!json_is_array(rows)) {
            json_decref(page);
            return BSO_EPARSE;
        }
        size_t k;
        json_t *t;
        json_array_foreach(rows, k, t)
        {
            const int64_t num = json_integer_value(json_object_get(t, "trial_number"));
            if (num != expect)
                found = problem(found, err, id, "trial numbers are not 1, 2, 3...", num);
            expect = num + 1;
            while (next < lg->n && lg->trials[next].number < num)
                found =
                    problem(found, err, id, "handed out but not stored", lg->trials[next++].number);
            if (next < lg->n && lg->trials[next].number == num) {
                const struct bso_ledger_trial *mine = &lg->trials[next++];
                if (next < lg->n && lg->trials[next].number == num)
                    found = problem(found, err, id, "handed out twice", num);
                const char *status = json_string_value(json_object_get(t, "status"));
                json_t *time = json_object_get(t, "time");
                if (mine->batch_size != json_integer_value(json_object_get(t, "batch_size")))
                    found = problem(found, err, id, "stored with another batch size", num);
                if (mine->reported &&
                    (!json_is_number(time) || json_number_value(time) != mine->time))
                    found = problem(found, err, id, "an acknowledged report is missing", num);
                if (mine->finished && (!status || strcmp(status, "Succeeded") != 0))
                    found = problem(found, err, id, "told to stop but not Succeeded", num);
            } else if (lg->predict_errors == 0 && lg->n > 0 && num > lg->trials[0].number) {
                /* Trials before the first one of this run are the job's earlier history. */
                found = problem(found, err, id, "stored but never handed out", num);
            }
            after = num;
        }
        const bool more = json_is_integer(json_object_get(page, "next_after"));
        json_decref(page);
        if (!more)
            break;
    }
    while (next < lg->n)
        found = problem(found, err, id, "handed out but not stored", lg->trials[next++].number);
    return found;
}

long bso_verify(struct bso_http *cl, const struct bso_bench_job *jobs,
                struct bso_ledger_job *ledgers, size_t n_jobs, FILE *err)
{
    long found = 0;
    for (size_t i = 0; i < n_jobs; i++) {
        long rc = verify_job(cl, jobs[i].id, &ledgers[i], found, err);
        if (rc < 0)
            return rc;
        found = rc;
    }
    if (found > SHOWN)
        fprintf(err, "verify: ... and %ld more\n", found - SHOWN);
    return found;
}
