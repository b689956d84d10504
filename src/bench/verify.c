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

/* What the stored trials say about one batch size, to recount the job's statistics. */
struct tally {
    int64_t batch_size;
    int64_t succeeded, converged;
};

struct tallies {
    struct tally t[256];
    size_t n;
    bool any_mab;      /* some trial came from the bandit */
    bool explore_late; /* an exploration trial came after a bandit trial */
};

/* The tally of batch size bs, or NULL when no trial had it. */
static struct tally *find_tally(const struct tallies *ts, int64_t bs)
{
    for (size_t i = 0; i < ts->n; i++)
        if (ts->t[i].batch_size == bs)
            return (struct tally *)&ts->t[i];
    return NULL;
}

static struct tally *tally_of(struct tallies *ts, int64_t bs)
{
    struct tally *x = find_tally(ts, bs);
    if (x)
        return x;
    if (ts->n == sizeof ts->t / sizeof *ts->t)
        return NULL;
    ts->t[ts->n] = (struct tally){.batch_size = bs};
    return &ts->t[ts->n++];
}

static void count_trial(struct tallies *ts, json_t *t)
{
    const char *status = json_string_value(json_object_get(t, "status"));
    const char *type = json_string_value(json_object_get(t, "type"));
    const bool mab = type && strcmp(type, "MAB") == 0;
    if (!mab && ts->any_mab)
        ts->explore_late = true;
    ts->any_mab |= mab;
    struct tally *x = tally_of(ts, json_integer_value(json_object_get(t, "batch_size")));
    if (!x || !status || strcmp(status, "Succeeded") != 0)
        return;
    x->succeeded++;
    x->converged += json_is_true(json_object_get(t, "converged"));
}

/* The job as the server describes it against a recount from its trials: a stage that follows
 * from them, and the statistics equal to what the trials add up to: the bso policy's runs and
 * successes per batch size (its finished runs, and those that converged), or the results of
 * Zeus's arms (every finished run of the size, the pruning rounds' included). */
static long check_job(struct bso_http *cl, const char *id, const struct tallies *ts, long found,
                      FILE *err)
{
    char path[256];
    snprintf(path, sizeof path, "/jobs/%s", id);
    int rc = bso_api_get(cl, path);
    if (rc < 0)
        return rc;
    json_t *job = bso_api_json(cl);
    const char *stage = json_string_value(json_object_get(job, "stage"));
    json_t *stats = json_object_get(job, "batch_size_stats");
    const bool bso = json_is_array(stats);
    if (!stage) {
        json_decref(job);
        return BSO_EPARSE;
    }
    if (strcmp(stage, "MAB") != 0 && ts->any_mab)
        found = problem(found, err, id, "a bandit trial while the job is still pruning", 0);
    if (!bso && ts->explore_late)
        found = problem(found, err, id, "an exploration trial after the bandit began", 0);
    size_t i;
    json_t *e;
    json_array_foreach(bso ? stats : json_object_get(job, "arms"), i, e)
    {
        const int64_t bs = json_integer_value(json_object_get(e, "batch_size"));
        const struct tally none = {.batch_size = bs};
        const struct tally *x = find_tally(ts, bs);
        if (!x)
            x = &none;
        const bool same =
            bso ? json_integer_value(json_object_get(e, "runs")) == x->succeeded &&
                      json_integer_value(json_object_get(e, "successes")) == x->converged
                : json_integer_value(json_object_get(e, "num_results")) == x->succeeded;
        if (!same)
            found = problem(found, err, id,
                            bso ? "batch size statistics differ from a recount of its trials"
                                : "arm results differ from a recount of its trials",
                            bs);
    }
    json_decref(job);
    return found;
}

/* Checks one job; returns the problems found so far, or a negative code. */
static long verify_job(struct bso_http *cl, const char *id, struct bso_ledger_job *lg, long found,
                       FILE *err)
{
    struct tallies *ts = calloc(1, sizeof *ts);
    if (!ts)
        return BSO_ENOMEM;
    qsort(lg->trials, lg->n, sizeof *lg->trials, by_number);
    size_t next = 0; /* the ledger's next trial, in number order */
    int64_t expect = 1, after = 0;
    for (;;) {
        char path[256];
        const int64_t from = after;
        snprintf(path, sizeof path, "/jobs/%s/trials?limit=1000&after=%" PRId64, id, from);
        int rc = bso_api_get(cl, path);
        if (rc < 0) {
            free(ts);
            return rc;
        }
        json_t *page = bso_api_json(cl);
        json_t *rows = json_object_get(page, "trials");
        if (!json_is_array(rows)) {
            json_decref(page);
            free(ts);
            return BSO_EPARSE;
        }
        size_t k;
        json_t *t;
        json_array_foreach(rows, k, t)
        {
            const int64_t num = json_integer_value(json_object_get(t, "trial_number"));
            count_trial(ts, t);
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
                /* Progress reports store nothing (as in Zeus); the final one, acknowledged with
                 * stop, stores the run's time. */
                if (mine->finished &&
                    (!json_is_number(time) || json_number_value(time) != mine->time))
                    found = problem(found, err, id, "an acknowledged final report is missing", num);
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
        /* A page that brought no trial past the last one asked from would be asked for again
         * and again (a server that does not page as ours does). */
        if (after <= from) {
            found =
                problem(found, err, id, "the next page of trials starts where this one did", after);
            break;
        }
    }
    while (next < lg->n)
        found = problem(found, err, id, "handed out but not stored", lg->trials[next++].number);
    found = check_job(cl, id, ts, found, err);
    free(ts);
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
